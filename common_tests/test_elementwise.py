"""Elementwise ops: values against NumPy, dtypes and gradients against PyTorch,
gradients again against finite differences in float64."""
import itertools
import operator

import numpy as np
import pytest

from .helpers_core import (
    INTS,
    NP,
    TT,
    T,
    assert_close,
    check_grads,
    data,
    float64_if,
    functional,
    gradcheck,
    need_torch,
    np_gelu,
    np_sigmoid,
    sgdt,
)


def _torch_fn(name):
    torch = need_torch()
    if name in ("gelu", "silu"):
        return getattr(torch.nn.functional, name)
    if name == "neg":
        return torch.neg
    return getattr(torch, name)


# name -> (numpy reference, data range, points to stay away from)
UNARY = {
    "neg": (np.negative, (-2, 2), None),
    "abs": (np.abs, (-2, 2), 0.0),
    "exp": (np.exp, (-3, 3), None),
    "log": (np.log, (0.1, 4), None),
    "sqrt": (np.sqrt, (0.1, 4), None),
    "rsqrt": (lambda a: (1 / np.sqrt(a.astype(np.float64))).astype(a.dtype), (0.1, 4), None),
    "sin": (np.sin, (-3, 3), None),
    "cos": (np.cos, (-3, 3), None),
    "tanh": (np.tanh, (-3, 3), None),
    "sigmoid": (np_sigmoid, (-4, 4), None),
    "relu": (lambda a: np.maximum(a, 0).astype(a.dtype), (-2, 2), 0.0),
    "gelu": (np_gelu, (-3, 3), None),
    "silu": (lambda a: (a * np_sigmoid(a)).astype(a.dtype), (-3, 3), None),
    "sign": (np.sign, (-2, 2), 0.0),
    "reciprocal": (np.reciprocal, (-2, 2), 0.0),
}
SMOOTH = [n for n in UNARY if n != "sign"]


def _call(sg, name, x, form):
    if name in ("gelu", "silu"):
        return getattr(functional(sg), name)(x)
    if form == "method":
        return getattr(x, name)()
    if name == "neg" and form == "operator":
        return -x
    return getattr(sg, name)(x)


def _unary_data(name, shape, dtype, seed=0):
    _, (lo, hi), away = UNARY[name]
    return data(shape, dtype, seed=seed, low=lo, high=hi, away_from=away)


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("form", ["function", "method"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_forward(sg, name, form, dtype):
    if form == "method" and name in ("gelu", "silu"):
        form = "function"  # torch has no Tensor.gelu / Tensor.silu
    a = _unary_data(name, (3, 4), dtype)
    out = _call(sg, name, T(sg, a), form)
    assert_close(out, UNARY[name][0](a), atol=1e-6 if dtype == "float32" else 1e-12)


def test_negation_operator(sg):
    a = data((2, 3))
    assert_close(-T(sg, a), -a)
    b = data((4,), "int64", low=-5, high=5)
    assert_close(-T(sg, b), -b)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "sigmoid", "tanh", "log"])
@pytest.mark.parametrize("dtype", [*INTS, "bool"])
def test_float_unary_on_integers_gives_default_float(sg, name, dtype):
    a = data((5,), dtype, low=1, high=4)
    out = _call(sg, name, T(sg, a), "function")
    assert out.dtype is sg.float32
    with np.errstate(divide="ignore"):  # log(False) is -inf
        expected = UNARY[name][0](a.astype(np.float64)).astype(np.float32)
    assert_close(out, expected)


@pytest.mark.parametrize("name", ["abs", "neg", "sign", "relu"])
@pytest.mark.parametrize("dtype", INTS)
def test_integer_preserving_unary(sg, name, dtype):
    a = data((6,), dtype, low=-3, high=3)
    out = _call(sg, name, T(sg, a), "function")
    assert_close(out, UNARY[name][0](a).astype(NP[dtype]))


@pytest.mark.parametrize("name", SMOOTH)
def test_unary_grad_vs_torch(sg, name):
    a = _unary_data(name, (2, 3), "float32", seed=1)
    check_grads(sg, lambda x: _call(sg, name, x, "function"), _torch_fn(name), a)


@pytest.mark.parametrize("name", SMOOTH)
@pytest.mark.capability("float64")
def test_unary_gradcheck(sg, name):
    a = _unary_data(name, (3,), "float64", seed=2)
    gradcheck(sg, lambda x: _call(sg, name, x, "function"), a)


def test_sign_grad_is_zero(sg):
    torch = need_torch()
    a = data((4,), away_from=0.0)
    x = T(sg, a, requires_grad=True)
    (sg.sign(x) * T(sg, a)).sum().backward()
    t = TT(a, requires_grad=True)
    (torch.sign(t) * torch.tensor(a)).sum().backward()
    assert_close(x.grad, t.grad)


def test_extreme_values(sg):
    a = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=np.float32)
    x = T(sg, a)
    with np.errstate(over="ignore"):
        assert_close(sg.exp(x), np.exp(a))
    assert_close(sg.sigmoid(x), np_sigmoid(a))
    assert_close(sg.tanh(x), np.tanh(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.array([-1.0, 0.0, 4.0], dtype=np.float32)
        assert_close(sg.log(T(sg, b)), np.log(b))
        assert_close(sg.sqrt(T(sg, b)), np.sqrt(b))
        assert_close(sg.reciprocal(T(sg, np.array([0.0, -0.0], np.float32))), np.array([np.inf, -np.inf], np.float32))


# ------------------------------------------------------------------ binary ops

BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "pow": operator.pow, "maximum": None, "minimum": None,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge,
}
NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
             "pow": np.power, "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal,
             "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
             "ge": np.greater_equal}
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
DIFFERENTIABLE = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 1)), ((), (2, 3)), ((2, 3), ())]


def _binary(sg, name, a, b):
    op = BINARY[name]
    if op is None:
        return getattr(sg, name)(a, b)
    return op(a, b)


def _binary_data(name, sa, sb, dtype, seed=0):
    if dtype in INTS:
        a = data(sa, dtype, seed=seed, low=-3, high=3)
        b = data(sb, dtype, seed=seed + 1, low=1 if name == "div" else (0 if name == "pow" else -3), high=3)
        return a, b
    a = data(sa, dtype, seed=seed, low=0.5 if name == "pow" else -2, high=2)
    b = data(sb, dtype, seed=seed + 1, away_from=0.0 if name == "div" else None)
    if name in COMPARE or name in ("maximum", "minimum"):
        # half-integers: ties occur, so == and <= are really exercised
        a, b = np.round(a * 2) / 2, np.round(b * 2) / 2
    return a.astype(dtype), b.astype(dtype)


def _expected_dtype(name, dtype):
    if name in COMPARE:
        return "bool"
    if name == "div" and dtype in INTS:
        return "float32"  # true division of integers gives the default float
    return dtype


def _check_binary(sg, name, sa, sb, dtype):
    a, b = _binary_data(name, sa, sb, dtype)
    out = _binary(sg, name, T(sg, a), T(sg, b))
    exp_dtype = _expected_dtype(name, dtype)
    expected = NP_BINARY[name](a.astype(np.float64) if name == "div" else a, b).astype(NP[exp_dtype])
    assert out.dtype is sgdt(sg, exp_dtype)
    assert_close(out, expected)


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_binary_broadcast_float32(sg, name, sa, sb):
    _check_binary(sg, name, sa, sb, "float32")


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dtype", ["float64", *INTS])
def test_binary_other_dtypes(sg, name, dtype):
    _check_binary(sg, name, (2, 1, 3), (4, 1), dtype)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "eq", "lt", "maximum"])
def test_binary_function_and_method_forms(sg, name):
    a, b = _binary_data(name, (2, 3), (3,), "float32")
    x, y = T(sg, a), T(sg, b)
    expected = NP_BINARY[name](a, b)
    assert_close(getattr(sg, name)(x, y), expected)
    assert_close(getattr(x, name)(y), expected)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_binary_grad_vs_torch(sg, name, sa, sb):
    torch = need_torch()
    a, b = _binary_data(name, sa, sb, "float32", seed=4)
    if name in ("maximum", "minimum"):  # no ties: the subgradient at a tie is a convention
        a, b = data(sa, seed=4), data(sb, seed=5) + 0.05
    top = getattr(torch, name) if BINARY[name] is None else BINARY[name]
    check_grads(sg, lambda x, y: _binary(sg, name, x, y), top, a, b)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@pytest.mark.capability("float64")
def test_binary_gradcheck(sg, name):
    a, b = _binary_data(name, (2, 3), (3,), "float64", seed=6)
    if name in ("maximum", "minimum"):
        a, b = data((2, 3), "float64", seed=6), data((3,), "float64", seed=7) + 0.05
    gradcheck(sg, lambda x, y: _binary(sg, name, x, y), a, b)


def test_grad_only_to_inputs_that_require_it(sg):
    torch = need_torch()
    a, b = data((2, 3)), data((3,), seed=1)
    x, y = T(sg, a, requires_grad=True), T(sg, b)
    (x * y).backward(T(sg, np.ones((2, 3), np.float32) * 0.5))
    assert y.grad is None
    t = TT(a, requires_grad=True)
    (t * torch.tensor(b)).backward(torch.full((2, 3), 0.5))
    assert_close(x.grad, t.grad)


# ---------------------------------------------------------- python scalars

SCALAR_CASES = [
    # (input dtype, expression, expected dtype) -- torch's promotion rules
    ("float32", lambda x: x + 2, "float32"),
    ("float32", lambda x: 2 + x, "float32"),
    ("float32", lambda x: x - 1.5, "float32"),
    ("float32", lambda x: 2 - x, "float32"),
    ("float32", lambda x: 3 * x, "float32"),
    ("float32", lambda x: x * 2.5, "float32"),
    ("float32", lambda x: x / 4, "float32"),
    ("float32", lambda x: 2 / x, "float32"),
    ("float32", lambda x: x ** 2, "float32"),
    ("float32", lambda x: x ** 0.5, "float32"),
    ("float32", lambda x: x ** -1, "float32"),
    ("float32", lambda x: 2 ** x, "float32"),
    ("float32", lambda x: 1.5 ** x, "float32"),
    ("float32", lambda x: x > 0.5, "bool"),
    ("float32", lambda x: 0.5 < x, "bool"),
    ("float32", lambda x: x == 1.0, "bool"),
    ("float64", lambda x: x + 2, "float64"),
    ("float64", lambda x: 0.5 * x, "float64"),
    ("int64", lambda x: x + 2, "int64"),
    ("int64", lambda x: 10 - x, "int64"),
    ("int64", lambda x: x * 2.5, "float32"),
    ("int64", lambda x: x / 2, "float32"),
    ("int64", lambda x: 2 / x, "float32"),
    ("int64", lambda x: x ** 2, "int64"),
    ("int64", lambda x: 2 ** x, "int64"),
    ("int64", lambda x: x + 1.0, "float32"),
    ("int64", lambda x: x >= 2, "bool"),
    ("int32", lambda x: x + 2, "int32"),
    ("int32", lambda x: x * 1.5, "float32"),
    ("bool", lambda x: x + 1, "int64"),
    ("bool", lambda x: x * 2.5, "float32"),
]


@pytest.mark.parametrize("k", [float64_if(k, "float64" in (c[0], c[2])) for k, c in enumerate(SCALAR_CASES)])
def test_python_scalar_operands(sg, k):
    dtype, f, exp_dtype = SCALAR_CASES[k]
    a = data((2, 3), dtype, seed=k, low=1 if dtype != "float32" else 0.5, high=3)
    out = f(T(sg, a))
    assert out.dtype is sgdt(sg, exp_dtype)
    wide = a.astype(np.float64) if exp_dtype.startswith("float") else a
    assert_close(out, np.asarray(f(wide)).astype(NP[exp_dtype]))


@pytest.mark.parametrize("expr", [lambda x: 2 - x, lambda x: 2 / x, lambda x: 2 ** x, lambda x: x ** 3,
                                  lambda x: x ** 0.5, lambda x: 1 + x * 3, lambda x: -x / 2],
                         ids=["rsub", "rdiv", "rpow", "pow3", "sqrt", "affine", "negdiv"])
def test_python_scalar_grads(sg, expr):
    a = data((2, 3), seed=3, low=0.5, high=2)
    check_grads(sg, expr, expr, a)


# ------------------------------------------------------------ type promotion

_PROMO_DTYPES = ("bool", "int32", "int64", "float32", "float64")


def _pair(sg, torch, dtype, ndim, seed):
    a = data((3,) if ndim else (), dtype, seed=seed, low=1, high=3)
    tdt = torch.bool if dtype == "bool" else getattr(torch, dtype)
    return T(sg, a), torch.tensor(a, dtype=tdt)


@pytest.mark.parametrize("da", _PROMO_DTYPES)
@pytest.mark.parametrize("db", _PROMO_DTYPES)
@pytest.mark.parametrize("dims", [(1, 1), (1, 0)])
def test_promotion_tensor_tensor(sg, da, db, dims):
    torch = need_torch()
    x, tx = _pair(sg, torch, da, dims[0], 1)
    y, ty = _pair(sg, torch, db, dims[1], 2)
    out, tout = x + y, tx + ty
    assert out.dtype.name == str(tout.dtype).replace("torch.", "")
    assert_close(out, tout)


@pytest.mark.parametrize("dtype", _PROMO_DTYPES)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_promotion_tensor_scalar(sg, dtype, scalar):
    torch = need_torch()
    x, tx = _pair(sg, torch, dtype, 1, 3)
    out, tout = x * scalar, tx * scalar
    assert out.dtype.name == str(tout.dtype).replace("torch.", "")
    assert_close(out, tout)


@pytest.mark.parametrize("other", ["float32", "float64", "int64"])
def test_zero_dim_operands_only(sg, other):
    torch = need_torch()
    x, tx = _pair(sg, torch, "int32", 0, 1)
    y, ty = _pair(sg, torch, other, 0, 2)
    assert (x + y).dtype is getattr(sg, other) and (tx + ty).dtype is getattr(torch, other)
    assert_close(x + y, tx + ty)


# --------------------------------------------------------- where, clamp, bool

@pytest.mark.parametrize("sc,sa,sb", [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), (2, 1)), ((3,), (2, 3), ()),
                                      ((2, 1), (1, 3), (3,))])
def test_where(sg, sc, sa, sb):
    c = data(sc, "bool", seed=1)
    a, b = data(sa, seed=2), data(sb, seed=3)
    assert_close(sg.where(T(sg, c), T(sg, a), T(sg, b)), np.where(c, a, b))


def test_where_with_scalar_and_comparison_mask(sg):
    a = data((3, 4), seed=4)
    x = T(sg, a)
    assert_close(sg.where(x > 0, x, 0.0), np.where(a > 0, a, np.float32(0)))
    assert_close(x.where(x < 0, T(sg, -a)), np.where(a < 0, a, -a))


@pytest.mark.parametrize("sc,sa,sb", [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), (2, 1))])
def test_where_grad(sg, sc, sa, sb):
    torch = need_torch()
    c = data(sc, "bool", seed=1)
    a, b = data(sa, seed=2), data(sb, seed=3)
    check_grads(sg, lambda x, y: sg.where(T(sg, c), x, y),
                lambda x, y: torch.where(torch.tensor(c), x, y), a, b)


@pytest.mark.parametrize("kwargs", [{"min": -0.5, "max": 0.5}, {"min": 0.0}, {"max": 0.3}])
def test_clamp(sg, kwargs):
    a = data((3, 4), seed=5, away_from=list(kwargs.values()))
    assert_close(T(sg, a).clamp(**kwargs), np.clip(a, kwargs.get("min"), kwargs.get("max")))
    assert_close(sg.clamp(T(sg, a), **kwargs), np.clip(a, kwargs.get("min"), kwargs.get("max")))
    check_grads(sg, lambda x: x.clamp(**kwargs), lambda t: t.clamp(**kwargs), a)


def test_clamp_positional_and_int(sg):
    a = data((5,), "int64", low=-5, high=5)
    out = sg.clamp(T(sg, a), -2, 2)
    assert_close(out, np.clip(a, -2, 2))


@pytest.mark.capability("float64")
def test_clamp_positional_gradcheck(sg):
    gradcheck(sg, lambda x: x.clamp(-0.5, 0.5), data((4,), "float64", seed=8, away_from=[-0.5, 0.5]))


def test_bool_logical_ops(sg):
    a, b = data((2, 3), "bool", seed=1), data((2, 3), "bool", seed=2)
    x, y = T(sg, a), T(sg, b)
    assert_close(x & y, a & b)
    assert_close(x | y, a | b)
    assert_close(x ^ y, a ^ b)
    assert_close(~x, ~a)
    assert_close(x + y, a | b)  # bool + bool is logical or in torch
    assert_close(x * y, a & b)


def test_comparison_results_usable_as_masks(sg):
    a = data((3, 4), seed=9)
    x = T(sg, a)
    m = (x > -0.5) & (x < 0.5)
    assert m.dtype is sg.bool_
    assert_close(m.sum(), np.array(((a > -0.5) & (a < 0.5)).sum()))
    assert_close(m.float(), ((a > -0.5) & (a < 0.5)).astype(np.float32))


def test_nan_and_inf_propagate(sg):
    a = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    x = T(sg, a)
    with np.errstate(invalid="ignore"):
        assert_close(x + 1, a + 1)
        assert_close(x * 0, a * 0)
        assert_close(x == x, a == a)
        assert_close(x != x, a != a)
        assert_close(sg.maximum(x, T(sg, np.zeros(4, np.float32))), np.maximum(a, 0))


# ------------------------------------------------------ float32 storage, ints

@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv],
                         ids=["add", "sub", "mul", "div"])
def test_float32_arithmetic_is_correctly_rounded(sg, op):
    # each op rounds to float32 exactly as IEEE single precision does
    a, b = data((50,), seed=1, low=-3, high=3), data((50,), seed=2, away_from=0.0)
    np.testing.assert_array_equal(op(T(sg, a), T(sg, b)).numpy(), op(a, b))
    np.testing.assert_array_equal(sg.sqrt(T(sg, np.abs(a))).numpy(), np.sqrt(np.abs(a)))
    # a chain stays in float32 between ops
    np.testing.assert_array_equal(((T(sg, a) * 3 + 0.1) / 7).numpy(),
                                  ((a * np.float32(3) + np.float32(0.1)) / np.float32(7)))


def test_integer_overflow_wraps(sg):
    a = np.array([2**31 - 1, -2**31, 7], np.int32)
    with np.errstate(over="ignore"):
        assert_close(T(sg, a) + T(sg, np.ones(3, np.int32)), a + np.int32(1))
        assert_close(T(sg, a) * T(sg, np.full(3, 3, np.int32)), a * np.int32(3))
    b = np.array([2**62, -2**62 - 5], np.int64)
    with np.errstate(over="ignore"):
        assert_close(T(sg, b) * 4, b * np.int64(4))


@pytest.mark.parametrize("dtype", ["int64", "float32"])
@pytest.mark.parametrize("op", [operator.floordiv, operator.mod], ids=["floordiv", "mod"])
def test_floordiv_and_mod_follow_python_sign_rules(sg, dtype, op):
    a = np.array([-7, 7, -7, 7, 5, -3], dtype=dtype) * (1.5 if dtype == "float32" else 1)
    b = np.array([2, -2, -2, 2, 3, 5], dtype=dtype)
    a = a.astype(dtype)
    assert_close(op(T(sg, a), T(sg, b)), op(a, b))
    assert_close(op(T(sg, a), 4), op(a, np.array(4, dtype)))


@pytest.mark.parametrize("op", [operator.floordiv, operator.mod], ids=["rfloordiv", "rmod"])
def test_reflected_floordiv_and_mod(sg, op):
    b = np.array([2, -3, 4, 5], np.int64)
    assert_close(op(7, T(sg, b)), op(7, b))


# ------------------------------------------------------------- in-place ops

INPLACE = [
    ("add_", lambda x, y: x.add_(y), np.add),
    ("sub_", lambda x, y: x.sub_(y), np.subtract),
    ("mul_", lambda x, y: x.mul_(y), np.multiply),
    ("div_", lambda x, y: x.div_(y), np.divide),
    ("iadd", lambda x, y: x.__iadd__(y), np.add),
    ("isub", lambda x, y: x.__isub__(y), np.subtract),
    ("imul", lambda x, y: x.__imul__(y), np.multiply),
    ("itruediv", lambda x, y: x.__itruediv__(y), np.divide),
]


@pytest.mark.parametrize("k", range(len(INPLACE)), ids=[c[0] for c in INPLACE])
@pytest.mark.parametrize("other", ["tensor", "broadcast", "scalar"])
def test_inplace_binary(sg, k, other):
    _, f, np_f = INPLACE[k]
    a = data((2, 3), seed=1)
    b = {"tensor": data((2, 3), seed=2, away_from=0.0), "broadcast": data((3,), seed=3, away_from=0.0),
         "scalar": 1.5}[other]
    x = T(sg, a)
    y = f(x, T(sg, b) if other != "scalar" else b)
    assert y is x  # in place: the same tensor object comes back
    assert_close(x, np_f(a, b).astype(np.float32))


def test_augmented_assignment_mutates_shared_reference(sg):
    a = data((3,), seed=4)
    x = T(sg, a)
    alias = x
    x += 1
    x *= 2
    assert alias is x
    assert_close(alias, (a + 1) * 2)


@pytest.mark.parametrize("name,args,np_f", [
    ("zero_", (), lambda a: np.zeros_like(a)),
    ("fill_", (2.5,), lambda a: np.full_like(a, 2.5)),
    ("clamp_", (-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)),
    ("neg_", (), np.negative),
    ("pow_", (2,), np.square),
    ("exp_", (), np.exp),
    ("sqrt_", (), lambda a: np.sqrt(np.abs(a))),
    ("relu_", (), lambda a: np.maximum(a, 0)),
])
def test_inplace_unary(sg, name, args, np_f):
    a = data((2, 3), seed=5)
    if name == "sqrt_":
        a = np.abs(a)
    x = T(sg, a)
    assert getattr(x, name)(*args) is x
    assert_close(x, np_f(a).astype(np.float32), rtol=1e-6)


def test_copy_(sg):
    a, b = data((2, 3), seed=6), data((3,), "int64", seed=7)
    x = T(sg, a)
    assert x.copy_(T(sg, b)) is x  # broadcasts and casts into x
    assert x.dtype is sg.float32
    assert_close(x, np.broadcast_to(b, (2, 3)).astype(np.float32))


def test_inplace_into_int_keeps_dtype(sg):
    a = data((4,), "int64", seed=8)
    x = T(sg, a)
    x += 3
    x *= T(sg, np.array([2, 2, 2, 2], np.int64))
    assert x.dtype is sg.int64
    assert_close(x, (a + 3) * 2)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", INTS)
def test_integer_div_with_rounding_keeps_the_dtype(sg, mode, dtype):
    torch = need_torch()
    a = np.array([[7, -7, 5, -5], [6, 0, -1, 9]]).astype(dtype)  # uint8 wraps the negatives
    b = np.array([2, -3, 3, -9]).astype(dtype)
    for other, t_other in ((T(sg, b), TT(b)), (-3, -3), (2, 2)):
        want = torch.div(TT(a), t_other, rounding_mode=mode)
        forms = (T(sg, a).div(other, rounding_mode=mode), sg.div(T(sg, a), other, rounding_mode=mode),
                 T(sg, a).div_(other, rounding_mode=mode))
        for got in forms:
            assert got.dtype.name == str(want.dtype).removeprefix("torch."), (mode, other)
            assert got.tolist() == want.tolist(), (mode, other)


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_infinities_and_nan_as_torch(sg, equal_nan):
    torch = need_torch()
    inf, nan = float("inf"), float("nan")
    a = np.array([inf, inf, -inf, inf, nan, nan, 1.0, 1.0, 1.0 + 1e-6, 0.0, 5.0], np.float32)
    b = np.array([inf, -inf, -inf, 1.0, nan, 1.0, inf, 1.0, 1.0, 1e-9, 5.5], np.float32)
    for rtol, atol in ((1e-5, 1e-8), (0.2, 0.0)):
        want = torch.isclose(TT(a), TT(b), rtol=rtol, atol=atol, equal_nan=equal_nan).tolist()
        assert sg.isclose(T(sg, a), T(sg, b), rtol, atol, equal_nan=equal_nan).tolist() == want
        assert T(sg, a).isclose(T(sg, b), rtol=rtol, atol=atol, equal_nan=equal_nan).tolist() == want
    for i in range(len(a)):  # allclose of each pair alone, then of all of them
        x, y = a[i:i + 1], b[i:i + 1]
        want = torch.allclose(TT(x), TT(y), equal_nan=equal_nan)
        assert sg.allclose(T(sg, x), T(sg, y), equal_nan=equal_nan) is want, (x, y)
        assert T(sg, x).allclose(T(sg, y), equal_nan=equal_nan) is want, (x, y)
    want = torch.allclose(TT(a), TT(b), equal_nan=equal_nan)
    assert sg.allclose(T(sg, a), T(sg, b), equal_nan=equal_nan) is want


_CLOSE_VALUES = {
    "float": [0.0, 1.0, -1.0, 1.0 + 1e-6, 1e-9, 5.5, float("inf"), -float("inf"), float("nan")],
    "int": [0, 1, 3, 2, 100, -7],
    "uint8": [0, 1, 3, 250, 255],  # a difference in uint8 would wrap
    "bool": [True, False],
}
_TOLERANCES = [(1e-5, 1e-8), (0.0, 0.0), (0.5, 0.0), (0.0, 1.0), (float("inf"), 0.0), (0.0, float("inf")),
               (1e-5, 2.0)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
def test_isclose_and_allclose_grid_as_torch(sg, dtype):
    """Every pair of values (infinities and NaN among the floats), by broadcasting a column
    against a row, at each tolerance, with and without equal_nan, against PyTorch."""
    torch = need_torch()
    kind = "float" if dtype.startswith("float") else dtype if dtype in ("uint8", "bool") else "int"
    values = np.array(_CLOSE_VALUES[kind]).astype(dtype)
    a, b = values[:, None], values
    for (rtol, atol), equal_nan in itertools.product(_TOLERANCES, (False, True)):
        kw = dict(rtol=rtol, atol=atol, equal_nan=equal_nan)
        want = torch.isclose(TT(a), TT(b), **kw)
        assert sg.isclose(T(sg, a), T(sg, b), **kw).tolist() == want.tolist(), kw
        assert T(sg, b).isclose(T(sg, a), **kw).tolist() == torch.isclose(TT(b), TT(a), **kw).tolist(), kw
        for x, y in ((a, b), (a[1:2], b[:2]), (b[:1], b[:1])):  # all pairs, then fewer
            want_all = torch.allclose(TT(x), TT(y), **kw)
            assert sg.allclose(T(sg, x), T(sg, y), **kw) is want_all, (kw, x, y)
            assert T(sg, x).allclose(T(sg, y), **kw) is want_all, (kw, x, y)
