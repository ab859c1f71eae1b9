"""The Tensor: its construction, metadata, conversions and autograd hooks.

A Tensor holds a backend buffer (``_data``) and its autograd state. Every
differentiable operation goes through a ``Function`` in ``ops.py``; the methods
check arguments (raising errors that name the op, shapes and dtypes before anything
is touched), promote dtypes and compose primitives.

This file holds what every tensor is: how one is made from data (``sg.tensor``'s rules
and the legacy ``Tensor(2, 3)``), its metadata, its conversions (``to``, ``item``,
``numpy``, DLPack), its autograd hooks and indexing (``t[key]``, ``indexing.py``). The
operators on the path every operation runs are ``TensorCore``'s (tensor_core.py). The
methods come in families, each a mixin in the module named for it that the class lists
among its bases: ``ContractionMethods`` (contractions.py: matmul, einsum, addmm),
``ElementwiseMethods`` (elementwise.py), ``InplaceMethods`` (inplace.py), ``MathMethods``
(math_ops.py), ``MovementMethods`` (movement.py: views and reshapes),
``RearrangingMethods`` (rearranging.py), ``ReductionMethods`` (reductions.py),
``SamplingMethods`` (sampling.py), ``ScanMethods`` (scans.py), ``ScatterMethods``
(scatter.py), ``SelectingMethods`` (selecting.py) and ``SortingMethods`` (sorting.py).
"""
import operator

from . import backend as B
from . import dtypes as D
from . import ops, printing, shapes
from .arguments import check_fits, shape_arg, to_dtype
from .contractions import ContractionMethods
from .device import check_device, device, device_of, is_pinned, place  # noqa: F401  (device is public here)
from .dtypes import bool_, float32, float64, int32, int64
from .elementwise import ElementwiseMethods
from .inplace import InplaceMethods
from .math_ops import MathMethods
from .movement import MovementMethods
from .rearranging import RearrangingMethods
from .reductions import ReductionMethods
from .sampling import SamplingMethods
from .scans import ScanMethods
from .scatter import ScatterMethods
from .selecting import SelectingMethods
from .shapes import ShapeError
from .sorting import SortingMethods
from .tensor_core import Size, TensorCore, bind  # noqa: F401  (Size is public here)

_Device = device


def _nested(data):
    """(flat values, shape) of a nested sequence; rejects ragged input."""
    shape = []
    v = data
    while isinstance(v, (list, tuple)):
        shape.append(len(v))
        if not v:
            break
        v = v[0]
    items = [data]
    for d, n in enumerate(shape):
        nxt = []
        for it in items:
            if not isinstance(it, (list, tuple)) or len(it) != n:
                raise ValueError(f"tensor: expected a sequence of length {n} at dim {d}, got "
                                 f"{type(it).__name__} (ragged nested sequences are not allowed)")
            nxt.extend(it)
        items = nxt
    flat = []
    for it in items:
        if isinstance(it, (list, tuple)):
            raise ValueError("tensor: ragged nested sequence")
        if isinstance(it, Tensor):
            if it.numel() != 1:
                raise ValueError("tensor: only one-element tensors can be nested in a sequence")
            it = it.item()
        elif not isinstance(it, (bool, int, float)):
            if hasattr(it, "item"):  # NumPy scalars
                it = it.item()
            else:
                raise TypeError(f"tensor: cannot make a tensor from {type(it).__name__}")
        flat.append(it)
    return flat, tuple(shape)


def _buffer_from(data, dtype):
    dtype = to_dtype(dtype)
    if isinstance(data, Tensor):
        buf = B.copy(data._data)
        return B.cast(buf, dtype) if dtype is not None else buf
    if hasattr(data, "__array_interface__") and hasattr(data, "tolist"):  # a NumPy array
        np_name = str(data.dtype)
        src = D.BY_NAME.get(np_name) or (bool_ if np_name == "bool" else None)
        if src is None:
            raise TypeError(f"tensor: unsupported NumPy dtype {np_name}")
        if dtype is None:  # converting to a dtype named with dtype= is fine; keeping it is not
            src = to_dtype(src)
        flat = data.reshape(-1)  # a view where one stride reaches every element, else a copy
        if not flat.flags.c_contiguous:  # sliced, reversed or broadcast: its bytes are not in order
            flat = flat.copy()
        if (dtype is None or dtype is src) and src.name == np_name and flat.size:
            raw = memoryview(flat).cast("B")  # the bytes as they are: no per-element conversion
            buf = B.from_buffer(bytearray(raw) if raw.readonly else raw, src)
            return B.reshape(B.copy(buf), tuple(data.shape))
        vals = flat.tolist()
        check_fits(vals, dtype or src)
        return B.from_list(vals, tuple(data.shape), dtype or src)
    if dtype is not None and isinstance(data, list) and data and not isinstance(data[0], (list, tuple)):
        try:  # a flat list of numbers: no per-element checks (datasets build large ones)
            check_fits(data, dtype)
            return B.from_list(data, (len(data),), dtype)
        except TypeError:
            pass
    flat, shape = _nested(data)
    dtype = dtype or D.infer(flat)
    check_fits(flat, dtype)
    return B.from_list(flat, shape, dtype)


def _legacy_buffer(args, dtype, op):
    """The buffer ``torch.Tensor(*args)``-style constructors make: sizes give a zero-filled
    shape (PyTorch leaves it uninitialised), a tensor keeps its dtype, and any other data
    becomes ``dtype``, by default the default dtype."""
    if not args:
        args = (0,)
    if isinstance(args[0], Size) or all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        shape = shapes.check(shape_arg(args, op), op, dtype or D.get_default_dtype())
        return B.full(shape, 0, dtype or D.get_default_dtype())
    if len(args) > 1:
        raise TypeError(f"{op}: expected sizes (ints) or one sequence of data, got {args!r}")
    (data,) = args
    if isinstance(data, (float, bool)):
        raise TypeError(f"{op}: data must be a sequence (got {type(data).__name__}); "
                        f"sg.tensor makes a 0-d tensor")
    if isinstance(data, Tensor):
        return _buffer_from(data, dtype)
    if dtype is not None and not dtype.is_floating_point:
        # inferred first, then cast: 1.7 becomes 1 as PyTorch's LongTensor([1.7]) makes it
        return B.cast(_buffer_from(data, None), dtype)
    return _buffer_from(data, dtype or D.get_default_dtype())


_DLPACK_CPU = (1, 0)  # DLPack's (device type, index): kDLCPU
_DLPACK_TYPES = {"cuda": 2, "webgpu": 15}  # DLPack 1.0's kDLCUDA and kDLWebGPU


class Tensor(TensorCore, ContractionMethods, ElementwiseMethods, InplaceMethods, MathMethods, MovementMethods,
             RearrangingMethods, ReductionMethods, SamplingMethods, ScanMethods, ScatterMethods, SelectingMethods,
             SortingMethods):
    """An n-dimensional array with reverse-mode autograd."""

    __slots__ = ()  # the fields are TensorCore's
    __array_priority__ = 1000
    __array_ufunc__ = None  # NumPy operands defer to our reflected operators

    def __init__(self, *args, dtype=None, requires_grad=False, device=None):
        """As ``torch.Tensor``: ``Tensor(data)`` makes a tensor of the default dtype (float32)
        whatever the data, ``Tensor(2, 3)`` (or a ``Size``) a zero-filled one of that shape,
        ``Tensor()`` an empty one, and ``Tensor(t)`` a tensor with ``t``'s values and dtype.
        ``dtype=`` (which ``torch.Tensor`` lacks) picks another dtype; ``sg.tensor`` infers
        the dtype from the data instead."""
        check_device(device, "Tensor")
        self._init(_legacy_buffer(args, to_dtype(dtype), "Tensor"), requires_grad)

    @staticmethod
    def _infer(data, dtype=None):
        """A tensor from ``data`` with its dtype inferred (``sg.tensor``'s rule)."""
        return Tensor._make(_buffer_from(data, dtype))

    def _init(self, buf, requires_grad=False):
        self._data = buf
        self.grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._accumulator = None
        self._view = None
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _make_ones_like(t):
        return Tensor._make(place(B.full(t.shape, 1, t.dtype), t.device))

    # ------------------------------------------------------------ metadata

    @property
    def device(self):
        """Where the tensor lives: ``device(type='cpu')`` on every stage before stage 4."""
        return device_of(self._data)

    @property
    def is_cuda(self):
        """Whether the tensor lives on a CUDA device."""
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        """Whether the tensor lives on the CPU."""
        return self.device.type == "cpu"

    @property
    def data(self):
        """The tensor's values outside the autograd graph, sharing its storage; assigning replaces them.
        See torch.Tensor.data."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data: expected a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._view = None


    def is_floating_point(self):
        """Whether the dtype is a floating-point one; see torch.is_floating_point."""
        return self.dtype.is_floating_point

    def dim(self):
        """The number of dims; see torch.Tensor.dim."""
        return self.ndim

    def size(self, dim=None):
        """The shape, or the length of ``dim``; see torch.Tensor.size."""
        if dim is None:
            return self.shape
        return self._data.shape[self._dim(dim, "size")]

    def nelement(self):
        """The number of elements (see torch.Tensor.nelement, an alias of numel)."""
        return self.numel()

    def ndimension(self):
        """The number of dims (see torch.Tensor.ndimension, an alias of dim)."""
        return self.ndim

    def numel(self):
        """The number of elements; see torch.numel."""
        return B.prod(self._data.shape)

    def element_size(self):
        """The size of one element in bytes; see torch.Tensor.element_size."""
        return self.dtype.itemsize

    def is_contiguous(self):
        """Whether the elements lie in row-major order with no gaps; see torch.Tensor.is_contiguous."""
        return B.is_contiguous(self._data)

    def stride(self, dim=None):
        """The step in elements of each dim (or of ``dim``); see torch.Tensor.stride."""
        strides = B.strides(self._data)
        return strides if dim is None else strides[self._dim(dim, "stride")]

    def storage_offset(self):
        """The index of the first element in the storage; see torch.Tensor.storage_offset."""
        return B.storage_offset(self._data)

    def data_ptr(self):
        """An integer naming where element 0 lives: equal for tensors that alias it."""
        return B.data_ptr(self._data)

    def untyped_storage_id(self):
        """An integer naming the storage this tensor reads: equal for tensors that share it. Stands in for
        ``untyped_storage()``, which has no counterpart here."""
        return B.storage_id(self._data)

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __repr__(self):
        # PyTorch's layout, summarised above the threshold (``printing``)
        return printing.tensor_repr(self)

    # ------------------------------------------------------------ conversion

    def __format__(self, spec):
        # a 0-d tensor formats as its number (``f"{loss:.4f}"``); others only without a spec
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)

    def item(self):
        """The value of a one-element tensor as a Python number; see torch.Tensor.item."""
        if self.numel() != 1:
            raise ValueError(f"item: only one-element tensors can be converted to a Python "
                             f"scalar, got shape {list(self.shape)}")
        return self._data.item()

    def tolist(self):
        """The values as nested Python lists (a number for a 0-d tensor); see torch.Tensor.tolist."""
        return self._data.tolist()

    def numpy(self):
        """The tensor as a NumPy array: sharing its memory where the stage exports it (the
        buffer protocol), as PyTorch's does, and a copy on the stages that cannot and for a
        tensor on a device (the host waits for the device there)."""
        if self.requires_grad:
            raise RuntimeError("numpy: can't call numpy() on a tensor that requires grad; "
                               "use tensor.detach().numpy()")
        if self.dtype.name == "bfloat16":
            raise TypeError("numpy: NumPy has no bfloat16 dtype; convert first (t.float().numpy())")
        import numpy as np  # interop only
        try:
            return np.asarray(memoryview(self._data))
        except TypeError:  # no buffer protocol on this stage
            name = "bool" if self.dtype is bool_ else self.dtype.name
            return np.array(self._data.values(), dtype=name).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: a numeric array (``numpy()``), converted to ``dtype`` if asked."""
        a = self.numpy()
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory (``np.from_dlpack(t)``,
        ``torch.from_dlpack(t)``): writes through either side are seen by the other, and the
        storage lives until the consumer is done. A DLPack 1.0 capsule when ``max_version``
        allows one (NumPy makes a legacy one's array read-only), else the legacy
        ``"dltensor"``; ``copy=True`` exports a copy. A stage that cannot share memory raises
        CapabilityError (its LACKS names ``dlpack``)."""
        if self.requires_grad:
            raise RuntimeError("__dlpack__: can't export a tensor that requires grad; use "
                               "tensor.detach()")
        if stream is not None:  # the array API's rule for CPU memory
            raise BufferError(f"__dlpack__: stream must be None for a CPU tensor, got {stream!r}")
        if dl_device is not None and tuple(dl_device) != _DLPACK_CPU:
            raise BufferError(f"__dlpack__: cannot export to DLPack device {tuple(dl_device)}; this "
                              f"tensor is on the CPU {_DLPACK_CPU}")
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return B.to_dlpack(B.copy(self._data) if copy else self._data, versioned)

    def __dlpack_device__(self):
        """DLPack's (device type, index) of this tensor: ``(1, 0)`` (kDLCPU) for the CPU,
        ``(15, 0)`` (kDLWebGPU) for the webgpu device."""
        d = self.device
        return _DLPACK_CPU if d.type == "cpu" else (_DLPACK_TYPES[d.type], d.index or 0)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"bool: the truth value of a tensor with {self.numel()} elements is "
                               f"ambiguous")
        return bool(self.item())

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
        """This tensor with another dtype and/or on another device, as PyTorch's ``to``:
        ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)`` (other's dtype and
        device), or the keywords. The same tensor comes back when nothing changes (a copy with
        ``copy=True``). A device the stage cannot use raises DeviceError; moving to another
        device is recorded by autograd (the gradient moves back). ``non_blocking=True``, as
        in PyTorch: from pinned memory (``pin_memory()``) to the cuda device, and from the cuda
        device to the CPU (into new pinned memory), the copy is queued on the device's stream
        and the host does not wait for it, so the caller must synchronize
        (``sg.cuda.synchronize()``) before reading the CPU result or writing the pinned
        source; any other move ignores it."""
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, _Device) or (isinstance(a, str) and a not in D.BY_NAME):
                device = a
            else:
                dtype = a
        target = None if device is None else check_device(device, "to")
        dtype = to_dtype(dtype, "to")
        t = self
        if target is not None and target != self.device:
            t = ops.ToDevice.apply(t, target, bool(non_blocking))
        if dtype is not None and dtype is not t.dtype:
            return ops.Cast.apply(t, dtype)
        return t.clone() if copy and t is self else t

    def type(self, dtype=None):
        """Without an argument, the legacy type name, in PyTorch's spelling, which programs
        compare with: ``'torch.FloatTensor'`` (``'torch.cuda.FloatTensor'`` on a GPU). With
        one, this tensor converted to it: a dtype, a legacy type (``sg.LongTensor``) or a
        type name (``'torch.LongTensor'``, or with the stage's package name for ``torch``)."""
        from . import legacy  # here, not at the top: legacy.py builds on this module
        if dtype is None:
            return legacy.type_name(self.dtype, self.device.type)
        dtype, device = legacy.dtype_of(dtype)
        return self.to(dtype) if device is None else self.to(device=device, dtype=dtype)

    def float(self):
        """``self.to(float32)``; see torch.Tensor.float."""
        if self.requires_grad or self.dtype is float32:
            return self.to(float32)
        return Tensor._make(B.cast(self._data, float32))  # nothing to record: the hot path of input batches

    def double(self):
        """``self.to(float64)``; see torch.Tensor.double."""
        return self.to(float64)

    def long(self):
        """``self.to(int64)``; see torch.Tensor.long."""
        return self.to(int64)

    def int(self):
        """``self.to(int32)``; see torch.Tensor.int."""
        return self.to(int32)

    def bool(self):
        """``self.to(bool)``; see torch.Tensor.bool."""
        return self.to(bool_)

    # dtypes some stages do not compute in: each raises CapabilityError there, naming the dtype
    def half(self):
        """See torch.Tensor.half: raises CapabilityError where the stage lacks float16."""
        return self.to(D.float16)

    def bfloat16(self):
        """See torch.Tensor.bfloat16: raises CapabilityError where the stage lacks bfloat16."""
        return self.to(D.bfloat16)

    def byte(self):
        """See torch.Tensor.byte: raises CapabilityError where the stage lacks uint8."""
        return self.to(D.uint8)

    def char(self):
        """See torch.Tensor.char: raises CapabilityError where the stage lacks int8."""
        return self.to(D.int8)

    def short(self):
        """See torch.Tensor.short: raises CapabilityError where the stage lacks int16."""
        return self.to(D.int16)

    def cpu(self):
        """This tensor on the CPU (itself when it is there already)."""
        return self.to("cpu")

    def pin_memory(self, device=None):
        """See torch.Tensor.pin_memory: this CPU tensor in page-locked host memory (itself
        when it is there already), from which copies to the cuda device are DMA transfers
        that ``to("cuda", non_blocking=True)`` need not wait for. Stage 4 with a usable cuda
        device only: elsewhere a RuntimeError, as on a PyTorch build without an accelerator.
        ``device`` is accepted, as PyTorch's deprecated argument, and changes nothing."""
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        if is_pinned(self._data):
            return self
        return ops.PinMemory.apply(self)

    def is_pinned(self, device=None):
        """See torch.Tensor.is_pinned: whether this tensor's elements lie in page-locked host
        memory (only ``pin_memory()`` and ``to("cpu", non_blocking=True)`` from the cuda
        device put them there; never before stage 4)."""
        return is_pinned(self._data)

    def cuda(self, device=None, non_blocking=False):
        """This tensor on the CUDA device (``device``: an index, a string or a device), as
        PyTorch's; DeviceError naming the device and why where the stage has none (every
        stage before stage 4, and stage 4 without a usable GPU)."""
        name = "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else str(device)
        return self.to(check_device(name, "cuda"), non_blocking=non_blocking)

    # ------------------------------------------------------------ autograd

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` in place (floating-point tensors only); see
        ``torch.Tensor.requires_grad_``."""
        if requires_grad and not self.dtype.is_floating_point:
            raise TypeError(f"requires_grad: only floating-point tensors can require gradients, "
                            f"got {self.dtype.name}")
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("requires_grad_: you can only change requires_grad of leaf tensors")
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self):
        """A tensor sharing this one's values, outside the autograd graph; see torch.Tensor.detach."""
        return Tensor._make(self._data)

    def detach_(self):
        """Detach this tensor from the graph in place; see ``torch.Tensor.detach_``."""
        self.grad_fn = None
        self.requires_grad = False
        return self

    def clone(self):
        """A copy that stays in the autograd graph; see torch.clone."""
        return ops.Clone.apply(self)

    def backward(self, gradient=None, retain_graph=False):
        """Accumulate the gradient of this tensor into the leaves' ``.grad``; see torch.Tensor.backward.
        Takes ``gradient`` and ``retain_graph``; ``create_graph`` and ``inputs`` are not supported."""
        autograd.backward([self], [gradient], retain_graph=retain_graph)

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor at the next backward; see torch.Tensor.retain_grad."""
        if self.grad_fn is None:
            return
        node = self.grad_fn
        if node.retained is None:
            node.retained = {}
        import weakref
        node.retained[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self):
        """Whether ``retain_grad()`` was called on this non-leaf tensor; see torch.Tensor.retains_grad."""
        node = self.grad_fn
        return bool(node is not None and node.retained and self._output_nr in node.retained)

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; it may return a
        replacement."""
        if not self.requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't "
                               "require gradient")
        node, i = autograd._edge(self)
        if node.hooks is None:
            node.hooks = {}
        node.hooks.setdefault(i, []).append(hook)
        return hook

    # ------------------------------------------------------------ helpers

    def _dim(self, dim, op, ndim=None):
        n = self.ndim if ndim is None else ndim
        try:
            d = operator.index(dim)
        except TypeError:
            raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}") from None
        lo, hi = (-n, n - 1) if n else (-1, 0)
        if not lo <= d <= hi:
            raise IndexError(f"{op}: dimension out of range (expected to be in range of "
                             f"[{lo}, {hi}], but got {d}) for a tensor of shape {list(self.shape)}")
        return d % n if n else 0

    def _dims(self, dim, op):
        if dim is None or not self.ndim:
            if dim is not None:
                for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
                    self._dim(d, op)  # a 0-d tensor accepts dim 0 and -1, as in PyTorch
            return tuple(range(self.ndim))
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        out = tuple(sorted({self._dim(d, op) for d in dims}))
        if len(out) != len(dims):
            raise ShapeError(f"{op}: dim {list(dims)} appears multiple times in the list of dims")
        return out

    def _new(self, shape, value, dtype, device, op):
        dev = self.device if device is None else check_device(device, op)
        dtype = to_dtype(dtype) or self.dtype
        buf = B.full(shapes.check(shape_arg(shape, op), op, dtype), value, dtype)
        return Tensor._make(place(buf, dev))

    def new_zeros(self, *shape, dtype=None, device=None):
        """Zeros, with this tensor's dtype and device by default; see torch.Tensor.new_zeros."""
        return self._new(shape, 0, dtype, device, "new_zeros")

    def new_ones(self, *shape, dtype=None, device=None):
        """Ones, with this tensor's dtype and device by default; see torch.Tensor.new_ones."""
        return self._new(shape, 1, dtype, device, "new_ones")

    def new_full(self, shape, value, dtype=None, device=None):
        """A tensor of ``shape`` filled with ``value``, with this tensor's dtype and device by default; see
        torch.Tensor.new_full."""
        return self._new((shape,), value, dtype, device, "new_full")

    def new_empty(self, *shape, dtype=None, device=None):
        """See torch.Tensor.new_empty; the contents here are zeros."""
        return self._new(shape, 0, dtype, device, "new_empty")

    def type_as(self, other):
        """This tensor with ``other``'s dtype (see torch.Tensor.type_as)."""
        return self.to(other.dtype)

    def new_tensor(self, data, dtype=None, device=None):
        """A new tensor from ``data``, with this tensor's dtype and device by default; see
        torch.Tensor.new_tensor."""
        dev = self.device if device is None else check_device(device, "new_tensor")
        return Tensor._make(place(Tensor._infer(data, dtype=dtype or self.dtype)._data, dev))

    # ------------------------------------------------------------ indexing

    def __getitem__(self, key):
        """``t[key]`` with ints, slices (positive steps), ``None``, ``...``, bool masks and integer
        tensors, as in NumPy and PyTorch; see ``torch.Tensor.__getitem__``. Basic indexing gives a view on
        stages that have ``views`` (stage 0 copies)."""
        return indexing.getitem(self, key)

    def __setitem__(self, key, value):
        """``t[key] = value`` (a number or a tensor broadcast to the indexed shape), with the keys
        ``t[key]`` takes; see ``torch.Tensor.__setitem__``."""
        indexing.setitem(self, key, value)

    def _set_flat(self, i, value):
        B.put(self._data, place(B.full((1,), i, int64), self.device), B.full((), value, self.dtype))


from . import autograd, indexing  # noqa: E402  (they build on Tensor)

bind(Tensor, ops)  # the core's operators make this class's tensors, through ops's Functions
