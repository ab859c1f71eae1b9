"""cumsum, cumprod, cummax, cummin, logcumsumexp (and cumsum_) against PyTorch: values,
indices, result dtypes (integers accumulate in int64, ``dtype=``), gradients (cumprod
through zeros), NaN and inf, empty and size-1 dims, negative dims, transposed input."""
import numpy as np
import pytest

from .helpers_core import INTS, T, check_grads, data, gradcheck
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch

NAN, INF = float("nan"), float("inf")
SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


def _edgy(dtype):
    if dtype in INTS:  # the narrow ones wrap the large values (and uint8 the negative ones)
        return np.array([[3, -1, 1, 2, 0, 7, 3, -9], [5, 5, 5, 5, 0, 0, -1, 2],
                         [2**20, -2**20, 4, 4, 1, 0, 0, 1]]).astype(dtype)
    if dtype == "bool":
        return np.array([[1, 0, 1, 1, 0, 0, 1, 0], [0] * 8, [1] * 8], dtype=bool)
    return np.array([[3.0, 1.0, 1.0, -0.0, 0.0, 2.0, NAN, 4.0], [5, 4, 4, 1, 9, 9, -1e3, 1e3],
                     [-INF, 0.5, INF, -0.5, 0.5, NAN, 2.0, -1.0]], dtype=dtype)


def _run(mod, op, x, dim, **kw):
    return getattr(mod, op)(x, dim, **kw)


def _compare(ours, theirs, dtype):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == 2
        assert_close(ours[0], theirs[0], rtol=0, atol=0)
        assert_close(ours[1], theirs[1], rtol=0, atol=0)
    else:
        rtol = {"float32": 1e-6, "float64": 1e-13}.get(dtype, 0)
        assert_close(ours, theirs, rtol=rtol, atol=0)


@pytest.mark.parametrize("op", SCANS)
@pytest.mark.parametrize("dtype", ["float32", "float64", *INTS, "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_scan_forward(sg, op, dtype, dim):
    torch = need_torch()
    a = _edgy(dtype)
    if op == "logcumsumexp" and dtype not in ("float32", "float64"):
        with pytest.raises(TypeError, match=f"logcumsumexp: .*{dtype}"):
            _run(sg, op, T(sg, a), dim)
        return
    theirs = _run(torch, op, torch.tensor(a), dim)
    _compare(_run(sg, op, T(sg, a), dim), theirs, dtype)
    _compare(getattr(T(sg, a), op)(dim=dim), theirs, dtype)  # the method


@pytest.mark.parametrize("op", SCANS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scan_non_contiguous(sg, op, dim, dtype):
    torch = need_torch()
    a = np.round(data((4, 9, 3), "float64", seed=1, low=-1.5, high=1.5), 1).astype(dtype)
    theirs = _run(torch, op, torch.tensor(a).permute(2, 0, 1), dim)
    ours = _run(sg, op, T(sg, a).permute(2, 0, 1), dim)
    if dtype == "float32" and not isinstance(theirs, tuple):  # a partial sum may cancel to near 0
        assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
    else:
        _compare(ours, theirs, dtype)


@pytest.mark.parametrize("op", SCANS)
@pytest.mark.parametrize("shape,dim", [((0,), 0), ((3, 0), 1), ((3, 0), 0), ((1, 4), 0), ((4, 1), 1),
                                       ((), 0), ((), -1)])
def test_scan_empty_size_one_and_zero_dim(sg, op, shape, dim):
    torch = need_torch()
    a = data(shape, "float32", seed=2)
    _compare(_run(sg, op, T(sg, a), dim), _run(torch, op, torch.tensor(a), dim), "float32")


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("src,dst", [("int32", "float32"), ("float32", "float64"), ("int64", "int32"),
                                     ("bool", "int32"), ("float64", "float32")])
def test_scan_dtype_argument(sg, op, src, dst):
    torch = need_torch()
    a = _edgy(src)[:, :5]
    theirs = getattr(torch, op)(torch.tensor(a), 1, dtype=getattr(torch, dst))
    ours = getattr(sg, op)(T(sg, a), 1, dtype=getattr(sg, dst))
    _compare(ours, theirs, dst)


def test_cumsum_accumulates_in_double_and_int_wraps(sg):
    torch = need_torch()
    a = np.array([1e8, 1.0, 1.0, 1.0, -1e8, 1.0], dtype=np.float32)
    _compare(sg.cumsum(T(sg, a), 0), torch.cumsum(torch.tensor(a), 0), "float32")
    b = np.array([2**62, 2**62, 2**62, 5], dtype=np.int64)
    _compare(sg.cumsum(T(sg, b), 0), torch.cumsum(torch.tensor(b), 0), "int64")
    _compare(sg.cumprod(T(sg, b), 0), torch.cumprod(torch.tensor(b), 0), "int64")


@pytest.mark.parametrize("dtype", ["float32", "float64", *INTS])
def test_cumsum_inplace(sg, dtype):
    torch = need_torch()
    a = _edgy(dtype)
    x, t = T(sg, a), torch.tensor(a)
    assert x.cumsum_(1) is x
    t.cumsum_(1)
    _compare(x, t, dtype)


@pytest.mark.capability("views")
@pytest.mark.capability("float64")
def test_cumsum_inplace_through_view_under_autograd(sg):
    torch = need_torch()
    b = data((3, 4), "float64", seed=3)
    w, tw = T(sg, b, requires_grad=True), torch.tensor(b, requires_grad=True)
    y, ty = w * 2, tw * 2
    y.t().cumsum_(0)
    ty.t().cumsum_(0)
    g = data((3, 4), "float64", seed=4)
    y.backward(T(sg, g))
    ty.backward(torch.tensor(g))
    _compare(y, ty, "float64")
    assert_close(w.grad, tw.grad)


@pytest.mark.parametrize("op", SCANS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, -1])
def test_scan_grad(sg, op, dtype, dim):
    need_torch()
    a = data((4, 6), dtype, seed=5, low=-1.5, high=1.5)
    pick = (lambda out: out[0]) if op in ("cummax", "cummin") else (lambda out: out)
    check_grads(sg, lambda x: pick(getattr(x, op)(dim)), lambda x: pick(getattr(x, op)(dim)), a)
    check_grads(sg, lambda x: pick(getattr(x.t(), op)(dim)), lambda x: pick(getattr(x.t(), op)(dim)), a)


@pytest.mark.capability("float64")
def test_cumprod_grad_through_zeros(sg):
    need_torch()
    # rows with no zero, one zero (first, middle, last), two zeros, all zeros
    a = np.array([[0.5, 2.0, -1.5, 3.0, 0.7], [0.0, 2.0, -1.5, 3.0, 0.7], [0.5, 2.0, 0.0, 3.0, 0.7],
                  [0.5, 2.0, -1.5, 3.0, 0.0], [0.5, 0.0, -1.5, 0.0, 0.7], [0.0, 0.0, 0.0, 0.0, 0.0]])
    check_grads(sg, lambda x: x.cumprod(1), lambda x: x.cumprod(1), a)
    check_grads(sg, lambda x: x.t().cumprod(0), lambda x: x.t().cumprod(0), a)
    check_grads(sg, lambda x: x.cumprod(1), lambda x: x.cumprod(1), a.astype(np.float32))


@pytest.mark.capability("float64")
def test_cummax_cummin_grad_with_ties(sg):
    need_torch()
    a = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 5.0], [2.0, 2.0, 2.0, 1.0, 1.0, 0.0]])
    for op in ("cummax", "cummin"):
        check_grads(sg, lambda x: getattr(x, op)(1).values, lambda x: getattr(x, op)(1).values, a)


@pytest.mark.capability("float64")
def test_logcumsumexp_is_stable(sg):
    torch = need_torch()
    a = np.array([[-1000.0, 0.0, 1000.0, 1000.0, -INF], [-INF, -INF, 3.0, -INF, 700.0],
                  [1e-3, -800.0, 800.0, -800.0, 0.0]])
    _compare(sg.logcumsumexp(T(sg, a), 1), torch.logcumsumexp(torch.tensor(a), 1), "float64")
    b = np.array([[-1000.0, 0.0, 1000.0, 999.0], [1e-3, -800.0, 800.0, 0.0]])
    check_grads(sg, lambda x: x.logcumsumexp(1), lambda x: x.logcumsumexp(1), b)


@pytest.mark.capability("float64")
def test_scan_gradcheck(sg):
    # finite differences in float64, cumprod across a zero included
    a = np.array([[0.5, 0.0, -1.5, 2.0], [1.2, -0.7, 0.3, 0.9]])
    for op in SCANS:
        pick = (lambda out: out[0]) if op in ("cummax", "cummin") else (lambda out: out)
        gradcheck(sg, lambda x: pick(getattr(x, op)(1)), a)


def test_scan_errors(sg):
    x = T(sg, data((3, 4), "float32"))
    for op in SCANS:
        with pytest.raises(IndexError, match=f"{op}: dimension out of range"):
            getattr(x, op)(2)
        with pytest.raises(TypeError, match=f"{op}: input must be a Tensor"):
            getattr(sg, op)([1.0, 2.0], 0)
    with pytest.raises(TypeError, match=r"logcumsumexp: .*int64.*\[3, 4\]"):
        sg.logcumsumexp(T(sg, data((3, 4), "int64")), 0)
