"""Activations, regression/divergence losses and distances against PyTorch: values and
gradients (input, target, weight) in float32 and float64, on inputs that hold the edge
values: 0, the kinks of each function, negatives and large magnitudes."""
import math

import numpy as np
import pytest

from .helpers_core import T, upstream
from .helpers_nn import rand, run_both, same_layer, tol
from .oracle import assert_close, need_torch
from .test_nn_layers import _converted

pytestmark = pytest.mark.needs_torch

# every kink of the functions below (0, +-0.5, +-1, +-3, 6, 0.25) plus large magnitudes
EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 6.0, -6.0, 0.25, 2.0, -2.0, 20.0, -20.0,
         50.0, -50.0, 1e4, -1e4, 1e-7, -1e-7, 88.0, -100.0, 7.5]


def _edge_input(dtype, n_random=16):
    x = np.concatenate([np.array(EDGES), rand((n_random,), "float64", seed=3, low=-5, high=5)])
    return x.astype(dtype).reshape(4, -1)


def _slope_tol(name, dtype):
    """PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32 even in float64;
    the stages use the exact slope, so float64 gradients agree to float32 precision there."""
    return tol(dtype, rtol=1e-7) if name == "hardsigmoid" and dtype == "float64" else tol(dtype)


def _compare(sg, ours, theirs, inputs, dtype, grads=None, grad_tol=None):
    """Call ``ours``/``theirs`` on the arrays ``inputs`` (those flagged in ``grads`` require
    grad), compare the output and every input's gradient under a random upstream."""
    torch = need_torch()
    grads = grads or [True] * len(inputs)
    xs = [T(sg, a, requires_grad=g) for a, g in zip(inputs, grads)]
    ts = [torch.tensor(a, requires_grad=g) for a, g in zip(inputs, grads)]
    out, tout = ours(*xs), theirs(*ts)
    r, a = tol(dtype)
    assert_close(out, tout, rtol=r, atol=a)
    g = upstream(tuple(tout.shape), dtype)
    out.backward(T(sg, g))
    tout.backward(torch.tensor(g))
    r, a = grad_tol or (r, a)
    for k, (x, t) in enumerate(zip(xs, ts)):
        if grads[k]:
            assert x.grad is not None, f"input {k}: no gradient"
            assert_close(x.grad, t.grad, rtol=r, atol=a)


# ------------------------------------------------------------------ activations

ACTIVATIONS = [
    ("elu", lambda F, x: F.elu(x)),
    ("elu_alpha", lambda F, x: F.elu(x, alpha=0.5)),
    ("selu", lambda F, x: F.selu(x)),
    ("celu", lambda F, x: F.celu(x)),
    ("celu_alpha", lambda F, x: F.celu(x, alpha=2.0)),
    ("mish", lambda F, x: F.mish(x)),
    ("hardswish", lambda F, x: F.hardswish(x)),
    ("hardsigmoid", lambda F, x: F.hardsigmoid(x)),
    ("hardtanh", lambda F, x: F.hardtanh(x)),
    ("hardtanh_bounds", lambda F, x: F.hardtanh(x, min_val=-3.0, max_val=0.5)),
    ("relu6", lambda F, x: F.relu6(x)),
    ("softsign", lambda F, x: F.softsign(x)),
    ("tanhshrink", lambda F, x: F.tanhshrink(x)),
    ("threshold", lambda F, x: F.threshold(x, 0.5, -2.0)),
    ("threshold_zero", lambda F, x: F.threshold(x, 0.0, 20.0)),
    ("logsigmoid", lambda F, x: F.logsigmoid(x)),
    ("hardshrink", lambda F, x: F.hardshrink(x)),
    ("hardshrink_lambd", lambda F, x: F.hardshrink(x, 3.0)),
    ("softshrink", lambda F, x: F.softshrink(x)),
    ("softshrink_lambd", lambda F, x: F.softshrink(x, 1.0)),
    ("glu_last", lambda F, x: F.glu(x)),
    ("glu_dim0", lambda F, x: F.glu(x, 0)),
    ("softmin", lambda F, x: F.softmin(x, dim=1)),
    ("softmin_dim0", lambda F, x: F.softmin(x, 0)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,call", ACTIVATIONS, ids=[c[0] for c in ACTIVATIONS])
def test_activation_matches_torch(sg, name, call, dtype):
    torch = need_torch()
    x = _edge_input(dtype)
    if name.startswith("softmin"):  # large entries would leave every other probability 0
        x = np.clip(x, -30, 30)
    _compare(sg, lambda a: call(sg.nn.functional, a), lambda a: call(torch.nn.functional, a), [x], dtype,
             grad_tol=_slope_tol(name, dtype))


def test_activation_nan_passes_through(sg):
    """A NaN input gives NaN where PyTorch does (and a value where PyTorch does)."""
    torch = need_torch()
    x = np.array([[np.nan, 1.0], [-1.0, 0.0]], dtype=np.float32)
    for name, call in ACTIVATIONS:
        out = call(sg.nn.functional, T(sg, x))
        assert_close(out, call(torch.nn.functional, torch.tensor(x)))


INPLACE = [
    ("elu", {"alpha": 0.7}), ("selu", {}), ("celu", {"alpha": 1.5}), ("hardswish", {}),
    ("hardsigmoid", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {}),
    ("threshold", {"threshold": 0.25, "value": 3.0}), ("mish", {}),
]


@pytest.mark.parametrize("fn,kw", INPLACE, ids=[c[0] for c in INPLACE])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inplace_activation_matches_torch(sg, fn, kw, dtype):
    """``inplace=True`` on an intermediate: the intermediate holds the result, and the
    values and gradients are PyTorch's."""
    torch = need_torch()
    x = _edge_input(dtype)
    xs = T(sg, x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    h, th = xs * 2.0, tx * 2.0
    out = getattr(sg.nn.functional, fn)(h, inplace=True, **kw)
    tout = getattr(torch.nn.functional, fn)(th, inplace=True, **kw)
    assert out is h
    assert_close(h, th, *tol(dtype))
    g = upstream(tuple(x.shape), dtype)
    out.backward(T(sg, g))
    tout.backward(torch.from_numpy(g))
    r, a = _slope_tol(fn, dtype)
    assert_close(xs.grad, tx.grad, rtol=r, atol=a)


def test_inplace_activation_modules(sg):
    x = sg.tensor([-4.0, -1.0, 0.5, 7.0])
    for layer in (sg.nn.ELU(inplace=True), sg.nn.Hardtanh(inplace=True), sg.nn.ReLU6(inplace=True)):
        y = x.clone()
        assert layer(y) is y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("num", [1, 3])
def test_prelu_matches_torch(sg, num, dtype):
    """The slope gets its gradient, per channel or shared; the functional form too."""
    torch = need_torch()
    x = _edge_input(dtype)[:, :9].reshape(2, 3, 3, 2)
    make = (lambda nn: nn.PReLU(num)) if dtype == "float32" else (
        lambda nn: nn.PReLU(num).double() if nn is torch.nn else nn.PReLU(num, dtype=sg.float64))
    ours, theirs = same_layer(sg, make)
    run_both(sg, ours, theirs, [x])
    w = rand((num,), dtype, seed=5)
    _compare(sg, sg.nn.functional.prelu, torch.nn.functional.prelu, [x, w], dtype)
    _compare(sg, sg.nn.functional.prelu, torch.nn.functional.prelu, [x[0, 0, 0], w[:1]], dtype)


MODULES = [
    ("elu", lambda nn: nn.ELU(alpha=0.3)),
    ("selu", lambda nn: nn.SELU()),
    ("celu", lambda nn: nn.CELU(alpha=0.5)),
    ("mish", lambda nn: nn.Mish()),
    ("hardswish", lambda nn: nn.Hardswish()),
    ("hardsigmoid", lambda nn: nn.Hardsigmoid()),
    ("hardtanh", lambda nn: nn.Hardtanh(-2.0, 3.0)),
    ("relu6", lambda nn: nn.ReLU6()),
    ("softsign", lambda nn: nn.Softsign()),
    ("glu", lambda nn: nn.GLU(dim=1)),
    ("tanhshrink", lambda nn: nn.Tanhshrink()),
    ("threshold", lambda nn: nn.Threshold(0.1, 20.0)),
    ("softmin", lambda nn: nn.Softmin(dim=-1)),
    ("logsigmoid", lambda nn: nn.LogSigmoid()),
    ("hardshrink", lambda nn: nn.Hardshrink(0.3)),
    ("softshrink", lambda nn: nn.Softshrink()),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,make", MODULES, ids=[c[0] for c in MODULES])
def test_activation_module_matches_torch(sg, name, make, dtype):
    ours, theirs = same_layer(sg, _converted(sg, make, dtype))
    run_both(sg, ours, theirs, [rand((3, 4, 2), dtype, low=-8, high=8)], rtol=_slope_tol(name, dtype)[0])


def test_reprs_match_torch(sg):
    torch = need_torch()

    def model(nn):
        return nn.Sequential(
            nn.ELU(), nn.ELU(0.5, inplace=True), nn.SELU(), nn.SELU(True), nn.CELU(2.0), nn.Mish(True),
            nn.Hardswish(), nn.Hardswish(True), nn.Hardsigmoid(inplace=True), nn.Hardtanh(),
            nn.Hardtanh(-2, 3, True),
            nn.ReLU6(), nn.ReLU6(True), nn.Softsign(), nn.GLU(), nn.GLU(0), nn.Tanhshrink(),
            nn.Threshold(0.1, 20), nn.Threshold(0.1, 20.0, True), nn.Softmin(), nn.Softmin(1),
            nn.PReLU(), nn.PReLU(3, 0.1), nn.LogSigmoid(), nn.Hardshrink(), nn.Softshrink(0.3),
            nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(delta=2.0), nn.KLDivLoss(reduction="batchmean"),
            nn.CosineSimilarity(0, 1e-3), nn.PairwiseDistance(1, 1e-3, True))
    assert repr(model(sg.nn)) == repr(model(torch.nn))
    assert sg.nn.PReLU(3, 0.1).weight.tolist() == pytest.approx([0.1] * 3)


def test_softmin_without_dim_follows_torch_rule(sg):
    torch = need_torch()
    x = rand((2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = sg.nn.Softmin()(T(sg, x))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        ref = torch.nn.functional.softmin(torch.from_numpy(x))
    assert_close(out, ref)


def test_bad_activation_arguments(sg):
    F = sg.nn.functional
    x = sg.ones(2, 3)
    with pytest.raises(ValueError, match="glu"):
        F.glu(x, dim=1)
    with pytest.raises(ValueError, match="min_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(ValueError, match="prelu"):
        F.prelu(x, sg.ones(2))
    with pytest.raises(ValueError, match="softshrink"):
        F.softshrink(x, -1.0)


# ------------------------------------------------------------------ losses

def _loss_pair(dtype):
    """input and target whose differences hit 0, +-0.5, +-1, +-2 (the kinks for beta 0.5,
    1 and delta 1, 2) exactly, and large magnitudes."""
    diffs = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e3, -1e3, 1e-6, 0.25, -3.0])
    target = rand((12,), "float64", seed=11)
    diffs = np.concatenate([diffs, rand((12,), "float64", seed=12, low=-3, high=3)])
    target = np.concatenate([target, rand((12,), "float64", seed=13)])
    # integers plus exact binary fractions: input - target gives the difference exactly
    target = np.round(target * 8) / 8
    return (target + diffs).astype(dtype).reshape(4, 6), target.astype(dtype).reshape(4, 6)


LOSSES = [
    ("smooth_l1", lambda F, a, b, r: F.smooth_l1_loss(a, b, reduction=r)),
    ("smooth_l1_beta_half", lambda F, a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.5)),
    ("smooth_l1_beta_0", lambda F, a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.0)),
    ("huber", lambda F, a, b, r: F.huber_loss(a, b, reduction=r)),
    ("huber_delta_2", lambda F, a, b, r: F.huber_loss(a, b, reduction=r, delta=2.0)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,call", LOSSES, ids=[c[0] for c in LOSSES])
def test_regression_loss_matches_torch(sg, name, call, reduction, dtype):
    torch = need_torch()
    x, y = _loss_pair(dtype)
    _compare(sg, lambda a, b: call(sg.nn.functional, a, b, reduction),
             lambda a, b: call(torch.nn.functional, a, b, reduction), [x, y], dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.capability("float64")
def test_huber_weight_matches_torch(sg, reduction):
    torch = need_torch()
    x, y = _loss_pair("float64")
    w = rand((4, 6), "float64", seed=2, low=0.0, high=2.0)
    _compare(sg, lambda a, b, c: sg.nn.functional.huber_loss(a, b, reduction, 1.5, c),
             lambda a, b, c: torch.nn.functional.huber_loss(a, b, reduction, 1.5, c), [x, y, w], "float64")


def _kl_pair(dtype, log_target):
    logp = rand((4, 5), "float64", seed=21)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    q = np.abs(rand((4, 5), "float64", seed=22))
    q[0, 1] = q[2, 3] = 0.0  # zero probabilities: 0 * log 0 counts as 0
    q = q / q.sum(1, keepdims=True)
    tgt = np.log(np.where(q > 0, q, 1e-3)) if log_target else q
    return logp.astype(dtype), tgt.astype(dtype)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
def test_kl_div_matches_torch(sg, reduction, log_target, dtype):
    torch = need_torch()
    x, y = _kl_pair(dtype, log_target)
    # the target's gradient at a zero probability is NaN in PyTorch as here (0 / 0); both
    # are compared, NaN against NaN
    _compare(sg, lambda a, b: sg.nn.functional.kl_div(a, b, reduction=reduction, log_target=log_target),
             lambda a, b: torch.nn.functional.kl_div(a, b, reduction=reduction, log_target=log_target),
             [x, y], dtype)


def test_kl_div_mean_warns_as_torch(sg):
    x, y = _kl_pair("float32", False)
    with pytest.warns(UserWarning, match="batchmean"):
        sg.nn.functional.kl_div(T(sg, x), T(sg, y))


LOSS_MODULES = [
    ("smooth_l1", lambda nn: nn.SmoothL1Loss()),
    ("smooth_l1_sum_beta", lambda nn: nn.SmoothL1Loss(reduction="sum", beta=0.5)),
    ("smooth_l1_beta0_none", lambda nn: nn.SmoothL1Loss(reduction="none", beta=0.0)),
    ("huber", lambda nn: nn.HuberLoss()),
    ("huber_delta", lambda nn: nn.HuberLoss(reduction="sum", delta=0.5)),
    ("kl_batchmean", lambda nn: nn.KLDivLoss(reduction="batchmean")),
    ("kl_sum_log_target", lambda nn: nn.KLDivLoss(reduction="sum", log_target=True)),
    ("kl_none", lambda nn: nn.KLDivLoss(reduction="none")),
]


@pytest.mark.parametrize("name,make", LOSS_MODULES, ids=[c[0] for c in LOSS_MODULES])
def test_loss_module_matches_torch(sg, name, make):
    ours, theirs = same_layer(sg, make)
    if name.startswith("kl"):
        x, y = _kl_pair("float32", "log_target" in name)
    else:
        x, y = _loss_pair("float32")
    run_both(sg, ours, theirs, [x, y])


@pytest.mark.capability("float64")
def test_legacy_size_average_reduce(sg):
    torch = need_torch()
    x, y = _loss_pair("float64")
    for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}):
        with pytest.warns(UserWarning):
            out = sg.nn.functional.smooth_l1_loss(T(sg, x), T(sg, y), **kw)
        with pytest.warns(UserWarning):
            ref = torch.nn.functional.smooth_l1_loss(torch.from_numpy(x), torch.from_numpy(y), **kw)
        assert_close(out, ref)


def test_bad_loss_arguments(sg):
    F = sg.nn.functional
    x = sg.ones(2, 3)
    with pytest.raises(ValueError, match="beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="delta"):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(ValueError, match="reduction"):
        F.kl_div(x, x, reduction="avg")
    with pytest.raises(ValueError, match="reduction"):
        sg.nn.HuberLoss(reduction="batchmean")


# ------------------------------------------------------------------ distances

def _with_zero_rows(shape, dtype, seed):
    x = rand(shape, "float64", seed=seed)
    x[0] = 0.0  # a zero vector: the norm's gradient is 0 there, as in PyTorch
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 1), (3.0, 0), (math.inf, -1), (0.5, 1), (2.0, 2)])
def test_normalize_matches_torch(sg, p, dim, dtype):
    torch = need_torch()
    x = _with_zero_rows((3, 4, 5), dtype, 31)
    _compare(sg, lambda a: sg.nn.functional.normalize(a, p=p, dim=dim),
             lambda a: torch.nn.functional.normalize(a, p=p, dim=dim), [x], dtype)


@pytest.mark.capability("float64")
def test_normalize_eps_and_out(sg):
    torch = need_torch()
    x = rand((2, 3), "float64") * 1e-3
    _compare(sg, lambda a: sg.nn.functional.normalize(a, eps=0.5),
             lambda a: torch.nn.functional.normalize(a, eps=0.5), [x], "float64")
    out = sg.zeros(2, 3, dtype=sg.float64)
    res = sg.nn.functional.normalize(T(sg, x), out=out)
    assert res is out
    assert_close(out, torch.nn.functional.normalize(torch.from_numpy(x)))


COSINE = [((4, 5), (4, 5), 1, 1e-8), ((4, 5), (1, 5), 1, 1e-8), ((3, 1, 5), (4, 5), -1, 1e-8),
          ((4, 1), (4, 3), 1, 1e-8), ((4, 5), (4, 5), 0, 1e-8), ((4, 5), (4, 5), 1, 0.5),
          ((5,), (5,), 0, 1e-8)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("s1,s2,dim,eps", COSINE, ids=[f"case{i}" for i in range(len(COSINE))])
def test_cosine_similarity_matches_torch(sg, s1, s2, dim, eps, dtype):
    torch = need_torch()
    a = _with_zero_rows(s1, dtype, 41) if len(s1) > 1 else rand(s1, dtype, seed=41)
    b = rand(s2, dtype, seed=42)
    _compare(sg, lambda u, v: sg.nn.functional.cosine_similarity(u, v, dim, eps),
             lambda u, v: torch.nn.functional.cosine_similarity(u, v, dim, eps), [a, b], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf, 0.5])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_matches_torch(sg, p, keepdim, dtype):
    torch = need_torch()
    a = rand((4, 6), dtype, seed=51)
    b = rand((4, 6), dtype, seed=52)
    b[1] = a[1]  # equal rows: the difference is eps only
    for eps, y in ((1e-6, b), (0.0, b), (1e-6, b[:1])):  # eps 0: a zero difference row
        _compare(sg, lambda u, v: sg.nn.functional.pairwise_distance(u, v, p, eps, keepdim),
                 lambda u, v: torch.nn.functional.pairwise_distance(u, v, p, eps, keepdim), [a, y], dtype)


DISTANCES = [lambda nn: nn.CosineSimilarity(), lambda nn: nn.CosineSimilarity(0, 1e-3),
             lambda nn: nn.PairwiseDistance(), lambda nn: nn.PairwiseDistance(1.0, 0.0, True)]


@pytest.mark.parametrize("make", DISTANCES, ids=["cos", "cos_dim0", "pdist", "pdist_l1_keepdim"])
def test_distance_module_matches_torch(sg, make):
    ours, theirs = same_layer(sg, make)
    run_both(sg, ours, theirs, [rand((4, 5), seed=1), rand((4, 5), seed=2)])
