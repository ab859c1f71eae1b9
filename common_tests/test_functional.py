"""softmax, log_softmax and the losses: forward against NumPy, gradients against
PyTorch and finite differences."""
import numpy as np
import pytest

from .helpers_core import T, assert_close, check_grads, data, functional, gradcheck, need_torch


def np_log_softmax(a, dim):
    w = a.astype(np.float64)
    m = w.max(axis=dim, keepdims=True)
    return (w - m - np.log(np.exp(w - m).sum(axis=dim, keepdims=True))).astype(a.dtype)


def np_softmax(a, dim):
    return np.exp(np_log_softmax(a.astype(np.float64), dim)).astype(a.dtype)


def np_nll(logp, target, reduction):
    picked = -logp[np.arange(len(target)), target].astype(np.float64)
    return _np_reduce(picked, reduction).astype(logp.dtype)


def _np_reduce(v, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": np.asarray}[reduction](v)


def _targets(n, c, seed=0):
    return np.random.default_rng(seed).integers(0, c, size=n).astype(np.int64)


@pytest.mark.parametrize("name,ref", [("softmax", np_softmax), ("log_softmax", np_log_softmax)])
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1),
                                       ((2, 3, 4), -1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_forward(sg, name, ref, shape, dim, dtype):
    a = data(shape, dtype, seed=1, low=-3, high=3)
    F = functional(sg)
    assert_close(getattr(F, name)(T(sg, a), dim), ref(a, dim))


@pytest.mark.parametrize("name,ref", [("softmax", np_softmax), ("log_softmax", np_log_softmax)])
def test_softmax_tensor_method(sg, name, ref):
    # torch.Tensor.softmax(dim) / Tensor.log_softmax(dim)
    a = data((3, 4), seed=1, low=-3, high=3)
    assert_close(getattr(T(sg, a), name)(1), ref(a, 1))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2)])
def test_softmax_grad_vs_torch(sg, name, shape, dim):
    torch = need_torch()
    a = data(shape, seed=2, low=-3, high=3)
    check_grads(sg, lambda x: getattr(functional(sg), name)(x, dim),
                lambda t: getattr(torch.nn.functional, name)(t, dim), a)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.capability("float64")
def test_softmax_gradcheck(sg, name):
    gradcheck(sg, lambda x: getattr(functional(sg), name)(x, 1), data((2, 3), "float64", seed=3))


@pytest.mark.parametrize("name,ref", [("softmax", np_softmax), ("log_softmax", np_log_softmax)])
def test_softmax_large_logits_are_stable(sg, name, ref):
    a = np.array([[1000.0, 999.0, -1000.0], [-5e3, -5e3 + 1, -5e3 + 2]], np.float32)
    out = getattr(functional(sg), name)(T(sg, a), 1)
    assert np.all(np.isfinite(out.numpy()))
    assert_close(out, ref(a, 1))


def test_softmax_rows_sum_to_one(sg):
    a = data((4, 6), seed=4, low=-5, high=5)
    s = functional(sg).softmax(T(sg, a), -1).sum(-1)
    assert_close(s, np.ones(4, np.float32), atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("n,c", [(4, 3), (1, 5), (6, 2)])
def test_cross_entropy_forward(sg, reduction, n, c):
    a = data((n, c), seed=5, low=-3, high=3)
    t = _targets(n, c, seed=n)
    out = functional(sg).cross_entropy(T(sg, a), T(sg, t), reduction=reduction)
    assert_close(out, np_nll(np_log_softmax(a, 1), t, reduction), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_grad_vs_torch(sg, reduction):
    torch = need_torch()
    a, t = data((5, 4), seed=6), _targets(5, 4, seed=6)
    check_grads(sg, lambda x: functional(sg).cross_entropy(x, T(sg, t), reduction=reduction),
                lambda x: torch.nn.functional.cross_entropy(x, torch.tensor(t), reduction=reduction), a)


@pytest.mark.capability("float64")
def test_cross_entropy_gradcheck(sg):
    t = _targets(3, 4, seed=7)
    gradcheck(sg, lambda x: functional(sg).cross_entropy(x, T(sg, t)), data((3, 4), "float64", seed=7))


@pytest.mark.parametrize("kwargs", [{"ignore_index": 1}, {"label_smoothing": 0.1}, {"weight": True},
                                    {"weight": True, "reduction": "sum"}, {"ignore_index": 2, "reduction": "none"}])
def test_cross_entropy_options_vs_torch(sg, kwargs):
    torch = need_torch()
    a, t = data((6, 3), seed=8), _targets(6, 3, seed=3)
    w = data((3,), seed=9, low=0.5, high=2)
    sk = {k: (T(sg, w) if k == "weight" else v) for k, v in kwargs.items()}
    tk = {k: (torch.tensor(w) if k == "weight" else v) for k, v in kwargs.items()}
    check_grads(sg, lambda x: functional(sg).cross_entropy(x, T(sg, t), **sk),
                lambda x: torch.nn.functional.cross_entropy(x, torch.tensor(t), **tk), a)


def test_cross_entropy_spatial_and_probability_targets(sg):
    torch = need_torch()
    F, TF = functional(sg), torch.nn.functional
    a = data((2, 3, 4), seed=10)
    t = np.random.default_rng(1).integers(0, 3, size=(2, 4)).astype(np.int64)
    check_grads(sg, lambda x: F.cross_entropy(x, T(sg, t)), lambda x: TF.cross_entropy(x, torch.tensor(t)), a)
    p = np_softmax(data((4, 3), seed=11), 1)
    b = data((4, 3), seed=12)
    check_grads(sg, lambda x: F.cross_entropy(x, T(sg, p)), lambda x: TF.cross_entropy(x, torch.tensor(p)), b)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(sg, reduction):
    torch = need_torch()
    logp = np_log_softmax(data((5, 4), seed=13), 1)
    t = _targets(5, 4, seed=13)
    out = functional(sg).nll_loss(T(sg, logp), T(sg, t), reduction=reduction)
    assert_close(out, np_nll(logp, t, reduction), rtol=1e-5, atol=1e-6)
    check_grads(sg, lambda x: functional(sg).nll_loss(x, T(sg, t), reduction=reduction),
                lambda x: torch.nn.functional.nll_loss(x, torch.tensor(t), reduction=reduction), logp)


def test_nll_loss_weighted_mean(sg):
    torch = need_torch()
    logp = np_log_softmax(data((6, 3), seed=14), 1)
    t, w = _targets(6, 3, seed=14), data((3,), seed=15, low=0.2, high=2)
    check_grads(sg, lambda x: functional(sg).nll_loss(x, T(sg, t), weight=T(sg, w)),
                lambda x: torch.nn.functional.nll_loss(x, torch.tensor(t), weight=torch.tensor(w)), logp)


def test_log_softmax_then_nll_equals_cross_entropy(sg):
    a, t = data((4, 5), seed=16), _targets(4, 5, seed=16)
    F = functional(sg)
    x = T(sg, a)
    assert_close(F.nll_loss(F.log_softmax(x, 1), T(sg, t)), F.cross_entropy(x, T(sg, t)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_mse_loss(sg, reduction, shape):
    torch = need_torch()
    a, b = data(shape, seed=17), data(shape, seed=18)
    out = functional(sg).mse_loss(T(sg, a), T(sg, b), reduction=reduction)
    assert_close(out, _np_reduce((a.astype(np.float64) - b) ** 2, reduction).astype(np.float32), rtol=1e-5)
    check_grads(sg, lambda x, y: functional(sg).mse_loss(x, y, reduction=reduction),
                lambda x, y: torch.nn.functional.mse_loss(x, y, reduction=reduction), a, b)


@pytest.mark.capability("float64")
def test_mse_loss_gradcheck(sg):
    gradcheck(sg, lambda x, y: functional(sg).mse_loss(x, y), data((2, 2), "float64", seed=19),
              data((2, 2), "float64", seed=20))


def np_bce_logits(x, y):
    w = x.astype(np.float64)
    return np.maximum(w, 0) - w * y + np.log1p(np.exp(-np.abs(w)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits(sg, reduction):
    torch = need_torch()
    x = data((3, 4), seed=21, low=-4, high=4)
    y = (data((3, 4), seed=22, low=0, high=1)).astype(np.float32)  # soft labels are allowed
    out = functional(sg).binary_cross_entropy_with_logits(T(sg, x), T(sg, y), reduction=reduction)
    assert_close(out, _np_reduce(np_bce_logits(x, y), reduction).astype(np.float32), rtol=1e-5, atol=1e-6)
    check_grads(sg, lambda a, b: functional(sg).binary_cross_entropy_with_logits(a, b, reduction=reduction),
                lambda a, b: torch.nn.functional.binary_cross_entropy_with_logits(a, b, reduction=reduction),
                x, y)


def test_bce_with_logits_extreme_logits(sg):
    torch = need_torch()
    x = np.array([-200.0, -30.0, 0.0, 30.0, 200.0], np.float32)
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0], np.float32)
    out = functional(sg).binary_cross_entropy_with_logits(T(sg, x), T(sg, y), reduction="none")
    assert np.all(np.isfinite(out.numpy()))
    assert_close(out, np_bce_logits(x, y).astype(np.float32))
    check_grads(sg, lambda a: functional(sg).binary_cross_entropy_with_logits(a, T(sg, y)),
                lambda a: torch.nn.functional.binary_cross_entropy_with_logits(a, torch.tensor(y)), x)


@pytest.mark.capability("float64")
def test_bce_with_logits_pos_weight_and_gradcheck(sg):
    torch = need_torch()
    x, y = data((2, 3), seed=23), (data((2, 3), seed=24) > 0).astype(np.float32)
    pw = data((3,), seed=25, low=0.5, high=3)
    check_grads(sg, lambda a: functional(sg).binary_cross_entropy_with_logits(a, T(sg, y), pos_weight=T(sg, pw)),
                lambda a: torch.nn.functional.binary_cross_entropy_with_logits(a, torch.tensor(y),
                                                                               pos_weight=torch.tensor(pw)), x)
    gradcheck(sg, lambda a, b: functional(sg).binary_cross_entropy_with_logits(a, b),
              data((3,), "float64", seed=26), data((3,), "float64", seed=27, low=0, high=1))


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4), (2, 3, 2, 3)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_probability_targets_any_dims_vs_torch(sg, shape, reduction, label_smoothing):
    # PyTorch averages over every position (N * d1 * ...), not over N alone
    torch = need_torch()
    F, TF = functional(sg), torch.nn.functional
    p = np_softmax(data(shape, seed=31), 1)
    a = data(shape, seed=32)
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    check_grads(sg, lambda x: F.cross_entropy(x, T(sg, p), **kw),
                lambda x: TF.cross_entropy(x, torch.tensor(p), **kw), a)
    w = data((3,), seed=33, low=0.2, high=2)
    check_grads(sg, lambda x: F.cross_entropy(x, T(sg, p), weight=T(sg, w), **kw),
                lambda x: TF.cross_entropy(x, torch.tensor(p), weight=torch.tensor(w), **kw), a)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_class_indices_2d_vs_torch(sg, reduction):
    # the fused kernel's case (stage 3) next to the composite's spatial one
    torch = need_torch()
    F, TF = functional(sg), torch.nn.functional
    t = np.array([2, 0, 1, 1, 0], np.int64)
    kw = dict(reduction=reduction, label_smoothing=0.1)
    check_grads(sg, lambda x: F.cross_entropy(x, T(sg, t), **kw),
                lambda x: TF.cross_entropy(x, torch.tensor(t), **kw), data((5, 3), seed=34))
