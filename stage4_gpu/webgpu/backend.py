"""The WebGPU device's primitives: stage 0's primitive set (see
``stage0_python/backend.py``) over buffers that live on the device.

Creation uploads what the host computed (``from_list``, and the random fills, which draw
from the one generator every stage shares, so a seed gives the same tensor on every
device) or fills on the device (``full``). The elementwise ops, reductions, products and
movement run the project's WGSL kernels (``kernels/``).
"""
from ..capabilities import CapabilityError
from ..dtypes import bool_
from .buffer import check_dtype, empty, from_host, host_array, to_host_array  # noqa: F401
from .elementwise import INT_DIVISIONS, cast_expr, expression, run
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
    """Set every element of ``out`` to ``value``."""
    t = out.wgsl
    if out.dtype is bool_:
        lit = "1u" if value else "0u"
    elif out.dtype.is_floating_point:
        if value != value or value in (float("inf"), float("-inf")):
            bits = {"nan": 0x7fc00000, "inf": 0x7f800000, "-inf": 0xff800000}[str(value)]
            lit = f"bitcast<f32>({bits}u)"
        else:
            lit = f"f32({float(value)!r})"
    else:
        lit = f"{t}({int(value)})"
    return run(lit, out, [])


def full(shape, value, dtype):
    check_dtype(dtype, "full")
    return fill(empty(tuple(shape), dtype), value)


def upload(host_buf):
    """A host buffer's contents on the device (a new buffer): its bytes, read through the
    buffer protocol in row-major order (a bool byte widens to the device's word)."""
    check_dtype(host_buf.dtype, "to(device='webgpu')")
    raw = memoryview(host_buf).tobytes()
    data = host_array(list(raw), bool_) if host_buf.dtype is bool_ else raw
    return from_host(data, host_buf.shape, host_buf.dtype)


def cast(x, dtype):
    if dtype is x.dtype:
        return alias(x)
    check_dtype(dtype, "to")
    if x.dtype.is_floating_point and not dtype.is_floating_point and dtype is not bool_:
        _refuse_non_finite(x)
    return run(cast_expr("v1", x.dtype, dtype), empty(x.shape, dtype), [x])


def _refuse_non_finite(x):
    """A float with no integer value (NaN, inf) cannot be converted: ask the device, as the
    CPU stages refuse it (a read: the host waits here)."""
    if x.numel and not reduce("all", unary("isfinite", x), range(len(x.shape)), False).item():
        raise ValueError("cannot convert a float tensor holding nan or inf to an integer dtype")


def unary(op, x, dtype=None):
    expr = expression(op, x.dtype, 1)
    if expr is None:
        raise CapabilityError(f"{op}: no webgpu kernel for {x.dtype.name} tensors")
    out_dtype = dtype or (bool_ if op in _BOOL_RESULT else x.dtype)
    natural = bool_ if expr.startswith("select(0u") or expr in ("0u", "1u", "1u - v1") else x.dtype
    return run(cast_expr(expr, natural, out_dtype), empty(x.shape, out_dtype), [x])


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


_BOOL_RESULT = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not",
                          "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                          "logical_xor"})


def binary(op, a, b, dtype):
    expr = expression(op, dtype, 2)
    if expr is None:
        raise CapabilityError(f"{op}: no webgpu kernel for {dtype.name} tensors")
    if op in INT_DIVISIONS and not dtype.is_floating_point and dtype is not bool_:
        if reduce("any", unary("logical_not", b), range(len(b.shape)), False).item():
            raise ZeroDivisionError(f"{op}: integer division by zero")
    if op == "pow" and not dtype.is_floating_point and dtype is not bool_:
        if b.numel and reduce("min", b, range(len(b.shape)), False).item() < 0:
            raise ValueError("pow: integers to negative integer powers are not allowed")
    out_dtype = bool_ if op in _BOOL_RESULT else dtype
    return run(expr, empty(broadcast_shapes(a.shape, b.shape), out_dtype), [a, b])


def where(cond, a, b):
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    return run("select(v3, v2, v1 != 0u)", empty(shape, a.dtype), [cond, a, b])


def to_dlpack(x, versioned=False):
    raise CapabilityError("__dlpack__: a webgpu tensor cannot be shared through DLPack: WebGPU "
                          "gives no pointer to its memory, so the webgpu device lacks dlpack "
                          "(t.cpu() copies it to the host)")
