"""How the Tensor API reads what a program writes: sizes (``shape_arg``), a dtype given by
name, Python type or NumPy dtype (``to_dtype``), and numbers that must fit the integer
dtype they become (``check_fits``).

Its own module, building on no Tensor: ``tensor.py``, the method mixins ``Tensor`` lists
among its bases and ``creation.py`` all read their arguments through these.
"""
import operator

from . import dtypes as D
from .capabilities import lacking
from .dtypes import bool_, int32, int64
from .tensor_core import Size


def shape_arg(args, op):
    """The sizes ``args`` name, as a tuple of ints: ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])``
    all name ``(2, 3)``; TypeError naming ``op`` for anything else."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = tuple(args[0])
    try:
        shape = tuple(operator.index(s) for s in args)
    except TypeError:
        raise TypeError(f"{op}: sizes must be ints, got {args!r}") from None
    return shape


def to_dtype(dtype, op="tensor"):
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


def check_fits(values, dtype):
    """Input must fit the integer dtype it becomes: results of arithmetic wrap around (as
    in C and PyTorch), but a value the user wrote never silently changes."""
    bounds = _INT_RANGE.get(dtype)
    if bounds is None or not values:
        return
    lo, hi = min(values), max(values)
    if lo < bounds[0] or hi > bounds[1] or (not dtype.is_signed and isinstance(lo, float) and lo < 0):
        bad = hi if hi > bounds[1] else lo
        raise ValueError(f"tensor: value {bad} cannot be converted to {dtype.name} without overflow")
