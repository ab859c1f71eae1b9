"""Data types and PyTorch's type-promotion rules.

A dtype names how a value is stored (``typecode`` is the ``array`` module's code) and
which *category* it belongs to: bool < integer < floating. Promotion picks the
category first and the width second, exactly as ``torch.result_type`` does:
dimensioned tensors decide, a zero-dim tensor only wins with a higher category, and a
Python scalar only lifts the category (to the default dtype of that category).
"""


# The dtype objects are the vocabulary's, shared by every stage (one ``float32`` per
# process, compared by identity); this module holds what each stage decides for itself:
# which of them it computes in, and its default dtype. Named on every stage so that
# programs which mention them import; a stage that does not compute in one names it in
# its LACKS, and making a tensor of it raises CapabilityError instead of silently using
# another dtype. Stage 3 computes in the 2-byte floats (``compute_in``).
from stage0_python.vocabulary import (  # noqa: F401
    BY_NAME,
    DType,
    _lookup,  # checkpoints pickled before name it here
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)

ALL = (bool_, uint8, int8, int16, int32, int64, float32, float64)  # the dtypes the stages compute in
NAMED_ONLY = (float16, bfloat16)
LACKING = frozenset(d.name for d in NAMED_ONLY)  # capability names, one per dtype
_DEFAULT = {0: bool_, 1: int64, 2: float32}


HALF_NAMES = ("float16", "bfloat16")


class IntegerPowerError(ValueError, RuntimeError):
    """An integer raised to a negative integer power, which PyTorch refuses (a ValueError,
    and a RuntimeError as PyTorch raises)."""


class DTypeMismatchError(TypeError, RuntimeError):
    """Operands whose dtypes must agree do not (a TypeError, and a RuntimeError as PyTorch
    raises)."""


class DTypeNotImplementedError(TypeError, NotImplementedError):
    """An operation that has no meaning for its operands' dtype: shifts and bitwise ops on
    floats, hypot on integers (a TypeError, and the NotImplementedError PyTorch raises, which
    is a RuntimeError)."""


def refuse_bool_subtraction(op, a, b):
    """PyTorch refuses ``-`` with a bool operand, tensor or Python bool, whatever the other's
    dtype (``~`` inverts a mask): so do the stages, rather than compute ``x - True``."""
    if op == "sub" and any(isinstance(v, bool) or getattr(v, "dtype", None) is bool_ for v in (a, b)):
        raise TypeError("sub: subtraction, the `-` operator, with a bool tensor is not supported; "
                        "to invert a mask use the `~` or `logical_not()` operator instead")


def compute_in(*names):
    """Make the named-only dtypes ``names`` ones this stage computes in. Each stage runs its
    own copy of this module, so this changes one stage's ``ALL`` and ``LACKING`` only
    (stage 3 calls it for the 2-byte floats)."""
    global ALL, NAMED_ONLY, LACKING
    moved = tuple(BY_NAME[n] for n in names)
    ALL = ALL + tuple(d for d in moved if d not in ALL)
    NAMED_ONLY = tuple(d for d in NAMED_ONLY if d not in moved)
    LACKING = frozenset(d.name for d in NAMED_ONLY)


def get_default_dtype():
    """The floating-point dtype that creation functions use by default; see torch.get_default_dtype."""
    return _DEFAULT[2]


def set_default_dtype(dtype):
    """Set the default floating-point dtype (float32 or float64); see torch.set_default_dtype."""
    if dtype not in (float32, float64):
        raise TypeError(f"set_default_dtype: only float32 and float64 can be the default, got {dtype}")
    _DEFAULT[2] = dtype


def promote(a, b):
    """The smallest dtype that holds both ``a`` and ``b``."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.itemsize == b.itemsize:  # neither holds the other: uint8 and int8, float16 and bfloat16
        return int16 if a.category == 1 else float32
    return a if a.itemsize > b.itemsize else b  # uint8, the one unsigned, is the narrowest


def scalar_category(value):
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return 1
    if isinstance(value, float):
        return 2
    raise TypeError(f"expected a Tensor or a Python number, got {type(value).__name__}")


def result_type(*operands):
    """Promotion over tensors (anything with ``dtype`` and ``ndim``) and Python scalars."""
    dim = zero = None
    scalar_cat = -1
    for x in operands:
        dt = getattr(x, "dtype", None)
        if dt is None:
            scalar_cat = max(scalar_cat, scalar_category(x))
        elif x.ndim:
            dim = dt if dim is None else promote(dim, dt)
        else:
            zero = dt if zero is None else promote(zero, dt)
    result = dim
    if zero is not None and (result is None or zero.category > result.category):
        result = zero
    if scalar_cat >= 0 and (result is None or scalar_cat > result.category):
        result = _DEFAULT[scalar_cat]
    return result


def infer(value):
    """The dtype torch.tensor() would give a (nested) Python value."""
    cat = 0
    stack = [value]
    seen_any = False
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            seen_any = True
            cat = max(cat, scalar_category(v))
            if cat == 2:
                break
    return _DEFAULT[cat] if seen_any else _DEFAULT[2]


def _as_dtype(dtype, op):
    if isinstance(dtype, str):
        dtype = BY_NAME.get(dtype, dtype)
    if not isinstance(dtype, DType):
        raise TypeError(f"{op}: expected a dtype, got {dtype!r}")
    return dtype


# IEEE formats as (fraction bits, exponent bits): every limit below follows from them
_FLOAT_FORMATS = {"float16": (10, 5), "bfloat16": (7, 8), "float32": (23, 8), "float64": (52, 11)}


class finfo:
    """See torch.finfo: the limits of a floating dtype (the default dtype without an
    argument); defined for the dtypes a stage names but does not compute in, too."""

    def __init__(self, dtype=None):
        dtype = _as_dtype(get_default_dtype() if dtype is None else dtype, "finfo")
        if dtype.name not in _FLOAT_FORMATS:
            raise TypeError(f"finfo: {dtype.name} is not a floating point dtype")
        fraction, exponent = _FLOAT_FORMATS[dtype.name]
        bias = 2 ** (exponent - 1) - 1
        self.bits = dtype.itemsize * 8
        self.eps = 2.0 ** -fraction
        self.max = (2.0 - self.eps) * 2.0 ** bias
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** (1 - bias)
        self.resolution = 10.0 ** -int(fraction * 0.30102999566398120)  # decimal digits: fraction * log10(2)
        self.dtype = dtype.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, dtype={self.dtype})")


class iinfo:
    """See torch.iinfo: the limits of an integer dtype."""

    def __init__(self, dtype):
        dtype = _as_dtype(dtype, "iinfo")
        if dtype.category != 1:
            raise TypeError(f"iinfo: {dtype.name} is not an integer dtype")
        self.bits = dtype.itemsize * 8
        self.min = -(1 << (self.bits - 1)) if dtype.is_signed else 0
        self.max = (1 << (self.bits - (1 if dtype.is_signed else 0))) - 1
        self.dtype = dtype.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
