"""Elementwise primitives on a device: ``unary``, ``binary``, ``where``, ``cast``, and the
strided copy under every movement primitive, each one launch of the driver's elementwise
kernel. Every operand is read through its own strides (a broadcast dimension has stride
0), so no operand is copied first: ``run`` lays out the launch (in compiled code,
``_strided.elementwise_layout``), the output's shape with its dimensions merged where they
are contiguous in every operand, then each operand's offset and strides.

The host checks what the CPU stages refuse before the kernel could compute it wrongly:
an integer division by zero, an integer to a negative power, a NaN or infinity made an
integer. Each check reads one number back, so the host waits there.
"""
from stage0_python.layout import broadcast_shapes
from stage0_python.vocabulary import BOOL_RESULT

from .._strided import elementwise_layout
from ..capabilities import CapabilityError
from ..dtypes import IntegerPowerError, bool_
from ..strided import alias
from .reduce import reduce

# the integer ops whose divisor the host checks first
INT_DIVISIONS = ("floordiv", "remainder", "fmod")


def run(op, out, inputs):
    """Write ``op`` over ``inputs`` (broadcast to ``out.shape``) into the view ``out`` (see
    ``Driver.elementwise`` for ``op``). An input sharing out's storage is copied first: the
    kernel would read what it has already written."""
    inputs = [x if x.storage is not out.storage else convert(x, x.dtype) for x in inputs]
    params, n = elementwise_layout(out, inputs)
    if n:
        out.driver.elementwise(op, out, inputs, params)
    return out


def convert(x, dtype):
    """A new contiguous buffer holding x's elements in ``dtype`` (no check: see ``cast``)."""
    return run(None, type(x).empty(x.shape, dtype), [x])


def copy_into(dst, src):
    """Write ``src`` (broadcast, and converted to dst's dtype) into the view ``dst``."""
    run(None, dst, [src])
    dst.storage.version += 1


# ---------------------------------------------------------------- the primitives

def _refuse_missing(op, dtype, arity, driver):
    if not driver.has_op(op, dtype, arity):
        raise CapabilityError(f"{op}: no {driver.name} kernel for {dtype.name} tensors")


def _is_int(dtype):
    return not dtype.is_floating_point and dtype is not bool_


def _reduced(op, x):
    """``op`` (any, all, min) over every element of x, as a Python value (the host waits)."""
    return reduce(op, x, range(len(x.shape)), False).item()


def cast(x, dtype):
    """x in ``dtype``: itself (a new view) when it holds it already. A float with no
    integer value (NaN, inf) cannot be made an integer: refused, as on the CPU."""
    if dtype is x.dtype:
        return alias(x)
    x.driver.check_dtype(dtype, "to")
    if x.dtype.is_floating_point and _is_int(dtype) and x.numel and not _reduced("all", unary("isfinite", x)):
        raise ValueError("cannot convert a float tensor holding nan or inf to an integer dtype")
    return convert(x, dtype)


def unary(op, x, dtype=None):
    """``op`` of each element (a bool result for the predicates), in ``dtype`` when given."""
    _refuse_missing(op, x.dtype, 1, x.driver)
    natural = bool_ if op in BOOL_RESULT else x.dtype
    out = run(op, type(x).empty(x.shape, natural), [x])
    return out if dtype is None or dtype is natural else cast(out, dtype)


def binary(op, a, b, dtype):
    """``op`` over broadcast a and b, computed in ``dtype`` (comparisons return bool)."""
    _refuse_missing(op, dtype, 2, a.driver)
    a, b = (x if x.dtype is dtype else cast(x, dtype) for x in (a, b))
    if op in INT_DIVISIONS and _is_int(dtype) and _reduced("any", unary("logical_not", b)):
        raise ZeroDivisionError(f"{op}: integer division by zero")
    if op == "pow" and _is_int(dtype) and b.numel and _reduced("min", b) < 0:
        raise IntegerPowerError("pow: integers to negative integer powers are not allowed")
    out_dtype = bool_ if op in BOOL_RESULT else dtype
    return run(op, type(a).empty(broadcast_shapes(a.shape, b.shape), out_dtype), [a, b])


def where(cond, a, b):
    """``a`` where ``cond`` holds, else ``b``, broadcast; in a's dtype."""
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    cond = cond if cond.dtype is bool_ else cast(cond, bool_)
    b = b if b.dtype is a.dtype else cast(b, a.dtype)
    return run("where", type(a).empty(shape, a.dtype), [cond, a, b])
