"""The Tensor: metadata, dtype promotion, argument checking, and the rich API.

A Tensor holds a backend buffer (``_data``) and its autograd state. Every
differentiable operation goes through a ``Function`` in ``ops.py``; the methods here
check arguments (raising errors that name the op, shapes and dtypes before anything
is touched), promote dtypes and compose primitives.

Whole families of methods live in mixins, each in the module named for it, that the class
lists among its bases: ``MathMethods`` (math_ops.py), ``ContractionMethods``
(contractions.py), ``RearrangingMethods`` (rearranging.py), ``SamplingMethods``
(sampling.py), ``ScanMethods`` (scans.py), ``ScatterMethods`` (scatter.py) and
``SortingMethods`` (sorting.py); the operators are ``TensorCore``'s (tensor_core.py).
"""
import math
import operator

from stage0_python.vocabulary import UNARY, ArgumentError

from . import backend as B
from . import dtypes as D
from . import printing, shapes
from .autocast import lower as _lower
from .capabilities import lacking
from .device import DeviceError, check_device, device, device_of, is_pinned, place  # noqa: F401  (device is public here)
from .dtypes import bool_, float32, float64, int32, int64
from .shapes import IndexRangeError, ShapeError
from .tensor_core import Size, TensorCore  # noqa: F401  (Size is public here)
# the method mixins Tensor lists among its bases, and the forms its methods come in
from .contractions import ContractionMethods
from .math_ops import MathMethods
from .method_forms import ValuesIndices, accepts_axis, inplace_form
from .rearranging import RearrangingMethods
from .sampling import SamplingMethods
from .scans import ScanMethods
from .scatter import ScatterMethods
from .sorting import SortingMethods


_Device = device


def _shape_arg(args, op):
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = tuple(args[0])
    try:
        shape = tuple(operator.index(s) for s in args)
    except TypeError:
        raise TypeError(f"{op}: sizes must be ints, got {args!r}") from None
    return shape


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


def _to_dtype(dtype, op="tensor"):
    """``dtype`` as this stage's DType (None stays None); CapabilityError for a dtype that
    exists by name only here."""
    if dtype is None:
        return None
    if not isinstance(dtype, D.DType):
        if isinstance(dtype, str) and dtype in D.BY_NAME:
            dtype = D.BY_NAME[dtype]
        elif dtype in (float, int, bool):
            dtype = {float: D.get_default_dtype(), int: int64, bool: bool_}[dtype]
        else:
            name = getattr(dtype, "name", None) or str(dtype)
            if name not in D.BY_NAME:  # a NumPy dtype is found by its name
                raise TypeError(f"unknown dtype {dtype!r}")
            dtype = D.BY_NAME[name]
    if dtype.name in D.LACKING:
        raise lacking(__name__, dtype.name, f"{op}: cannot make a tensor of dtype {dtype.name}; "
                      f"this stage computes in {', '.join(d.name for d in D.ALL)}")
    return dtype


# PyTorch's range for a value written as an integer: uint8 also takes -255..-1 (the two's
# complement wraps them, as in C), but a float below 0 is refused
_INT_RANGE = {D.uint8: (-255, 255), D.int8: (-128, 127), D.int16: (-2**15, 2**15 - 1),
              int32: (-2**31, 2**31 - 1), int64: (-2**63, 2**63 - 1)}


def _check_fits(values, dtype):
    """Input must fit the integer dtype it becomes: results of arithmetic wrap around (as
    in C and PyTorch), but a value the user wrote never silently changes."""
    bounds = _INT_RANGE.get(dtype)
    if bounds is None or not values:
        return
    lo, hi = min(values), max(values)
    if lo < bounds[0] or hi > bounds[1] or (not dtype.is_signed and isinstance(lo, float) and lo < 0):
        bad = hi if hi > bounds[1] else lo
        raise ValueError(f"tensor: value {bad} cannot be converted to {dtype.name} without overflow")


def _buffer_from(data, dtype):
    dtype = _to_dtype(dtype)
    if isinstance(data, Tensor):
        buf = B.copy(data._data)
        return B.cast(buf, dtype) if dtype is not None else buf
    if hasattr(data, "__array_interface__") and hasattr(data, "tolist"):  # a NumPy array
        np_name = str(data.dtype)
        src = D.BY_NAME.get(np_name) or (bool_ if np_name == "bool" else None)
        if src is None:
            raise TypeError(f"tensor: unsupported NumPy dtype {np_name}")
        if dtype is None:  # converting to a dtype named with dtype= is fine; keeping it is not
            src = _to_dtype(src)
        flat = data.reshape(-1)  # a view where one stride reaches every element, else a copy
        if not flat.flags.c_contiguous:  # sliced, reversed or broadcast: its bytes are not in order
            flat = flat.copy()
        if (dtype is None or dtype is src) and src.name == np_name and flat.size:
            raw = memoryview(flat).cast("B")  # the bytes as they are: no per-element conversion
            buf = B.from_buffer(bytearray(raw) if raw.readonly else raw, src)
            return B.reshape(B.copy(buf), tuple(data.shape))
        vals = flat.tolist()
        _check_fits(vals, dtype or src)
        return B.from_list(vals, tuple(data.shape), dtype or src)
    if dtype is not None and isinstance(data, list) and data and not isinstance(data[0], (list, tuple)):
        try:  # a flat list of numbers: no per-element checks (datasets build large ones)
            _check_fits(data, dtype)
            return B.from_list(data, (len(data),), dtype)
        except TypeError:
            pass
    flat, shape = _nested(data)
    dtype = dtype or D.infer(flat)
    _check_fits(flat, dtype)
    return B.from_list(flat, shape, dtype)


def _legacy_buffer(args, dtype, op):
    """The buffer ``torch.Tensor(*args)``-style constructors make: sizes give a zero-filled
    shape (PyTorch leaves it uninitialised), a tensor keeps its dtype, and any other data
    becomes ``dtype``, by default the default dtype."""
    if not args:
        args = (0,)
    if isinstance(args[0], Size) or all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        shape = shapes.check(_shape_arg(args, op), op, dtype or D.get_default_dtype())
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


class Tensor(TensorCore, ContractionMethods, MathMethods, RearrangingMethods, SamplingMethods, ScanMethods,
             ScatterMethods, SortingMethods):
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
        self._init(_legacy_buffer(args, _to_dtype(dtype), "Tensor"), requires_grad)

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

    @property
    def T(self):
        """The tensor with its dims reversed; see torch.Tensor.T (a view on stages that have ``views``;
        stage 0 copies, see ``LACKS``)."""
        return self.permute(tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The last two dims swapped; see torch.Tensor.mT (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``)."""
        return self.transpose(-2, -1)

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
        dtype = _to_dtype(dtype, "to")
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
        dtype = _to_dtype(dtype) or self.dtype
        buf = B.full(shapes.check(_shape_arg(shape, op), op, dtype), value, dtype)
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

    # ------------------------------------------------------------ elementwise

    def __pow__(self, o):
        return self._binary(o, "pow", ops.Pow)

    def __rpow__(self, o):
        return self._binary(o, "pow", ops.Pow, True)

    def __floordiv__(self, o):
        return self._binary(o, "floordiv", None)

    def __rfloordiv__(self, o):
        return self._binary(o, "floordiv", None, True)

    def __mod__(self, o):
        """The remainder with the sign of the divisor (the ``%`` operator); see torch.remainder."""
        return self._binary(o, "remainder", None)

    def __rmod__(self, o):
        return self._binary(o, "remainder", None, True)

    remainder = __mod__

    def __matmul__(self, o):
        return self.matmul(o)

    def __rmatmul__(self, o):
        return Tensor._infer(o).matmul(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    # ~ & | ^ << >> and the rest of elementwise math: MathMethods (math_ops.py)

    eq, ne, lt, le, gt, ge = (TensorCore.__eq__, TensorCore.__ne__, TensorCore.__lt__, TensorCore.__le__,
                              TensorCore.__gt__, TensorCore.__ge__)

    def add(self, other, alpha=1):
        """``self + alpha * other``; see torch.add."""
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other, alpha=1):
        """``self - alpha * other``; see torch.sub."""
        return self - (other * alpha if alpha != 1 else other)

    def mul(self, other):
        """``self * other``; see torch.mul."""
        return self * other

    def div(self, other, rounding_mode=None):
        """``self / other``; with ``rounding_mode`` "floor" or "trunc" the quotient rounded
        down or toward zero, which keeps an integer dtype, as in PyTorch."""
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self // other
        if rounding_mode == "trunc":
            dtype = D.result_type(self, other)
            if dtype.is_floating_point:
                q = self / other
                return q.sign() * q.abs().floor()
            if not isinstance(other, Tensor):  # the number in the integer dtype first (uint8 wraps -3)
                other = self._scalar(other, dtype)
            q = self // other  # integers stay integers (and division by zero is refused)
            # floor and trunc differ only for an inexact negative quotient: one step up
            return q + ((q * other != self) & ((self < 0) != (other < 0)))
        raise ArgumentError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")

    def pow(self, other):
        """``self ** other``; see torch.pow."""
        return self ** other

    def logical_not(self):
        """See torch.logical_not."""
        return Tensor._make(B.unary("logical_not", self._data))

    def logical_and(self, other):
        """See torch.logical_and."""
        return self.bool()._binary(other.bool() if isinstance(other, Tensor) else other, "logical_and", None)

    def logical_or(self, other):
        """See torch.logical_or."""
        return self.bool()._binary(other.bool() if isinstance(other, Tensor) else other, "logical_or", None)

    def logical_xor(self, other):
        """See torch.logical_xor."""
        return self.bool()._binary(other.bool() if isinstance(other, Tensor) else other, "logical_xor", None)

    def isnan(self):
        """See torch.isnan."""
        return Tensor._make(B.unary("isnan", self._data))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise ``|self - other| <= atol + rtol * |other|``, as ``torch.isclose``:
        equal values (equal infinities included) are close, NaN only with ``equal_nan``, an
        infinite difference never. Both tensors have one dtype (DTypeMismatchError else);
        integers and bools are compared in the default float dtype, as in PyTorch."""
        if not isinstance(other, Tensor):
            raise TypeError(f"isclose: expected a Tensor as other, got {type(other).__name__}")
        if self.dtype is not other.dtype:
            raise D.DTypeMismatchError(f"isclose: cannot compare tensors of different dtypes "
                                       f"{self.dtype.name} and {other.dtype.name}")
        for name, tol in (("rtol", rtol), ("atol", atol)):
            if not tol >= 0:
                raise ArgumentError(f"isclose: {name} must be greater than or equal to zero, got {tol}")
        close = self == other
        if equal_nan and self.dtype.is_floating_point:
            close = close | (self.isnan() & other.isnan())
        if rtol == 0 and atol == 0:  # only equality is close: inf - inf would not be
            return close
        a, b = self, other
        if not a.dtype.is_floating_point:  # a uint8 difference would wrap
            a, b = a.to(D.get_default_dtype()), b.to(D.get_default_dtype())
        err = (a - b).abs()
        # an infinite error is never within tolerance, though inf <= atol + rtol * inf holds
        return close | (err.isfinite() & (err <= atol + (b * rtol).abs()))

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """True when every element of ``self`` is ``isclose`` to ``other``'s."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def _unary(self, op):
        x = self  # integers made the default float dtype where the vocabulary says the op promotes them
        if not x.dtype.is_floating_point:
            if UNARY[op].integers == "promote":
                x = x.to(D.get_default_dtype())
            elif x.dtype is bool_:
                raise TypeError(f"{op}: not supported on bool tensors")
        return ops.Unary.apply(x, op)

    def exp(self):
        """See torch.exp."""
        return self._unary("exp")

    def log(self):
        """See torch.log."""
        return self._unary("log")

    def log1p(self):
        """See torch.log1p."""
        return self._unary("log1p")

    def sqrt(self):
        """See torch.sqrt."""
        return self._unary("sqrt")

    def rsqrt(self):
        """``1 / sqrt(x)``; see torch.rsqrt."""
        return self._unary("rsqrt")

    def sin(self):
        """See torch.sin."""
        return self._unary("sin")

    def cos(self):
        """See torch.cos."""
        return self._unary("cos")

    def tanh(self):
        """See torch.tanh."""
        return self._unary("tanh")

    def sigmoid(self):
        """See torch.sigmoid."""
        return self._unary("sigmoid")

    def gelu(self):
        """The GELU of each element (erf form); see torch.nn.functional.gelu (PyTorch has no such method)."""
        return self._unary("gelu")

    def silu(self):
        """``x * sigmoid(x)`` of each element; see torch.nn.functional.silu (PyTorch has no such method)."""
        return self._unary("silu")

    def erf(self):
        """See torch.erf."""
        return self._unary("erf")

    def reciprocal(self):
        """``1 / x``; see torch.reciprocal."""
        return self._unary("reciprocal")

    def relu(self):
        """``max(x, 0)``; see torch.relu."""
        return self._unary("relu")

    def abs(self):
        """See torch.abs."""
        return self._unary("abs")

    def sign(self):
        """See torch.sign."""
        return self._unary("sign")

    def neg(self):
        """``-self``; see torch.neg."""
        return -self

    def floor(self):
        """See torch.floor (integer tensors are returned unchanged)."""
        return self if not self.dtype.is_floating_point else self._unary("floor")

    def ceil(self):
        """See torch.ceil (integer tensors are returned unchanged)."""
        return self if not self.dtype.is_floating_point else self._unary("ceil")

    def round(self):
        """Round half to even; see torch.round (integer tensors are returned unchanged)."""
        return self if not self.dtype.is_floating_point else self._unary("round")

    def square(self):
        """``x * x``; see torch.square."""
        return self * self

    def maximum(self, other):
        """Elementwise maximum (NaN propagates); see torch.maximum."""
        return self._binary(other, "maximum", ops.Maximum)

    def minimum(self, other):
        """Elementwise minimum (NaN propagates); see torch.minimum."""
        return self._binary(other, "minimum", ops.Minimum)

    def clamp(self, min=None, max=None):
        """Limit every element to ``[min, max]`` (either may be None, not both); see torch.clamp. ``clip``
        is the same function."""
        if min is None and max is None:
            raise ArgumentError("clamp: at least one of min and max must be given")
        dtype = D.result_type(*(v for v in (self, min, max) if v is not None))
        x = self.to(dtype)
        lo = None if min is None else (min.to(dtype) if isinstance(min, Tensor) else self._scalar(min, dtype))
        hi = None if max is None else (max.to(dtype) if isinstance(max, Tensor) else self._scalar(max, dtype))
        for bound in (lo, hi):
            if bound is not None and B.broadcast_shapes(x.shape, bound.shape) != tuple(x.shape):
                raise ShapeError(f"clamp: bound of shape {list(bound.shape)} does not broadcast to "
                                 f"{list(x.shape)}")
        return ops.Clamp.apply(x, lo, hi)

    clip = clamp

    def where(self, condition, other):
        """``self`` where ``condition``, ``other`` elsewhere; see torch.Tensor.where."""
        return where(condition, self, other)

    @accepts_axis
    def softmax(self, dim):
        """See torch.softmax."""
        return functional.softmax(self, dim)

    @accepts_axis
    def log_softmax(self, dim):
        """See torch.log_softmax."""
        return functional.log_softmax(self, dim)

    def masked_fill(self, mask, value):
        """``value`` where the bool ``mask`` is True, ``self`` elsewhere; see torch.Tensor.masked_fill."""
        if not isinstance(mask, Tensor) or mask.dtype is not bool_:
            raise TypeError(f"masked_fill: mask must be a bool tensor, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        if isinstance(value, Tensor) and value.ndim:
            raise ShapeError(f"masked_fill: value must be a number or a 0-dim tensor, got shape "
                             f"{list(value.shape)}")
        if shapes.broadcast("masked_fill", self.shape, mask.shape) != tuple(self.shape):
            raise ShapeError(f"masked_fill: mask of shape {list(mask.shape)} cannot be broadcast to "
                             f"the input's shape {list(self.shape)}")
        value = value.to(self.dtype) if isinstance(value, Tensor) else self._scalar(value, self.dtype)
        return _where(mask, value, self, "masked_fill")

    def lerp(self, end, weight):
        # from the nearer end, as PyTorch does: exact at weight 0 and at weight 1
        """``self + weight * (end - self)``, exact at weight 0 and 1; see torch.lerp."""
        if isinstance(weight, Tensor):
            return where(weight < 0.5, self + (end - self) * weight, end - (end - self) * (1 - weight))
        if weight < 0.5:
            return self + (end - self) * weight
        return end - (end - self) * (1 - weight)

    def clamp_min(self, min):
        """See torch.Tensor.clamp_min."""
        return self.clamp(min=min)

    def clamp_max(self, max):
        """See torch.Tensor.clamp_max."""
        return self.clamp(max=max)

    def addcmul(self, tensor1, tensor2, value=1):
        """``self + value * tensor1 * tensor2``; see torch.addcmul."""
        return self + tensor1 * tensor2 * value

    def addcdiv(self, tensor1, tensor2, value=1):
        """``self + value * tensor1 / tensor2``; see torch.addcdiv."""
        return self + tensor1 / tensor2 * value

    # ------------------------------------------------------------ reductions

    def _reduce_dtype(self):
        return int64 if not self.dtype.is_floating_point else self.dtype

    @accepts_axis
    def sum(self, dim=None, keepdim=False, dtype=None):
        """The sum over ``dim`` (integers and bools sum as int64); see torch.sum."""
        axes = self._dims(dim, "sum")
        out = _to_dtype(dtype) or self._reduce_dtype()
        x = self if self.dtype is out else self.to(out)
        return ops.Sum.apply(x, axes, keepdim)

    @accepts_axis
    def mean(self, dim=None, keepdim=False, dtype=None):
        """The mean over ``dim`` (a floating-point tensor, or ``dtype=`` one); see torch.mean."""
        x = self.to(dtype) if dtype is not None else self
        if not x.dtype.is_floating_point:
            raise TypeError(f"mean: input dtype must be floating point, got {x.dtype.name}")
        axes = x._dims(dim, "mean")
        n = B.prod(x.shape[d] for d in axes)
        return x.sum(dim=axes, keepdim=keepdim) / (n if n else math.nan)

    @accepts_axis
    def prod(self, dim=None, keepdim=False):
        """The product over ``dim``; see torch.prod."""
        axes = self._dims(dim, "prod")
        x = self if self.dtype is self._reduce_dtype() else self.to(self._reduce_dtype())
        return ops.Prod.apply(x, axes, keepdim)

    def _extreme(self, op, dim, keepdim):
        if dim is None:
            if self.numel() == 0:
                raise ValueError(f"{op}: cannot reduce an empty tensor of shape {list(self.shape)}")
            return ops.Extreme.apply(self, op, tuple(range(self.ndim)), False)
        d = self._dim(dim, op)
        if self.ndim and self.shape[d] == 0:
            raise ValueError(f"{op}: cannot reduce dim {d} of size 0 (shape {list(self.shape)})")
        if not self.ndim:
            return ValuesIndices(self, Tensor._make(place(B.full((), 0, int64), self.device)))
        return ValuesIndices(*ops.ExtremeDim.apply(self, op, d, keepdim))

    @accepts_axis
    def max(self, dim=None, keepdim=False):
        """The maximum; with ``dim``, ``(values, indices)``; with a tensor, ``maximum``. See torch.max."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        return self._extreme("max", dim, keepdim)

    @accepts_axis
    def min(self, dim=None, keepdim=False):
        """The minimum; with ``dim``, ``(values, indices)``; with a tensor, ``minimum``. See torch.min."""
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        return self._extreme("min", dim, keepdim)

    @accepts_axis
    def amax(self, dim=None, keepdim=False):
        """The maximum over ``dim`` (one or several dims), without indices; see torch.amax."""
        axes = self._dims(dim, "amax")
        if any(self.shape[d] == 0 for d in axes):
            raise ValueError(f"amax: cannot reduce an empty dim of shape {list(self.shape)}")
        return ops.Extreme.apply(self, "max", axes, keepdim)

    @accepts_axis
    def amin(self, dim=None, keepdim=False):
        """The minimum over ``dim`` (one or several dims), without indices; see torch.amin."""
        axes = self._dims(dim, "amin")
        if any(self.shape[d] == 0 for d in axes):
            raise ValueError(f"amin: cannot reduce an empty dim of shape {list(self.shape)}")
        return ops.Extreme.apply(self, "min", axes, keepdim)

    def _arg(self, op, dim, keepdim):
        if dim is None:
            if self.numel() == 0:
                raise ValueError(f"{op}: cannot reduce an empty tensor of shape {list(self.shape)}")
            out = Tensor._make(B.arg_reduce(op, B.reshape(self._data, (self.numel(),)), 0, False))
            return out.reshape((1,) * self.ndim) if keepdim else out
        if not self.ndim:
            return Tensor._make(place(B.full((), 0, int64), self.device))
        d = self._dim(dim, op)
        if self.shape[d] == 0:  # only the reduced dim must hold something: (0, 4) over dim 1 is (0,)
            raise ValueError(f"{op}: cannot reduce dim {d} of size 0 (shape {list(self.shape)})")
        return Tensor._make(B.arg_reduce(op, self._data, d, keepdim))

    @accepts_axis
    def argmax(self, dim=None, keepdim=False):
        """The index of the maximum (of the flattened tensor when ``dim`` is None); see torch.argmax."""
        return self._arg("argmax", dim, keepdim)

    @accepts_axis
    def argmin(self, dim=None, keepdim=False):
        """The index of the minimum (of the flattened tensor when ``dim`` is None); see torch.argmin."""
        return self._arg("argmin", dim, keepdim)

    @accepts_axis
    def var(self, dim=None, unbiased=None, keepdim=False, correction=None):
        """The variance over ``dim`` (``correction`` or ``unbiased`` as PyTorch's); see torch.var."""
        if not self.dtype.is_floating_point:
            raise TypeError(f"var: input dtype must be floating point, got {self.dtype.name}")
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        axes = self._dims(dim, "var")
        n = B.prod(self.shape[d] for d in axes)
        centered = self - self.mean(dim=axes, keepdim=True)
        return (centered * centered).sum(dim=axes, keepdim=keepdim) / max(n - correction, 0)

    @accepts_axis
    def std(self, dim=None, unbiased=None, keepdim=False, correction=None):
        """The standard deviation over ``dim`` (``correction`` or ``unbiased`` as PyTorch's); see
        torch.std."""
        return ops.SafeSqrt.apply(self.var(dim, unbiased, keepdim, correction))

    @accepts_axis
    def logsumexp(self, dim, keepdim=False):
        """``log(sum(exp(x)))`` over ``dim``, computed stably; see torch.logsumexp."""
        x = self if self.dtype.is_floating_point else self.to(D.get_default_dtype())
        axes = x._dims(dim, "logsumexp")
        # over an empty dim the sum is 0 and its log -inf: no shift (a 0 of the kept shape)
        m = x.detach()
        m = m.amax(dim=axes, keepdim=True) if all(x.shape[d] for d in axes) else m.sum(dim=axes, keepdim=True)
        m = where(m.abs() == math.inf, 0.0, m)  # all -inf (or inf) rows: no shift
        out = (x - m).exp().sum(dim=axes, keepdim=True).log() + m
        return out if keepdim else out.squeeze(axes)

    def norm(self, p=2, dim=None, keepdim=False):
        """The ``p``-norm over ``dim`` (all elements by default); see torch.Tensor.norm."""
        if p == 2:
            return ops.SafeSqrt.apply((self * self).sum(dim=dim, keepdim=keepdim))
        if p == 1:
            return self.abs().sum(dim=dim, keepdim=keepdim)
        if p in (math.inf, "inf"):
            return self.abs().amax(dim=dim, keepdim=keepdim)
        return (self.abs() ** p).sum(dim=dim, keepdim=keepdim) ** (1.0 / p)

    @accepts_axis
    def any(self, dim=None, keepdim=False):
        """Whether any element (over ``dim``) is nonzero; see torch.any."""
        return Tensor._make(B.reduce("any", self._data, self._dims(dim, "any"), keepdim))

    @accepts_axis
    def all(self, dim=None, keepdim=False):
        """Whether every element (over ``dim``) is nonzero; see torch.all."""
        return Tensor._make(B.reduce("all", self._data, self._dims(dim, "all"), keepdim))

    def trace(self):
        """The sum of the main diagonal of a 2-d tensor (see torch.trace)."""
        if self.ndim != 2:
            raise ShapeError(f"trace: expected a 2-d tensor, got shape {list(self.shape)}")
        return self.diagonal().sum()

    @accepts_axis
    def count_nonzero(self, dim=None):
        """The number of nonzero elements (over ``dim``); see torch.count_nonzero."""
        return (self != 0).sum(dim=dim)

    # ------------------------------------------------------------ matmul

    def matmul(self, other):
        """Matrix product with NumPy's rules for 1-D and batched operands (the ``@`` operator); see
        torch.matmul."""
        a, b = _lower(self, other)
        if not isinstance(b, Tensor):
            raise TypeError(f"matmul: expected a Tensor, got {type(b).__name__}")
        if a.dtype is not b.dtype:
            raise TypeError(f"matmul: expected both operands to have the same dtype, got "
                            f"{a.dtype.name} and {b.dtype.name}")
        if a.dtype is bool_:
            raise TypeError("matmul: not supported for bool tensors")
        if not a.ndim or not b.ndim:
            raise ShapeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                             f"{list(a.shape)} and {list(b.shape)}")
        if a.shape[-1] != b.shape[-2 if b.ndim > 1 else -1]:
            raise ShapeError(f"matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                             f"multiplied ({a.shape[-1]} != {b.shape[-2 if b.ndim > 1 else -1]}; "
                             f"dtype {a.dtype.name})")
        if a.ndim == 1 and b.ndim == 1:
            return a.unsqueeze(0).matmul(b.unsqueeze(1)).reshape(())
        if a.ndim == 1:
            return a.unsqueeze(0).matmul(b).squeeze(-2)
        if b.ndim == 1:
            return a.matmul(b.unsqueeze(1)).squeeze(-1)
        if b.ndim == 2 and a.ndim > 2:
            # fold the batch into rows: one large matmul instead of a broadcast weight
            return a.reshape(-1, a.shape[-1]).matmul(b).reshape(*a.shape[:-1], b.shape[-1])
        try:
            batch = shapes.broadcast("matmul", a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ShapeError(f"matmul: batch dims of {list(a.shape)} and {list(b.shape)} cannot be "
                             f"broadcast (dtype {a.dtype.name})") from None
        shapes.check((*batch, a.shape[-2], b.shape[-1]), "matmul", a.dtype)
        if tuple(a.shape[:-2]) != batch:
            a = a.expand(*batch, *a.shape[-2:])
        if tuple(b.shape[:-2]) != batch:
            b = b.expand(*batch, *b.shape[-2:])
        return ops.MatMul.apply(a, b)

    def mm(self, other):
        """Product of two 2-D tensors; see torch.mm."""
        if self.ndim != 2 or other.ndim != 2:
            raise ShapeError(f"mm: expected 2-D tensors, got {list(self.shape)} and {list(other.shape)}")
        return self.matmul(other)

    def bmm(self, other):
        """Batched matrix product of two 3-D tensors; see torch.bmm."""
        if self.ndim != 3 or other.ndim != 3 or self.shape[0] != other.shape[0]:
            raise ShapeError(f"bmm: expected 3-D tensors with equal batch, got {list(self.shape)} "
                             f"and {list(other.shape)}")
        return self.matmul(other)

    def dot(self, other):
        """Inner product of two 1-D tensors; see torch.dot."""
        if self.ndim != 1 or other.ndim != 1:
            raise ShapeError(f"dot: expected 1-D tensors, got {list(self.shape)} and {list(other.shape)}")
        return self.matmul(other)

    # ------------------------------------------------------------ movement

    def reshape(self, *shape):
        """The same elements in ``shape`` (one dim may be -1); see torch.reshape (a view on stages that
        have ``views``; stage 0 copies, see ``LACKS``)."""
        shape = _shape_arg(shape, "reshape")
        n = self.numel()
        if shape.count(-1) > 1:
            raise ShapeError(f"reshape: only one dimension can be inferred, got {list(shape)}")
        if -1 in shape:
            known = shapes.numel(s for s in shape if s != -1)
            if known == 0 or n % known:
                raise ShapeError(f"reshape: shape {list(shape)} is invalid for input of size {n}")
            shape = tuple(n // known if s == -1 else s for s in shape)
        if any(s < 0 for s in shape) or shapes.numel(shape) != n:
            raise ShapeError(f"reshape: shape {list(shape)} is invalid for input of size {n} "
                             f"(shape {list(self.shape)})")
        if not n:  # the count matches trivially; the strides must still fit
            shapes.check(shape, "reshape")
        if shape == tuple(self.shape):
            return self
        return ops.Reshape.apply(self, shape)

    def view(self, *shape):
        """``reshape`` that must not copy: an error where the strides do not allow it.
        ``view(dtype)`` reinterprets the bits, as PyTorch's (see ``view_dtype``)."""
        if len(shape) == 1 and (isinstance(shape[0], D.DType)
                                or (isinstance(shape[0], str) and shape[0] in D.BY_NAME)):  # not a list
            return self._view_dtype(_to_dtype(shape[0], "view"))
        out = self.reshape(*shape)
        # a copy standing for a view (stage 0) is viewable exactly where PyTorch's view is
        copied = views.copied(self)
        if out is not self and (B.storage_id(out._data) != B.storage_id(self._data)
                                or (copied and out._view is None)):
            strides = copied.layout[1] if copied else self.stride()
            raise ShapeError(f"view: size {list(out.shape)} is not compatible with the input's size "
                             f"{list(self.shape)} and stride {list(strides)} (at least one "
                             f"dimension spans two contiguous subspaces); use .reshape(...) instead")
        return out

    def _view_dtype(self, dtype):
        """The same bytes read as ``dtype``: the last dim scales by the ratio of the element
        sizes, as in PyTorch. Where the backend aliases storage across dtypes the result
        shares ``self``'s memory; elsewhere (the LACKS names ``dtype_views``) it is a copy,
        and an in-place write into it is refused rather than lost. Not differentiable. bool is
        refused: a byte other than 0 or 1 is no bool."""
        if dtype is self.dtype:
            return self
        if bool_ in (self.dtype, dtype):
            raise TypeError(f"view: reinterpreting {self.dtype.name} as {dtype.name} is not supported "
                            f"(bool holds only 0 and 1)")
        old, new = self.dtype.itemsize, dtype.itemsize
        shape = list(self.shape)
        if old != new:
            # on a stage without views, the strides the PyTorch view would have
            copied = views.copied(self)
            strides, offset = copied.layout[1:] if copied else (self.stride(), self.storage_offset())
            if not shape or (shape[-1] * old) % new or (strides[-1] != 1 and shape[-1] != 1):
                raise ShapeError(f"view: a tensor of shape {shape} and dtype {self.dtype.name} cannot be "
                                 f"read as {dtype.name}: the last dim must be contiguous and hold a whole "
                                 f"number of {dtype.name} elements")
            if any((s * old) % new for s in (offset, *strides[:-1])):
                raise ShapeError(f"view: the storage offset {offset} and strides {list(strides)} of a "
                                 f"{self.dtype.name} tensor must be whole numbers of {dtype.name} elements")
            shape[-1] = shape[-1] * old // new
        out = Tensor._make(B.view_dtype(self._data, dtype))
        if not B.shares_storage(out._data, self._data):  # a copy: a write into it could not reach self
            out._view = views.ViewRecord.copy((tuple(shape), B.contiguous_strides(shape), 0))
        return out

    def view_as(self, other):
        """``self.reshape(other.shape)``; see torch.Tensor.view_as. ``reshape_as`` is the same function."""
        return self.reshape(other.shape)

    reshape_as = view_as

    def flatten(self, start_dim=0, end_dim=-1):
        """Merge dims ``start_dim`` to ``end_dim`` into one; see torch.flatten."""
        if not self.ndim:
            return self.reshape(1)
        s, e = self._dim(start_dim, "flatten"), self._dim(end_dim, "flatten")
        if s > e:
            raise ShapeError(f"flatten: start_dim {start_dim} cannot come after end_dim {end_dim}")
        shape = self.shape
        return self.reshape(*shape[:s], B.prod(shape[s:e + 1]), *shape[e + 1:])

    def unflatten(self, dim, sizes):
        """Split dim ``dim`` into ``sizes``; see torch.unflatten."""
        d = self._dim(dim, "unflatten")
        return self.reshape(*self.shape[:d], *sizes, *self.shape[d + 1:])

    @accepts_axis
    def squeeze(self, dim=None):
        """Remove dims of size 1 (all, or those in ``dim``); see torch.squeeze (a view on stages that have
        ``views``; stage 0 copies, see ``LACKS``)."""
        if dim is None:
            axes = [d for d, n in enumerate(self.shape) if n == 1]
        else:
            axes = [d for d in self._dims(dim, "squeeze") if self.shape[d] == 1]
        if not axes:
            return self
        return self.reshape(*(n for d, n in enumerate(self.shape) if d not in axes))

    @accepts_axis
    def unsqueeze(self, dim):
        """Insert a dim of size 1 at ``dim``; see torch.unsqueeze (a view on stages that have ``views``;
        stage 0 copies, see ``LACKS``)."""
        d = self._dim(dim, "unsqueeze", self.ndim + 1)
        shape = list(self.shape)
        shape.insert(d, 1)
        return self.reshape(shape)

    def permute(self, *dims):
        """The dims reordered as ``dims``; see torch.permute (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``)."""
        dims = _shape_arg(dims, "permute")
        if len(dims) != self.ndim:
            raise ShapeError(f"permute: number of dims {len(dims)} does not match the tensor's "
                             f"{self.ndim} (shape {list(self.shape)})")
        dims = tuple(self._dim(d, "permute") for d in dims)
        if len(set(dims)) != len(dims):
            raise ShapeError(f"permute: repeated dim in {list(dims)}")
        if dims == tuple(range(self.ndim)):
            return self
        return ops.Permute.apply(self, dims)

    def transpose(self, dim0, dim1):
        """Swap ``dim0`` and ``dim1``; see torch.transpose (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``). ``swapaxes`` is the same function."""
        d0, d1 = self._dim(dim0, "transpose"), self._dim(dim1, "transpose")
        dims = list(range(self.ndim))
        dims[d0], dims[d1] = dims[d1], dims[d0]
        return self.permute(dims)

    swapaxes = transpose

    def t(self):
        """Transpose a tensor of at most 2 dims; see torch.t (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``)."""
        if self.ndim > 2:
            raise ShapeError(f"t: expects a tensor with <= 2 dimensions, got {self.ndim}")
        return self.T

    def expand(self, *sizes):
        """The tensor broadcast to ``sizes`` (-1 keeps a dim); see torch.Tensor.expand (a view on stages
        that have ``views``; stage 0 copies, see ``LACKS``)."""
        sizes = _shape_arg(sizes, "expand")
        if len(sizes) < self.ndim:
            raise ShapeError(f"expand: the number of sizes ({len(sizes)}) must be at least the "
                             f"number of dims ({self.ndim}), shape {list(self.shape)}")
        pad = len(sizes) - self.ndim
        shape = []
        for i, s in enumerate(sizes):
            cur = self.shape[i - pad] if i >= pad else None
            if s == -1:
                if cur is None:
                    raise ShapeError("expand: -1 is not allowed for a new leading dimension")
                s = cur
            elif s < 0:
                raise ShapeError(f"expand: negative size {s} in {list(sizes)} (shape {list(self.shape)})")
            elif cur is not None and cur != 1 and cur != s:
                raise ShapeError(f"expand: the size of dim {i - pad} ({cur}) must match the "
                                 f"expanded size {s} (shape {list(self.shape)} to {list(sizes)})")
            shape.append(s)
        shape = shapes.check(shape, "expand")
        if shape == tuple(self.shape):
            return self
        return ops.Expand.apply(self, shape)

    def expand_as(self, other):
        """``self.expand(other.shape)``; see torch.Tensor.expand_as."""
        return self.expand(other.shape)

    def broadcast_to(self, shape):
        """The tensor broadcast to ``shape``; see torch.broadcast_to (a view on stages that have ``views``;
        stage 0 copies, see ``LACKS``)."""
        return self.expand(shape)

    def contiguous(self):
        """This tensor if its elements lie in row-major order, else a row-major copy."""
        if not B.is_contiguous(self._data):
            return ops.Contiguous.apply(self)
        copied = views.copied(self)
        if copied is not None and not _dense(*copied.layout[:2]):
            return self.clone()  # PyTorch copies this layout, so the result is no view
        return self

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal at ``offset`` between ``dim1`` and ``dim2``, as the last dim; see torch.diagonal (a
        view on stages that have ``views``; stage 0 copies, see ``LACKS``)."""
        d1, d2 = self._dim(dim1, "diagonal"), self._dim(dim2, "diagonal")
        if d1 == d2:
            raise ShapeError(f"diagonal: dim1 and dim2 cannot be the same dimension, got {dim1} and "
                             f"{dim2} (shape {list(self.shape)})")
        return ops.Diagonal.apply(self, operator.index(offset), d1, d2)

    def unfold(self, dimension, size, step):
        """Every window of ``size`` elements, ``step`` apart, along ``dimension``, as a new
        last dim (convolution and pooling as a view)."""
        d = self._dim(dimension, "unfold")
        n = self.shape[d] if self.ndim else 1
        if not 0 <= size <= n:
            raise ShapeError(f"unfold: size {size} exceeds dimension {d} of size {n} "
                             f"(shape {list(self.shape)})")
        if step <= 0:
            raise ArgumentError(f"unfold: step must be positive, got {step}")
        return ops.Windows.apply(self, d, size, step)

    @accepts_axis
    def select(self, dim, index):
        """The slice at ``index`` along ``dim``, which it removes (see torch.Tensor.select)."""
        d = self._dim(dim, "select")
        return self[(slice(None),) * d + (index,)]

    @accepts_axis
    def narrow(self, dim, start, length):
        """``length`` entries of ``dim`` from ``start``; see torch.narrow (a view on stages that have
        ``views``; stage 0 copies, see ``LACKS``)."""
        d = self._dim(dim, "narrow")
        n = self.shape[d]
        if start < 0:
            start += n
        if not (0 <= start and length >= 0 and start + length <= n):
            raise IndexError(f"narrow: start {start} + length {length} exceeds dimension {d} of "
                             f"size {n}")
        key = [slice(None)] * self.ndim
        key[d] = slice(start, start + length)
        return self[tuple(key)]

    def split(self, split_size_or_sections, dim=0):
        """Split along ``dim`` into pieces of one size or of the listed sizes; see torch.split (a view on
        stages that have ``views``; stage 0 copies, see ``LACKS``)."""
        d = self._dim(dim, "split")
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            if step <= 0:
                raise ShapeError(f"split: split_size must be positive, got {step}")
            sizes = [min(step, n - i) for i in range(0, n, step)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ShapeError(f"split: sections {sizes} do not sum to dim {d} of size {n}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return tuple(out)

    @accepts_axis
    def chunk(self, chunks, dim=0):
        """Split into ``chunks`` pieces along ``dim``; see torch.chunk (a view on stages that have
        ``views``; stage 0 copies, see ``LACKS``)."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be positive, got {chunks}")
        n = self.shape[self._dim(dim, "chunk")]
        return self.split(max(1, -(-n // chunks)), dim)

    @accepts_axis
    def unbind(self, dim=0):
        """The slices along ``dim``, as a tuple with that dim removed; see torch.unbind."""
        d = self._dim(dim, "unbind")
        return tuple(t.squeeze(d) for t in self.split(1, d))

    def repeat(self, *sizes):
        """The tensor tiled ``sizes`` times along each dim; see torch.Tensor.repeat."""
        sizes = _shape_arg(sizes, "repeat")
        if len(sizes) < self.ndim:
            raise ShapeError(f"repeat: {len(sizes)} repeats for a {self.ndim}-d tensor")
        if any(r < 0 for r in sizes):
            raise ShapeError(f"repeat: negative repeat count in {list(sizes)}")
        shape = (1,) * (len(sizes) - self.ndim) + tuple(self.shape)
        shapes.check([r * n for r, n in zip(sizes, shape)], "repeat", self.dtype)
        # interleave a size-1 axis before each dim, broadcast it to the repeat count
        x = self.reshape([v for n in shape for v in (1, n)])
        x = x.expand([v for r, n in zip(sizes, shape) for v in (r, n)])
        return x.reshape([r * n for r, n in zip(sizes, shape)])

    def flip(self, *dims, **kwargs):
        """See torch.flip: ``x.flip(0, 1)``, ``x.flip((0, 1))`` or ``x.flip(dims=(0, 1))``."""
        if kwargs:
            if set(kwargs) != {"dims"} or dims:
                raise TypeError(f"flip: takes dims as arguments or as dims=, got {sorted(kwargs)}")
            dims = (kwargs["dims"],)
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        # a reversed index is a gather (positive-step slices only, as in PyTorch)
        x = self
        for d in self._dims(dims, "flip"):
            n = x.shape[d]
            x = x.index_select(d, Tensor._make(place(B.arange(n - 1, -1, -1, int64), self.device)))
        return x

    def _axis_index(self, op, dim, index, src=None):
        """PyTorch's rules for gather and scatter: ``index`` has the input's number of dims
        (a 0-d tensor counts as 1-d) and ``src``'s, is no larger than ``src`` anywhere and
        no larger than the input apart from ``dim``; an empty index is never checked.
        Returns the dim, normalised."""
        d = self._dim(dim, op)
        indexing.check_index_tensor(index, op)
        if isinstance(src, Tensor) and src.dtype is not self.dtype:  # in PyTorch's words
            raise D.DTypeMismatchError(f"scatter(): Expected self.dtype to be equal to src.dtype ({op}: "
                                       f"self is {self.dtype.name}, src {src.dtype.name})")
        operands = (("input", self), ("src", src)) if src is not None else (("input", self),)
        ishape = tuple(index.shape) or (1,)
        for name, t in operands:
            if not isinstance(t, Tensor):
                raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
            if not index.numel():
                continue
            tshape = tuple(t.shape) or (1,)
            if len(tshape) != len(ishape):
                raise ShapeError(f"{op}: index of shape {list(index.shape)} must have as many dims as "
                                 f"{name} of shape {list(t.shape)}")
            for i, (a, b) in enumerate(zip(ishape, tshape)):
                if a > b and (i != d or name == "src"):
                    raise ShapeError(f"{op}: index of shape {list(index.shape)} is larger than {name} "
                                     f"of shape {list(t.shape)} at dim {i}")
        return d

    @accepts_axis
    def gather(self, dim, index):
        """Values along ``dim`` at ``index``; see torch.gather."""
        d = self._axis_index("gather", dim, index)
        try:  # the kernels check the range, so the success path pays nothing here
            if not index.ndim or not self.ndim or not index.numel():  # as a 1-d gather
                return ops.Gather.apply(self.reshape(-1), 0, index.reshape(-1)).reshape(index.shape)
            return ops.Gather.apply(self, d, index)
        except IndexError as e:
            raise IndexRangeError(f"gather: {e}") from None

    def scatter_add(self, dim, index, src):
        """Add ``src`` into a copy of ``self`` at ``index`` along ``dim``; see torch.scatter_add."""
        d = self._axis_index("scatter_add", dim, index, src)
        if index.ndim and src.ndim == index.ndim and tuple(src.shape) != tuple(index.shape):
            src = src[tuple(slice(0, n) for n in index.shape)]  # only this corner is read, by position
        try:
            if not index.ndim or not self.ndim or not index.numel():  # as a 1-d scatter
                x, index, src, d = self.reshape(-1), index.reshape(-1), src.reshape(-1), 0
                return ops.ScatterAdd.apply(x, d, index, src.to(self.dtype)).reshape(self.shape)
            return ops.ScatterAdd.apply(self, d, index, src.to(self.dtype))
        except IndexError as e:
            raise IndexRangeError(f"scatter_add: {e}") from None

    @accepts_axis
    def index_select(self, dim, index):
        """The entries of ``index`` along ``dim``; see torch.index_select."""
        d = self._dim(dim, "index_select")
        indexing.check_index_tensor(index, "index_select")
        if index.ndim > 1:
            raise ShapeError(f"index_select: index must be 1-D, got shape {list(index.shape)}")
        index = index.reshape(-1)
        shape = [1] * self.ndim
        shape[d] = index.numel()
        full = list(self.shape)
        full[d] = index.numel()
        try:
            return ops.Gather.apply(self, d, index.reshape(shape).expand(full))
        except IndexError as e:
            raise IndexRangeError(f"index_select: {e}") from None

    def nonzero(self, as_tuple=False):
        """The indices of the nonzero elements (a tuple of 1-D tensors with ``as_tuple``); see
        torch.nonzero."""
        vals = self._data.values()
        flat = [i for i, v in enumerate(vals) if v]
        coords = []
        strides = B.contiguous_strides(self.shape)
        for i in flat:
            c = []
            for s, n in zip(strides, self.shape):
                c.append((i // s) % n)
            coords.append(c)
        out = Tensor._make(place(B.from_list([v for c in coords for v in c], (len(flat), self.ndim), int64),
                                 self.device))
        if as_tuple:
            return tuple(out[:, k] for k in range(self.ndim))
        return out

    def masked_select(self, mask):
        """The elements where ``mask`` is True, as a 1-D tensor; see torch.masked_select."""
        return self[mask.expand(self.shape) if mask.shape != self.shape else mask]

    def tril(self, diagonal=0):
        """The lower triangle from ``diagonal`` down, zeros above; see torch.tril."""
        r, c = self.shape[-2:]
        keep = arange_(r, self.device).unsqueeze(1) + diagonal >= arange_(c, self.device).unsqueeze(0)
        return where(keep, self, self.new_zeros(()))

    def triu(self, diagonal=0):
        """The upper triangle from ``diagonal`` up, zeros below; see torch.triu."""
        r, c = self.shape[-2:]
        keep = arange_(r, self.device).unsqueeze(1) + diagonal <= arange_(c, self.device).unsqueeze(0)
        return where(keep, self, self.new_zeros(()))

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

    # ------------------------------------------------------------ in place

    def _inplace(self, compute, op, fill=False):
        """Write ``compute(old self)`` into this tensor's elements (see ``views.inplace``)."""
        return views.inplace(self, compute, op, fill)

    def _sync_view(self):
        """Re-derive this view's place in the graph from its base (see ``views.sync``)."""
        views.sync(self)

    def add_(self, other, alpha=1):
        """In-place ``add``; see ``torch.Tensor.add_``."""
        return self._inplace(lambda x: x.add(other, alpha=alpha), "add_")

    def sub_(self, other, alpha=1):
        """In-place ``sub``; see ``torch.Tensor.sub_``."""
        return self._inplace(lambda x: x.sub(other, alpha=alpha), "sub_")

    def mul_(self, other):
        """In-place ``mul``; see ``torch.Tensor.mul_``."""
        return self._inplace(lambda x: x * other, "mul_")

    def div_(self, other, rounding_mode=None):
        """In-place ``div``: with a ``rounding_mode`` an integer tensor stays an integer one."""
        return self._inplace(lambda x: x.div(other, rounding_mode=rounding_mode), "div_")

    def pow_(self, other):
        """In-place ``pow``; see ``torch.Tensor.pow_``."""
        return self._inplace(lambda x: x ** other, "pow_")

    def clamp_(self, min=None, max=None):
        """In-place ``clamp``; see ``torch.Tensor.clamp_``."""
        return self._inplace(lambda x: x.clamp(min, max), "clamp_")

    def addcmul_(self, tensor1, tensor2, value=1):
        """In-place ``addcmul``; see ``torch.Tensor.addcmul_``."""
        return self._inplace(lambda x: x.addcmul(tensor1, tensor2, value), "addcmul_")

    def addcdiv_(self, tensor1, tensor2, value=1):
        """In-place ``addcdiv``; see ``torch.Tensor.addcdiv_``."""
        return self._inplace(lambda x: x.addcdiv(tensor1, tensor2, value), "addcdiv_")

    def maximum_(self, other):
        """In-place ``maximum``."""
        return self._inplace(lambda x: x.maximum(other), "maximum_")

    def lerp_(self, end, weight):
        """In-place ``lerp``; see ``torch.Tensor.lerp_``."""
        return self._inplace(lambda x: x.lerp(end, weight), "lerp_")

    def masked_fill_(self, mask, value):
        """In-place ``masked_fill``; see ``torch.Tensor.masked_fill_``."""
        return self._inplace(lambda x: x.masked_fill(mask, value), "masked_fill_")

    def sqrt_(self):
        """In-place ``sqrt``; see ``torch.Tensor.sqrt_``."""
        return self._inplace(lambda x: x.sqrt(), "sqrt_")

    def exp_(self):
        """In-place ``exp``; see ``torch.Tensor.exp_``."""
        return self._inplace(lambda x: x.exp(), "exp_")

    def relu_(self):
        """In-place ``relu``; see ``torch.relu_``."""
        return self._inplace(lambda x: x.relu(), "relu_")

    def neg_(self):
        """In-place ``neg``; see ``torch.Tensor.neg_``."""
        return self._inplace(lambda x: -x, "neg_")

    def copy_(self, src, non_blocking=False):
        """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor; see
        ``torch.Tensor.copy_``. ``non_blocking`` as ``to``'s: from page-locked memory to a
        device the host does not wait for the copy."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_: expected a Tensor, got {type(src).__name__}")
        if B.broadcast_shapes(self.shape, src.shape) != tuple(self.shape):
            raise ShapeError(f"copy_: source of shape {list(src.shape)} cannot be broadcast to "
                             f"{list(self.shape)}")
        # from any device, as PyTorch's copy_ (the one in-place write that moves data)
        return self._inplace(lambda x: ops.Overwrite.apply(
            x, src.to(self.device, self.dtype, non_blocking=non_blocking)), "copy_")

    def fill_(self, value):
        """Fill with ``value`` in place; see ``torch.Tensor.fill_``."""
        value = value.item() if isinstance(value, Tensor) else value
        _check_fits([value], self.dtype)
        return self._inplace(lambda x: ops.Overwrite.apply(x, self._scalar(value, self.dtype)), "fill_",
                             fill=True)

    def zero_(self):
        """Fill with zeros in place; see ``torch.Tensor.zero_``."""
        return self.fill_(0)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        """Fill in place with samples of U(a, b) from the project's generator (a seed gives the same values
        on every stage, not PyTorch's); see ``torch.Tensor.uniform_``."""
        gen = generator or _random.default_generator
        with autograd.no_grad():
            return self._inplace(lambda x: Tensor._make(place(B.uniform(self.shape, a, b, self.dtype, gen), x.device)),
                                 "uniform_")

    def normal_(self, mean=0.0, std=1.0, generator=None):
        """Fill in place with samples of N(mean, std²) from the project's generator (a seed gives the same
        values on every stage, not PyTorch's); see ``torch.Tensor.normal_``."""
        gen = generator or _random.default_generator
        with autograd.no_grad():
            return self._inplace(lambda x: Tensor._make(place(B.normal(self.shape, mean, std, self.dtype, gen),
                                                               x.device)),
                                 "normal_")

    def __iadd__(self, o):
        return self.add_(o)

    def __isub__(self, o):
        return self.sub_(o)

    def __imul__(self, o):
        return self.mul_(o)

    def __itruediv__(self, o):
        return self.div_(o)

    # the in-place twin of each elementwise method above that has one in PyTorch
    abs_ = inplace_form("abs")
    sign_ = inplace_form("sign")
    reciprocal_ = inplace_form("reciprocal")
    square_ = inplace_form("square")
    log_ = inplace_form("log")
    log1p_ = inplace_form("log1p")
    rsqrt_ = inplace_form("rsqrt")
    erf_ = inplace_form("erf")
    sin_ = inplace_form("sin")
    cos_ = inplace_form("cos")
    tanh_ = inplace_form("tanh")
    sigmoid_ = inplace_form("sigmoid")
    floor_ = inplace_form("floor")
    ceil_ = inplace_form("ceil")
    round_ = inplace_form("round")
    clamp_min_ = inplace_form("clamp_min")
    clamp_max_ = inplace_form("clamp_max")


# ---------------------------------------------------------------- indexing helpers

def _dense(shape, strides):
    """Whether ``strides`` lay ``shape`` out row-major (size-1 dims count as any, as in
    PyTorch's is_contiguous)."""
    if B.prod(shape) == 0:
        return True
    expected = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != expected:
            return False
        expected *= n
    return True


def where(condition, input, other):
    """``input`` where ``condition`` is True, ``other`` elsewhere (numbers allowed, dtypes promoted); see
    torch.where."""
    return _where(condition, input, other, "where")


def _where(condition, input, other, op):
    if not isinstance(condition, Tensor):
        raise TypeError(f"{op}: condition must be a bool Tensor, got {type(condition).__name__}")
    if condition.dtype is not bool_:
        condition = condition.bool()
    dtype = D.result_type(*(v for v in (input, other)))
    a = input.to(dtype) if isinstance(input, Tensor) else Tensor._make(B.full((), input, dtype))
    b = other.to(dtype) if isinstance(other, Tensor) else Tensor._make(B.full((), other, dtype))
    shapes.broadcast(op, condition.shape, a.shape, b.shape, dtype=dtype)
    return ops.Where.apply(condition, a, b)


def arange_(n, device):
    """``0, 1, ..., n - 1`` as an int64 tensor on ``device`` (tril's and triu's positions)."""
    return Tensor._make(place(B.arange(0, n, 1, int64), device))


from . import autograd, creation, functional, indexing, ops  # noqa: E402  (they build on Tensor)
from . import contractions, math_ops, rearranging, scans, scatter  # noqa: E402
from . import random as _random  # noqa: E402
from . import tensor_core as _core  # noqa: E402
from . import views  # noqa: E402

_core.bind(Tensor, ops)
# The mixins' modules loaded before Tensor existed (its class lists theirs): the names they
# use that build on Tensor are bound in them now, as the core's are just above.
contractions.ops = math_ops.ops = scatter.ops = ops
rearranging.cat, rearranging.where = creation.cat, where
scans.where, scans._to_dtype = where, _to_dtype
scatter.where = where
