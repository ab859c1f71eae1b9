"""scatter (with reduce), scatter_reduce, index_add/index_copy/index_fill and
masked_scatter against PyTorch: values and gradients, repeated indices, ties, zeros in
products, integer dtypes, and out-of-range indices refused before anything is written."""
import numpy as np
import pytest

from .helpers_core import GRAD_TOL, INTS, T, data, settled, upstream
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch


def _index(shape, high, seed):
    return np.random.default_rng(seed).integers(0, high, size=shape)


def _both(sg, torch, a, requires_grad=True):
    return T(sg, a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def _check_grads(sg, torch, pairs, out, expected, dtype):
    g = upstream(tuple(expected.shape), dtype)
    out.backward(T(sg, g))
    expected.backward(torch.tensor(g))
    for ours, theirs in pairs:
        assert_close(ours.grad, theirs.grad, *GRAD_TOL[dtype])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scatter_reduce(sg, reduce, include_self, dim, dtype):
    torch = need_torch()
    a = data((3, 4), dtype, seed=1)
    src = data((3, 3), dtype, seed=2, low=-3.0, high=3.0)  # shaped as the index (PyTorch's backward needs it)
    src[0, 0] = 0.0  # a zero among the factors of a product
    src[1, 1] = src[2, 1] = 1.5  # a tie for amax/amin
    idx = _index((3, 3), 3 if dim == 0 else 4, seed=3 + dim)
    x, t = _both(sg, torch, a)
    s, u = _both(sg, torch, src)
    out = x.scatter_reduce(dim, T(sg, idx), s, reduce, include_self=include_self)
    expected = t.scatter_reduce(dim, torch.tensor(idx), u, reduce, include_self=include_self)
    assert_close(out, expected, *GRAD_TOL[dtype])
    _check_grads(sg, torch, [(x, t), (s, u)], out, expected, dtype)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", [*INTS, "float32"])
def test_scatter_reduce_dtypes_and_functions(sg, reduce, dtype):
    torch = need_torch()
    a = data((4, 3), dtype, seed=4, low=-5, high=5)
    src = data((5, 3), dtype, seed=5, low=-5, high=5)
    idx = _index((5, 3), 4, seed=6)
    out = sg.scatter_reduce(T(sg, a), 0, T(sg, idx), T(sg, src), reduce, include_self=False)
    expected = torch.scatter_reduce(torch.tensor(a), 0, torch.tensor(idx), torch.tensor(src), reduce,
                                    include_self=False)
    assert_close(out, expected)
    y, u = T(sg, a), torch.tensor(a)
    assert y.scatter_reduce_(1, T(sg, idx[:4] % 3), T(sg, src[:4]), reduce) is y
    u.scatter_reduce_(1, torch.tensor(idx[:4] % 3), torch.tensor(src[:4]), reduce)
    assert_close(y, u)


def test_scatter_reduce_reads_only_the_corner_of_a_larger_src(sg):
    torch = need_torch()
    a, src, idx = data((3, 4), "float32", seed=1), data((4, 6), "float32", seed=2), _index((2, 3), 3, seed=3)
    for reduce in ("sum", "amax"):
        assert_close(T(sg, a).scatter_reduce(0, T(sg, idx), T(sg, src), reduce),
                     torch.tensor(a).scatter_reduce(0, torch.tensor(idx), torch.tensor(src), reduce))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scatter_add_reads_src_by_position_when_src_is_larger(sg, dtype):
    torch = need_torch()
    src, idx = data((3, 4), dtype, seed=30), np.array([[0, 1, 1], [1, 0, 0]])
    for dim in (0, 1):
        x, t = T(sg, np.zeros((2, 4), dtype)), torch.zeros(2, 4, dtype=getattr(torch, dtype))
        assert_close(x.scatter_add(dim, T(sg, idx), T(sg, src)),
                     t.scatter_add(dim, torch.tensor(idx), torch.tensor(src)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scatter_reduce_nan_propagates(sg, dtype):
    torch = need_torch()
    a = np.array([1.0, 2.0, 3.0], dtype)
    src = np.array([np.nan, 5.0, -1.0, 0.5], dtype)
    idx = np.array([0, 0, 2, 1])
    for reduce in ("amax", "amin", "sum", "prod", "mean"):
        out = T(sg, a).scatter_reduce(0, T(sg, idx), T(sg, src), reduce)
        assert_close(out, torch.tensor(a).scatter_reduce(0, torch.tensor(idx), torch.tensor(src), reduce))


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")  # PyTorch's own deprecation
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scatter_with_src_value_and_reduce(sg, dtype):
    torch = need_torch()
    a = data((3, 5), dtype, seed=7)
    src = data((2, 5), dtype, seed=8)
    idx = np.array([[0, 1, 2, 0, 1], [2, 0, 1, 1, 2]])  # a permutation per column: no repeats
    x, t = _both(sg, torch, a)
    s, u = _both(sg, torch, src)
    out, expected = x.scatter(0, T(sg, idx), s), t.scatter(0, torch.tensor(idx), u)
    assert_close(out, expected)
    _check_grads(sg, torch, [(x, t), (s, u)], out, expected, dtype)
    assert_close(sg.scatter(T(sg, a), 1, T(sg, idx[:, :3]), -2.5),
                 torch.scatter(torch.tensor(a), 1, torch.tensor(idx[:, :3]), -2.5))
    assert_close(T(sg, a).scatter(1, T(sg, idx[:, :3]), value=4.0),
                 torch.tensor(a).scatter(1, torch.tensor(idx[:, :3]), value=4.0))
    for reduce in ("add", "multiply"):
        y, v = T(sg, a), torch.tensor(a)
        y.scatter_(0, T(sg, idx), T(sg, src), reduce=reduce)
        v.scatter_(0, torch.tensor(idx), torch.tensor(src), reduce=reduce)
        assert_close(y, v)
        y, v = T(sg, a), torch.tensor(a)
        y.scatter_(1, T(sg, idx), 3.0, reduce=reduce)
        v.scatter_(1, torch.tensor(idx) % 5, 3.0, reduce=reduce)
        assert_close(y, v)


def test_scatter_of_a_non_contiguous_input_and_0d(sg):
    torch = need_torch()
    a = data((4, 3), "float32", seed=9)
    idx = np.array([[1, 0, 2], [0, 2, 1]])
    x, t = T(sg, a).t(), torch.tensor(a).t()
    assert_close(x.scatter(1, T(sg, idx), 7.0), t.scatter(1, torch.tensor(idx), 7.0))
    z, w = sg.tensor(1.5), torch.tensor(1.5)
    assert_close(z.scatter(0, sg.tensor(0), sg.tensor(3.0)), w.scatter(0, torch.tensor(0), torch.tensor(3.0)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_copy_fill(sg, dtype, dim):
    torch = need_torch()
    a = data((4, 5), dtype, seed=10)
    n = a.shape[dim]
    idx = np.array([n - 1, 0, n - 1])  # a repeat: index_add adds both
    shape = list(a.shape)
    shape[dim] = 3
    src = data(tuple(shape), dtype, seed=11)
    x, t = _both(sg, torch, a)
    s, u = _both(sg, torch, src)
    out = x.index_add(dim, T(sg, idx), s, alpha=2.0)
    expected = t.index_add(dim, torch.tensor(idx), u, alpha=2.0)
    assert_close(out, expected, *GRAD_TOL[dtype])
    _check_grads(sg, torch, [(x, t), (s, u)], out, expected, dtype)

    uniq = np.array([n - 1, 0])
    x, t = _both(sg, torch, a)
    s, u = _both(sg, torch, np.take(src, [0, 1], axis=dim).copy())
    out, expected = x.index_copy(dim, T(sg, uniq), s), t.index_copy(dim, torch.tensor(uniq), u)
    assert_close(out, expected)
    _check_grads(sg, torch, [(x, t), (s, u)], out, expected, dtype)

    x, t = _both(sg, torch, a)
    out, expected = x.index_fill(dim, T(sg, idx), -1.0), t.index_fill(dim, torch.tensor(idx), -1.0)
    assert_close(out, expected)
    _check_grads(sg, torch, [(x, t)], out, expected, dtype)


def test_index_forms_in_place_and_as_functions(sg):
    torch = need_torch()
    a = data((3, 4), "int64", seed=12, low=-9, high=9)
    idx = np.array([2, 0])
    src = data((3, 2), "int64", seed=13, low=-9, high=9)
    y, v = T(sg, a), torch.tensor(a)
    assert y.index_add_(1, T(sg, idx), T(sg, src)) is y
    v.index_add_(1, torch.tensor(idx), torch.tensor(src))
    assert_close(y, v)
    y.index_fill_(0, T(sg, np.array([1])), 5)
    v.index_fill_(0, torch.tensor([1]), 5)
    assert_close(y, v)
    y.index_copy_(1, T(sg, idx), T(sg, src))
    v.index_copy_(1, torch.tensor(idx), torch.tensor(src))
    assert_close(y, v)
    assert_close(sg.index_fill(T(sg, a), 1, T(sg, idx), sg.tensor(3)),
                 torch.index_fill(torch.tensor(a), 1, torch.tensor(idx), torch.tensor(3)))
    assert_close(sg.index_add(T(sg, a), 0, T(sg, np.array([0, 0, 2])), T(sg, a[:, :4][:3])),
                 torch.index_add(torch.tensor(a), 0, torch.tensor([0, 0, 2]), torch.tensor(a[:3])))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_masked_scatter(sg, dtype):
    torch = need_torch()
    a = data((3, 4), dtype, seed=14)
    mask = data((1, 4), "bool", seed=15)  # broadcast over the rows
    src = data((4, 4), dtype, seed=16)
    x, t = _both(sg, torch, a)
    s, u = _both(sg, torch, src)
    out = x.masked_scatter(T(sg, mask), s)
    expected = t.masked_scatter(torch.tensor(mask), u)
    assert_close(out, expected)
    _check_grads(sg, torch, [(x, t), (s, u)], out, expected, dtype)
    y, v = T(sg, a), torch.tensor(a)
    y.masked_scatter_(T(sg, mask), T(sg, src))
    v.masked_scatter_(torch.tensor(mask), torch.tensor(src))
    assert_close(y, v)


OUT_OF_RANGE = [
    ("scatter", lambda sg, x: x.scatter(0, sg.tensor([[3]]), 1.0)),
    ("scatter", lambda sg, x: x.scatter(1, sg.tensor([[-1]]), sg.ones(1, 1))),
    ("scatter_reduce", lambda sg, x: x.scatter_reduce(0, sg.tensor([[0, 9]]), sg.ones(1, 2), "amax")),
    ("scatter_add", lambda sg, x: x.scatter_add(0, sg.tensor([[5]]), sg.ones(1, 1))),
    ("gather", lambda sg, x: x.gather(1, sg.tensor([[4]]))),
    ("index_select", lambda sg, x: x.index_select(0, sg.tensor([3]))),
    ("index_add", lambda sg, x: x.index_add(0, sg.tensor([3]), sg.ones(1, 4))),
    ("index_fill", lambda sg, x: x.index_fill(1, sg.tensor([-7]), 0.0)),
    ("index_copy", lambda sg, x: x.index_copy(1, sg.tensor([4]), sg.ones(3, 1))),
]


@pytest.mark.parametrize("op,call", OUT_OF_RANGE, ids=[f"{o}-{i}" for i, (o, _) in enumerate(OUT_OF_RANGE)])
def test_an_index_out_of_range_is_refused_as_torch_refuses_it(sg, op, call):
    torch = need_torch()
    x = sg.zeros(3, 4)
    before = x.tolist()
    with pytest.raises(sg.IndexRangeError, match=op) as info:
        settled(call(sg, x))
    assert isinstance(info.value, IndexError) and isinstance(info.value, RuntimeError)
    assert x.tolist() == before
    with pytest.raises((RuntimeError, IndexError)):  # PyTorch refuses the same call
        call(torch, torch.zeros(3, 4))


def test_bad_arguments(sg):
    x = sg.zeros(3, 4)
    with pytest.raises(ValueError, match="reduce"):
        x.scatter_reduce(0, sg.tensor([[0]]), sg.ones(1, 1), "max")
    with pytest.raises(ValueError, match="reduce"):
        x.scatter(0, sg.tensor([[0]]), 1.0, reduce="sum")
    with pytest.raises(TypeError, match="index"):
        x.index_fill(0, sg.tensor([0.5]), 1.0)
    with pytest.raises(sg.ShapeError, match="index_add"):
        x.index_add(0, sg.tensor([0, 1]), sg.ones(3, 4))
    with pytest.raises(sg.ShapeError, match="masked_scatter"):
        x.masked_scatter(sg.ones(3, 4) > 0, sg.ones(5))
    with pytest.raises(TypeError, match="mask"):
        x.masked_scatter(sg.ones(3, 4), sg.ones(12))
