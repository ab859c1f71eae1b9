"""Elementwise math against PyTorch: the op table's float functions (the trigonometric and
hyperbolic functions, exp2/expm1/log2/log10, erfc, logit), trunc, the inf predicates, atan2/copysign/fmod/hypot/
logaddexp(2), the number-first forms of remainder and pow, and the bitwise operators.
Values on edge inputs (nan, +-inf, -0.0, domain edges, poles, large magnitudes), gradients
under a random upstream in float32 and float64, integer and bool inputs, broadcasting,
non-contiguous inputs, in-place forms and the errors."""
import numpy as np
import pytest

from stage0_python.op_table import FUNCTIONS

from .helpers_core import DTYPES, FLOATS, GRAD_TOL, INTS, T, check_grads, data
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch

INF, NAN = float("inf"), float("nan")
EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 0.999, -0.999, 1.5, -1.5, 1e-7, -1e-7, 10.0,
         -10.0, 100.0, -100.0, 1e4, -1e4, 1e30, -1e30, INF, -INF, NAN, 3.0, 0.25, 88.0, -88.0, 200.0]

# name, the inputs its gradient is checked on (kept off poles and domain edges): every
# float function of the op table, so that a function added there is tested here
UNARY = [(f.name, f.domain) for f in FUNCTIONS] + [("trunc", (-5.0, 5.0))]
ALIASES = [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
           ("arccosh", "acosh"), ("arctanh", "atanh"), ("fix", "trunc"), ("arctan2", "atan2")]
PREDICATES = ["isinf", "isfinite", "isposinf", "isneginf"]
# name, whether integer operands promote (else they are refused), the gradient's inputs
BINARY = [("atan2", True), ("copysign", True), ("fmod", True), ("hypot", False),
          ("logaddexp", False), ("logaddexp2", False)]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
OPERATORS = {"bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b,
             "bitwise_xor": lambda a, b: a ^ b, "bitwise_left_shift": lambda a, b: a << b,
             "bitwise_right_shift": lambda a, b: a >> b}


def _tol(dtype):
    # transcendental functions: stage 0 and 2 evaluate float32 in double and round once,
    # PyTorch in float32 (an ulp or two apart)
    return (2e-6, 1e-6) if dtype == "float32" else (1e-12, 1e-15)


def _edges(dtype):
    return np.array(EDGES, dtype=dtype).reshape(5, 6)


# ------------------------------------------------------------------ unary: values

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [n for n, _ in UNARY])
def test_unary_edge_values(sg, name, dtype):
    torch = need_torch()
    x = _edges(dtype)
    if name == "tan" and dtype == "float32":
        x = np.where(np.abs(x) > 1e4, 0.75, x).astype(dtype)  # argument reduction of huge floats
    expected = getattr(torch, name)(torch.tensor(x))
    r, a = _tol(dtype)
    assert_close(getattr(sg, name)(T(sg, x)), expected, rtol=r, atol=a)
    assert_close(getattr(T(sg, x), name)(), expected, rtol=r, atol=a)
    # the sign of a zero result survives (tan(-0.0), trunc(-0.5), expm1(-0.0) are -0.0)
    ours = getattr(sg, name)(T(sg, x)).numpy()
    zero = expected.numpy() == 0
    assert (np.signbit(ours[zero]) == np.signbit(expected.numpy()[zero])).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [n for n, _ in UNARY])
def test_unary_inplace_and_layouts(sg, name, dtype):
    torch = need_torch()
    lo, hi = dict(UNARY)[name]
    x = data((3, 4), dtype, seed=5, low=lo, high=hi)
    r, a = _tol(dtype)
    t = T(sg, x)
    out = getattr(t, name + "_")()
    assert out is t
    assert_close(t, getattr(torch, name)(torch.tensor(x)), rtol=r, atol=a)
    # a transposed (non-contiguous) input, a size-1 dim, an empty tensor
    assert_close(getattr(T(sg, x).t(), name)(), getattr(torch.tensor(x).t(), name)(), rtol=r, atol=a)
    y = x[:1]
    assert_close(getattr(sg, name)(T(sg, y)), getattr(torch, name)(torch.tensor(y)), rtol=r, atol=a)
    e = np.zeros((0, 3), dtype)
    assert_close(getattr(sg, name)(T(sg, e)), getattr(torch, name)(torch.tensor(e)))


@pytest.mark.parametrize("name", [n for n, _ in UNARY])
@pytest.mark.parametrize("dtype", [*INTS, "bool"])
def test_unary_integer_inputs(sg, name, dtype):
    """Integers and bools promote to the default float dtype, as torch's; trunc keeps an
    integer tensor (PyTorch refuses trunc of bool)."""
    torch = need_torch()
    x = np.array([[0, 1, 2, 5], [3, 7, 1, 0]], dtype=dtype) if dtype == "bool" else \
        np.array([[0, 1, -1, 2], [-2, 5, 100, -7]]).astype(dtype)  # uint8 wraps the negatives
    if name == "trunc" and dtype == "bool":
        with pytest.raises(NotImplementedError):
            torch.trunc(torch.tensor(x))
        return
    expected = getattr(torch, name)(torch.tensor(x))
    assert_close(getattr(sg, name)(T(sg, x)), expected, rtol=2e-6, atol=1e-6)
    if dtype != "bool" and name != "trunc":
        with pytest.raises(TypeError):  # the float result cannot go back into the int tensor
            getattr(T(sg, x), name + "_")()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("alias, name", ALIASES)
def test_aliases(sg, alias, name, dtype):
    torch = need_torch()
    x = data((2, 3), dtype, seed=1, low=1.1, high=1.9) if alias == "arccosh" else \
        data((2, 3), dtype, seed=1, low=-0.9, high=0.9)
    args = (T(sg, x),) + ((T(sg, x[::-1].copy()),) if alias == "arctan2" else ())
    targs = (torch.tensor(x),) + ((torch.tensor(x[::-1].copy()),) if alias == "arctan2" else ())
    r, a = _tol(dtype) if dtype == "float32" else (None, None)  # float32: an ulp or two from torch
    assert_close(getattr(sg, alias)(*args), getattr(torch, alias)(*targs), rtol=r, atol=a)
    assert_close(getattr(sg, alias)(*args), getattr(sg, name)(*args))
    t = T(sg, x)
    getattr(t, alias + "_")(*args[1:])
    assert_close(t, getattr(torch.tensor(x), alias + "_")(*targs[1:]), rtol=r, atol=a)


# ------------------------------------------------------------------ unary: gradients

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [n for n, _ in UNARY])
def test_unary_gradients(sg, name, dtype):
    need_torch()
    lo, hi = dict(UNARY)[name]
    x = data((3, 5), dtype, seed=11, low=lo, high=hi)
    r, a = GRAD_TOL[dtype]
    check_grads(sg, lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), x,
                rtol=r * 2, atol=a)
    # through the top-level function and a transposed input as well
    check_grads(sg, lambda t: getattr(sg, name)(t.t()), lambda t: getattr(t.t(), name)(), x,
                rtol=r * 2, atol=a)


# ------------------------------------------------------------------ predicates

@pytest.mark.parametrize("name", PREDICATES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_predicates(sg, name, dtype):
    torch = need_torch()
    x = _edges("float64").astype(dtype) if dtype.startswith("float") else \
        np.array([[0, 1, -1], [7, 0, 3]]).astype(dtype)
    out = getattr(sg, name)(T(sg, x))
    assert out.dtype == sg.bool_
    assert_close(out, getattr(torch, name)(torch.tensor(x)))
    assert_close(getattr(T(sg, x).t(), name)(), getattr(torch.tensor(x).t(), name)())


# ------------------------------------------------------------------ float binary

def _grid(dtype):
    """Every pair of edge values, as (a, b) of shape (n, n)."""
    v = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, 1e-7, 1e4, -1e4, 1e30, INF, -INF, NAN],
                 dtype=dtype)
    return np.broadcast_to(v[:, None], (v.size, v.size)).copy(), np.broadcast_to(v, (v.size, v.size)).copy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [n for n, _ in BINARY])
def test_binary_edge_values(sg, name, dtype):
    torch = need_torch()
    a, b = _grid(dtype)
    expected = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    r, t = _tol(dtype)
    assert_close(getattr(sg, name)(T(sg, a), T(sg, b)), expected, rtol=r, atol=t)
    assert_close(getattr(T(sg, a), name)(T(sg, b)), expected, rtol=r, atol=t)
    ours = getattr(sg, name)(T(sg, a), T(sg, b)).numpy()
    zero = expected.numpy() == 0  # fmod(-0.0, 1) is -0.0, copysign(0, -1) is -0.0
    assert (np.signbit(ours[zero]) == np.signbit(expected.numpy()[zero])).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [n for n, _ in BINARY])
def test_binary_gradients_broadcast(sg, name, dtype):
    need_torch()
    a = data((3, 1, 4), dtype, seed=2, low=-3, high=3)
    b = data((5, 4), dtype, seed=3, low=-3, high=3, away_from=0.0)
    r, t = GRAD_TOL[dtype]
    f = lambda x, y: getattr(x, name)(y)  # noqa: E731
    check_grads(sg, f, f, a, b, rtol=r * 2, atol=t)
    # the other way round, and through the top-level function on a transposed operand
    check_grads(sg, lambda x, y: getattr(sg, name)(y, x), lambda x, y: getattr(y, name)(x), a, b,
                rtol=r * 2, atol=t)
    c = data((4, 3), dtype, seed=4, low=-3, high=3, away_from=0.0)
    check_grads(sg, lambda x, y: getattr(sg, name)(x, y.t()), lambda x, y: getattr(x, name)(y.t()),
                a[0, 0].reshape(1, 4).repeat(3, 0), c, rtol=r * 2, atol=t)


@pytest.mark.capability("float64")
def test_binary_gradients_at_edges(sg):
    """copysign's gradient is 0 at a zero input and for its sign operand; logaddexp of
    equal values splits the gradient, of very different ones gives it all to the larger."""
    need_torch()
    a = np.array([0.0, -0.0, 1.0, -2.0, 3.0, 500.0, -500.0], dtype="float64")
    b = np.array([-1.0, 2.0, -0.0, 4.0, 3.0, -500.0, 500.0], dtype="float64")
    for name in ("copysign", "logaddexp", "logaddexp2", "hypot", "atan2"):
        f = lambda x, y: getattr(x, name)(y)  # noqa: E731
        check_grads(sg, f, f, a[1:] if name == "hypot" else a, b[1:] if name == "hypot" else b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, ints", BINARY)
def test_binary_promotion_and_numbers(sg, name, ints, dtype):
    """Integer operands promote (or are refused) beside a float operand of ``dtype``; a
    number operand and the in-place form keep ``dtype``."""
    torch = need_torch()
    i = np.array([[3, -4, 5], [0, 7, -9]], dtype="int64")
    j = np.array([2, -3, 4], dtype="int32")
    f = data((2, 3), dtype, seed=9, low=-3, high=3, away_from=0.0)
    r, a = _tol(dtype) if dtype == "float32" else (None, None)  # float32: an ulp or two from torch
    if ints:
        for x, y in ((i, j), (i, f), (j, f.astype("float32")), (f, i)):
            expected = getattr(torch, name)(torch.tensor(x), torch.tensor(y))
            assert_close(getattr(sg, name)(T(sg, x), T(sg, y)), expected, rtol=2e-6, atol=1e-7)
    else:
        with pytest.raises((NotImplementedError, RuntimeError)):
            getattr(torch, name)(torch.tensor(i), torch.tensor(j))
        with pytest.raises(TypeError, match=name):
            getattr(sg, name)(T(sg, i), T(sg, j))
        expected = getattr(torch, name)(torch.tensor(i), torch.tensor(f))  # one float operand: fine
        assert_close(getattr(sg, name)(T(sg, i), T(sg, f)), expected, rtol=r, atol=a)
    # a Python number as the second operand (torch takes a 0-dim tensor where it refuses one;
    # a 0-dim float64 beside a float32 tensor keeps float32, as a number does)
    for number in (2.5, -3):
        expected = getattr(torch, name)(torch.tensor(f), torch.tensor(number, dtype=torch.float64))
        assert_close(getattr(T(sg, f), name)(number), expected, rtol=r, atol=a)
    # in place (PyTorch has no logaddexp_)
    if hasattr(torch.Tensor, name + "_"):
        t = T(sg, f)
        assert getattr(t, name + "_")(T(sg, f[::-1].copy())) is t
        assert_close(t, getattr(torch.tensor(f), name + "_")(torch.tensor(f[::-1].copy())), rtol=r, atol=a)


def test_fmod_against_remainder(sg):
    """fmod keeps the dividend's sign, remainder the divisor's; integers stay integers and
    a zero integer divisor raises."""
    torch = need_torch()
    for dtype in ("int32", "int64"):
        a = np.array([7, -7, 7, -7, 0, -2**31, 2**31 - 1, 5], dtype=dtype)
        b = np.array([3, 3, -3, -3, 5, -1, -1, 5], dtype=dtype)
        for name in ("fmod", "remainder"):
            assert_close(getattr(sg, name)(T(sg, a), T(sg, b)), getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
        assert_close(sg.fmod(T(sg, a), 3), torch.fmod(torch.tensor(a), 3))
        assert_close(sg.fmod(T(sg, a), 2.5), torch.fmod(torch.tensor(a), 2.5))
        with pytest.raises(RuntimeError):
            torch.fmod(torch.tensor(a), 0)
        with pytest.raises(ZeroDivisionError, match="fmod"):
            sg.fmod(T(sg, a), T(sg, np.zeros_like(b)))
    with pytest.raises(TypeError, match="fmod"):
        sg.fmod(T(sg, np.array([True])), T(sg, np.array([True])))


def test_binary_errors(sg):
    need_torch()
    x, y = T(sg, np.zeros(3, "float32")), T(sg, np.zeros(4, "float32"))
    for name in [n for n, _ in BINARY]:
        with pytest.raises(sg.ShapeError, match=name) as err:
            getattr(sg, name)(x, y)
        assert "[3]" in str(err.value) and "[4]" in str(err.value)
        with pytest.raises(TypeError, match=name):
            getattr(x, name)("a")
    assert issubclass(sg.ShapeError, ValueError) and issubclass(sg.ShapeError, RuntimeError)


# ------------------------------------------------------------------ remainder, pow: a number first

@pytest.mark.parametrize("dtype", [*INTS, "float32", "float64"])
def test_remainder_and_pow_number_first(sg, dtype):
    torch = need_torch()
    x = np.array([[3, -2, 4], [7, -5, 1]]).astype(dtype)
    for number in (5, -7, 5.5):
        assert_close(sg.remainder(number, T(sg, x)), torch.remainder(number, torch.tensor(x)))
        assert_close(number % T(sg, x), number % torch.tensor(x))
    p = np.array([[3, 0, 4], [1, 2, 5]], dtype=dtype)
    for base in (2, -3, 2.5):
        assert_close(sg.pow(base, T(sg, p)), torch.pow(base, torch.tensor(p)), rtol=2e-6)
    # the tensor-first forms are unchanged
    assert_close(sg.remainder(T(sg, x), 3), torch.remainder(torch.tensor(x), 3))
    assert_close(sg.pow(T(sg, p), 2), torch.pow(torch.tensor(p), 2))
    # in place: remainder_ and %=
    t = T(sg, x)
    assert t.remainder_(3) is t
    assert_close(t, torch.tensor(x).remainder_(3))
    t = T(sg, x)
    u = t
    t %= 4
    assert t is u
    assert_close(t, torch.remainder(torch.tensor(x), 4))
    with pytest.raises(TypeError):
        sg.remainder(5, 3)
    with pytest.raises(TypeError):
        sg.pow(2, 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_number_base_gradient(sg, dtype):
    torch = need_torch()
    x = data((2, 3), dtype, seed=7, low=-2, high=2)
    check_grads(sg, lambda t: sg.pow(2.5, t), lambda t: torch.pow(2.5, t), x)
    check_grads(sg, lambda t: 2.5 ** t, lambda t: 2.5 ** t, x)


# ------------------------------------------------------------------ bitwise

INT_EDGES = {"int32": [0, 1, -1, 5, -8, 2**31 - 1, -2**31, 12345, -99999, 7],
             "int64": [0, 1, -1, 5, -8, 2**63 - 1, -2**63, 2**40 + 3, -2**40, 7],
             "int16": [0, 1, -1, 5, -8, 2**15 - 1, -2**15, 1234, -9999, 7],
             "int8": [0, 1, -1, 5, -8, 127, -128, 100, -99, 7],
             "uint8": [0, 1, 255, 5, 248, 127, 128, 200, 99, 7]}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", BITWISE)
def test_bitwise_integers(sg, name, dtype):
    torch = need_torch()
    a = np.array(INT_EDGES[dtype], dtype=dtype)
    if "shift" in name:
        # counts past the width and negative ones: PyTorch shifts every bit out
        b = np.array([0, 1, 3, 31, 32, 33, 63, 64, 100, -1]).astype(dtype)
        a2, b2 = np.broadcast_to(a[:, None], (10, 10)).copy(), np.broadcast_to(b, (10, 10)).copy()
    else:
        b = np.array(INT_EDGES[dtype][::-1], dtype=dtype)
        a2, b2 = np.broadcast_to(a[:, None], (10, 10)).copy(), np.broadcast_to(b, (10, 10)).copy()
    ta, tb = torch.tensor(a2), torch.tensor(b2)
    expected = getattr(torch, name)(ta, tb)
    assert_close(getattr(sg, name)(T(sg, a2), T(sg, b2)), expected)
    assert_close(getattr(T(sg, a2), name)(T(sg, b2)), expected)
    assert_close(OPERATORS[name](T(sg, a2), T(sg, b2)), OPERATORS[name](ta, tb))
    # broadcasting, a transposed operand, Python ints on either side
    assert_close(OPERATORS[name](T(sg, a[:, None]), T(sg, b)),
                 OPERATORS[name](torch.tensor(a[:, None]), torch.tensor(b)))
    assert_close(OPERATORS[name](T(sg, a2).t(), T(sg, b2)), OPERATORS[name](ta.t(), tb))
    assert_close(OPERATORS[name](T(sg, a2), 3), OPERATORS[name](ta, 3))
    assert_close(OPERATORS[name](5, T(sg, b2 if "shift" not in name else np.abs(b2) % 8)),
                 OPERATORS[name](5, tb if "shift" not in name else tb.abs() % 8))
    assert_close(getattr(sg, name)(5, T(sg, b2 % 8)), getattr(torch, name)(5, tb % 8))
    # mixed widths promote
    other = "int64" if dtype == "int32" else "int32"
    mixed = (b2 % 16).astype(other)
    assert_close(getattr(sg, name)(T(sg, a2), T(sg, mixed)), getattr(torch, name)(ta, torch.tensor(mixed)))
    # in place: the method and the augmented operator
    t = T(sg, a2)
    assert getattr(t, name + "_")(T(sg, b2)) is t
    assert_close(t, expected)
    t = u = T(sg, a2)
    if name == "bitwise_and":
        t &= T(sg, b2)
    elif name == "bitwise_or":
        t |= T(sg, b2)
    elif name == "bitwise_xor":
        t ^= T(sg, b2)
    elif name == "bitwise_left_shift":
        t <<= T(sg, b2)
    else:
        t >>= T(sg, b2)
    assert t is u
    assert_close(t, expected)


@pytest.mark.parametrize("dtype", [*INTS, "bool"])
def test_bitwise_not(sg, dtype):
    torch = need_torch()
    x = np.array([[True, False, True]]) if dtype == "bool" else np.array(INT_EDGES[dtype], dtype=dtype).reshape(2, 5)
    assert_close(~T(sg, x), ~torch.tensor(x))
    assert_close(sg.bitwise_not(T(sg, x)), torch.bitwise_not(torch.tensor(x)))
    assert_close(T(sg, x).t().bitwise_not(), torch.tensor(x).t().bitwise_not())
    t = T(sg, x)
    assert t.bitwise_not_() is t
    assert_close(t, torch.tensor(x).bitwise_not_())


def test_bitwise_on_bool_is_logical(sg):
    torch = need_torch()
    a = np.array([[True, False], [True, True], [False, False]])
    b = np.array([True, False])
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        expected = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        out = getattr(sg, name)(T(sg, a), T(sg, b))
        assert out.dtype == sg.bool_
        assert_close(out, expected)
        assert_close(OPERATORS[name](T(sg, a), T(sg, b)), OPERATORS[name](torch.tensor(a), torch.tensor(b)))
        assert_close(OPERATORS[name](T(sg, a), True), OPERATORS[name](torch.tensor(a), True))
        # a Python int makes the result an integer, as in PyTorch
        assert_close(OPERATORS[name](T(sg, a), 1), OPERATORS[name](torch.tensor(a), 1))
    t = u = T(sg, a)
    t &= T(sg, b)
    assert t is u
    assert_close(t, torch.tensor(a) & torch.tensor(b))
    with pytest.raises(NotImplementedError):
        torch.tensor(a) << torch.tensor(a)
    with pytest.raises(TypeError, match="left_shift"):
        T(sg, a) << T(sg, a)


def test_bitwise_refuses_floats(sg):
    torch = need_torch()
    f = np.array([1.0, 2.0], dtype="float32")
    i = np.array([1, 2], dtype="int64")
    for name in BITWISE:
        with pytest.raises((NotImplementedError, RuntimeError)):
            getattr(torch, name)(torch.tensor(f), torch.tensor(i))
        for x, y in ((T(sg, f), T(sg, i)), (T(sg, i), T(sg, f)), (T(sg, i), 1.5)):
            with pytest.raises(TypeError, match=name.replace("bitwise_", "")) as err:
                OPERATORS[name](x, y)
            assert "float32" in str(err.value) or "float" in str(err.value)
            with pytest.raises(TypeError, match=name.replace("bitwise_", "")):
                getattr(x, name)(y)
    with pytest.raises(TypeError):
        ~torch.tensor(f)
    with pytest.raises(TypeError, match="bitwise_not.*float32"):
        ~T(sg, f)
    with pytest.raises(TypeError):
        T(sg, i) & "a"
    with pytest.raises(sg.ShapeError, match="bitwise_and"):
        T(sg, i) & T(sg, np.array([1, 2, 3]))


def test_bitwise_empty(sg):
    torch = need_torch()
    e = np.zeros((0, 2), dtype="int64")
    assert_close(T(sg, e) & T(sg, e), torch.tensor(e) & torch.tensor(e))
    assert_close(T(sg, e) << 2, torch.tensor(e) << 2)
    assert_close(~T(sg, e), ~torch.tensor(e))


def test_predicates_record_no_graph(sg):
    """The predicates return bool without a graph, even on an input that requires grad."""
    torch = need_torch()
    x = T(sg, np.array([1.0, INF, NAN], dtype="float32"), requires_grad=True)
    for name in PREDICATES:
        out = getattr(x, name)()
        assert out.grad_fn is None and not out.requires_grad
        assert_close(out, getattr(torch.tensor([1.0, INF, NAN]), name)())


@pytest.mark.capability("float64")
def test_integer_promotion_follows_the_default_dtype(sg):
    """Integer inputs of the float ops take the default float dtype, whatever it is set to."""
    torch = need_torch()
    i = np.array([[1, -2, 3]], dtype="int64")
    j = np.array([2, 5, -1], dtype="int32")
    before, tbefore = sg.get_default_dtype(), torch.get_default_dtype()
    try:
        sg.set_default_dtype(sg.float64)
        torch.set_default_dtype(torch.float64)
        for name in ("tan", "expm1", "log2", "erfc"):
            out = getattr(sg, name)(T(sg, i))
            assert out.dtype == sg.float64
            assert_close(out, getattr(torch, name)(torch.tensor(i)))
        for name in ("atan2", "copysign"):
            out = getattr(sg, name)(T(sg, i), T(sg, j))
            assert out.dtype == sg.float64
            assert_close(out, getattr(torch, name)(torch.tensor(i), torch.tensor(j)))
    finally:
        sg.set_default_dtype(before)
        torch.set_default_dtype(tbefore)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops(sg, name, dtype):
    """Each operand's truth (nonzero, NaN included) combined into bool: broadcast, as a method,
    and on transposed views as a function."""
    torch = need_torch()
    a = np.array([[0, 1, 2], [-3, 0, 0]], dtype=dtype)
    if dtype in FLOATS:
        a[1, 2] = np.nan
    b = np.array([1, 0, 5], dtype=dtype)
    ta, tb = torch.tensor(a), torch.tensor(b)
    assert_close(getattr(T(sg, a), name)(T(sg, b)), getattr(ta, name)(tb))
    assert_close(getattr(sg, name)(T(sg, a).t(), T(sg, a).t()), getattr(torch, name)(ta.t(), ta.t()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logit_eps(sg, dtype):
    """logit, the op table's worked example (docs/contributing.md), with eps: x is clamped to
    [eps, 1 - eps] first, so 0 and 1 give finite values, and the gradient is 0 outside."""
    torch = need_torch()
    x = np.array([0.0, 1e-4, 0.3, 0.5, 0.9999, 1.0], dtype=dtype)
    t = T(sg, x, requires_grad=True)
    out = sg.logit(t, eps=1e-3)
    ref = torch.tensor(x, requires_grad=True)
    expected = torch.logit(ref, eps=1e-3)
    r, a = _tol(dtype)
    assert_close(out, expected, rtol=r, atol=a)
    out.sum().backward()
    expected.sum().backward()
    assert_close(t.grad, ref.grad, rtol=r, atol=a)
