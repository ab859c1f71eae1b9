"""Learning-rate schedulers against PyTorch's: the rate of every group after every step.

The schedulers compute in Python floats with PyTorch's recursive formulas, so the rates
are expected to be identical, not merely close."""
import math

import numpy as np
import pytest

from .helpers_optim import stage_tensor
from .oracle import need_torch

STEPS = 40


def _optimizers(sg, torch, groups=2):
    """An SGD optimizer in each framework with ``groups`` parameter groups (lr 0.1, 0.05, ...)."""
    spec = [{"lr": 0.1 / (i + 1), "momentum": 0.9} for i in range(groups)]
    sp = [stage_tensor(sg, np.ones(2, np.float32), requires_grad=True) for _ in spec]
    tp = [torch.ones(2, requires_grad=True) for _ in spec]
    opt = sg.optim.SGD([dict(params=[p], **g) for p, g in zip(sp, spec)], lr=0.1)
    topt = torch.optim.SGD([dict(params=[p], **g) for p, g in zip(tp, spec)], lr=0.1)
    return opt, topt


def _make(lib, opt, kind):
    S = lib.optim.lr_scheduler
    if kind == "StepLR":
        return S.StepLR(opt, step_size=3, gamma=0.5)
    if kind == "ExponentialLR":
        return S.ExponentialLR(opt, gamma=0.9)
    if kind == "CosineAnnealingLR":  # 40 steps pass T_max twice: both recursive branches run
        return S.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    if kind == "LambdaLR":
        return S.LambdaLR(opt, lr_lambda=lambda e: 0.95 ** e)
    if kind == "LambdaLR-per-group":
        return S.LambdaLR(opt, lr_lambda=[lambda e: 1 / (1 + e), lambda e: (e % 4 + 1) / 4])
    if kind == "LinearLR-warmup":
        return S.LinearLR(opt, start_factor=0.25, total_iters=8)
    if kind == "LinearLR-decay":
        return S.LinearLR(opt, start_factor=1.0, end_factor=0.1, total_iters=15)
    if kind == "SequentialLR-warmup-cosine":
        warm = S.LinearLR(opt, start_factor=0.1, total_iters=5)
        cos = S.CosineAnnealingLR(opt, T_max=25, eta_min=1e-4)
        return S.SequentialLR(opt, schedulers=[warm, cos], milestones=[5])
    raise ValueError(kind)


KINDS = ["StepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "LambdaLR-per-group", "LinearLR-warmup",
         "LinearLR-decay", "SequentialLR-warmup-cosine"]


def _check(opt, topt, sched, tsched, step):
    lrs = [g["lr"] for g in opt.param_groups]
    tlrs = [g["lr"] for g in topt.param_groups]
    assert lrs == tlrs, f"step {step}: lr {lrs} != PyTorch's {tlrs}"
    assert sched.get_last_lr() == tsched.get_last_lr(), f"step {step}: get_last_lr differs"


@pytest.mark.needs_torch
@pytest.mark.parametrize("kind", KINDS)
def test_scheduler_matches_torch(sg, kind):
    torch = need_torch()
    opt, topt = _optimizers(sg, torch)
    sched, tsched = _make(sg, opt, kind), _make(torch, topt, kind)
    assert getattr(sched, "base_lrs", None) == getattr(tsched, "base_lrs", None)
    _check(opt, topt, sched, tsched, 0)
    for step in range(1, STEPS + 1):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        assert sched.last_epoch == tsched.last_epoch
        _check(opt, topt, sched, tsched, step)


@pytest.mark.needs_torch
@pytest.mark.parametrize("kind", ["StepLR", "CosineAnnealingLR", "LambdaLR", "SequentialLR-warmup-cosine"])
def test_scheduler_state_dict_resumes(sg, kind):
    torch = need_torch()
    opt, topt = _optimizers(sg, torch)
    sched, tsched = _make(sg, opt, kind), _make(torch, topt, kind)
    for _ in range(13):
        opt.step(), topt.step(), sched.step(), tsched.step()
    # a new optimizer and scheduler, restored the way PyTorch documents: scheduler first
    opt2, _ = _optimizers(sg, torch)
    sched2 = _make(sg, opt2, kind)
    sched2.load_state_dict(sched.state_dict())
    opt2.load_state_dict(opt.state_dict())
    for step in range(14, STEPS + 1):
        opt2.step(), topt.step(), sched2.step(), tsched.step()
        _check(opt2, topt, sched2, tsched, step)


PLATEAU = [
    dict(),
    dict(mode="min", factor=0.5, patience=2),
    dict(mode="max", factor=0.5, patience=1, threshold=0.05, threshold_mode="abs"),
    dict(mode="min", factor=0.3, patience=0, cooldown=2, min_lr=[0.01, 0.002]),
    dict(mode="max", factor=0.7, patience=1, threshold=0.01, threshold_mode="rel", min_lr=0.02),
]


@pytest.mark.needs_torch
@pytest.mark.parametrize("kwargs", PLATEAU, ids=[str(k) for k in PLATEAU])
def test_reduce_on_plateau_matches_torch(sg, kwargs):
    torch = need_torch()
    opt, topt = _optimizers(sg, torch)
    sched = sg.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    # a metric that improves, stalls, wobbles near the threshold, and improves again
    metrics = [1.0, 0.9, 0.9, 0.95, 0.899, 0.9, 0.85, 0.86, 0.87, 0.88, 0.84, 0.84, 0.84, 0.5, 0.6,
               0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.2, 1.19, 1.3, 1.3, 1.3, 1.3, 1.3]
    for step, m in enumerate(metrics, 1):
        opt.step()
        topt.step()
        sched.step(m)
        tsched.step(m)
        _check(opt, topt, sched, tsched, step)
        assert (sched.best, sched.num_bad_epochs, sched.cooldown_counter) == \
            (tsched.best, tsched.num_bad_epochs, tsched.cooldown_counter)


def test_reduce_on_plateau_accepts_a_tensor_metric(sg):
    torch = need_torch()
    opt, _ = _optimizers(sg, torch, groups=1)
    sched = sg.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
    sched.step(sg.tensor(1.0))
    sched.step(sg.tensor(2.0))
    assert opt.param_groups[0]["lr"] == 0.05


def test_closed_form_epoch_argument(sg):
    torch = need_torch()
    opt, topt = _optimizers(sg, torch)
    sched = sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=10)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch deprecates the epoch argument
        sched.step(7)
        tsched.step(7)
    _check(opt, topt, sched, tsched, 7)
    assert math.isclose(sched.get_last_lr()[0], 0.1 * (1 + math.cos(math.pi * 0.7)) / 2)


def test_scheduler_errors(sg):
    torch = need_torch()
    opt, _ = _optimizers(sg, torch)
    S = sg.optim.lr_scheduler
    with pytest.raises(TypeError, match="not an Optimizer"):
        S.StepLR(object(), step_size=2)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        S.LambdaLR(opt, lr_lambda=[lambda e: 1.0])
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], milestones=[])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.ReduceLROnPlateau(opt)], milestones=[3])
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="expected 2 min_lrs"):
        S.ReduceLROnPlateau(opt, min_lr=[0.1])
    fresh, _ = _optimizers(sg, torch)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(fresh, step_size=2, last_epoch=5)
