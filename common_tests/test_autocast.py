"""``sg.autocast`` against ``torch.autocast`` on the CPU (ours on the stage's device, cuda
included): which operations run in the lower
precision and which in float32, their values and gradients, nesting, the decorator, the
per-thread state, and the warnings and errors where autocast cannot run."""
import threading
import warnings

import numpy as np
import pytest

from .helpers_half import f32, two_byte_dtypes
from .oracle import need_torch

pytestmark = pytest.mark.needs_torch

fast = two_byte_dtypes(["bfloat16", "float16"])


def _inputs(lib, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {"x": (8, 12), "w": (5, 12), "b": (5,), "m": (12, 7), "img": (2, 3, 6, 6), "k": (4, 3, 3, 3),
              "c": (8, 7)}
    return {k: lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=k in ("w", "b", "k"))
            for k, s in arrays.items()}


def _run(lib, fast):
    t = _inputs(lib)
    F = lib.nn.functional
    layer = lib.nn.Linear(12, 5)  # a module is cast as the functional form is
    with lib.no_grad():
        layer.weight.copy_(t["w"])
        layer.bias.copy_(t["b"])
    # our tensors' device (cuda where the stage's default device is), PyTorch's CPU
    with lib.autocast(getattr(lib, "DEVICE", None) or "cpu", dtype=getattr(lib, fast)):
        outs = {
            "linear": F.linear(t["x"], t["w"], t["b"]),
            "module": layer(t["x"]),
            "matmul": t["x"] @ t["m"],
            "addmm": lib.addmm(t["c"], t["x"], t["m"]),
            "conv2d": F.conv2d(t["img"], t["k"], padding=1),
            "add": t["x"] + 1,  # not on a list: its inputs' dtype
            "float64": t["x"].double() @ t["m"].double(),  # float64 is never cast
        }
        outs["loss"] = F.cross_entropy(outs["linear"], lib.tensor([0, 1, 2, 3, 4, 0, 1, 2]))
        outs["mse"] = F.mse_loss(outs["matmul"], t["c"])
        (outs["loss"] + outs["mse"] + outs["conv2d"].float().sum() * 1e-3).backward()
    grads = {k: t[k].grad for k in ("w", "b", "k")}
    return outs, grads


def test_outputs_dtypes_values_and_grads_as_torch(sg, fast):
    torch = need_torch()
    (ours, our_grads), (theirs, their_grads) = _run(sg, fast), _run(torch, fast)
    rtol = 2.0 ** -6 if fast == "bfloat16" else 2.0 ** -9
    for k in theirs:
        assert ours[k].dtype.name == str(theirs[k].dtype).rpartition(".")[2], k
        scale = max(1.0, float(np.abs(f32(theirs[k])).max()))
        np.testing.assert_allclose(f32(ours[k]), f32(theirs[k]), rtol=rtol, atol=rtol * scale, err_msg=k)
    for k in their_grads:  # float32 parameters get float32 gradients through the casts
        assert our_grads[k].dtype is sg.float32 and their_grads[k].dtype == torch.float32
        scale = max(1.0, float(np.abs(f32(their_grads[k])).max()))
        np.testing.assert_allclose(f32(our_grads[k]), f32(their_grads[k]), rtol=4 * rtol,
                                   atol=4 * rtol * scale, err_msg=k)


def test_state_nesting_decorator_and_threads(sg, fast):
    torch = need_torch()
    for lib in (sg, torch):
        dtype = getattr(lib, fast)
        x = lib.ones(2, 2)
        dev = getattr(lib, "DEVICE", None) or "cpu"  # where x is: ours may be on cuda
        assert not lib.is_autocast_enabled(dev)
        assert lib.get_autocast_dtype(dev) is (lib.bfloat16 if dev == "cpu" else lib.float16)  # defaults
        with lib.autocast(dev, dtype=dtype):
            assert lib.is_autocast_enabled(dev) and lib.get_autocast_dtype(dev) is dtype
            with lib.autocast(dev, enabled=False):
                assert (x @ x).dtype is lib.float32 and not lib.is_autocast_enabled(dev)
            assert (x @ x).dtype is dtype
            seen = []
            worker = threading.Thread(target=lambda: seen.append((x @ x).dtype))
            worker.start()
            worker.join()
            assert seen == [lib.float32]  # autocast is per thread
        assert not lib.is_autocast_enabled(dev) and (x @ x).dtype is lib.float32

        @lib.autocast(dev, dtype=dtype)
        def product(a):
            return a @ a

        assert product(x).dtype is dtype and (x @ x).dtype is lib.float32


def test_where_autocast_cannot_run(sg):
    torch = need_torch()
    for lib in (sg, torch):
        with pytest.warns(UserWarning, match="not supported"):
            with lib.autocast("cpu", dtype=lib.float32):  # not a lower precision: disabled
                assert not lib.is_autocast_enabled("cpu")
        if not lib.cuda.is_available():
            with pytest.warns(UserWarning, match="not available"):
                with lib.autocast("cuda"):
                    assert not lib.is_autocast_enabled("cuda")
    with pytest.raises(RuntimeError, match="device_type"):
        sg.autocast("tpu")
    for name in ("bfloat16", "float16"):
        if name in set(sg.LACKS) - getattr(sg, "DEVICE_LACKS", set()):  # the stage's, not a device's
            with pytest.raises(sg.CapabilityError, match=f"lacks {name}"):
                sg.autocast("cpu", dtype=getattr(sg, name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with sg.autocast("cpu", enabled=False):  # disabled on purpose: no warning, any stage
            assert (sg.ones(2, 2) @ sg.ones(2, 2)).dtype is sg.float32
