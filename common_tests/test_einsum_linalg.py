"""einsum, the addmm family, cdist and fill_diagonal_ against PyTorch: values and the
gradient of every operand."""
import math

import numpy as np
import pytest

from .helpers_core import GRAD_TOL, T, data, upstream
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch


def _compare(sg, torch, arrays, ours, theirs, dtype="float64", grads=True):
    xs = [T(sg, a, requires_grad=grads) for a in arrays]
    ts = [torch.tensor(a, requires_grad=grads) for a in arrays]
    out, expected = ours(*xs), theirs(*ts)
    assert_close(out, expected, *GRAD_TOL[dtype])
    if grads:
        g = upstream(tuple(expected.shape), dtype)
        out.backward(T(sg, g))
        expected.backward(torch.tensor(g))
        for x, t in zip(xs, ts):
            assert_close(x.grad, t.grad, *GRAD_TOL[dtype])


EINSUMS = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("bii->b", [(2, 3, 3)]),
    ("ij->ji", [(3, 5)]),
    ("ij->", [(3, 5)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...j,j->...", [(2, 3, 4), (4,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),
    ("b h i d, b h j d -> b h i j", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ijk,ikj->i", [(2, 3, 3), (2, 3, 3)]),
    ("ij,ij->ij", [(1, 4), (3, 4)]),  # a size-1 dim broadcasts, as in PyTorch
]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_einsum(sg, equation, shapes, dtype):
    torch = need_torch()
    arrays = [data(s, dtype, seed=i) for i, s in enumerate(shapes)]
    _compare(sg, torch, arrays, lambda *xs: sg.einsum(equation, *xs), lambda *ts: torch.einsum(equation, *ts),
             dtype)


def test_einsum_takes_a_list_and_float32_and_ints(sg):
    torch = need_torch()
    a, b = data((3, 4), "float32", seed=1), data((4, 2), "float32", seed=2)
    assert_close(sg.einsum("ij,jk->ik", [T(sg, a), T(sg, b)]),
                 torch.einsum("ij,jk->ik", [torch.tensor(a), torch.tensor(b)]), rtol=1e-5, atol=1e-5)
    i, j = data((3, 4), "int64", seed=3, low=-5, high=5), data((4,), "int64", seed=4, low=-5, high=5)
    assert_close(sg.einsum("ij,j->i", T(sg, i), T(sg, j)), torch.einsum("ij,j->i", torch.tensor(i), torch.tensor(j)))


@pytest.mark.parametrize("equation,shapes,error", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "ShapeError"),
    ("ij->ik", [(2, 3)], "ValueError"),
    ("ij,jk", [(2, 3)], "ValueError"),
    ("ijk->i", [(2, 3)], "ShapeError"),
    ("i1->i", [(2, 3)], "ValueError"),
    ("ij->ii", [(2, 3)], "ValueError"),
    ("ii->i", [(2, 3)], "ShapeError"),
])
def test_einsum_errors(sg, equation, shapes, error):
    torch = need_torch()
    with pytest.raises(getattr(sg, error) if error == "ShapeError" else ValueError, match="einsum"):
        sg.einsum(equation, *[sg.ones(*s) for s in shapes])
    with pytest.raises((RuntimeError, ValueError)):  # PyTorch refuses the same
        torch.einsum(equation, *[torch.ones(*s) for s in shapes])


ADDS = [
    ("addmm", [(3, 5), (3, 4), (4, 5)]),
    ("addmm", [(5,), (3, 4), (4, 5)]),  # input broadcasts
    ("addmv", [(3,), (3, 4), (4,)]),
    ("addr", [(3, 4), (3,), (4,)]),
    ("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addbmm", [(3, 5), (2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize("name,shapes", ADDS, ids=[f"{n}-{len(s[0])}d" for n, s in ADDS])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_addmm_family(sg, name, shapes, beta, alpha, dtype):
    torch = need_torch()
    arrays = [data(s, dtype, seed=i + 5) for i, s in enumerate(shapes)]
    if beta == 0:
        arrays[0][...] = np.nan  # ignored when beta is 0, as in PyTorch
    _compare(sg, torch, arrays, lambda *xs: getattr(sg, name)(*xs, beta=beta, alpha=alpha),
             lambda *ts: getattr(torch, name)(*ts, beta=beta, alpha=alpha), dtype, grads=beta != 0)
    xs = [T(sg, a) for a in arrays]
    assert_close(getattr(xs[0], name)(*xs[1:], alpha=alpha, beta=beta),
                 getattr(torch.tensor(arrays[0]), name)(*[torch.tensor(a) for a in arrays[1:]], alpha=alpha, beta=beta),
                 *(GRAD_TOL[dtype] if dtype == "float32" else ()))  # float64: assert_close's own


def test_addmm_shape_errors(sg):
    with pytest.raises(sg.ShapeError, match="addmm"):
        sg.addmm(sg.ones(2, 2), sg.ones(2), sg.ones(2, 2))
    with pytest.raises(sg.ShapeError, match="baddbmm"):
        sg.baddbmm(sg.ones(2, 2, 2), sg.ones(2, 2), sg.ones(2, 2, 2))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, math.inf])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cdist(sg, p, dtype):
    torch = need_torch()
    a, b = data((2, 4, 3), dtype, seed=20), data((2, 5, 3), dtype, seed=21)
    _compare(sg, torch, [a, b], lambda x, y: sg.cdist(x, y, p), lambda x, y: torch.cdist(x, y, p), dtype)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
@pytest.mark.capability("float64")
def test_cdist_gradient_at_zero_distance(sg, p):
    torch = need_torch()
    a = data((3, 2), "float64", seed=22)
    b = np.concatenate([a[:1], data((2, 2), "float64", seed=23)])  # a row equal to one of a's
    _compare(sg, torch, [a, b], lambda x, y: sg.cdist(x, y, p), lambda x, y: torch.cdist(x, y, p))


def test_cdist_refuses_mismatched_feature_sizes(sg):
    with pytest.raises(sg.ShapeError, match="cdist"):
        sg.cdist(sg.ones(2, 3), sg.ones(2, 4))


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((4, 2), False), ((2, 5), False), ((7, 3), True),
                                        ((7, 3), False), ((3, 3, 3), False)])
@pytest.mark.capability("float64")
def test_fill_diagonal_(sg, shape, wrap):
    torch = need_torch()
    a = data(shape, "float32", seed=24)
    x, t = T(sg, a), torch.tensor(a)
    assert x.fill_diagonal_(-1.5, wrap=wrap) is x
    t.fill_diagonal_(-1.5, wrap=wrap)
    assert_close(x, t)
    a64 = data(shape, "float64", seed=25)
    _compare(sg, torch, [a64], lambda x: (x * 1).fill_diagonal_(2.0, wrap), lambda t: (t * 1).fill_diagonal_(2.0, wrap))
    with pytest.raises(sg.ShapeError, match="fill_diagonal_"):
        sg.ones(2, 3, 4).fill_diagonal_(0)
