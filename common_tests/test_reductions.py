"""Reductions: dim as int / tuple / negative / None, keepdim, correction, and the
(values, indices) pairs of max/min along a dim."""
import numpy as np
import pytest

from .helpers_core import NP, T, assert_close, check_grads, data, gradcheck, need_torch, sgdt

SHAPE = (2, 3, 4)
DIMS = [None, 0, 1, -1, (0, 2), (-1, -2), (0, 1, 2)]


def _np_reduce(name, a, dim, keepdim, correction=1):
    axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
    w = a.astype(np.float64)
    if name == "sum":
        r = np.sum(a, axis=axis, keepdims=keepdim)
    elif name == "mean":
        r = np.mean(w, axis=axis, keepdims=keepdim)
    elif name == "prod":
        r = np.prod(w, axis=axis, keepdims=keepdim)
    elif name == "var":
        r = np.var(w, axis=axis, keepdims=keepdim, ddof=correction)
    elif name == "std":
        r = np.std(w, axis=axis, keepdims=keepdim, ddof=correction)
    elif name == "logsumexp":
        m = np.max(w, axis=axis, keepdims=True)
        r = np.log(np.sum(np.exp(w - m), axis=axis, keepdims=True)) + m
        if not keepdim:
            r = np.squeeze(r, axis=axis) if axis is not None else r.reshape(())
    return np.asarray(r).astype(a.dtype)


def _sg_reduce(x, name, dim, keepdim):
    if dim is None and not keepdim:
        return getattr(x, name)()
    if dim is None:
        dim = tuple(range(x.ndim))
    return getattr(x, name)(dim=dim, keepdim=keepdim)


def _data(name, shape, dtype="float32", seed=0):
    if name == "prod":
        return data(shape, dtype, seed=seed, low=0.5, high=1.5)
    return data(shape, dtype, seed=seed)


# torch.prod reduces one dim or all of them; the others take tuples
FORWARD_CASES = [(name, dim, keepdim) for name in ["sum", "mean", "prod", "var", "std", "logsumexp"]
                 for dim in DIMS for keepdim in (False, True)
                 if not (name == "prod" and (isinstance(dim, tuple) or (dim is None and keepdim)))]


@pytest.mark.parametrize("name,dim,keepdim", FORWARD_CASES)
def test_reduce_forward(sg, name, dim, keepdim):
    if name == "logsumexp" and dim is None:
        dim = (0, 1, 2)  # logsumexp takes an explicit dim
    a = _data(name, SHAPE)
    out = _sg_reduce(T(sg, a), name, dim, keepdim)
    assert_close(out, _np_reduce(name, a, dim, keepdim), rtol=2e-5, atol=2e-6)


# float32 results against float64 NumPy rounded once: a few ulp of the reduction's rounding
CLOSE = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": {}}


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "prod"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reduce_function_form_positional_dim(sg, name, dtype):
    a = _data(name, (3, 4), dtype, seed=1)
    assert_close(getattr(sg, name)(T(sg, a), 1), _np_reduce(name, a, 1, False), **CLOSE[dtype])
    assert_close(getattr(sg, name)(T(sg, a)), _np_reduce(name, a, None, False), **CLOSE[dtype])


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
@pytest.mark.parametrize("how", ["unbiased=False", "correction=0", "correction=2", "unbiased=True"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_var_std_correction(sg, name, dim, how, dtype):
    a = data((3, 5), dtype, seed=2)
    key, val = how.split("=")
    val = {"True": True, "False": False}.get(val, None) if key == "unbiased" else int(val)
    ddof = (1 if val else 0) if key == "unbiased" else val
    x = T(sg, a)
    kwargs = {key: val}
    out = getattr(x, name)(**kwargs) if dim is None else getattr(x, name)(dim, **kwargs)
    assert_close(out, _np_reduce(name, a, dim, False, correction=ddof), **CLOSE[dtype])


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_along_dim(sg, name, dim, keepdim):
    a = data(SHAPE, seed=3)
    res = getattr(T(sg, a), name)(dim, keepdim=keepdim)
    np_val = getattr(np, name)(a, axis=dim, keepdims=keepdim)
    np_idx = getattr(np, "arg" + name)(a, axis=dim, keepdims=keepdim)
    assert_close(res.values, np_val)
    assert_close(res.indices, np_idx.astype(np.int64))
    values, indices = res  # unpacks like a tuple
    assert_close(values, np_val)
    assert_close(indices, np_idx.astype(np.int64))
    assert_close(res[0], np_val)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, False), (-1, False),
                                         (0, True), (1, True), (-1, True)])
def test_argmax_argmin(sg, name, dim, keepdim):
    a = data(SHAPE, seed=4)
    x = T(sg, a)
    if dim is None:
        out = getattr(x, name)()
        expected = np.asarray(getattr(np, name)(a))
    else:
        out = getattr(x, name)(dim=dim, keepdim=keepdim)
        expected = getattr(np, name)(a, axis=dim, keepdims=keepdim)
    assert_close(out, expected.astype(np.int64))
    assert_close(getattr(sg, name)(x, dim) if dim is not None else getattr(sg, name)(x),
                 np.asarray(getattr(np, name)(a, axis=dim)).astype(np.int64))


def test_argmax_ties_pick_first(sg):
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 1.0, 2.0]], np.float32)
    x = T(sg, a)
    assert_close(x.argmax(1), np.argmax(a, 1))
    assert_close(x.argmin(1), np.argmin(a, 1))
    assert_close(x.max(1).indices, np.argmax(a, 1))


@pytest.mark.parametrize("name", ["max", "min", "sum", "mean", "prod"])
def test_full_reduction_is_zero_dim(sg, name):
    a = _data(name, (3, 4), seed=5)
    out = getattr(T(sg, a), name)()
    assert out.shape == ()
    assert_close(out, np.asarray(getattr(np, name)(a.astype(np.float64))).astype(np.float32))


@pytest.mark.parametrize("dtype,name,exp", [
    ("int64", "sum", "int64"), ("int32", "sum", "int64"), ("bool", "sum", "int64"),
    ("int64", "max", "int64"), ("int32", "min", "int32"), ("int32", "prod", "int64"),
    ("float64", "mean", "float64"), ("float64", "sum", "float64"), ("bool", "max", "bool"),
    ("uint8", "sum", "int64"), ("int8", "prod", "int64"), ("int16", "sum", "int64"),
    ("int16", "max", "int16"), ("uint8", "min", "uint8"), ("int8", "max", "int8"),
])
def test_reduction_dtypes(sg, dtype, name, exp):
    # torch accumulates integer sums and products in int64
    a = data((3, 4), dtype, seed=6, low=-3, high=3)
    out = getattr(T(sg, a), name)()
    assert out.dtype is sgdt(sg, exp)
    assert_close(out, np.asarray(getattr(np, name)(a)).astype(NP[exp]))
    out = getattr(T(sg, a), name)(1)
    out = out.values if name in ("max", "min") else out
    assert_close(out, getattr(np, name)(a, axis=1).astype(NP[exp]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_dtype_argument(sg, dtype):
    a = data((2, 3), "int64", seed=7)
    out = T(sg, a).sum(dtype=getattr(sg, dtype))
    assert_close(out, np.asarray(a.sum(), dtype=dtype))


def test_int32_sums_and_products_accumulate_in_int64(sg):
    """As in torch, an int32 reduction gives int64: sums past int32's range do not wrap."""
    a = np.array([[2 ** 31 - 1, 2 ** 31 - 1, 5], [-2 ** 31, -2 ** 31, -1]], np.int32)
    wide = a.astype(np.int64)
    assert_close(T(sg, a).sum(), np.asarray(wide.sum()))
    assert_close(T(sg, a).sum(1), wide.sum(1))
    assert_close(T(sg, a[:, 2:]).prod(), np.asarray(wide[:, 2:].prod()))
    assert_close(T(sg, a).prod(0), wide.prod(0))


def test_reduce_empty_sum_and_mean_of_one(sg):
    z = sg.zeros(0, 3)
    assert_close(z.sum(0), np.zeros(3, np.float32))
    assert_close(z.sum(), np.array(0.0, np.float32))
    assert_close(sg.tensor([[2.5]]).mean(), np.array(2.5, np.float32))


def test_logsumexp_is_stable(sg):
    a = np.array([[1000.0, 1000.0, -1000.0], [-1e4, 0.0, 3.0]], np.float32)
    out = sg.logsumexp(T(sg, a), dim=1)
    w = a.astype(np.float64)
    m = w.max(1, keepdims=True)
    assert_close(out, (np.log(np.exp(w - m).sum(1)) + m[:, 0]).astype(np.float32))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "var", "std", "logsumexp"])
@pytest.mark.parametrize("dim,keepdim", [(1, False), ((0, 2), True), (-1, True), (None, False)])
def test_reduce_grad_vs_torch(sg, name, dim, keepdim):
    torch = need_torch()
    if name == "logsumexp" and dim is None:
        dim = (0, 1, 2)
    if name == "prod" and not isinstance(dim, int) and dim is not None:
        dim = 0  # torch.prod reduces one dim (or all)
    a = _data(name, SHAPE, seed=8)

    def f_sg(x):
        return _sg_reduce(x, name, dim, keepdim)

    def f_t(t):
        if dim is None:
            return getattr(t, name)()
        return getattr(torch, name)(t, dim, keepdim=keepdim)
    check_grads(sg, f_sg, f_t, a)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim,keepdim", [(0, False), (-1, True), (None, False)])
def test_max_min_grad_vs_torch(sg, name, dim, keepdim):
    a = data(SHAPE, seed=9)
    if dim is None:
        check_grads(sg, lambda x: getattr(x, name)(), lambda t: getattr(t, name)(), a)
    else:
        check_grads(sg, lambda x: getattr(x, name)(dim, keepdim=keepdim).values,
                    lambda t: getattr(t, name)(dim, keepdim=keepdim).values, a)


def test_max_full_reduce_ties_split_gradient(sg):
    # torch's max() of a whole tensor shares the gradient evenly among ties
    a = np.array([[1.0, 3.0], [3.0, 0.5]], np.float32)
    check_grads(sg, lambda x: x.max() * 2, lambda t: t.max() * 2, a)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "var", "std", "logsumexp"])
@pytest.mark.capability("float64")
def test_reduce_gradcheck(sg, name):
    a = _data(name, (2, 3), "float64", seed=10)
    gradcheck(sg, lambda x: getattr(x, name)(1), a)


@pytest.mark.capability("float64")
def test_max_values_gradcheck(sg):
    a = data((2, 3), "float64", seed=11)
    gradcheck(sg, lambda x: x.max(1).values * 1.5 + x.min(0).values.sum(), a)


def test_prod_with_zero_grad(sg):
    # a single zero: the gradient is the product of the others there
    a = np.array([[0.0, 2.0, 3.0], [1.5, -1.0, 2.0]], np.float32)
    check_grads(sg, lambda x: x.prod(1), lambda t: t.prod(1), a)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "logsumexp", "prod"])
@pytest.mark.parametrize("dim", [0, -1])
def test_zero_dim_tensor_reduces_over_dim_0(sg, name, dim):
    # torch lets a 0-d tensor be reduced over dim 0 / -1 (it behaves as if of shape [1])
    a = np.array(1.5, np.float32)
    out = getattr(T(sg, a), name)(dim)
    assert out.shape == ()
    expected = np.log(np.exp(1.5)) if name == "logsumexp" else 1.5
    assert_close(out, np.array(expected, np.float32))


def test_zero_dim_max_along_dim(sg):
    res = T(sg, np.array(2.0, np.float32)).max(0)
    assert_close(res.values, np.array(2.0, np.float32))
    assert_close(res.indices, np.array(0, np.int64))


@pytest.mark.parametrize("name", ["max", "min", "sum", "mean", "amax"])
def test_nan_propagates_through_reductions(sg, name):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    x = T(sg, a)
    np_f = {"amax": np.max}.get(name, getattr(np, name))
    assert_close(getattr(x, name)(), np.asarray(np_f(a)))
    out = getattr(x, name)(1)
    assert_close(out.values if name in ("max", "min") else out, np_f(a, axis=1))


def test_argmax_and_max_indices_point_at_nan(sg):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    x = T(sg, a)
    assert_close(x.argmax(1), np.argmax(a, 1))
    assert_close(x.max(1).indices, np.argmax(a, 1))
    assert_close(x.argmin(), np.asarray(np.argmin(a)))


def test_max_of_empty_raises(sg):
    with pytest.raises((ValueError, RuntimeError, IndexError)):
        sg.zeros(0).max()


def test_empty_reductions(sg):
    z = sg.zeros(0)
    assert_close(z.sum(), np.array(0.0, np.float32))
    assert_close(z.prod(), np.array(1.0, np.float32))
    with np.errstate(invalid="ignore"):
        assert_close(z.mean(), np.array(np.nan, np.float32))
    assert_close(sg.zeros(2, 0).sum(1), np.zeros(2, np.float32))


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dim,keepdim", [((0, 2), False), (1, True), ((-1,), False)])
def test_amax_amin(sg, name, dim, keepdim):
    a = data(SHAPE, seed=20)
    out = getattr(T(sg, a), name)(dim=dim, keepdim=keepdim)
    assert_close(out, getattr(np, name)(a, axis=dim, keepdims=keepdim))
    check_grads(sg, lambda x: getattr(x, name)(dim=dim, keepdim=keepdim),
                lambda t: getattr(t, name)(dim=dim, keepdim=keepdim), a)


def test_amax_gradient_is_shared_among_ties(sg):
    a = np.array([[2.0, 2.0, 1.0], [0.0, 3.0, 3.0]], np.float32)
    check_grads(sg, lambda x: x.amax(1), lambda t: t.amax(1), a)
