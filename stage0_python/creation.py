"""Tensor creation: constants, ranges and random draws (``random.py`` documents the
generator every stage reproduces)."""
import math

from . import backend as B
from . import dtypes as D
from . import ops, shapes
from . import random as R
from .arguments import check_fits, shape_arg, to_dtype
from .capabilities import CapabilityError
from .device import check_device, place
from .dtypes import int64
from .method_forms import accepts_axis
from .shapes import ShapeError
from .tensor import Tensor


def _finish(buf, requires_grad, device):
    t = Tensor._make(place(buf, device))
    return t.requires_grad_(True) if requires_grad else t


def _float_dtype(dtype, op):
    dtype = to_dtype(dtype) or D.get_default_dtype()
    if not dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating-point dtype, got {dtype.name}")
    return dtype


def _sizes(size, op, dtype):
    """The shape ``size`` names, checked for a tensor of ``dtype`` (shapes.check)."""
    return shapes.check(shape_arg(size, op), op, dtype)


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new tensor copying ``data`` (nested lists, numbers, a NumPy array, a tensor); the dtype is
    inferred unless given. See torch.tensor."""
    device = check_device(device, "tensor")
    return _finish(Tensor._infer(data, dtype)._data, requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor: a tensor is returned as it is (converted if ``dtype`` or ``device`` differ),
    anything else copied as ``tensor`` does. See torch.as_tensor."""
    dev = check_device(device, "as_tensor")
    if isinstance(data, Tensor):  # stays on its own device unless one is named
        return data.to(dtype=dtype, device=device)
    return _finish(Tensor._infer(data, dtype)._data, False, dev)


def from_numpy(array):
    """A tensor over a NumPy array's memory, as torch.from_numpy: on the stages that share
    memory (those whose ``LACKS`` omits "dlpack") a writable array is shared with its shape,
    dtype and strides (a sliced, transposed, Fortran-ordered or reversed array becomes a
    strided view), and writes through either side are seen by the other. Elsewhere the
    array is copied, with the same shape, dtype and values: on stages 0 and 1, which cannot
    share memory; for a read-only array (a broadcast one included), since stagegrad tensors
    are always writable (PyTorch shares it and warns); and for a misaligned one. The tensor
    is on the CPU, whatever the default device."""
    flags = getattr(array, "flags", None)
    if flags is not None and flags.writeable and flags.aligned and hasattr(array, "__dlpack__"):
        try:
            return Tensor._make(B.from_dlpack(array))
        except (CapabilityError, BufferError):  # no shared memory here, or none NumPy exports
            pass
    return Tensor._infer(array)


def from_dlpack(ext_tensor):
    """A tensor sharing the memory of ``ext_tensor``: any object with ``__dlpack__`` (a NumPy
    array, a PyTorch CPU tensor, another stage's tensor) or a ``"dltensor"`` capsule, which
    it consumes. No copy: writes through either side are seen by the other, and the producer
    frees the memory when the last tensor over it dies. Its strides are kept (a transposed
    or sliced array becomes a strided view). A dtype this stage lacks (float16, uint8...)
    raises CapabilityError, as does a stage that cannot share memory; memory on another
    device, or a read-only NumPy array (stagegrad tensors are always writable), raises
    BufferError."""
    return Tensor._make(B.from_dlpack(ext_tensor))


def frombuffer(buffer, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor of ``dtype`` over the bytes of ``buffer`` (any C-contiguous object with the
    buffer protocol: ``bytearray``, ``array.array``, ``mmap``, a NumPy array), ``count``
    elements (-1: all that follow) from byte ``offset``, in the machine's byte order. Where the
    stage shares memory (stage 2 on) a writable buffer is shared, as in PyTorch: writes through
    either side are seen by the other, and the buffer cannot be resized while the tensor lives.
    A read-only one (``bytes``) is copied, where PyTorch shares it and warns that writing is
    undefined; stages 0 and 1 copy. The tensor is on the CPU. See torch.frombuffer."""
    dtype = to_dtype(dtype, "frombuffer")
    try:
        raw = memoryview(buffer).cast("B")
    except TypeError as e:
        raise TypeError(f"frombuffer: {type(buffer).__name__} is not a C-contiguous object with the "
                        f"buffer protocol ({e})") from None
    length, item = raw.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"frombuffer: both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"frombuffer: offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"frombuffer: buffer length ({length} bytes) after offset ({offset} bytes) "
                             f"must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif count * item > length - offset:
        raise ValueError(f"frombuffer: requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length ({length} bytes)")
    part = raw[offset:offset + count * item]
    # on the CPU, whatever the default device: the memory is the host's
    out = Tensor._make(B.from_buffer(bytearray(part) if part.readonly else part, dtype))
    return out.requires_grad_(True) if requires_grad else out


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    """A tensor of ``size`` filled with ``fill_value``, of its dtype unless given; see torch.full."""
    device = check_device(device, "full")
    dtype = to_dtype(dtype) or D.result_type(fill_value)
    check_fits([fill_value], dtype)
    return _finish(B.full(_sizes((size,), "full", dtype), fill_value, dtype), requires_grad, device)


def _filled(op, size, value, dtype, requires_grad, device):
    """A tensor of the shape ``size`` names, every element ``value``, of ``dtype`` or the default."""
    device = check_device(device, op)
    dtype = to_dtype(dtype) or D.get_default_dtype()
    return _finish(B.full(_sizes(size, op, dtype), value, dtype), requires_grad, device)


def zeros(*size, dtype=None, requires_grad=False, device=None):
    """See torch.zeros."""
    return _filled("zeros", size, 0, dtype, requires_grad, device)


def ones(*size, dtype=None, requires_grad=False, device=None):
    """See torch.ones."""
    return _filled("ones", size, 1, dtype, requires_grad, device)


def empty(*size, dtype=None, requires_grad=False, device=None):
    """Zero-filled: unlike C, Python cannot hand out uninitialised memory."""
    return _filled("empty", size, 0, dtype, requires_grad, device)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None):
    """Values from ``start`` to ``end`` (exclusive) by ``step``; see torch.arange."""
    device = check_device(device, "arange")
    if end is None:
        start, end = 0, start
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise ValueError(f"arange: unsupported range {start} -> {end} by {step}: bounds and step "
                         f"must be finite")
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: upper bound and larger bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    dtype = to_dtype(dtype) or D.result_type(start, end, step)
    shapes.check((max(0, math.ceil((end - start) / step)),), "arange", dtype)
    return _finish(B.arange(start, end, step, dtype), requires_grad, device)


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    """``steps`` values evenly spaced from ``start`` to ``end`` inclusive."""
    device = check_device(device, "linspace")
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    dtype = to_dtype(dtype) or D.get_default_dtype()
    if dtype is D.bool_:  # PyTorch has no bool linspace kernel and says so the same way
        raise NotImplementedError("linspace: not implemented for dtype bool")
    shapes.check((steps,), "linspace", dtype)
    if steps == 1:
        vals = [start]
    else:
        step = (end - start) / (steps - 1)
        # fill from both ends, as PyTorch does, so the last value is exactly ``end``
        half = steps // 2
        vals = [start + i * step if i < half else end - (steps - 1 - i) * step for i in range(steps)]
    return _finish(B.from_list(vals, (steps,), dtype), requires_grad, device)


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    """The ``n`` x ``m`` identity matrix; see torch.eye."""
    device = check_device(device, "eye")
    m = n if m is None else m
    dtype = to_dtype(dtype) or D.get_default_dtype()
    shapes.check((n, m), "eye", dtype)
    vals = [1 if i == j else 0 for i in range(n) for j in range(m)]
    return _finish(B.from_list(vals, (n, m), dtype), requires_grad, device)


def _sampled(op, size, dtype, generator, requires_grad, device, sample):
    """A float tensor of the shape ``size`` names, ``sample(shape, dtype, generator)`` drawn
    from ``generator`` or the project's default one."""
    device = check_device(device, op)
    dtype = _float_dtype(dtype, op)
    gen = generator or R.default_generator
    return _finish(sample(_sizes(size, op, dtype), dtype, gen), requires_grad, device)


def rand(*size, dtype=None, generator=None, requires_grad=False, device=None):
    """Samples of U(0, 1) from the project's generator: a seed gives the same values on every stage, not
    PyTorch's. See torch.rand."""
    return _sampled("rand", size, dtype, generator, requires_grad, device,
                    lambda shape, dtype, gen: B.uniform(shape, 0.0, 1.0, dtype, gen))


def randn(*size, dtype=None, generator=None, requires_grad=False, device=None):
    """Samples of N(0, 1) from the project's generator: a seed gives the same values on every stage, not
    PyTorch's. See torch.randn."""
    return _sampled("randn", size, dtype, generator, requires_grad, device,
                    lambda shape, dtype, gen: B.normal(shape, 0.0, 1.0, dtype, gen))


def normal(mean, std, size, dtype=None, generator=None, device=None):
    """Samples of N(mean, std²) of shape ``size`` (``mean`` and ``std`` are numbers) from the project's
    generator; see torch.normal."""
    return _sampled("normal", (size,), dtype, generator, False, device,
                    lambda shape, dtype, gen: B.normal(shape, mean, std, dtype, gen))


def randint(low, high=None, size=None, dtype=None, generator=None, device=None):
    """Integers in ``[low, high)`` of shape ``size`` from the project's generator; ``randint(high, size)``
    as well. See torch.randint."""
    device = check_device(device, "randint")
    if high is None or size is None and isinstance(high, (tuple, list)):
        # randint(high, size) as well as randint(low, high, size)
        low, high, size = 0, low, high if size is None else size
    if size is None:
        raise TypeError("randint: size is required, e.g. randint(0, 10, (3,))")
    if low >= high:
        raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
    gen = generator or R.default_generator
    dtype = to_dtype(dtype) or int64
    buf = B.randint(_sizes((size,), "randint", dtype), low, high, dtype, gen)
    return _finish(buf, False, device)


def randperm(n, dtype=None, generator=None, device=None):
    """A random permutation of the integers from 0 to ``n - 1``, from the project's generator;
    see torch.randperm."""
    device = check_device(device, "randperm")
    gen = generator or R.default_generator
    dtype = to_dtype(dtype) or int64
    (n,) = shapes.check((n,), "randperm", dtype)
    return _finish(B.from_list(gen.randperm(n), (n,), dtype), False, device)


def _like(fn):
    def like(input, dtype=None, requires_grad=False, device=None, **kwargs):
        # by default, input's device
        device = input.device if device is None else check_device(device, like.__name__)
        return fn(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                  device=device, **kwargs)
    like.__name__ = fn.__name__ + "_like"
    like.__doc__ = f"``{fn.__name__}`` with the shape (and by default the dtype) of ``input``."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
rand_like = _like(rand)
randn_like = _like(randn)


def full_like(input, fill_value, dtype=None, requires_grad=False, device=None):
    """``full`` with the shape (and by default the dtype and device) of ``input``; see torch.full_like."""
    return full(input.shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad,
                device=input.device if device is None else check_device(device, "full_like"))


def randint_like(input, low, high=None, dtype=None, device=None):
    """``randint`` with the shape (and by default the dtype and device) of ``input``; see
    torch.randint_like."""
    return randint(low, high, input.shape, dtype=dtype or input.dtype,
                   device=input.device if device is None else check_device(device, "randint_like"))


def _sequence(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: expected a list or tuple of Tensors, got {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op}: expected a non-empty sequence of tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(t).__name__}")
    return tensors


@accepts_axis
def cat(tensors, dim=0):
    """Join tensors along an existing dim (their dtypes promoted); see torch.cat. ``concat`` is the same."""
    tensors = [t for t in _sequence(tensors, "cat") if not (t.ndim == 1 and t.numel() == 0)] or list(tensors)[:1]
    first = tensors[0]
    if not first.ndim:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated (use stack)")
    d = first._dim(dim, "cat")
    dtype = D.result_type(*tensors) if len(tensors) > 1 else first.dtype
    for t in tensors:
        if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != d):
            raise ShapeError(f"cat: sizes of tensors must match except in dimension {d}; got shapes "
                             f"{[list(x.shape) for x in tensors]}")
    if len(tensors) == 1:
        return first.clone()
    shape = list(first.shape)
    shape[d] = sum(t.shape[d] for t in tensors)
    shapes.check(shape, "cat", dtype)
    return ops.Cat.apply(d, *(t.to(dtype) for t in tensors))


concat = cat


@accepts_axis
def stack(tensors, dim=0):
    """Join tensors of one shape along a new dim; see torch.stack."""
    tensors = _sequence(tensors, "stack")
    shape = tensors[0].shape
    for t in tensors:
        if t.shape != shape:
            raise ShapeError(f"stack: expects each tensor to be equal size, got shapes "
                             f"{[list(x.shape) for x in tensors]}")
    d = tensors[0]._dim(dim, "stack", tensors[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in tensors], d)


