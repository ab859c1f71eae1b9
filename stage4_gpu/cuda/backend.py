"""The CUDA device's primitives: stage 0's primitive set (see ``stage0_python/backend.py``)
over buffers that live on the device.

Creation uploads what the host computed (``from_list``, and the random fills, which draw
from the one generator every stage shares, so a seed gives the same tensor on every
device) or fills on the device (``full``). The elementwise ops, reductions, products and
movement run the project's CUDA kernels (``kernels/``); CuPy supplies memory, the stream,
NVRTC, and cuBLAS as the matmul peer.
"""
from ..capabilities import CapabilityError
from ..dtypes import bool_
from .buffer import check_dtype, empty, from_bytes, to_numpy  # noqa: F401
from .elementwise import (BOOL_RESULT, INT_DIVISIONS, binary_into, fill_contiguous, operation,
                          unary_into, where_into)
from .fused import (  # noqa: F401
    FUSED, adam_step, cross_entropy, cross_entropy_backward, layer_norm, layer_norm_backward, log_softmax,
    rmsprop_step, sgd_step, softmax, softmax_backward)
from .index import fold, gather, put, scan, scatter_add, sort, take, unfold  # noqa: F401
from .matmul import matmul  # noqa: F401
from .movement import (  # noqa: F401
    alias, assign, cat, contiguous, copy, data_ptr, diagonal, expand, is_contiguous, permute,
    reshape, set_data, shares_storage, slice, storage_id, storage_offset, strides, windows)
from .reduce import arg_reduce, reduce  # noqa: F401


def fill(out, value):
    """Set every element of ``out`` (any view) to ``value``."""
    one = fill_contiguous(empty((), out.dtype), value)
    unary_into("Identity", out, one)
    return out


def full(shape, value, dtype):
    check_dtype(dtype, "full")
    return fill_contiguous(empty(tuple(shape), dtype), value)


def upload(host_buf):
    """A host buffer's contents on the device (a new buffer): its bytes, read through the
    buffer protocol in row-major order (a bool is one byte on both sides)."""
    check_dtype(host_buf.dtype, "to(device='cuda')")
    return from_bytes(memoryview(host_buf).tobytes(), host_buf.shape, host_buf.dtype)


def to_host_bytes(buf):
    """The elements of ``buf``, row-major, as bytes in the host's layout (a download)."""
    return to_numpy(buf).tobytes()[:buf.numel * buf.dtype.itemsize]


def cast(x, dtype):
    if dtype is x.dtype:
        return alias(x)
    check_dtype(dtype, "to")
    if x.dtype.is_floating_point and not dtype.is_floating_point and dtype is not bool_:
        _refuse_non_finite(x)
    return unary_into("Identity", empty(x.shape, dtype), x)


def _refuse_non_finite(x):
    """A float with no integer value (NaN, inf) cannot be converted: ask the device, as the
    CPU stages refuse it (a read: the host waits here)."""
    if x.numel and not reduce("all", unary("isfinite", x), range(len(x.shape)), False).item():
        raise ValueError("cannot convert a float tensor holding nan or inf to an integer dtype")


def unary(op, x, dtype=None):
    struct = operation(op, x.dtype, 1)
    if struct is None:
        raise CapabilityError(f"{op}: no cuda kernel for {x.dtype.name} tensors")
    natural = bool_ if op in BOOL_RESULT else x.dtype
    out = unary_into(struct, empty(x.shape, natural), x)
    return out if dtype is None or dtype is natural else cast(out, dtype)


def broadcast_shapes(*shapes):
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            d = s[i] if -i <= len(s) else 1
            if d != 1:
                size = d
        out.append(size)
    return tuple(out)


def binary(op, a, b, dtype):
    struct = operation(op, dtype, 2)
    if struct is None:
        raise CapabilityError(f"{op}: no cuda kernel for {dtype.name} tensors")
    a, b = (x if x.dtype is dtype else cast(x, dtype) for x in (a, b))
    if op in INT_DIVISIONS and not dtype.is_floating_point and dtype is not bool_:
        if reduce("any", unary("logical_not", b), range(len(b.shape)), False).item():
            raise ZeroDivisionError(f"{op}: integer division by zero")
    if op == "pow" and not dtype.is_floating_point and dtype is not bool_:
        if b.numel and reduce("min", b, range(len(b.shape)), False).item() < 0:
            raise ValueError("pow: integers to negative integer powers are not allowed")
    out_dtype = bool_ if op in BOOL_RESULT else dtype
    return binary_into(struct, empty(broadcast_shapes(a.shape, b.shape), out_dtype), a, b)


def where(cond, a, b):
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    cond = cond if cond.dtype is bool_ else cast(cond, bool_)
    b = b if b.dtype is a.dtype else cast(b, a.dtype)
    return where_into(empty(shape, a.dtype), cond, a, b)


def to_dlpack(x, versioned=False):
    raise CapabilityError("__dlpack__: sharing a cuda tensor through DLPack is not implemented: "
                          "the cuda device lacks dlpack (t.cpu() copies it to the host)")
