"""Dtype names the stages do not compute in, ``axis=`` for ``dim=``, and small Tensor
idioms real programs use, each against PyTorch: values, gradients and errors."""
import numpy as np
import pytest

from .helpers_core import GRAD_TOL, T, data, upstream
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch

NARROW = ("uint8", "int8", "int16", "float16", "bfloat16")


# ------------------------------------------------------------------ dtypes

@pytest.mark.parametrize("name", NARROW + ("bool", "int32", "int64", "float32", "float64"))
def test_dtype_names_and_limits_as_torch(sg, name):
    torch = need_torch()
    ours, theirs = getattr(sg, "bool_" if name == "bool" else name), getattr(torch, name)
    assert (ours.itemsize, ours.is_floating_point, ours.is_signed, ours.is_complex) == (
        theirs.itemsize, theirs.is_floating_point, theirs.is_signed, theirs.is_complex)
    if theirs.is_floating_point:
        f, g = sg.finfo(ours), torch.finfo(theirs)
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
            assert getattr(f, field) == getattr(g, field), field
    elif name != "bool":
        i, j = sg.iinfo(ours), torch.iinfo(theirs)
        assert (i.bits, i.min, i.max, i.dtype) == (j.bits, j.min, j.max, j.dtype)
    else:
        with pytest.raises(TypeError, match="iinfo"):
            sg.iinfo(ours)


def test_aliases_and_default_finfo(sg):
    torch = need_torch()
    assert sg.half is sg.float16 and sg.short is sg.int16
    assert sg.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError, match="finfo"):
        sg.finfo(sg.int64)


def _makers(sg, dtype):
    """Every way a program asks for a tensor of ``dtype``."""
    method = {"float16": "half", "bfloat16": "bfloat16", "uint8": "byte", "int8": "char", "int16": "short"}
    legacy = {"float16": "HalfTensor", "bfloat16": "BFloat16Tensor", "uint8": "ByteTensor",
              "int8": "CharTensor", "int16": "ShortTensor"}
    x = sg.ones(2, 3)
    makers = {
        "zeros": lambda: sg.zeros(2, dtype=dtype),
        "tensor": lambda: sg.tensor([1, 2], dtype=dtype),
        "to": lambda: x.to(dtype),
        "to(name)": lambda: x.to(dtype.name),
        "method": lambda: getattr(x, method[dtype.name])(),
        "legacy": lambda: getattr(sg, legacy[dtype.name])([1, 2]),
        "arange": lambda: sg.arange(3, dtype=dtype),
        "full_like": lambda: sg.full_like(x, 1, dtype=dtype),
    }
    if dtype.name != "bfloat16":  # NumPy has no bfloat16
        makers["numpy"] = lambda: sg.tensor(np.zeros(3, dtype=dtype.name))
    return makers


@pytest.mark.parametrize("name", NARROW)
def test_a_dtype_the_stage_lacks_is_refused_by_name(sg, name):
    torch = need_torch()
    dtype = getattr(sg, name)
    for how, make in _makers(sg, dtype).items():
        if name in sg.LACKS:
            with pytest.raises(sg.CapabilityError, match=f"{name}.*lacks {name}") as info:
                make()
            assert isinstance(info.value, NotImplementedError), how
        else:  # a stage that computes in it must give PyTorch's dtype
            assert make().dtype is dtype, how
    assert isinstance(sg.ones(2), sg.FloatTensor) and not isinstance(sg.ones(2), torch.HalfTensor)


def test_numpy_arrays_of_a_lacking_dtype_convert_when_asked(sg):
    torch = need_torch()
    a = np.arange(250, 256, dtype=np.uint8)
    assert_close(sg.tensor(a, dtype=sg.float32), torch.tensor(a, dtype=torch.float32))
    assert_close(sg.tensor(a, dtype=sg.int64), torch.tensor(a).long())


# ------------------------------------------------------------------ axis= for dim=

AXIS_OPS = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "std", "var", "logsumexp",
            "softmax", "log_softmax", "count_nonzero", "unsqueeze", "squeeze", "unbind"]


# the values' tolerance per dtype: float32 allows the reductions' last-bit differences
VALUE_TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}


@pytest.mark.parametrize("op", AXIS_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_axis_is_dim(sg, op, dtype):
    torch = need_torch()
    a = data((3, 1, 4), dtype, seed=5)
    axis = 1 if op in ("squeeze", "unsqueeze") else -1
    x, t = T(sg, a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, expected = getattr(x, op)(axis=axis), getattr(t, op)(axis=axis)
    if op == "unbind":
        out, expected = sg.stack(out), torch.stack(expected)
    assert_close(out, expected, **VALUE_TOL[dtype])
    if hasattr(sg, op) and op != "unbind":
        assert_close(getattr(sg, op)(x, axis=axis), expected, **VALUE_TOL[dtype])
    if expected.dtype.is_floating_point:
        g = upstream(tuple(expected.shape), dtype)
        out.backward(T(sg, g))
        expected.backward(torch.tensor(g))
        assert_close(x.grad, t.grad, *GRAD_TOL[dtype])


def test_axis_on_max_min_cat_stack_and_select(sg):
    torch = need_torch()
    a = data((3, 4), "float32", seed=2)
    x, t = T(sg, a), torch.tensor(a)
    for op in ("max", "min"):
        v, i = getattr(x, op)(axis=0)
        w, j = getattr(t, op)(axis=0)
        assert_close(v, w)
        assert_close(i, j)
    assert_close(sg.cat([x, x], axis=1), torch.cat([t, t], axis=1))
    assert_close(sg.stack([x, x], axis=-1), torch.stack([t, t], axis=-1))
    assert_close(x.select(axis=1, index=2), t.select(axis=1, index=2))
    assert_close(x.narrow(axis=1, start=1, length=2), t.narrow(axis=1, start=1, length=2))
    b = data((3, 4), "bool", seed=4)
    assert_close(T(sg, b).any(axis=0), torch.tensor(b).any(axis=0))
    assert_close(T(sg, b).all(axis=1), torch.tensor(b).all(axis=1))


def test_dim_and_axis_together_are_refused(sg):
    x = sg.ones(2, 3)
    with pytest.raises(TypeError, match="sum.*both dim= and axis="):
        x.sum(dim=0, axis=1)
    with pytest.raises(TypeError, match="cat.*both"):
        sg.cat([x, x], dim=0, axis=0)


# ------------------------------------------------------------------ small idioms

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_std_mean_and_var_mean(sg, dtype):
    torch = need_torch()
    a = data((4, 5), dtype, seed=8)
    cases = [dict(), dict(dim=1), dict(dim=0, keepdim=True), dict(dim=(0, 1), correction=0),
             dict(dim=1, unbiased=False)]
    for fn in ("std_mean", "var_mean"):
        for kw in cases:
            x, t = T(sg, a, requires_grad=True), torch.tensor(a, requires_grad=True)
            (s, m), (u, n) = getattr(sg, fn)(x, **kw), getattr(torch, fn)(t, **kw)
            assert_close(s, u, *GRAD_TOL[dtype])
            assert_close(m, n, *GRAD_TOL[dtype])
            g1, g2 = upstream(tuple(u.shape), dtype, seed=1), upstream(tuple(n.shape), dtype, seed=2)
            (s * T(sg, g1)).sum().add((m * T(sg, g2)).sum()).backward()
            ((u * torch.tensor(g1)).sum() + (n * torch.tensor(g2)).sum()).backward()
            assert_close(x.grad, t.grad, *GRAD_TOL[dtype])


def test_type_as_new_empty_nelement_ndimension(sg):
    torch = need_torch()
    x, t = sg.ones(2, 3), torch.ones(2, 3)
    i, j = sg.tensor([1, 2]), torch.tensor([1, 2])
    assert_close(i.type_as(x), j.type_as(t))
    assert_close(x.type_as(i), t.type_as(j))
    e, f = x.new_empty(4, 2), t.new_empty(4, 2)
    assert tuple(e.shape) == tuple(f.shape) and e.dtype is sg.float32
    assert x.new_empty((3,), dtype=sg.int64).dtype is sg.int64
    assert (x.nelement(), x.ndimension()) == (t.nelement(), t.ndimension())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clamp_min_max_trace_select(sg, dtype):
    torch = need_torch()
    a = data((4, 4), dtype, seed=3, away_from=[-0.5, 0.5])
    for ours, theirs in [(lambda x: x.clamp_min(-0.5), lambda t: t.clamp_min(-0.5)),
                         (lambda x: sg.clamp_max(x, 0.5), lambda t: torch.clamp_max(t, 0.5)),
                         (lambda x: x.trace(), lambda t: t.trace()),
                         (lambda x: sg.trace(x), lambda t: torch.trace(t)),
                         (lambda x: x.select(-1, -2), lambda t: t.select(-1, -2)),
                         (lambda x: sg.select(x, 0, 1), lambda t: torch.select(t, 0, 1))]:
        x, t = T(sg, a, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, expected = ours(x), theirs(t)
        assert_close(out, expected, *GRAD_TOL[dtype])
        g = upstream(tuple(expected.shape), dtype)
        out.backward(T(sg, g))
        expected.backward(torch.tensor(g))
        assert_close(x.grad, t.grad, *GRAD_TOL[dtype])
    with pytest.raises(sg.ShapeError, match="trace"):
        sg.ones(2, 2, 2).trace()
    with pytest.raises(IndexError):
        sg.ones(2, 2).select(2, 0)


INPLACE = ["abs", "log", "log1p", "sigmoid", "tanh", "floor", "ceil", "round", "sign", "reciprocal",
           "square", "rsqrt", "erf", "sin", "cos"]


@pytest.mark.parametrize("op", INPLACE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inplace_unary_forms(sg, op, dtype):
    torch = need_torch()
    a = data((3, 4), dtype, seed=6, low=0.1, high=3.0)
    x, t = T(sg, a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = x * 1, t * 1  # in place on a non-leaf, so the gradient flows through the write
    assert getattr(y, op + "_")() is y
    getattr(u, op + "_")()
    assert_close(y, u, **VALUE_TOL[dtype])
    g = upstream((3, 4), dtype)
    y.backward(T(sg, g))
    u.backward(torch.tensor(g))
    assert_close(x.grad, t.grad, *GRAD_TOL[dtype])
    with pytest.raises(RuntimeError, match=op + "_"):
        getattr(T(sg, a, requires_grad=True), op + "_")()  # a leaf that requires grad


def test_clamp_inplace_forms(sg):
    torch = need_torch()
    a = data((5,), "float32", seed=1)
    x, t = T(sg, a), torch.tensor(a)
    x.clamp_min_(0.0).clamp_max_(1.0)
    t.clamp_min_(0.0).clamp_max_(1.0)
    assert_close(x, t)


# ------------------------------------------------------------------ indexing as NumPy reads it

INDEXES = [
    lambda sg: ((0, 1), (1, 2)),
    lambda sg: (slice(None), (0, 2)),
    lambda sg: ([],),
    lambda sg: (Ellipsis, [0, 3]),
    lambda sg: (None, Ellipsis, 0),
    lambda sg: ([[0], [1]], [0, 2]),
    lambda sg: (0, (1,), slice(1, 3)),
    lambda sg: (sg.tensor([True, False]), slice(None, None, 2)),
]


@pytest.mark.parametrize("make", INDEXES, ids=range(len(INDEXES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_getitem_and_setitem_with_nested_sequences(sg, make, dtype):
    torch = need_torch()
    a = data((2, 3, 4), dtype, seed=9)
    key = make(sg)
    tkey = tuple(torch.tensor(k.tolist()) if isinstance(k, sg.Tensor) else k for k in key)
    x, t = T(sg, a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, expected = x[key], t[tkey]
    assert_close(out, expected, rtol=0, atol=0)
    g = upstream(tuple(expected.shape), dtype)
    out.backward(T(sg, g))
    expected.backward(torch.tensor(g))
    assert_close(x.grad, t.grad, rtol=0, atol=0)
    y, u = T(sg, a), torch.tensor(a)
    y[key] = -1.0
    u[tkey] = -1.0
    assert_close(y, u, rtol=0, atol=0)


# ------------------------------------------------------------------ view(dtype)

PAIRS = [("float32", "int32"), ("int32", "float32"), ("float64", "int64"), ("int64", "float64"),
         ("float32", "float64"), ("float32", "int64"), ("float64", "int32"), ("int64", "float32")]


@pytest.mark.parametrize("src,dst", PAIRS)
def test_view_dtype_reads_the_same_bits_as_torch(sg, src, dst):
    torch = need_torch()
    a = np.array([[1.5, -2.0, 0.0, -0.0], [np.inf, np.nan, 3.25, -1e-30]]).astype(src) if "float" in src \
        else np.array([[1, -2, 0, 2**30], [-1, 7, 123456, -99]]).astype(src)
    x, t = T(sg, a), torch.tensor(a)
    out, expected = x.view(getattr(sg, dst)), t.view(getattr(torch, dst))
    assert out.dtype is getattr(sg, dst) and tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(out.numpy().view(np.uint8), expected.numpy().view(np.uint8))
    np.testing.assert_array_equal(out.view(getattr(sg, src)).numpy(), a)  # and back


def test_view_dtype_refuses_what_torch_refuses_and_never_loses_a_write(sg):
    torch = need_torch()
    with pytest.raises(sg.ShapeError, match="view"):
        sg.ones(2, 3).view(sg.float64)  # 3 float32 are not a whole number of float64
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).view(torch.float64)
    with pytest.raises(sg.ShapeError, match="view"):
        sg.ones(4, 2).t().view(sg.float64)  # the last dim is not contiguous
    with pytest.raises(TypeError, match="view"):
        sg.ones(2).view(sg.bool_)
    x = sg.zeros(2, 2)
    bits = x.view(sg.int32)
    if "dtype_views" in sg.LACKS:
        with pytest.raises(sg.CapabilityError, match="lacks (dtype_)?views"):
            bits.add_(1)
        assert x.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    else:  # a stage that aliases across dtypes must show the write through the view, as PyTorch
        bits.add_(1)
        t = torch.zeros(2, 2)
        t.view(torch.int32).add_(1)
        assert_close(x, t)
