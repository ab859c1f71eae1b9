"""Matrix products with torch.matmul's rules for 1-D operands and batch broadcasting."""
import numpy as np
import pytest

from .helpers_core import NP, T, assert_close, check_grads, data, gradcheck, need_torch

SHAPES = [
    ((3,), (3,)),            # dot product -> 0-d
    ((2, 3), (3, 4)),
    ((3,), (3, 4)),          # vector x matrix
    ((2, 3), (3,)),          # matrix x vector
    ((1, 1), (1, 1)),
    ((2, 2, 3), (3, 4)),     # batched x matrix
    ((2, 3), (2, 3, 4)),     # matrix x batched
    ((2, 2, 3), (2, 3, 2)),
    ((2, 1, 2, 3), (3, 3, 2)),  # batch dims broadcast: (2,1) with (3,)
    ((3,), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((1, 2, 3), (4, 3, 2)),
]


@pytest.mark.parametrize("sa,sb", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_forward(sg, sa, sb, dtype):
    a, b = data(sa, dtype, seed=1), data(sb, dtype, seed=2)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    assert_close(T(sg, a) @ T(sg, b), expected)
    assert_close(sg.matmul(T(sg, a), T(sg, b)), expected)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((2, 2, 3), (3,)), ((4,), (4,))])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_matmul_integers(sg, sa, sb, dtype):
    a, b = data(sa, dtype, seed=3, low=-4, high=4), data(sb, dtype, seed=4, low=-4, high=4)
    assert_close(T(sg, a) @ T(sg, b), np.matmul(a, b).astype(NP[dtype]))


def test_matmul_method_and_mm(sg):
    a, b = data((3, 2), seed=5), data((2, 4), seed=6)
    expected = (a.astype(np.float64) @ b).astype(np.float32)
    assert_close(T(sg, a).matmul(T(sg, b)), expected)
    assert_close(sg.mm(T(sg, a), T(sg, b)), expected)


def test_matmul_empty_inner_dim(sg):
    a, b = np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)
    assert_close(T(sg, a) @ T(sg, b), np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("sa,sb", [((130, 67), (67, 97)), ((2, 65, 129), (129, 66)),
                                   ((3, 1, 70, 5), (2, 5, 130))])
def test_matmul_beyond_one_tile_with_ragged_edges(sg, sa, sb):
    """Wider than a device's 64-square tile of the product, with a partial tile at each
    edge, directly and with the left operand read through a transposed view."""
    a, b = data(sa, seed=16), data(sb, seed=17)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    tol = dict(rtol=1e-5, atol=1e-5 * np.sqrt(sa[-1]))  # float32 sums of k products
    assert_close(T(sg, a) @ T(sg, b), expected, **tol)
    at = T(sg, np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    assert_close(at @ T(sg, b), expected, **tol)


def test_matmul_transposed_operand(sg):
    # a transposed (non-contiguous on strided stages) operand
    a, b = data((4, 3), seed=7), data((4, 2), seed=8)
    assert_close(T(sg, a).T @ T(sg, b), (a.T.astype(np.float64) @ b).astype(np.float32))


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_grad_vs_torch(sg, sa, sb):
    torch = need_torch()
    a, b = data(sa, seed=9), data(sb, seed=10)
    check_grads(sg, lambda x, y: x @ y, torch.matmul, a, b)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 2)), ((3,), (3, 2)), ((2, 3), (3,)), ((3,), (3,)),
                                   ((2, 1, 1, 2), (3, 2, 1))])
@pytest.mark.capability("float64")
def test_matmul_gradcheck(sg, sa, sb):
    gradcheck(sg, lambda x, y: x @ y, data(sa, "float64", seed=11), data(sb, "float64", seed=12))


def test_matmul_grad_one_side(sg):
    torch = need_torch()
    a, b = data((2, 3), seed=13), data((3, 2), seed=14)
    x = T(sg, a, requires_grad=True)
    w = T(sg, b)
    g = np.random.default_rng(0).standard_normal((2, 2)).astype(np.float32)
    (x @ w).backward(T(sg, g))
    t = torch.tensor(a, requires_grad=True)
    (t @ torch.tensor(b)).backward(torch.tensor(g))
    assert_close(x.grad, t.grad, rtol=1e-5, atol=1e-6)
    assert w.grad is None


def test_matmul_same_tensor_twice(sg):
    a = data((3, 3), seed=15)
    check_grads(sg, lambda x: x @ x, lambda t: t @ t, a)
