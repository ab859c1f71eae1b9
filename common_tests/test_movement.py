"""Shape and movement ops: values against NumPy, gradients against PyTorch."""
import numpy as np
import pytest

from .helpers_core import SMALL_INTS, T, assert_close, check_grads, data, gradcheck, need_torch

# (description, stage/torch expression, numpy expression); the stage and torch share
# a spelling, so one lambda serves both
MOVES = [
    ("reshape", lambda x: x.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("reshape_tuple", lambda x: x.reshape((3, 8)), lambda a: a.reshape(3, 8)),
    ("reshape_infer", lambda x: x.reshape(-1, 4), lambda a: a.reshape(-1, 4)),
    ("reshape_flat", lambda x: x.reshape(-1), lambda a: a.reshape(-1)),
    ("reshape_5d", lambda x: x.reshape(2, 1, 3, 2, 2), lambda a: a.reshape(2, 1, 3, 2, 2)),
    ("view", lambda x: x.view(6, 4), lambda a: a.reshape(6, 4)),
    ("view_infer", lambda x: x.view(2, -1), lambda a: a.reshape(2, -1)),
    ("view_tuple", lambda x: x.view((4, 3, 2)), lambda a: a.reshape(4, 3, 2)),
    ("permute", lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute_tuple", lambda x: x.permute((1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    ("permute_neg", lambda x: x.permute(-1, -3, -2), lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose_neg", lambda x: x.transpose(-1, -2), lambda a: a.swapaxes(-1, -2)),
    ("flatten", lambda x: x.flatten(), lambda a: a.reshape(-1)),
    ("flatten_start", lambda x: x.flatten(1), lambda a: a.reshape(2, -1)),
    ("flatten_range", lambda x: x.flatten(0, 1), lambda a: a.reshape(6, 4)),
    ("unsqueeze0", lambda x: x.unsqueeze(0), lambda a: a[None]),
    ("unsqueeze_mid", lambda x: x.unsqueeze(2), lambda a: a[:, :, None]),
    ("unsqueeze_neg", lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    ("contiguous", lambda x: x.permute(1, 0, 2).contiguous(), lambda a: np.ascontiguousarray(a.transpose(1, 0, 2))),
    ("permute_reshape", lambda x: x.permute(2, 1, 0).reshape(4, 6), lambda a: a.transpose(2, 1, 0).reshape(4, 6)),
    ("transpose_transpose", lambda x: x.transpose(0, 1).transpose(1, 2), lambda a: a.swapaxes(0, 1).swapaxes(1, 2)),
]


@pytest.mark.parametrize("k", range(len(MOVES)), ids=[m[0] for m in MOVES])
def test_movement_forward(sg, k):
    _, f, np_f = MOVES[k]
    a = data((2, 3, 4), seed=k)
    assert_close(f(T(sg, a)), np_f(a))


@pytest.mark.parametrize("k", range(len(MOVES)), ids=[m[0] for m in MOVES])
def test_movement_grad_vs_torch(sg, k):
    _, f, _ = MOVES[k]
    check_grads(sg, f, f, data((2, 3, 4), seed=k))


@pytest.mark.parametrize("dtype", ["int64", "bool", "float64", *SMALL_INTS])
def test_movement_keeps_dtype(sg, dtype):
    a = data((2, 3, 4), dtype, seed=1)
    x = T(sg, a)
    assert_close(x.permute(1, 2, 0).reshape(-1, 2), a.transpose(1, 2, 0).reshape(-1, 2))
    assert_close(x.transpose(0, 1), a.swapaxes(0, 1))


def test_T_property(sg):
    a = data((3, 5), seed=2)
    assert_close(T(sg, a).T, a.T)
    v = data((4,), seed=3)
    assert_close(T(sg, v).T, v)  # 1-D: unchanged
    check_grads(sg, lambda x: x.T, lambda t: t.T, a)


@pytest.mark.parametrize("src,shape", [((3, 1), (3, 4)), ((1, 3), (2, 3)), ((3,), (2, 3)),
                                       ((2, 1, 1), (2, 3, 4)), ((1,), (5,)), ((), (2, 2)),
                                       ((3, 1), (2, 3, 2)), ((3, 1), (-1, 4))])
def test_expand(sg, src, shape):
    a = data(src, seed=4)
    target = tuple(s if s != -1 else src[i - (len(shape) - len(src))] for i, s in enumerate(shape))
    assert_close(T(sg, a).expand(*shape), np.broadcast_to(a, target))
    assert_close(T(sg, a).expand(shape), np.broadcast_to(a, target))
    check_grads(sg, lambda x: x.expand(*shape), lambda t: t.expand(*shape), a)


def test_expand_as(sg):
    a, b = data((3, 1), seed=5), data((2, 3, 4), seed=6)
    assert_close(T(sg, a).expand_as(T(sg, b)), np.broadcast_to(a, (2, 3, 4)))


def test_broadcast_to(sg):
    a = data((3, 1), seed=5)
    assert_close(sg.broadcast_to(T(sg, a), (3, 5)), np.broadcast_to(a, (3, 5)))
    assert_close(T(sg, a).broadcast_to((2, 3, 2)), np.broadcast_to(a, (2, 3, 2)))


@pytest.mark.parametrize("src,dim", [((1, 3, 1, 2), None), ((1, 3, 1, 2), 0), ((1, 3, 1, 2), 2),
                                     ((1, 3, 1, 2), -2), ((1, 3, 1, 2), 1), ((1,), None), ((1,), 0)])
def test_squeeze(sg, src, dim):
    a = data(src, seed=7)
    if dim is None:
        out, expected = T(sg, a).squeeze(), np.squeeze(a)
        f = lambda x: x.squeeze()  # noqa: E731
    else:
        # torch leaves a non-1 dim alone where numpy would raise
        out = T(sg, a).squeeze(dim)
        expected = np.squeeze(a, axis=dim) if src[dim] == 1 else a
        f = lambda x: x.squeeze(dim)  # noqa: E731
    assert_close(out, expected)
    check_grads(sg, f, f, a)


def test_squeeze_multiple_dims(sg):
    a = data((1, 3, 1, 2), seed=8)
    assert_close(T(sg, a).squeeze((0, 2)), a.reshape(3, 2))


@pytest.mark.parametrize("shapes,dim", [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 1), (2, 2)], 1),
    ([(2, 3), (2, 3)], -1),
    ([(1, 2, 3), (2, 2, 3), (1, 2, 3)], 0),
    ([(2, 2, 1), (2, 2, 3)], 2),
    ([(3,)], 0),
    ([(0, 3), (2, 3)], 0),
])
def test_cat(sg, shapes, dim):
    arrays = [data(s, seed=i) for i, s in enumerate(shapes)]
    assert_close(sg.cat([T(sg, a) for a in arrays], dim), np.concatenate(arrays, axis=dim))
    assert_close(sg.cat(tuple(T(sg, a) for a in arrays), dim=dim), np.concatenate(arrays, axis=dim))
    torch = need_torch()
    check_grads(sg, lambda *xs: sg.cat(list(xs), dim), lambda *ts: torch.cat(ts, dim), *arrays)


def test_cat_default_dim_and_dtypes(sg):
    a, b = data((2, 2), "int64", seed=1), data((1, 2), "int64", seed=2)
    assert_close(sg.cat([T(sg, a), T(sg, b)]), np.concatenate([a, b]))
    # mixed dtypes promote, as in torch.cat
    c = data((1, 2), "float32", seed=3)
    out = sg.cat([T(sg, a), T(sg, c)])
    assert out.dtype is sg.float32
    assert_close(out, np.concatenate([a.astype(np.float32), c]))


@pytest.mark.parametrize("shape,n,dim", [((3,), 2, 0), ((2, 3), 3, 0), ((2, 3), 2, 1), ((2, 3), 2, -1),
                                         ((2, 3), 1, 2), ((), 3, 0)])
def test_stack(sg, shape, n, dim):
    torch = need_torch()
    arrays = [data(shape, seed=i) for i in range(n)]
    assert_close(sg.stack([T(sg, a) for a in arrays], dim), np.stack(arrays, axis=dim))
    check_grads(sg, lambda *xs: sg.stack(list(xs), dim=dim), lambda *ts: torch.stack(ts, dim=dim), *arrays)


@pytest.mark.parametrize("size,dim", [(2, 0), (3, 1), (2, 1), ([1, 3, 1], 1), ([2, 2], 0), (5, 1), (4, -1)])
def test_split(sg, size, dim):
    a = data((4, 5), seed=9)
    parts = T(sg, a).split(size, dim)
    if isinstance(size, int):
        edges = list(range(size, a.shape[dim], size))
    else:
        edges = list(np.cumsum(size)[:-1])
    expected = np.split(a, edges, axis=dim)
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        assert_close(p, e)
    assert len(sg.split(T(sg, a), size, dim)) == len(expected)
    check_grads(sg, lambda x: tuple(x.split(size, dim)), lambda t: tuple(t.split(size, dim)), a)


@pytest.mark.parametrize("chunks,dim", [(2, 0), (3, 1), (2, 1), (5, 1), (4, 0), (3, -1)])
def test_chunk(sg, chunks, dim):
    torch = need_torch()
    a = data((4, 5), seed=10)
    parts = T(sg, a).chunk(chunks, dim)
    expected = torch.tensor(a).chunk(chunks, dim)  # torch's chunk sizes: ceil(n / chunks)
    assert len(parts) == len(expected)
    size = -(-a.shape[dim] // chunks)
    for i, (p, e) in enumerate(zip(parts, expected)):
        assert_close(p, np.take(a, range(i * size, min((i + 1) * size, a.shape[dim])), axis=dim))
        assert_close(p, e)
    check_grads(sg, lambda x: tuple(x.chunk(chunks, dim)), lambda t: tuple(t.chunk(chunks, dim)), a)


@pytest.mark.capability("float64")
def test_chained_movement_gradcheck(sg):
    a = data((2, 3, 2), "float64", seed=11)
    gradcheck(sg, lambda x: x.permute(2, 0, 1).reshape(2, 6)[:, 1:5].T.unsqueeze(0).expand(2, 4, 2), a)


def test_clone_of_reshape_is_independent(sg):
    # a clone never writes back into the tensor it came from
    a = data((2, 3), seed=12)
    x = T(sg, a)
    y = x.reshape(6).clone()
    y[0] = 42.0
    assert_close(x, a)
    assert_close(y, np.concatenate([[42.0], a.reshape(-1)[1:]]).astype(np.float32))


@pytest.mark.capability("views")
def test_view_aliases_storage(sg):
    # a view writes through to its base (stages that copy declare they lack "views")
    x = T(sg, data((2, 3), seed=13))
    v = x.view(6)
    v[0] = 7.0
    assert x.tolist()[0][0] == 7.0
    t = x.transpose(0, 1)
    t[2, 1] = -3.0
    assert x.tolist()[1][2] == -3.0


@pytest.mark.capability("views")
def test_view_of_non_contiguous_tensor_raises(sg):
    # torch refuses a view whose dims span non-contiguous memory; reshape copies instead
    a = data((2, 3), seed=14)
    t = T(sg, a).transpose(0, 1)
    assert not t.is_contiguous()
    with pytest.raises(ValueError):
        t.view(6)
    assert_close(t.reshape(6), a.T.reshape(6))
