"""Property tests: random shapes, dims and slices, checked against NumPy (and
PyTorch for gradients)."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

from .helpers_core import T, assert_close, check_grads, need_torch

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _arr(shape, seed, dtype="float32", low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)
broadcast_pairs = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=3)

_OPS = {
    "add": (lambda x, y: x + y, np.add),
    "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply),
    "div": (lambda x, y: x / y, np.divide),
    "maximum": (None, np.maximum),
    "gt": (lambda x, y: x > y, np.greater),
}


@SETTINGS
@given(pair=broadcast_pairs, op=st.sampled_from(sorted(_OPS)), seed=st.integers(0, 2**16))
def test_broadcast_binary_matches_numpy(sg, pair, op, seed):
    sa, sb = pair.input_shapes
    a = _arr(sa, seed)
    b = _arr(sb, seed + 1, low=0.5, high=2.0) * np.where(_arr(sb, seed + 2) > 0, 1, -1).astype(np.float32)
    f, np_f = _OPS[op]
    x, y = T(sg, a), T(sg, b)
    out = sg.maximum(x, y) if f is None else f(x, y)
    expected = np_f(a.astype(np.float64) if op == "div" else a, b)
    assert tuple(out.shape) == pair.result_shape
    assert_close(out, np.asarray(expected).astype(np.bool_ if op == "gt" else np.float32))


@SETTINGS
@given(pair=broadcast_pairs, seed=st.integers(0, 2**16))
def test_broadcast_gradients_reduce_to_input_shapes(sg, pair, seed):
    need_torch()
    sa, sb = pair.input_shapes
    check_grads(sg, lambda x, y: x * y + x, lambda x, y: x * y + x, _arr(sa, seed), _arr(sb, seed + 1))


@st.composite
def shape_and_dims(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    nd = len(shape)
    dims = draw(st.one_of(
        st.none(),
        st.integers(-nd, nd - 1),
        st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(
            lambda ds: tuple(d - nd if i % 2 else d for i, d in enumerate(ds))),
    ))
    return shape, dims


@SETTINGS
@given(sd=shape_and_dims(), keepdim=st.booleans(), name=st.sampled_from(["sum", "mean", "amax", "amin", "var"]),
       seed=st.integers(0, 2**16))
def test_reductions_over_random_dims(sg, sd, keepdim, name, seed):
    shape, dims = sd
    a = _arr(shape, seed)
    x = T(sg, a)
    np_f = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min,
            "var": lambda v, axis, keepdims: np.var(v, axis=axis, keepdims=keepdims, ddof=1)}[name]
    if dims is None:
        out = getattr(x, name)(dim=tuple(range(len(shape))), keepdim=keepdim)
    else:
        out = getattr(x, name)(dim=dims, keepdim=keepdim)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # var of one element is nan, as in torch
        expected = np.asarray(np_f(a.astype(np.float64), axis=dims, keepdims=keepdim)).astype(np.float32)
    assert_close(out, expected, rtol=1e-5, atol=1e-6)


@SETTINGS
@given(sd=shape_and_dims(), keepdim=st.booleans(), seed=st.integers(0, 2**16))
def test_reduction_gradients_over_random_dims(sg, sd, keepdim, seed):
    need_torch()
    shape, dims = sd
    dim = tuple(range(len(shape))) if dims is None else dims
    f = lambda x: x.sum(dim=dim, keepdim=keepdim) * 2 + x.mean(dim=dim, keepdim=keepdim)  # noqa: E731
    check_grads(sg, f, f, _arr(shape, seed))


@st.composite
def shape_and_index(draw):
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
    idx = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "slice", "full"]))
        if kind == "int":
            idx.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))  # torch allows positive steps only
            idx.append(slice(start, stop, step))
        else:
            idx.append(slice(None))
    if draw(st.booleans()):
        idx.insert(draw(st.integers(0, len(idx))), None)
    if draw(st.booleans()) and len(idx) > 1:
        # replace a leading run with an ellipsis
        cut = draw(st.integers(1, len(idx) - 1))
        if all(i == slice(None) for i in idx[:cut]):
            idx = [Ellipsis] + idx[cut:]
    return shape, tuple(idx)


@SETTINGS
@given(si=shape_and_index(), seed=st.integers(0, 2**16))
def test_random_basic_slicing(sg, si, seed):
    shape, idx = si
    a = _arr(shape, seed)
    assert_close(T(sg, a)[idx], a[idx])


@SETTINGS
@given(si=shape_and_index(), seed=st.integers(0, 2**16))
def test_random_slice_assignment(sg, si, seed):
    shape, idx = si
    a = _arr(shape, seed)
    v = _arr(a[idx].shape, seed + 1) + 10
    x = T(sg, a)
    x[idx] = T(sg, v)
    b = a.copy()
    b[idx] = v
    assert_close(x, b)


@SETTINGS
@given(si=shape_and_index(), seed=st.integers(0, 2**16))
def test_random_slicing_gradient(sg, si, seed):
    need_torch()
    shape, idx = si
    check_grads(sg, lambda x: x[idx], lambda t: t[idx], _arr(shape, seed))


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_random_permute_reshape(sg, shape, data):
    a = _arr(shape, 0)
    perm = data.draw(st.permutations(range(len(shape))))
    x = T(sg, a).permute(*perm)
    assert_close(x, a.transpose(perm))
    sizes = [d for d in range(1, a.size + 1) if a.size % d == 0]
    first = data.draw(st.sampled_from(sizes))
    assert_close(x.reshape(first, -1), a.transpose(perm).reshape(first, -1))


@SETTINGS
@given(m=st.integers(1, 3), k=st.integers(1, 3), n=st.integers(1, 3),
       batch=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=2),
       seed=st.integers(0, 2**16))
def test_batched_matmul_shapes(sg, m, k, n, batch, seed):
    ba, bb = batch.input_shapes
    a, b = _arr(ba + (m, k), seed), _arr(bb + (k, n), seed + 1)
    expected = np.matmul(a.astype(np.float64), b).astype(np.float32)
    assert_close(T(sg, a) @ T(sg, b), expected)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@SETTINGS
@given(values=st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=12), seed=st.integers(0, 100))
def test_softmax_is_a_distribution(sg, dtype, values, seed):
    a = np.array(values, dtype=dtype)
    s = sg.nn.functional.softmax(T(sg, a), 0).numpy().astype(np.float64)
    assert np.all(s >= 0) and abs(s.sum() - 1) < 1e-5
    w = a.astype(np.float64)
    e = np.exp(w - w.max())
    np.testing.assert_allclose(s, e / e.sum(), rtol=1e-5, atol=1e-7)


@st.composite
def shape_and_advanced_index(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    idx = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "array", "array", "mask"]))
        if kind == "int":
            idx.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            idx.append(slice(draw(st.one_of(st.none(), st.integers(0, n))), None, draw(st.integers(1, 2))))
        elif kind == "array":
            k = draw(st.integers(1, 3))
            idx.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k))))
        else:
            idx.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    if draw(st.booleans()):
        idx.insert(draw(st.integers(0, len(idx))), None)
    return shape, tuple(idx)


def _broadcastable_index(idx):
    arrays = [i for i in idx if isinstance(i, np.ndarray)]
    shapes = [(int(a.sum()),) if a.dtype == bool else a.shape for a in arrays]
    try:
        np.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


@SETTINGS
@given(si=shape_and_advanced_index(), seed=st.integers(0, 2**16))
def test_random_advanced_indexing_matches_torch(sg, si, seed):
    # PyTorch decides where advanced dims go, and what is legal
    torch = need_torch()
    shape, idx = si
    assume(_broadcastable_index(idx))
    a = _arr(shape, seed)
    sidx = tuple(T(sg, i) if isinstance(i, np.ndarray) else i for i in idx)
    tidx = tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i for i in idx)
    expected = torch.tensor(a)[tidx]
    assert_close(T(sg, a)[sidx], expected)
    check_grads(sg, lambda x: x[sidx], lambda t: t[tidx], a)
