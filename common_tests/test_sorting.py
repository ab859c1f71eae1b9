"""sort, argsort, msort, topk, kthvalue, searchsorted and bucketize against PyTorch:
values, indices (PyTorch's stable order: the stages always sort stably) and gradients,
on ties, NaN, signed zeros, empty and size-1 dims, negative dims and transposed input."""
import numpy as np
import pytest

from .helpers_core import INTS, T, check_grads, data
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch

NAN = float("nan")


def _edgy(dtype):
    """A 3 x 8 block with ties, NaN (floats), signed zeros and large magnitudes."""
    if dtype in INTS:  # the narrow ones wrap the large values (and uint8 the negative ones)
        return np.array([[3, 1, 1, -2, 0, 7, 3, -9], [5, 5, 5, 5, 0, 0, -1, 2],
                         [2**30, -2**30, 4, 4, 1, 0, 0, 1]]).astype(dtype)
    if dtype == "bool":
        return np.array([[1, 0, 1, 1, 0, 0, 1, 0], [0] * 8, [1] * 8], dtype=bool)
    return np.array([[3.0, NAN, 1.0, 1.0, -0.0, 0.0, 2.0, NAN], [5, 4, 4, 1, 9, 9, -1e30, 1e30],
                     [-np.inf, np.inf, 0.5, -0.5, 0.5, NAN, 2.0, -1.0]], dtype=dtype)


def _same(ours, theirs):
    """Exact equality (NaN equal to NaN, -0.0 to 0.0 apart from its sign, as PyTorch
    orders them equal); dtype and shape too."""
    assert_close(ours, theirs, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64", *INTS, "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_stable_torch(sg, dtype, dim, descending):
    torch = need_torch()
    a = _edgy(dtype)
    v, i = sg.sort(T(sg, a), dim=dim, descending=descending)
    tv, ti = torch.sort(torch.tensor(a), dim=dim, descending=descending, stable=True)
    _same(v, tv)
    _same(i, ti)
    # the method, stable= accepted, and argsort
    v2, i2 = T(sg, a).sort(dim, descending, stable=True)
    _same(v2, tv)
    _same(T(sg, a).argsort(dim=dim, descending=descending), ti)
    _same(sg.argsort(T(sg, a), dim, descending), ti)


def test_sort_returns_named_values_indices(sg):
    torch = need_torch()
    a = data((4, 5), "float32", seed=1)
    out = T(sg, a).sort()
    assert isinstance(out, sg.ValuesIndices)
    _same(out.values, torch.tensor(a).sort().values)
    _same(out.indices, torch.tensor(a).sort().indices)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sort_non_contiguous_and_long_rows(sg, dim, dtype):
    # a transposed 3-d tensor, rows long enough for several merge passes
    torch = need_torch()
    a = np.round(data((5, 37, 3), "float64", seed=2), 1).astype(dtype)  # rounding makes ties
    x = T(sg, a).permute(2, 0, 1)
    t = torch.tensor(a).permute(2, 0, 1)
    for desc in (False, True):
        v, i = x.sort(dim=dim, descending=desc)
        tv, ti = t.sort(dim=dim, descending=desc, stable=True)
        _same(v, tv)
        _same(i, ti)


@pytest.mark.parametrize("shape,dim", [((0,), 0), ((3, 0), 1), ((3, 0), 0), ((1, 4), 0), ((4, 1), 1),
                                       ((), 0), ((), -1), ((1,), 0)])
def test_sort_empty_size_one_and_zero_dim(sg, shape, dim):
    torch = need_torch()
    a = data(shape, "float32", seed=3)
    v, i = sg.sort(T(sg, a), dim=dim)
    tv, ti = torch.sort(torch.tensor(a), dim=dim)
    _same(v, tv)
    _same(i, ti)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_grad(sg, dtype, dim, descending):
    torch = need_torch()
    a = data((4, 6), dtype, seed=4)
    check_grads(sg, lambda x: x.sort(dim=dim, descending=descending).values,
                lambda x: x.sort(dim=dim, descending=descending, stable=True).values, a)
    check_grads(sg, lambda x: x.t().sort(dim=dim, descending=descending).values,
                lambda x: x.t().sort(dim=dim, descending=descending, stable=True).values, a)
    assert torch is not None


@pytest.mark.capability("float64")
def test_sort_grad_with_ties_follows_stable_indices(sg):
    need_torch()
    a = np.array([[1.0, 2.0, 1.0, 2.0, 1.0], [0.0, 0.0, 0.0, -1.0, 5.0]])
    check_grads(sg, lambda x: x.sort(descending=True).values,
                lambda x: x.sort(descending=True, stable=True).values, a)


@pytest.mark.capability("float64")
def test_msort(sg):
    torch = need_torch()
    a = _edgy("float32")
    _same(sg.msort(T(sg, a)), torch.msort(torch.tensor(a)))
    _same(T(sg, a).msort(), torch.tensor(a).msort())
    check_grads(sg, lambda x: sg.msort(x), lambda x: torch.msort(x), data((5, 3), "float64", seed=5))


@pytest.mark.parametrize("dtype", ["float32", "float64", *INTS])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, -1])
def test_topk(sg, dtype, largest, dim):
    torch = need_torch()
    a = data((6, 7), dtype, seed=6, low=-50, high=50)
    k = 3
    v, i = T(sg, a).topk(k, dim=dim, largest=largest)
    tv, ti = torch.tensor(a).topk(k, dim=dim, largest=largest)
    _same(v, tv)
    # indices only where the row holds no ties
    distinct = [len(set(row)) == len(row) for row in np.moveaxis(a, dim, -1).reshape(-1, a.shape[dim])]
    ours = np.moveaxis(i.numpy(), dim, -1).reshape(-1, k)
    theirs = np.moveaxis(ti.numpy(), dim, -1).reshape(-1, k)
    assert any(distinct)
    for r, ok in enumerate(distinct):
        if ok:
            assert (ours[r] == theirs[r]).all()
    _same(sg.topk(T(sg, a), k, dim, largest).values, tv)


@pytest.mark.capability("float64")
def test_topk_edges_and_grad(sg):
    torch = need_torch()
    a = _edgy("float64")
    for k in (0, 1, 8):
        v, _ = T(sg, a).topk(k)
        _same(v, torch.tensor(a).topk(k).values)  # NaN counts as the largest
    _same(T(sg, np.float32(2.5)).topk(1).values, torch.tensor(np.float32(2.5)).topk(1).values)
    b = data((5, 6), "float64", seed=7)
    check_grads(sg, lambda x: x.topk(2, dim=0).values, lambda x: x.topk(2, dim=0).values, b)
    check_grads(sg, lambda x: x.t().topk(3, largest=False).values,
                lambda x: x.t().topk(3, largest=False).values, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(sg, dtype, keepdim):
    torch = need_torch()
    a = data((5, 6), dtype, seed=8, low=-100, high=100)
    for k, dim in ((1, -1), (3, 0), (6, 1)):
        v, i = T(sg, a).kthvalue(k, dim, keepdim)
        tv, ti = torch.tensor(a).kthvalue(k, dim, keepdim)
        _same(v, tv)
        _same(i, ti)  # random data: no ties
        _same(sg.kthvalue(T(sg, a), k, dim=dim, keepdim=keepdim).values, tv)
    if dtype != "int64":
        check_grads(sg, lambda x: x.kthvalue(2, 0).values, lambda x: x.kthvalue(2, 0).values, a)


def test_sort_errors(sg):
    x = T(sg, data((3, 4), "float32"))
    for f in (lambda: x.sort(dim=2), lambda: x.argsort(dim=-3), lambda: x.topk(1, dim=5),
              lambda: x.kthvalue(1, dim=2)):
        with pytest.raises(IndexError, match="dimension out of range"):
            f()
    with pytest.raises(sg.ShapeError, match=r"topk: k \(5\) out of range.*size 4"):
        x.topk(5)
    with pytest.raises(RuntimeError, match="topk"):
        x.topk(-1)
    with pytest.raises(sg.ShapeError, match="kthvalue: k"):
        x.kthvalue(0)
    with pytest.raises(TypeError, match="sort: input must be a Tensor"):
        sg.sort([3, 1, 2])


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_searchsorted_1d(sg, right, dtype):
    torch = need_torch()
    seq = np.array([-3, 1, 1, 2, 5, 5, 5, 9], dtype=dtype)
    if dtype == "int64":
        vals = np.array([[-4, -3, 1, 3], [5, 9, 10, 0]], dtype=dtype)
    else:
        vals = np.array([[-4, -3, 1, 3.5], [5, 9, 10, NAN]], dtype=dtype)
    ours = sg.searchsorted(T(sg, seq), T(sg, vals), right=right)
    theirs = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right)
    _same(ours, theirs)
    side = "right" if right else "left"
    _same(sg.searchsorted(T(sg, seq), T(sg, vals), side=side), theirs)
    _same(sg.searchsorted(T(sg, seq), T(sg, vals), right=right, out_int32=True),
          torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right, out_int32=True))
    _same(sg.searchsorted(T(sg, seq), 5, right=right), torch.searchsorted(torch.tensor(seq), 5, right=right))
    _same(sg.bucketize(T(sg, vals), T(sg, seq), right=right),
          torch.bucketize(torch.tensor(vals), torch.tensor(seq), right=right))


@pytest.mark.capability("float64")
def test_searchsorted_batched_and_sorter(sg):
    torch = need_torch()
    seq = np.sort(data((3, 6), "float64", seed=9), axis=-1)
    vals = data((3, 4), "float64", seed=10)
    _same(sg.searchsorted(T(sg, seq), T(sg, vals)), torch.searchsorted(torch.tensor(seq), torch.tensor(vals)))
    raw = data((7,), "float32", seed=11)
    order = np.argsort(raw, kind="stable")
    v = data((5,), "float32", seed=12)
    _same(sg.searchsorted(T(sg, raw), T(sg, v), sorter=T(sg, order)),
          torch.searchsorted(torch.tensor(raw), torch.tensor(v), sorter=torch.tensor(order)))


def test_searchsorted_errors(sg):
    seq, vals = T(sg, data((2, 5), "float32")), T(sg, data((3, 4), "float32"))
    with pytest.raises(sg.ShapeError, match=r"searchsorted: .*\[2, 5\].*\[3, 4\]"):
        sg.searchsorted(seq, vals)
    with pytest.raises(sg.ShapeError, match="bucketize: boundaries must be 1-d"):
        sg.bucketize(vals, seq)
    with pytest.raises(ValueError, match="searchsorted: side"):
        sg.searchsorted(seq[0], vals, side="middle")
    with pytest.raises(TypeError, match="searchsorted: bool"):
        sg.searchsorted(T(sg, np.array([False, True])), T(sg, np.array([True])))
