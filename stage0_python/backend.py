"""Stage 0's backend: the only module that touches memory. (``backends.py``, beside it, is
another thing: ``sg.backends``, the switches PyTorch programs set, as ``torch.backends``.)

A ``Buffer`` is a contiguous, row-major ``array.array`` with a shape and a dtype.
Arrays are never mutated after creation; an in-place update swaps ``Buffer.data``,
so two buffers may share one array (``reshape`` is free) without aliasing writes. The
layout arithmetic the kernels compute with (shapes, strides, index positions, the rules of
views) is stage 0's layout library, ``layout.py``.

The primitive set, which every stage's backend provides under the same names:

- creation: ``from_list full arange uniform normal randint``
- ``cast``
- elementwise: ``unary(op, x)``, ``binary(op, a, b)`` with NumPy broadcasting, ``where``;
  the ops are the keys of ``UNARY`` and ``BINARY`` below (float-only ones such as ``atan2``
  get float operands from the frontend; ``bitwise_*`` and the shifts get integers)
- reductions: ``reduce(op, x, axes, keepdim)`` (sum prod max min any all),
  ``arg_reduce(op, x, axis, keepdim)`` (argmax argmin)
- along one axis: ``sort(x, axis, descending)`` (stable, NaN largest; values and int64
  indices), ``scan(op, x, axis)`` (cumulative sum prod max min logsumexp; values, and the
  int64 indices of the running extreme for max/min, else None)
- movement: ``reshape permute expand slice diagonal windows contiguous alias copy cat``
  (stage 0 copies; a stage with strided storage returns views where PyTorch does)
- layout queries: ``is_contiguous strides storage_offset data_ptr storage_id shares_storage``
  (stage 0 stores every tensor contiguously, so its answers are trivial)
- indexing: ``take`` (flat gather), ``gather``/``scatter_add`` along an axis
- ``matmul`` (batched, batch dims already equal)
- ``unfold``/``fold`` for convolution (im2col and its adjoint)
- in-place: ``assign`` (write a region), ``put`` (flat scatter, or combining by sum, prod,
  amax or amin), ``set_data`` (replace the contents)
- bytes: ``view_dtype(x, dtype)`` (x's bytes read as ``dtype``, its last dim scaled by the
  ratio of the element sizes) and ``from_buffer(obj, dtype)`` (a 1-d buffer of the bytes of
  a buffer-protocol object): views of the same memory where the stage can alias it (stage
  2 on), copies here
- DLPack: ``to_dlpack(x, versioned)`` (a capsule sharing x's memory, DLPack 1.0's when
  ``versioned``) and
  ``from_dlpack(obj)`` (a buffer over the memory of an object with ``__dlpack__``, or of a
  capsule), both zero-copy; a stage that cannot share memory raises CapabilityError
- fused kernels a stage may offer (``vocabulary.FUSED_KERNELS`` declares them) are listed in
  ``FUSED`` (stage 0 offers none).
"""
import math
import operator
from array import array

from stage0_python.layout import (  # noqa: F401  (view_layout: the frontend calls it here)
    axis_positions,
    broadcast_shapes,
    contiguous_strides,
    diagonal_layout,
    nested,
    prod,
    reduced_shape,
    strided_indices,
    view_layout,
    windows_layout,
)
from stage0_python.op_table import FUNCTIONS, periodic
from stage0_python.vocabulary import BOOL_RESULT

from .capabilities import refusal
from .dtypes import IntegerPowerError, bool_, float64, int64
from .memory import track as _track
from .shapes import check as _check_shape

# The contract as code: every stage's backend defines these names (a test checks it, and
# the docs' primitive table lists them), and the frontend reaches memory through nothing
# else: the primitives, in the groups above; the shape helpers the frontend also calls;
# and the fused kernels a stage may offer (``FUSED_KERNELS`` in ``vocabulary.py``), each
# used only where its ``FUSED`` names it.
PRIMITIVES = (
    "from_list", "full", "arange", "uniform", "normal", "randint",
    "cast",
    "unary", "binary", "where",
    "reduce", "arg_reduce",
    "sort", "scan",
    "reshape", "permute", "expand", "slice", "diagonal", "windows", "contiguous", "alias", "copy", "cat",
    "is_contiguous", "strides", "storage_offset", "data_ptr", "storage_id", "shares_storage",
    "take", "gather", "scatter_add",
    "matmul",
    "unfold", "fold",
    "assign", "put", "set_data",
    "view_dtype", "from_buffer",
    "to_dlpack", "from_dlpack",
)
HELPERS = ("prod", "broadcast_shapes", "contiguous_strides")
COPYING_HELPERS = ("view_layout",)  # called only on a stage whose VIEWS is False
FUSED = frozenset()
VIEWS = False  # movement results are copies here (see view_layout)
INF = math.inf
NAN = math.nan


def wrap_int(value, dtype):
    """A Python int reduced modulo 2**bits into ``dtype``'s range (two's complement for the
    signed ones), as PyTorch's integer arithmetic and casts wrap."""
    bits = 8 * dtype.itemsize
    if not dtype.is_signed:
        return value % (1 << bits)
    half = 1 << (bits - 1)
    return ((value + half) % (2 * half)) - half


def pack_values(values, dtype):
    """Store Python values in a fresh array of ``dtype`` (float32 rounds here)."""
    if dtype is bool_:
        return array("B", [1 if v else 0 for v in values])
    try:
        return array(dtype.typecode, values)
    except OverflowError:
        return array(dtype.typecode, [wrap_int(int(v), dtype) for v in values])
    except TypeError:
        if dtype.is_floating_point:
            return array(dtype.typecode, [float(v) for v in values])
        return array(dtype.typecode, [wrap_int(to_int(v), dtype) for v in values])


def to_int(v):
    """``v`` as a Python int the way a cast to an integer dtype takes it (toward zero; NaN
    and infinities refused)."""
    if isinstance(v, float):
        if v != v or v in (INF, -INF):
            raise ValueError(f"cannot convert {v} to an integer dtype")
        return int(v)  # truncates toward zero, as a C cast does
    return int(v)


def fill_value(value, dtype):
    """``value`` as ``full`` repeats it in ``dtype``: 1 or 0 for bool, a float, or an int
    taken as a cast takes it (``to_int``; one beyond the dtype's range wraps when stored)."""
    if dtype is bool_:
        return 1 if value else 0
    if dtype.is_floating_point:
        return float(value)
    return to_int(value)


class Buffer:
    """Contiguous storage. ``version`` counts in-place writes, so autograd can tell
    whether a tensor it saved has changed since."""
    __slots__ = ("data", "shape", "dtype", "version")

    def __init__(self, data, shape, dtype):
        self.data = data
        self.shape = tuple(shape)
        self.dtype = dtype
        self.version = 0
        _track(data)  # memory statistics (sg.memory)

    @property
    def numel(self):
        return len(self.data)

    def values(self):
        """The elements as Python numbers, row-major."""
        if self.dtype is bool_:
            return [bool(v) for v in self.data]
        return self.data.tolist()

    def item(self):
        v = self.data[0]
        return bool(v) if self.dtype is bool_ else v

    def tolist(self):
        return nested(self.values(), self.shape)

    def nbytes(self):
        return self.numel * self.dtype.itemsize


# ---------------------------------------------------------------- creation

def from_list(values, shape, dtype):
    return Buffer(pack_values(values, dtype), shape, dtype)


def full(shape, value, dtype):
    n = prod(shape)
    value = fill_value(value, dtype)
    try:
        return Buffer(array(dtype.typecode, [value]) * n, shape, dtype)
    except OverflowError:
        return from_list([value] * n, shape, dtype)


# the *_values helpers compute elements as Python lists; later stages store them their way

def arange_values(start, stop, step):
    n = max(0, math.ceil((stop - start) / step))
    return [start + i * step for i in range(n)]


def uniform_values(n, low, high, double, generator):
    u = generator.uniform(n, double=double)
    if low != 0.0 or high != 1.0:
        span = high - low
        u = [low + span * x for x in u]
    return u


def normal_values(n, mean, std, generator):
    z = generator.normal(n)
    if mean != 0.0 or std != 1.0:
        z = [mean + std * x for x in z]
    return z


def creation_from_values(from_list):
    """The creation primitives whose elements are computed as Python numbers (``arange``,
    ``uniform``, ``normal``, ``randint``), each storing them with ``from_list``: stage 0's
    below, and stage 1's over its own storage."""
    def arange(start, stop, step, dtype):
        vals = arange_values(start, stop, step)
        return from_list(vals, (len(vals),), dtype)

    def uniform(shape, low, high, dtype, generator):
        return from_list(uniform_values(prod(shape), low, high, dtype is float64, generator), shape, dtype)

    def normal(shape, mean, std, dtype, generator):
        return from_list(normal_values(prod(shape), mean, std, generator), shape, dtype)

    def randint(shape, low, high, dtype, generator):
        return from_list(generator.randint(low, high, prod(shape)), shape, dtype)
    return arange, uniform, normal, randint


arange, uniform, normal, randint = creation_from_values(from_list)


def cast(x, dtype):
    if dtype is x.dtype:
        return Buffer(x.data, x.shape, dtype)
    if dtype is bool_:
        return Buffer(array("B", [1 if v else 0 for v in x.data]), x.shape, dtype)
    if dtype.is_floating_point:
        return Buffer(array(dtype.typecode, x.data), x.shape, dtype)
    if x.dtype.is_floating_point:
        return from_list([to_int(v) for v in x.data], x.shape, dtype)
    return from_list(x.data, x.shape, dtype)


# ---------------------------------------------------------------- elementwise

def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def _log(x):
    if x > 0:
        return math.log(x)
    if x == 0:
        return -INF
    return NAN  # negative or NaN


def _sqrt(x):
    return math.sqrt(x) if x >= 0 else NAN


def _rsqrt(x):
    if x > 0:
        return 1.0 / math.sqrt(x)
    return math.copysign(INF, x) if x == 0 else NAN  # 1 / sqrt(-0.0) is 1 / -0.0


def _recip(x):
    if x:
        return 1.0 / x
    return NAN if x != x else math.copysign(INF, x)


def _sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = _exp(x)
    return z / (1.0 + z)


def _silu(x):
    return x * _sigmoid(x)


_SQRT1_2 = 0.7071067811865476  # 1/sqrt(2) correctly rounded (1.0 / math.sqrt(2.0) is one ulp low)


def _gelu(x):
    # x * Phi(x), Phi from erfc: 1 + erf(x) would cancel to 0 for x well below 0
    return 0.5 * x * math.erfc(-x * _SQRT1_2) if x == x else x


def _sign(x):
    return (x > 0) - (x < 0) if x == x else NAN


def _integral(f):
    """An integer-valued rounding as IEEE defines it: the sign of x survives a zero result
    (ceil(-0.5) is -0.0), and inf and nan pass through."""
    def rounded(x):
        return math.copysign(float(f(x)), x) if x - x == 0 else x
    return rounded


def _bitwise_not(x):
    return ~x if isinstance(x, int) else NAN  # the frontend lets no float reach here


UNARY = {
    "neg": operator.neg,
    "abs": abs,
    "exp": _exp,
    "log": _log,
    "sqrt": _sqrt,
    "rsqrt": _rsqrt,
    "sin": periodic(math.sin),
    "cos": periodic(math.cos),
    "tanh": math.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda x: max(x, 0),  # PyTorch's: -0.0 and NaN pass (a tie keeps x), below 0 gives +0
    "sign": _sign,
    "reciprocal": _recip,
    "gelu": _gelu,
    "silu": _silu,
    "erf": math.erf,
    "log1p": lambda x: math.log1p(x) if x > -1 else (-INF if x == -1 else NAN),
    "floor": _integral(math.floor),
    "ceil": _integral(math.ceil),
    "round": _integral(round),
    "trunc": _integral(math.trunc),
    "isnan": lambda x: x != x,
    "isinf": lambda x: x in (INF, -INF),
    "isfinite": lambda x: x - x == 0,  # inf - inf and nan - nan are nan
    "isposinf": lambda x: x == INF,
    "isneginf": lambda x: x == -INF,
    "logical_not": operator.not_,
    "bitwise_not": _bitwise_not,
    **{f.name: f.python for f in FUNCTIONS},  # the op table's float functions
}


def unary(op, x, dtype=None):
    f = UNARY[op]
    out = dtype or (bool_ if op in BOOL_RESULT else x.dtype)
    vals = x.values() if x.dtype is bool_ else x.data
    if op in ("sign", "abs", "neg") and not out.is_floating_point:
        f = {"sign": lambda v: (v > 0) - (v < 0), "abs": abs, "neg": operator.neg}[op]
    return from_list(list(map(f, vals)), x.shape, out)


def _div(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)


def _pow(a, b):
    try:
        return math.pow(a, b)
    except OverflowError:
        return INF if a > 0 or float(b).is_integer() and int(b) % 2 == 0 else -INF
    except ValueError:
        if a == 0:  # 0 ** negative
            return INF if not (float(b).is_integer() and int(b) % 2) else math.copysign(INF, a)
        return NAN


def int_pow(a, b):
    """``a ** b`` on integers, refusing a negative exponent as PyTorch does."""
    if b < 0:
        raise IntegerPowerError("pow: integers to negative integer powers are not allowed")
    return a ** b


def _maximum(a, b):
    return a if a > b or a != a else b


def _minimum(a, b):
    return a if a < b or a != a else b


def _floordiv(a, b):
    try:
        return a // b
    except ZeroDivisionError:
        if isinstance(a, int):
            raise ZeroDivisionError("floor_divide: integer division by zero") from None
        return _div(a, b)


def _remainder(a, b):
    try:
        return a % b
    except ZeroDivisionError:
        if isinstance(a, int):
            raise ZeroDivisionError("remainder: integer division by zero") from None
        return NAN


def _fmod(a, b):
    """C's fmod: the remainder takes the sign of the dividend (``remainder``'s, the divisor's)."""
    if isinstance(a, int):
        if b == 0:
            raise ZeroDivisionError("fmod: integer division by zero")
        r = abs(a) % abs(b)
        return -r if a < 0 else r
    try:
        return math.fmod(a, b)
    except ValueError:  # x % 0 and inf % y
        return NAN


def _hypot(a, b):
    try:
        return math.hypot(a, b)
    except OverflowError:
        return INF


def shift_op(op, dtype):
    """The shift ``op`` for ``dtype``'s width: a count outside [0, width) shifts every bit
    out, as PyTorch defines it (0, or -1 for a negative number shifted right)."""
    bits = 8 * dtype.itemsize
    if op == "left_shift":
        return lambda a, s: a << s if 0 <= s < bits else 0  # from_list wraps to the width
    return lambda a, s: a >> s if 0 <= s < bits else (-1 if a < 0 else 0)


BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": _div,
    "pow": _pow,
    "maximum": _maximum,
    "minimum": _minimum,
    "floordiv": _floordiv,
    "remainder": _remainder,
    "atan2": math.atan2,
    "copysign": math.copysign,
    "fmod": _fmod,
    "hypot": _hypot,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "left_shift": None,  # per dtype: see shift_op
    "right_shift": None,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
}
# exact operator-module functions: tried as one fast map before the safe per-element form
_FAST = {"div": operator.truediv, "pow": operator.pow}


def _broadcast_values(x, shape):
    if x.shape == shape:
        return x.data
    return expand(x, shape).data


BOOL_LOGIC = {"add": "logical_or", "mul": "logical_and", "maximum": "logical_or", "minimum": "logical_and"}


def binary_op(op, dtype):
    """(the op ``binary`` runs for ``op`` on operands of ``dtype``, and its function of two
    Python numbers): on bool, arithmetic is logic (``BOOL_LOGIC``); an integer ``pow``
    refuses negative exponents; a shift is made for ``dtype``'s width."""
    if dtype is bool_ and op in BOOL_LOGIC:
        op = BOOL_LOGIC[op]
    f = BINARY[op]
    if op == "pow" and not dtype.is_floating_point:
        f = int_pow
    elif f is None:
        f = shift_op(op, dtype)
    return op, f


def binary(op, a, b, dtype):
    """``op`` elementwise over broadcast ``a`` and ``b``; both already hold ``dtype``
    (comparisons return bool)."""
    shape = broadcast_shapes(a.shape, b.shape)
    out = bool_ if op in BOOL_RESULT else dtype
    op, f = binary_op(op, dtype)
    if b.numel == 1 and a.numel != 1 or a.numel == 1 and b.numel != 1:
        # the scalar case, common enough for its own loop
        if b.numel == 1:
            xs, y = _broadcast_values(a, shape), b.data[0]
            vals = map_safe(op, f, lambda g: [g(x, y) for x in xs])
        else:
            x, ys = a.data[0], _broadcast_values(b, shape)
            vals = map_safe(op, f, lambda g: [g(x, y) for y in ys])
    else:
        xs, ys = _broadcast_values(a, shape), _broadcast_values(b, shape)
        vals = map_safe(op, f, lambda g: list(map(g, xs, ys)))
    return from_list(vals, shape, out)


def map_safe(op, f, run):
    """``run(f)`` elementwise, first with the plain operator where one exists (the fast
    path), then with ``f``, which handles the edge cases (division by zero, overflow)."""
    fast = _FAST.get(op)
    if fast is not None and f is not int_pow:
        try:
            vals = run(fast)
            if op != "pow" or not any(isinstance(v, complex) for v in vals):
                return vals
        except (ZeroDivisionError, OverflowError, ValueError):
            pass
    return run(f)


def where(cond, a, b):
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    cs = _broadcast_values(cond, shape)
    xs = _broadcast_values(a, shape)
    ys = _broadcast_values(b, shape)
    return from_list([x if c else y for c, x, y in zip(cs, xs, ys)], shape, a.dtype)


# ---------------------------------------------------------------- reductions

def _max(vals):
    m = max(vals)
    if m == m and any(v != v for v in vals):
        return NAN
    return m


def _min(vals):
    m = min(vals)
    if m == m and any(v != v for v in vals):
        return NAN
    return m


def _prod(vals):
    p = 1
    for v in vals:
        p *= v
    return p


REDUCE = {"sum": sum, "prod": _prod, "max": _max, "min": _min, "any": any, "all": all}


def _group_last(x, axes):
    """Move ``axes`` to the end; return (values, kept shape, group size)."""
    keep = [d for d in range(len(x.shape)) if d not in axes]
    order = keep + sorted(axes)
    perm = permute(x, order) if order != list(range(len(order))) else x
    group = prod(x.shape[d] for d in axes)
    return perm.data, [x.shape[d] for d in keep], group


def reduce(op, x, axes, keepdim, dtype=None):
    """Reduce over ``axes`` (a tuple of non-negative ints). ``max``/``min`` of an empty
    group are rejected by the frontend; ``sum``/``prod`` of one give 0/1."""
    out = dtype or (bool_ if op in ("any", "all") else x.dtype)
    vals, _, group = _group_last(x, axes)
    res = reduce_groups(op, vals, group, x, axes)
    return from_list(res, reduced_shape(x.shape, axes, keepdim), out)


def reduce_groups(op, vals, group, x, axes):
    """``op`` over each run of ``group`` consecutive values (the reduced axes laid last).
    Shared with later pure-Python stages, whose dtype objects are their own: by name."""
    if x.dtype.name == "bool" and op not in ("any", "all"):
        vals = list(vals)
    f = REDUCE[op]
    n = len(vals)
    if group == 0:
        return [f(())] * prod(reduced_shape(x.shape, axes, False))
    if group == n:
        return [f(vals)]
    return [f(vals[i:i + group]) for i in range(0, n, group)]


def argmax_of(chunk):
    """The index of the first largest value of ``chunk`` (the first NaN, if any, as PyTorch)."""
    m = _max(chunk)
    if m != m:
        return next(i for i, v in enumerate(chunk) if v != v)
    return chunk.index(m)


def argmin_of(chunk):
    """The index of the first smallest value of ``chunk`` (the first NaN, if any, as PyTorch)."""
    m = _min(chunk)
    if m != m:
        return next(i for i, v in enumerate(chunk) if v != v)
    return chunk.index(m)


def arg_reduce(op, x, axis, keepdim):
    f = argmax_of if op == "argmax" else argmin_of
    vals, _, group = _group_last(x, (axis,))
    res = [f(vals[i:i + group]) for i in range(0, len(vals), group)]
    return from_list(res, reduced_shape(x.shape, (axis,), keepdim), int64)


# ---------------------------------------------------------------- sort and scan along an axis

def _sort_key(row):
    # NaN after every number (PyTorch's order); (0, v) never compares a NaN
    return lambda j: (1, 0.0) if row[j] != row[j] else (0, row[j])


def sort_rows(vals, n, descending):
    """Stable sort of each run of ``n`` consecutive values: (values, indices) as lists.
    ``reverse=True`` keeps equal keys in their original order, as a stable descending
    sort must. Shared with stage 1, which hands its rows the same way."""
    out_v, out_i = [], []
    for start in range(0, len(vals), n):
        row = vals[start:start + n]
        order = sorted(range(n), key=_sort_key(row), reverse=descending)
        out_i += order
        out_v += [row[j] for j in order]
    return out_v, out_i


def _logaddexp(a, b):
    m = a if a > b else b
    if a != a or b != b:
        return NAN
    if m == -INF or m == INF:
        return m  # exp(-inf - -inf) would be nan; both -inf stays -inf
    return m + math.log1p(math.exp(-abs(a - b)))


def scan_rows(op, vals, n):
    """Running ``op`` over each run of ``n`` consecutive values: (values, indices or
    None). Floats accumulate in double (as PyTorch's CPU kernels do); max/min take the
    latest index of a tie and stay at NaN once one is seen, as PyTorch's cummax does."""
    out, idx = [], []
    for start in range(0, len(vals), n):
        row = vals[start:start + n]
        if op in ("max", "min"):
            best, bj = row[0], 0
            for j, v in enumerate(row):
                if v != v or (best == best and (v >= best if op == "max" else v <= best)):
                    best, bj = v, j
                out.append(best)
                idx.append(bj)
            continue
        acc = row[0]
        out.append(acc)
        for v in row[1:]:
            if op == "sum":
                acc = acc + v
            elif op == "prod":
                acc = acc * v
            else:
                acc = _logaddexp(acc, v)
            out.append(acc)
    return out, (idx if op in ("max", "min") else None)


def _along_last(x, axis):
    """x's values with ``axis`` moved last, that shape, and the order undoing the move."""
    order = [d for d in range(len(x.shape)) if d != axis] + [axis]
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return permute(x, order).data, tuple(x.shape[d] for d in order), inverse


def sort(x, axis, descending):
    vals, pshape, inverse = _along_last(x, axis)
    n = x.shape[axis] if x.shape else 1
    v, i = sort_rows(vals, n, descending) if n else ([], [])
    return (permute(Buffer(_pack_same(x, v), pshape, x.dtype), inverse),
            permute(from_list(i, pshape, int64), inverse))


def scan(op, x, axis):
    vals, pshape, inverse = _along_last(x, axis)
    n = x.shape[axis] if x.shape else 1
    v, i = scan_rows(op, list(vals), n) if n else ([], [] if op in ("max", "min") else None)
    out = permute(from_list(v, pshape, x.dtype), inverse)
    return out, (None if i is None else permute(from_list(i, pshape, int64), inverse))


# ---------------------------------------------------------------- movement

def reshape(x, shape):
    return Buffer(x.data, shape, x.dtype)


def permute(x, dims):
    strides = contiguous_strides(x.shape)
    shape = tuple(x.shape[d] for d in dims)
    src = x.data
    idx = strided_indices(shape, [strides[d] for d in dims])
    return Buffer(_pack_same(x, [src[i] for i in idx]), shape, x.dtype)


def _pack_same(x, vals):
    return array(x.data.typecode, vals)


def expand(x, shape):
    """Broadcast ``x`` to ``shape`` (materialised: stage 0 has no views)."""
    _check_shape(shape, "expand", x.dtype)
    pad = len(shape) - len(x.shape)
    src_strides = contiguous_strides(x.shape)
    strides = [0] * pad + [0 if n == 1 else s for n, s in zip(x.shape, src_strides)]
    if x.numel == 1:
        return Buffer(x.data * prod(shape), shape, x.dtype)
    src = x.data
    if prod(shape) == 0:
        return Buffer(array(x.data.typecode), shape, x.dtype)
    # the trailing run that is copied as a block
    idx = strided_indices(shape, strides)
    return Buffer(_pack_same(x, [src[i] for i in idx]), shape, x.dtype)


def slice(x, starts, steps, counts):
    """Basic slicing: along dim ``d`` take ``counts[d]`` elements from ``starts[d]``
    every ``steps[d]`` (steps are positive)."""
    strides = contiguous_strides(x.shape)
    offset = sum(s * st for s, st in zip(starts, strides))
    idx = strided_indices(counts, [st * sp for st, sp in zip(strides, steps)], offset)
    src = x.data
    return Buffer(_pack_same(x, [src[i] for i in idx]), counts, x.dtype)


def _strided_copy(x, shape, strides, start):
    _check_shape(shape, "view copy", x.dtype)
    src = x.data
    return Buffer(_pack_same(x, [src[i] for i in strided_indices(shape, strides, start)]), shape, x.dtype)


def diagonal(x, offset, dim1, dim2):
    return _strided_copy(x, *diagonal_layout(x.shape, contiguous_strides(x.shape), 0, offset, dim1, dim2))


def windows(x, dim, size, step):
    """Sliding windows along ``dim`` (``Tensor.unfold``), copied."""
    return _strided_copy(x, *windows_layout(x.shape, contiguous_strides(x.shape), dim, size, step), 0)


def contiguous(x):
    return x


def is_contiguous(x):
    return True


def strides(x):
    return contiguous_strides(x.shape)


def storage_offset(x):
    return 0


def storage_id(x):
    return id(x.data)


def data_ptr(x):
    return id(x.data)


def shares_storage(a, b):
    """True when writes through one may be seen through the other. Stage 0 never
    writes into an array (an in-place update swaps ``Buffer.data``), so only two
    handles on one Buffer object see each other's writes."""
    return a is b


def alias(x):
    """A second handle on the same contents. Stage 0 never writes into an array, so
    an alias keeps the values it saw (and its own version) whatever happens to ``x``."""
    return Buffer(x.data, x.shape, x.dtype)


def copy(x):
    return Buffer(array(x.data.typecode, x.data), x.shape, x.dtype)


def cat(xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    outer = prod(shape[:axis])
    out = array(xs[0].data.typecode)
    blocks = [(x.data, prod(x.shape[axis:])) for x in xs]
    for o in range(outer):
        for data, n in blocks:
            out.extend(data[o * n:(o + 1) * n])
    return Buffer(out, shape, xs[0].dtype)


# ---------------------------------------------------------------- indexing

def take(x, index):
    """Flat gather: ``out[i] = x.flat[index[i]]``, shaped like ``index``."""
    src = x.data
    return Buffer(_pack_same(x, [src[i] for i in index.data]), index.shape, x.dtype)


def gather(x, axis, index):
    src = x.data
    pos = axis_positions(x.shape, axis, index)
    return Buffer(_pack_same(x, [src[p] for p in pos]), index.shape, x.dtype)


def scatter_add(shape, axis, index, src):
    """A zero tensor of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    out = [0] * prod(shape)
    for p, v in zip(axis_positions(shape, axis, index), src.data):
        out[p] += v
    return from_list(out, shape, src.dtype)


# ---------------------------------------------------------------- matmul

def matmul(a, b):
    """``a`` (..., n, k) @ ``b`` (..., k, m); the batch dims of both are equal."""
    *batch, n, k = a.shape
    m = b.shape[-1]
    nb = prod(batch)
    mul = operator.mul
    out = []
    ad = a.data.tolist()
    bd = b.data.tolist()
    for t in range(nb):
        A = ad[t * n * k:(t + 1) * n * k]
        B = bd[t * k * m:(t + 1) * k * m]
        cols = [B[j::m] for j in range(m)]
        for i in range(n):
            row = A[i * k:(i + 1) * k]
            out.extend([sum(map(mul, row, col)) for col in cols])
    return from_list(out, (*batch, n, m), a.dtype)


# ---------------------------------------------------------------- convolution

def unfold(x, kernel, dilation, padding, stride):
    """im2col for NC(spatial...) input with 1 or 2 spatial dims: returns
    (N, C * prod(kernel), L), L being the number of output positions."""
    vals, shape = unfold_values(x.data, x.shape, kernel, dilation, padding, stride)
    return Buffer(_pack_same(x, vals), shape, x.dtype)


def unfold_values(src, shape, kernel, dilation, padding, stride):
    """``unfold`` over ``src``, the row-major elements of ``shape``: (values, out shape)."""
    N, C, *sp = shape
    out_sp = [(s + 2 * p - d * (k - 1) - 1) // st + 1
              for s, k, d, p, st in zip(sp, kernel, dilation, padding, stride)]
    plan = _unfold_plan(sp, kernel, dilation, padding, stride, out_sp)
    zero = src.typecode in "fd" and 0.0 or 0
    plane = prod(sp)
    out = []
    for nc in range(N * C):
        base = nc * plane
        for row in plan:
            out.extend([src[base + p] if p >= 0 else zero for p in row])
    # rows come out ordered (n, c, kernel offset): exactly (N, C*K, L)
    return out, (N, C * prod(kernel), prod(out_sp))


def _unfold_plan(sp, kernel, dilation, padding, stride, out_sp):
    """For each kernel offset, the input position read at every output position
    (-1 where it falls in the padding)."""
    if len(sp) == 1:
        sp, kernel, dilation, padding, stride, out_sp = ([1] + list(v) for v in
                                                         (sp, kernel, dilation, padding, stride, out_sp))
        padding[0] = 0
    H, W = sp
    kh, kw = kernel
    plan = []
    for i in range(kh):
        for j in range(kw):
            row = []
            for oh in range(out_sp[0]):
                h = oh * stride[0] - padding[0] + i * dilation[0]
                ok_h = 0 <= h < H
                for ow in range(out_sp[1]):
                    w = ow * stride[1] - padding[1] + j * dilation[1]
                    row.append(h * W + w if ok_h and 0 <= w < W else -1)
            plan.append(row)
    return plan


def fold(cols, output_size, kernel, dilation, padding, stride):
    """The adjoint of ``unfold``: sums (N, C*K, L) columns back into (N, C, *output_size)."""
    vals, shape = fold_values(cols.data, cols.shape, output_size, kernel, dilation, padding, stride)
    return from_list(vals, shape, cols.dtype)


def fold_values(src, shape, output_size, kernel, dilation, padding, stride):
    """``fold`` over ``src``, the row-major elements of ``shape``: (values, out shape)."""
    N, CK, L = shape
    K = prod(kernel)
    C = CK // K
    out_sp = [(s + 2 * p - d * (k - 1) - 1) // st + 1
              for s, k, d, p, st in zip(output_size, kernel, dilation, padding, stride)]
    plan = _unfold_plan(list(output_size), kernel, dilation, padding, stride, out_sp)
    plane = prod(output_size)
    out = [0.0] * (N * C * plane)
    pos = 0
    for nc in range(N * C):
        base = nc * plane
        for row in plan:
            for p in row:
                if p >= 0:
                    out[base + p] += src[pos]
                pos += 1
    return out, (N, C, *output_size)


# ---------------------------------------------------------------- in-place

def assign(dst, starts, steps, counts, src):
    """Write ``src`` (broadcast to ``counts``) into the basic-slice region of ``dst``."""
    strides = contiguous_strides(dst.shape)
    offset = sum(s * st for s, st in zip(starts, strides))
    idx = strided_indices(counts, [st * sp for st, sp in zip(strides, steps)], offset)
    vals = _broadcast_values(cast(src, dst.dtype), tuple(counts))
    data = array(dst.data.typecode, dst.data)
    for i, v in zip(idx, vals):
        data[i] = v
    dst.data = data
    _track(data)
    dst.version += 1


# how put combines a value with the element it lands on (NaN wins amax and amin, and stays)
PUT_COMBINE = {True: operator.add, "sum": operator.add, "prod": operator.mul,
               "amax": lambda a, b: b if b > a or b != b else a,
               "amin": lambda a, b: b if b < a or b != b else a}


def put(dst, index, src, accumulate=False):
    """``dst.flat[index[i]] = src[i]``; ``accumulate`` combines instead: True or "sum"
    (repeated indices add up), "prod", "amax", "amin". ``src`` is broadcast to ``index``'s
    shape."""
    vals = _broadcast_values(cast(src, dst.dtype), index.shape)
    data = dst.data.tolist() if accumulate else array(dst.data.typecode, dst.data)
    if accumulate:
        combine = PUT_COMBINE[accumulate]
        for i, v in zip(index.data, vals):
            data[i] = combine(data[i], v)
        if dst.dtype is bool_:
            data = [bool(v) for v in data]
        dst.data = pack_values(data, dst.dtype)
    else:
        for i, v in zip(index.data, vals):
            data[i] = v
        dst.data = data
    _track(dst.data)
    dst.version += 1


def set_data(dst, src):
    """Replace the contents of ``dst`` with ``src`` (same shape and dtype)."""
    dst.data = src.data
    dst.version += 1


# ---------------------------------------------------------------- bytes

def bytes_as(raw, dtype):
    """The values of ``dtype`` that the bytes ``raw`` hold, in the machine's byte order."""
    values = array(dtype.typecode)
    values.frombytes(raw)
    return values.tolist()


def view_dtype(x, dtype):
    """``x``'s bytes read as ``dtype``: a copy, since an array holds one type (the frontend
    marks it as standing for a view)."""
    values = bytes_as(array(x.dtype.typecode, x.values()).tobytes(), dtype)
    return from_list(values, x.shape[:-1] + (x.shape[-1] * x.dtype.itemsize // dtype.itemsize,), dtype)


def from_buffer(obj, dtype):
    """The bytes of ``obj`` (with the buffer protocol) as a 1-d buffer of ``dtype``: a copy."""
    values = bytes_as(obj, dtype)
    return from_list(values, (len(values),), dtype)


# ---------------------------------------------------------------- DLPack

_NO_DLPACK = ("stage 0 cannot share memory: its arrays are immutable and every in-place write "
              "replaces a tensor's array, so no memory stays put for another library to read or "
              "write; np.asarray(t) or t.numpy() copies")


to_dlpack = refusal(__name__, "dlpack", "__dlpack__", _NO_DLPACK)
from_dlpack = refusal(__name__, "dlpack", "from_dlpack", _NO_DLPACK)
