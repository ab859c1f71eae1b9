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
    if kind == "MultiplicativeLR":
        return S.MultiplicativeLR(opt, lr_lambda=lambda e: 0.9 if e % 3 else 1.05)
    if kind == "MultiStepLR":  # 12 listed twice: gamma**2 there
        return S.MultiStepLR(opt, milestones=[3, 7, 12, 12, 30], gamma=0.5)
    if kind == "ConstantLR":
        return S.ConstantLR(opt, factor=0.25, total_iters=6)
    if kind == "PolynomialLR":
        return S.PolynomialLR(opt, total_iters=25, power=2.0)
    if kind == "ChainedScheduler":
        return S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=4),
                                   S.ExponentialLR(opt, gamma=0.9), S.MultiStepLR(opt, milestones=[10, 20])])
    if kind == "SequentialLR-constant-multistep-poly":
        return S.SequentialLR(opt, schedulers=[S.ConstantLR(opt, factor=0.3, total_iters=4),
                                               S.MultiStepLR(opt, milestones=[3, 6], gamma=0.7),
                                               S.PolynomialLR(opt, total_iters=15, power=0.5)],
                              milestones=[5, 15])
    if kind.startswith("CosineAnnealingWarmRestarts"):  # 40 steps: several restarts
        T_mult = int(kind.rsplit("-", 1)[1])
        return S.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=T_mult, eta_min=0.002)
    if kind == "CyclicLR-no-momentum":
        return S.CyclicLR(opt, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=6, cycle_momentum=False)
    if kind.startswith("CyclicLR"):  # 40 steps: 3 cycles of 7 up and 5 down
        mode = kind.split("-")[1]
        return S.CyclicLR(opt, base_lr=[0.01, 0.005], max_lr=0.1, step_size_up=7, step_size_down=5, mode=mode,
                          gamma=0.95, cycle_momentum=True, base_momentum=0.7, max_momentum=0.95)
    if kind.startswith("OneCycleLR"):  # total_steps 40: every phase to its end
        _, strategy, phases = kind.split("-")
        return S.OneCycleLR(opt, max_lr=[0.5, 0.2], total_steps=STEPS, pct_start=0.25,
                            anneal_strategy=strategy, three_phase=phases == "three", div_factor=10.0,
                            final_div_factor=100.0)
    raise ValueError(kind)


KINDS = ["StepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "LambdaLR-per-group", "LinearLR-warmup",
         "LinearLR-decay", "SequentialLR-warmup-cosine", "MultiplicativeLR", "MultiStepLR", "ConstantLR",
         "PolynomialLR", "ChainedScheduler", "SequentialLR-constant-multistep-poly",
         "CosineAnnealingWarmRestarts-1", "CosineAnnealingWarmRestarts-2", "CyclicLR-triangular",
         "CyclicLR-triangular2", "CyclicLR-exp_range", "CyclicLR-no-momentum", "OneCycleLR-cos-two",
         "OneCycleLR-linear-two", "OneCycleLR-cos-three", "OneCycleLR-linear-three"]


def _check(opt, topt, sched, tsched, step):
    lrs = [g["lr"] for g in opt.param_groups]
    tlrs = [g["lr"] for g in topt.param_groups]
    assert lrs == tlrs, f"step {step}: lr {lrs} != PyTorch's {tlrs}"
    for key in ("momentum", "betas"):  # the cyclic schedulers move these too
        if key in topt.param_groups[0]:
            def values(o):
                return [tuple(g[key]) if key == "betas" else g[key] for g in o.param_groups]
            assert values(opt) == values(topt), f"step {step}: {key}"
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
        assert getattr(sched, "last_epoch", None) == getattr(tsched, "last_epoch", None)
        _check(opt, topt, sched, tsched, step)


@pytest.mark.needs_torch
@pytest.mark.parametrize("kind", ["StepLR", "CosineAnnealingLR", "LambdaLR", "SequentialLR-warmup-cosine",
                                  "MultiplicativeLR", "MultiStepLR", "ConstantLR", "PolynomialLR",
                                  "ChainedScheduler", "CosineAnnealingWarmRestarts-2", "CyclicLR-triangular2",
                                  "CyclicLR-exp_range", "OneCycleLR-cos-three"])
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


def _adam_pair(sg, torch):
    p, tp = sg.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    return sg.optim.Adam([p], lr=0.1, betas=(0.9, 0.99)), torch.optim.Adam([tp], lr=0.1, betas=(0.9, 0.99))


@pytest.mark.needs_torch
@pytest.mark.parametrize("kind", ["OneCycleLR", "CyclicLR"])
def test_cyclic_schedulers_move_adams_beta1(sg, kind):
    torch = need_torch()
    opt, topt = _adam_pair(sg, torch)

    def make(lib, o):
        S = lib.optim.lr_scheduler
        if kind == "OneCycleLR":
            return S.OneCycleLR(o, max_lr=0.3, epochs=4, steps_per_epoch=5, base_momentum=0.8,
                                max_momentum=0.9)
        return S.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=4, mode="exp_range", gamma=0.9)
    sched, tsched = make(sg, opt), make(torch, topt)
    _check(opt, topt, sched, tsched, 0)
    assert opt.param_groups[0]["betas"][1] == 0.99
    for step in range(1, 21):
        opt.step(), topt.step(), sched.step(), tsched.step()
        _check(opt, topt, sched, tsched, step)
    if kind == "OneCycleLR":  # 20 steps were all it had: both refuse one more
        with pytest.raises(ValueError, match="Tried to step 21 times"):
            tsched.step()
        with pytest.raises(ValueError, match="Tried to step 21 times"):
            sched.step()


@pytest.mark.needs_torch
def test_warm_restarts_with_fractional_epochs(sg):
    """``step(epoch)`` with a fraction of an epoch, as within an epoch's batches; then plain steps."""
    torch = need_torch()
    opt, topt = _optimizers(sg, torch)
    sched = sg.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.001)
    tsched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, T_0=3, T_mult=2, eta_min=0.001)
    epochs = [0.0, 0.25, 0.5, 1.75, 2.9, 3.0, 3.1, 8.5, 8.99, 9.0, 10.2, 20.0, 21.5, 2.5, 45.25]
    for epoch in epochs:
        sched.step(epoch)
        tsched.step(epoch)
        _check(opt, topt, sched, tsched, epoch)
        assert (sched.T_cur, sched.T_i, sched.last_epoch) == (tsched.T_cur, tsched.T_i, tsched.last_epoch)
    for step in range(10):
        sched.step()
        tsched.step()
        _check(opt, topt, sched, tsched, step)
    with pytest.raises(ValueError, match="non-negative epoch"):
        sched.step(-1)


@pytest.mark.needs_torch
def test_closed_form_of_the_new_schedulers(sg):
    torch = need_torch()
    import warnings
    for make in (lambda S, o: S.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5),
                 lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=4),
                 lambda S, o: S.PolynomialLR(o, total_iters=8, power=1.5)):
        opt, topt = _optimizers(sg, torch)
        sched, tsched = make(sg.optim.lr_scheduler, opt), make(torch.optim.lr_scheduler, topt)
        for epoch in (6, 1, 3, 9):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # PyTorch deprecates the epoch argument
                sched.step(epoch)
                tsched.step(epoch)
            _check(opt, topt, sched, tsched, epoch)


@pytest.mark.needs_torch
@pytest.mark.parametrize("make", [
    lambda S, o: S.ConstantLR(o, factor=1.5),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2.5),
    lambda S, o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="sawtooth"),
    lambda S, o: S.CyclicLR(o, base_lr=[0.1], max_lr=1.0),
    lambda S, o: S.OneCycleLR(o, max_lr=1.0),
    lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=0),
    lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1),
    lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="step"),
    lambda S, o: S.ChainedScheduler([]),
], ids=["constant-factor", "warm-T0", "warm-Tmult", "warm-T0-float", "cyclic-mode", "cyclic-groups",
        "onecycle-no-total", "onecycle-total-0", "onecycle-pct-int", "onecycle-strategy", "chained-empty"])
def test_new_schedulers_refuse_what_torch_refuses(sg, make):
    torch = need_torch()
    opt, topt = _optimizers(sg, torch)
    with pytest.raises(ValueError) as theirs:
        make(torch.optim.lr_scheduler, topt)
    with pytest.raises(ValueError) as ours:
        make(sg.optim.lr_scheduler, opt)
    assert str(ours.value).split(",")[0][:30] == str(theirs.value).split(",")[0][:30]


@pytest.mark.needs_torch
def test_cycle_momentum_needs_a_momentum(sg):
    torch = need_torch()
    p = sg.ones(2, requires_grad=True)
    opt = sg.optim.Adagrad([p])
    with pytest.raises(ValueError, match="momentum or beta1"):
        sg.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    with pytest.raises(ValueError, match="momentum or beta1"):
        tp = torch.ones(2, requires_grad=True)
        torch.optim.lr_scheduler.OneCycleLR(torch.optim.Adagrad([tp]), max_lr=0.1, total_steps=10)
