"""roll, flip (varargs), diag, diag_embed, outer/ger, repeat_interleave, unique,
unique_consecutive and equal against PyTorch: values, dtypes, gradients, edge values,
transposed input and the error cases."""
import numpy as np
import pytest

from .helpers_core import T, check_grads, data
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch

NAN = float("nan")


def _same(ours, theirs):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t)
        return
    assert_close(ours, theirs, rtol=0, atol=0)


def _edge(dtype, shape=(3, 4)):
    a = data(shape, dtype, seed=1, low=-9, high=9)
    if dtype.startswith("float"):
        a.flat[0], a.flat[1], a.flat[2] = NAN, -0.0, np.inf
    return a


ROLLS = [(1, None), (-5, None), ((1, 2), (0, 1)), (2, -1), ((-1,), (0,)), ((3, 1), (1, 1)), (0, 0), (7, 1)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("shifts,dims", ROLLS)
def test_roll(sg, dtype, shifts, dims):
    torch = need_torch()
    a = _edge(dtype)
    _same(T(sg, a).roll(shifts, dims), torch.tensor(a).roll(shifts, dims))
    _same(sg.roll(T(sg, a).t(), shifts, dims), torch.roll(torch.tensor(a).t(), shifts, dims))


@pytest.mark.parametrize("shifts,dims", ROLLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_roll_grad(sg, shifts, dims, dtype):
    need_torch()
    check_grads(sg, lambda x: x.roll(shifts, dims), lambda x: x.roll(shifts, dims), data((3, 4), dtype))
    check_grads(sg, lambda x: x.t().roll(shifts, dims), lambda x: x.t().roll(shifts, dims),
                data((3, 4), dtype))


def test_roll_edges_and_errors(sg):
    torch = need_torch()
    for shape in ((0,), (2, 0), (1, 1), ()):
        a = data(shape, "float32")
        _same(sg.roll(T(sg, a), 1, 0 if shape else None), torch.roll(torch.tensor(a), 1, 0 if shape else None))
    x = T(sg, data((3, 4), "float32"))
    with pytest.raises(IndexError, match="roll: dimension out of range"):
        x.roll(1, 2)
    with pytest.raises(sg.ShapeError, match=r"roll: shifts \[1, 2\] and dims \[0\]"):
        x.roll((1, 2), 0)
    with pytest.raises(RuntimeError):
        torch.roll(torch.zeros(3, 4), (1, 2), 0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_flip_forms(sg, dtype):
    torch = need_torch()
    a = _edge(dtype, (2, 3, 4))
    x, t = T(sg, a), torch.tensor(a)
    _same(x.flip(0, 2), t.flip(0, 2))
    _same(x.flip((0, 2)), t.flip((0, 2)))
    _same(x.flip([-1]), t.flip([-1]))
    _same(x.flip(1), t.flip(1))
    _same(x.flip(dims=(1, 0)), t.flip(dims=(1, 0)))
    _same(sg.flip(x, (0, 1, 2)), torch.flip(t, (0, 1, 2)))
    _same(x.transpose(0, 2).flip(0, 1), t.transpose(0, 2).flip(0, 1))
    with pytest.raises(IndexError, match="flip: dimension out of range"):
        x.flip(0, 3)
    if dtype.startswith("float"):
        check_grads(sg, lambda y: y.flip(0, -1), lambda y: y.flip(0, -1), data((2, 3, 4), dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("k", [0, 1, 2, -1, -3, 5])
def test_diag(sg, dtype, k):
    torch = need_torch()
    m = _edge(dtype, (3, 4))
    _same(sg.diag(T(sg, m), k), torch.diag(torch.tensor(m), k))
    _same(T(sg, m).t().diag(k), torch.tensor(m).t().diag(k))
    v = _edge(dtype, (4,))
    _same(sg.diag(T(sg, v), k), torch.diag(torch.tensor(v), k))
    if dtype != "int64":
        check_grads(sg, lambda x: sg.diag(x, k), lambda x: torch.diag(x, k), m)
        check_grads(sg, lambda x: x.diag(k), lambda x: x.diag(k), v)


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (1, -1, 1), (0, 1, 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_diag_embed(sg, offset, dim1, dim2, dtype):
    torch = need_torch()
    a = _edge(dtype, (2, 3))
    _same(sg.diag_embed(T(sg, a), offset, dim1, dim2), torch.diag_embed(torch.tensor(a), offset, dim1, dim2))
    _same(T(sg, a).t().diag_embed(offset, dim1, dim2), torch.tensor(a).t().diag_embed(offset, dim1, dim2))
    if dtype.startswith("float"):
        check_grads(sg, lambda x: x.diag_embed(offset, dim1, dim2),
                    lambda x: x.diag_embed(offset, dim1, dim2), data((2, 3), dtype))


def test_diag_errors(sg):
    x = T(sg, data((2, 3, 4), "float32"))
    with pytest.raises(sg.ShapeError, match=r"diag: input must be 1-d or 2-d, got shape \[2, 3, 4\]"):
        sg.diag(x)
    with pytest.raises(IndexError, match="diag_embed: dimension out of range"):
        sg.diag_embed(x, 0, 0, 4)
    with pytest.raises(sg.ShapeError, match="diag_embed: dim1 and dim2 cannot be the same"):
        sg.diag_embed(x, 0, 1, 1)


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float64", "float64"), ("int64", "int64"),
                                   ("int32", "float32"), ("int64", "float64")])
def test_outer_and_ger(sg, da, db):
    torch = need_torch()
    a, b = _edge(da, (3,)), _edge(db, (5,))
    _same(sg.outer(T(sg, a), T(sg, b)), torch.outer(torch.tensor(a), torch.tensor(b)))
    _same(T(sg, a).ger(T(sg, b)), torch.tensor(a).ger(torch.tensor(b)))
    _same(sg.ger(T(sg, a), T(sg, b)[::2]), torch.ger(torch.tensor(a), torch.tensor(b)[::2]))


@pytest.mark.capability("float64")
def test_outer_grad_and_errors(sg):
    torch = need_torch()
    a, b = data((3,), "float64", seed=2), data((4,), "float64", seed=3)
    check_grads(sg, lambda x, y: sg.outer(x, y), lambda x, y: torch.outer(x, y), a, b)
    check_grads(sg, lambda x, y: x.ger(y), lambda x, y: x.ger(y), a.astype("float32"), b.astype("float32"))
    _same(sg.outer(T(sg, a[:0]), T(sg, b)), torch.outer(torch.tensor(a[:0]), torch.tensor(b)))
    with pytest.raises(sg.ShapeError, match=r"outer: expected two 1-d tensors, got shapes \[3, 1\] and \[4\]"):
        sg.outer(T(sg, a).reshape(3, 1), T(sg, b))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_repeat_interleave(sg, dtype):
    torch = need_torch()
    a = _edge(dtype, (3, 4))
    x, t = T(sg, a), torch.tensor(a)
    _same(x.repeat_interleave(2), t.repeat_interleave(2))
    _same(x.repeat_interleave(3, dim=1), t.repeat_interleave(3, dim=1))
    _same(x.repeat_interleave(0, dim=0), t.repeat_interleave(0, dim=0))
    _same(sg.repeat_interleave(x.t(), 2, -1), torch.repeat_interleave(t.t(), 2, -1))
    r = np.array([2, 0, 1])
    _same(x.repeat_interleave(T(sg, r), dim=0), t.repeat_interleave(torch.tensor(r), dim=0))
    _same(x.repeat_interleave(T(sg, r), dim=0, output_size=3),
          t.repeat_interleave(torch.tensor(r), dim=0, output_size=3))
    _same(x.repeat_interleave(T(sg, np.array([3])), dim=1), t.repeat_interleave(torch.tensor([3]), dim=1))
    flat = np.arange(12) % 3
    _same(x.repeat_interleave(T(sg, flat)), t.repeat_interleave(torch.tensor(flat)))
    _same(sg.repeat_interleave(T(sg, r)), torch.repeat_interleave(torch.tensor(r)))
    _same(T(sg, np.array(2.5, dtype="float32")).repeat_interleave(3),
          torch.tensor(2.5).repeat_interleave(3))


@pytest.mark.capability("float64")
def test_repeat_interleave_grad_and_errors(sg):
    torch = need_torch()
    a = data((3, 4), "float64", seed=4)
    r = np.array([1, 3, 0, 2])
    check_grads(sg, lambda x: x.repeat_interleave(2, dim=0), lambda x: x.repeat_interleave(2, dim=0), a)
    check_grads(sg, lambda x: x.repeat_interleave(T(sg, r), dim=1),
                lambda x: x.repeat_interleave(torch.tensor(r), dim=1), a)
    check_grads(sg, lambda x: x.t().repeat_interleave(2), lambda x: x.t().repeat_interleave(2),
                a.astype("float32"))
    x = T(sg, a)
    with pytest.raises(sg.ShapeError, match=r"repeat_interleave: 2 repeats for dim 1 of size 4"):
        x.repeat_interleave(T(sg, np.array([1, 2])), dim=1)
    with pytest.raises(sg.ShapeError, match="repeat_interleave: repeats must be non-negative"):
        x.repeat_interleave(T(sg, np.array([1, -1, 1])), dim=0)
    with pytest.raises(TypeError, match="repeat_interleave: repeats must be an integer tensor, got float64"):
        x.repeat_interleave(T(sg, np.array([1.0, 1.0, 1.0])), dim=0)
    with pytest.raises(IndexError, match="repeat_interleave: dimension out of range"):
        x.repeat_interleave(2, dim=2)
    with pytest.raises(sg.ShapeError, match="repeat_interleave: output_size=5"):
        x.repeat_interleave(T(sg, np.array([1, 1, 1])), dim=0, output_size=5)


UNIQUE_KW = [{}, {"return_inverse": True}, {"return_counts": True},
             {"return_inverse": True, "return_counts": True}]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("kw", UNIQUE_KW)
def test_unique(sg, dtype, kw):
    torch = need_torch()
    a = data((4, 5), dtype, seed=5, low=-3, high=3)
    if dtype.startswith("float"):
        a = np.round(a)  # repeats
        a[0, 0] = -0.0 if a[0, 0] == 0 else a[0, 0]
    _same(sg.unique(T(sg, a), **kw), torch.unique(torch.tensor(a), **kw))
    _same(T(sg, a).t().unique(sorted=True, **kw), torch.tensor(a).t().unique(sorted=True, **kw))
    _same(sg.unique_consecutive(T(sg, a), **kw), torch.unique_consecutive(torch.tensor(a), **kw))
    _same(T(sg, a).t().unique_consecutive(**kw), torch.tensor(a).t().unique_consecutive(**kw))


@pytest.mark.parametrize("kw", UNIQUE_KW)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(sg, kw, dim):
    torch = need_torch()
    a = np.array([[1, 2, 1, 0], [0, 1, 0, 0], [1, 2, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]])
    _same(sg.unique(T(sg, a), dim=dim, **kw), torch.unique(torch.tensor(a), dim=dim, **kw))
    _same(sg.unique_consecutive(T(sg, a), dim=dim, **kw),
          torch.unique_consecutive(torch.tensor(a), dim=dim, **kw))


@pytest.mark.capability("float64")
def test_unique_edges(sg):
    torch = need_torch()
    for a in (np.zeros((0,), "float32"), np.array(3.0, "float32"), np.array([2.0, NAN, 1.0, NAN, 2.0]),
              np.array([[5]])):
        for kw in UNIQUE_KW:
            _same(sg.unique(T(sg, a), **kw), torch.unique(torch.tensor(a), **kw))
            _same(sg.unique_consecutive(T(sg, a), **kw), torch.unique_consecutive(torch.tensor(a), **kw))
    with pytest.raises(IndexError, match="unique: dimension out of range"):
        sg.unique(T(sg, np.array([[1, 2]])), dim=2)
    with pytest.raises(TypeError, match="unique_consecutive: input must be a Tensor"):
        sg.unique_consecutive([1, 1, 2])


@pytest.mark.capability("float64")
def test_equal(sg):
    torch = need_torch()
    a = data((3, 4), "float32", seed=6)
    pairs = [(a, a.copy()), (a, a + 1), (a, a[:2]), (a, a.T.copy()), (np.array([NAN]), np.array([NAN])),
             (np.array([0.0]), np.array([-0.0])), (np.zeros((0,)), np.zeros((0,))),
             (np.array([1, 2], "int64"), np.array([1, 2], "int64")),
             (np.array([1, 2], "int64"), np.array([1, 3], "int64"))]
    for x, y in pairs:
        expected = torch.equal(torch.tensor(x), torch.tensor(y))
        assert sg.equal(T(sg, x), T(sg, y)) is expected
        assert T(sg, x).equal(T(sg, y)) is expected
    assert T(sg, a).t().equal(T(sg, a.T.copy())) is torch.tensor(a).t().equal(torch.tensor(a.T.copy()))
    with pytest.raises(TypeError, match="equal: other must be a Tensor"):
        sg.equal(T(sg, a), a.tolist())
