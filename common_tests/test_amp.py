"""``sg.amp.GradScaler`` against ``torch.amp.GradScaler`` on the CPU, step by step: the
scale, its growth tracker and the parameters after each iteration, through steps whose
gradients overflow (skipped, the scale backs off) and runs of clean ones (it grows)."""
import numpy as np
import pytest

from .helpers_core import need_torch

POISONED = {2, 7, 8}  # iterations whose scaled loss overflows: their gradients hold inf/NaN


def _run(lib, scaler, steps=12, clip=False, restart_at=None):
    rng = np.random.default_rng(0)
    w = lib.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    x = lib.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    y = lib.tensor(rng.standard_normal((8, 3)).astype(np.float32))
    opt = lib.optim.SGD([w], lr=0.05, momentum=0.9)
    trace = []
    for i in range(steps):
        if i == restart_at:  # a resumed run: a fresh scaler from the saved state
            saved = scaler.state_dict()
            scaler = type(scaler)("cpu")
            scaler.load_state_dict(saved)
        opt.zero_grad()
        loss = ((x.matmul(w) - y) ** 2).mean() * (3e38 if i in POISONED else 1.0)
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_([w], 1.0)
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), scaler.state_dict()["_growth_tracker"], w.detach().numpy().copy()))
    return trace


@pytest.mark.parametrize("clip", [False, True])
@pytest.mark.parametrize("restart_at", [None, 5])
def test_grad_scaler_matches_torch_step_by_step(sg, clip, restart_at):
    torch = need_torch()
    kw = dict(init_scale=2.0 ** 10, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    ours = _run(sg, sg.amp.GradScaler("cpu", **kw), clip=clip, restart_at=restart_at)
    theirs = _run(torch, torch.amp.GradScaler("cpu", **kw), clip=clip, restart_at=restart_at)
    scales = [s for s, _, _ in theirs]
    assert len(set(scales)) > 2  # the run both backs off and grows
    for i, ((s, g, w), (ts, tg, tw)) in enumerate(zip(ours, theirs)):
        assert (s, g) == (ts, tg), f"iteration {i}: scale/tracker {(s, g)} vs PyTorch's {(ts, tg)}"
        np.testing.assert_allclose(w, tw, rtol=1e-6, atol=1e-7, err_msg=f"iteration {i}")


def test_grad_scaler_refuses_what_torch_refuses(sg):
    torch = need_torch()
    for lib in (sg, torch):
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
            scaler.step(opt)
        scaler.scale((w * w).sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match=r"step\(\) has already been called"):
            scaler.step(opt)
        with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
            scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            scaler.step(opt, closure=lambda: 0.0)
        scaler.update(new_scale=8.0)
        assert scaler.get_scale() == 8.0
        scaler.update(new_scale=lib.tensor(2.0))
        assert scaler.get_scale() == 2.0
        with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match="backoff factor must be < 1.0"):
            lib.amp.GradScaler("cpu", backoff_factor=1.0)
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            lib.amp.GradScaler("cpu").load_state_dict({})


def test_a_disabled_scaler_passes_everything_through(sg):
    torch = need_torch()
    if sg.cuda.is_available():
        pytest.skip(f"{sg.__name__} has a usable CUDA GPU here: its default scaler is enabled")
    for lib in (sg, torch):
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
            scaler = lib.amp.GradScaler()  # "cuda", PyTorch's default, on a machine without CUDA
        assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.5)
        loss = (w * w).sum()
        assert scaler.scale(loss) is loss
        loss.backward()
        scaler.step(opt)
        scaler.update()
        assert w.tolist() == [0.0, 0.0]
