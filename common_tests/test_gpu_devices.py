"""The GPU devices, ``webgpu`` and ``cuda``, against the CPU: every elementwise op, cast,
reduction, product and movement primitive computed by each device's kernels and compared
with the CPU (which the rest of the suite checks against NumPy and PyTorch), moves between
devices, the errors for mixed devices and for what a device lacks, the fused kernels'
launches, and training steps; then what only one device has.

``OnEveryDevice`` holds the tests both devices pass; ``TestWebGPU`` and ``TestCuda`` run
them on their device and add that device's own. The tests of a device run once on each
stage under test that has it (the ``device`` marker on the class), not on stages without
devices nor on the device pins; a machine without the device skips them with the reason.

In CI the webgpu device is Mesa's software Vulkan driver (lavapipe): the same kernels,
compiled for the CPU. Without a GPU the cuda tests check what needs none: the kernels
compiled by NVRTC for every instantiation the runtime launches, the launch layer against
the ``.cu`` signatures, the refusals; with ``tools/cuda_on_host`` first on ``PYTHONPATH``
the rest run the kernels' logic on the CPU.
"""
import importlib
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from stage0_python.op_table import FUNCTIONS

from .oracle import assert_close

SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.7, 1e-7, -1e-6, 20.0, -20.0, 100.0,
                    -100.0, np.inf, -np.inf, np.nan, 0.999, -0.999, 3.0], dtype=np.float32)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def dev(request):
    """The device the test's class is about (its ``device`` marker)."""
    return request.node.get_closest_marker("device").args[0]


@pytest.fixture
def gpu(sg, dev):
    """The stage, where it can open the device (else a skip saying why), with the CPU as the
    default device: these tests name each tensor's device (the CPU is the oracle)."""
    device = getattr(sg, dev)
    if not device.is_available():
        pytest.skip(f"no {dev} device: {device.unavailable_reason()}")
    sg.set_default_device(None)
    return sg


@pytest.fixture
def same(gpu, dev):
    """``same(result, expected)``: the device's result is on the device, of the CPU's dtype,
    and close to the CPU's values."""
    def check(gpu_result, cpu_result, rtol=2e-6, atol=1e-6):
        assert gpu_result.device == gpu.device(dev, 0)
        assert gpu_result.dtype == cpu_result.dtype
        assert_close(gpu_result.cpu().numpy(), cpu_result.numpy(), rtol=rtol, atol=atol)
    return check


def _launches(sg, dev):
    """Kernels the device's runtime has launched so far."""
    return sys.modules[f"{sg.__name__}.{dev}.runtime"].runtime().launches


# (with every float function of the op table: one added there is checked here on both devices)
UNARY_FLOAT = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
               "sign", "reciprocal", "erf", "log1p", "floor", "ceil", "round", "trunc", "isnan", "isinf",
               "isfinite", "isposinf", "isneginf", "logical_not"] + [f.name for f in FUNCTIONS]
# tan near its poles divides by a small cosine: a last-bit difference there is 1e-5 of the result
LOOSE = {"tan": 1e-5}
BINARY_FLOAT = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "floordiv",
                "remainder", "atan2", "copysign", "fmod", "hypot", "eq", "ne", "lt", "le", "gt",
                "ge", "logical_and", "logical_or"]


def binary(sg, op):
    """The public function of ``op`` (floor division is the ``//`` operator)."""
    return (lambda a, b: a // b) if op == "floordiv" else getattr(sg, op)


def check_cast(sg, same, dev, src, dst):
    """A cast on the device against the same cast on the CPU."""
    x = sg.from_numpy(np.array([0, 1, -2, 3.75, -4.5, 100], dtype=np.float32)).to(getattr(sg, src))
    same(x.to(dev).to(getattr(sg, dst)), x.to(getattr(sg, dst)))


class OnEveryDevice:
    """The tests every GPU device passes; a subclass names the device (``device`` marker)
    and adds its own."""

    DLPACK_DEVICE = None  # the device's DLPack (type, index)
    GROUP_STEP = False  # whether an optimizer steps a whole group in one launch (multi-tensor)

    @pytest.mark.parametrize("op", UNARY_FLOAT)
    def test_unary_float_ops_match_the_cpu(self, gpu, dev, same, op):
        x = np.concatenate([SPECIAL, np.random.default_rng(0).standard_normal(60).astype(np.float32)])
        cpu = gpu.from_numpy(x)
        got = getattr(gpu, op)(cpu.to(dev))
        same(got, getattr(gpu, op)(cpu), rtol=LOOSE.get(op, 4e-6), atol=1e-6)

    @pytest.mark.parametrize("op", ["gelu", "silu"])
    def test_activations_match_the_cpu(self, gpu, dev, same, op):
        x = gpu.from_numpy(np.concatenate([SPECIAL, np.linspace(-8, 8, 101, dtype=np.float32)]))
        f = getattr(gpu.nn.functional, op)
        same(f(x.to(dev)), f(x), rtol=1e-5)

    @pytest.mark.parametrize("dtype", ["int32", "int64"])
    @pytest.mark.parametrize("op", ["neg", "abs", "sign", "bitwise_not", "logical_not"])
    def test_unary_integer_ops_match_the_cpu(self, gpu, dev, same, op, dtype):
        x = gpu.from_numpy(np.array([0, 1, -1, 7, -8, 2**30, -2**30, 123456], dtype=dtype))
        same(getattr(gpu, op)(x.to(dev)), getattr(gpu, op)(x))

    @pytest.mark.parametrize("op", BINARY_FLOAT)
    def test_binary_float_ops_broadcast_and_match_the_cpu(self, gpu, dev, same, op):
        a = np.repeat(SPECIAL[:, None], 4, 1)
        b = np.array([2.0, -0.5, 0.0, np.nan], dtype=np.float32)  # broadcast along rows
        ca, cb = gpu.from_numpy(a), gpu.from_numpy(b)
        f = binary(gpu, op)
        same(f(ca.to(dev), cb.to(dev)), f(ca, cb), rtol=LOOSE.get(op, 4e-6))
        same(f(ca.to(dev).T, cb[:, None].to(dev)), f(ca.T, cb[:, None]),
             rtol=LOOSE.get(op, 4e-6))  # a transposed operand is read through its strides

    @pytest.mark.parametrize("dtype", ["int32", "int64"])
    @pytest.mark.parametrize("op", ["add", "sub", "mul", "pow", "maximum", "minimum", "floordiv",
                                    "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
                                    "bitwise_left_shift", "bitwise_right_shift", "eq", "lt", "ge"])
    def test_binary_integer_ops_match_the_cpu(self, gpu, dev, same, op, dtype):
        rng = np.random.default_rng(1)
        a = rng.integers(-50, 50, (6, 5)).astype(dtype)
        b = rng.integers(1, 9, (5,)).astype(dtype)
        if op in ("fmod", "remainder", "floordiv"):
            b[1] = -b[1]
        ca, cb = gpu.from_numpy(a), gpu.from_numpy(b)
        f = binary(gpu, op)
        same(f(ca.to(dev), cb.to(dev)), f(ca, cb))

    def test_integer_division_by_zero_is_refused_as_on_the_cpu(self, gpu, dev):
        a, b = gpu.tensor([4, 5]), gpu.tensor([1, 0])
        with pytest.raises(ZeroDivisionError):
            a // b
        with pytest.raises(ZeroDivisionError):
            a.to(dev) // b.to(dev)
        with pytest.raises(ValueError, match="negative"):
            gpu.pow(a.to(dev), gpu.tensor([2, -1]).to(dev))

    @pytest.mark.parametrize("op", ["logical_and", "logical_or", "eq", "ne",
                                    "bitwise_and", "bitwise_or", "bitwise_xor", "add", "mul"])
    def test_bool_ops_match_the_cpu(self, gpu, dev, same, op):
        a = gpu.tensor([[True, False, True, False]])
        b = gpu.tensor([[True], [False]])
        same(getattr(gpu, op)(a.to(dev), b.to(dev)), getattr(gpu, op)(a, b))

    def test_python_numbers_and_cpu_scalars_meet_device_tensors(self, gpu, dev, same):
        x = gpu.from_numpy(SPECIAL[:8])
        g = x.to(dev)
        same(g * 3 + 1, x * 3 + 1)
        same(g / gpu.tensor(2.0), x / 2.0)  # a zero-dim CPU tensor joins, as in PyTorch
        same(gpu.where(g > 0, g, gpu.zeros(8, device=dev)), gpu.where(x > 0, x, gpu.zeros(8)))

    def test_float_to_int_refuses_nan_as_the_cpu_does(self, gpu, dev):
        x = gpu.tensor([1.0, float("nan")])
        with pytest.raises(ValueError, match="nan"):
            x.to(dev).to(gpu.int64)

    @pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin", "any", "all", "mean"])
    @pytest.mark.parametrize("dim", [None, 0, 1, (0, 2), -1])
    def test_reductions_match_the_cpu(self, gpu, dev, same, op, dim):
        x = np.random.default_rng(2).standard_normal((5, 70, 3)).astype(np.float32) * 0.3 + 1
        cx = gpu.from_numpy(x)
        if op in ("any", "all"):
            cx = cx > 1
        f = getattr(gpu, op)
        args = {} if dim is None else {"dim": dim}
        same(f(cx.to(dev), **args), f(cx, **args), rtol=1e-5, atol=1e-5)
        same(f(cx.to(dev).transpose(0, 2), **args), f(cx.transpose(0, 2), **args),
             rtol=1e-5, atol=1e-5)

    def test_reductions_propagate_nan_and_handle_integers(self, gpu, dev, same):
        x = gpu.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, -1.0]])
        same(x.to(dev).amax(1), x.amax(1))
        same(x.to(dev).argmax(1), x.argmax(1))
        same(x.to(dev).argmin(1), x.argmin(1))
        i = gpu.tensor([[3, 9, 9, -2], [7, 7, 1, 7]], dtype=gpu.int32)
        same(i.to(dev).sum(1), i.sum(1))
        same(i.to(dev).argmax(1), i.argmax(1))  # the first of equal maxima
        same(i.to(dev).amin(0), i.amin(0))

    def test_argmax_over_many_elements(self, gpu, dev, same):
        x = gpu.from_numpy(np.random.default_rng(3).standard_normal((3, 5000)).astype(np.float32))
        same(x.to(dev).argmax(1), x.argmax(1))
        same(x.to(dev).argmin(), x.argmin())

    @pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (4, 5)), ((33, 17), (17, 40)),
                                                  ((2, 3, 20, 18), (2, 3, 18, 7)), ((1, 1), (1, 1)),
                                                  ((64, 64), (64, 64))])
    def test_matmul_matches_the_cpu(self, gpu, dev, same, shape_a, shape_b):
        rng = np.random.default_rng(4)
        a = gpu.from_numpy(rng.standard_normal(shape_a).astype(np.float32))
        b = gpu.from_numpy(rng.standard_normal(shape_b).astype(np.float32))
        same(a.to(dev) @ b.to(dev), a @ b, rtol=1e-5, atol=1e-5)
        bt = b.transpose(-1, -2).contiguous()  # a transposed view, read through its strides
        same(a.to(dev) @ bt.to(dev).transpose(-1, -2), a @ b, rtol=1e-5, atol=1e-5)

    def test_integer_and_empty_matmul(self, gpu, dev, same):
        a = gpu.arange(12).reshape(3, 4)
        same(a.to(dev) @ a.T.to(dev), a @ a.T)
        e = gpu.zeros(3, 0)
        same(e.to(dev) @ gpu.zeros(0, 2, device=dev), e @ gpu.zeros(0, 2))

    def test_views_alias_the_device_buffer(self, gpu, dev, same):
        x = gpu.arange(24.0).reshape(2, 3, 4)
        g = x.to(dev)
        v = g.permute(2, 0, 1)[1:3, :, ::2]
        same(v, x.permute(2, 0, 1)[1:3, :, ::2])
        assert not v.is_contiguous()
        assert v.storage_offset() == x.permute(2, 0, 1)[1:3, :, ::2].storage_offset()
        same(v.contiguous(), x.permute(2, 0, 1)[1:3, :, ::2].contiguous())
        same(g.diagonal(0, 1, 2), x.diagonal(0, 1, 2))
        same(g[:, 0].unfold(0, 2, 1), x[:, 0].unfold(0, 2, 1))
        same(g.expand(3, 2, 3, 4).sum(0), x.expand(3, 2, 3, 4).sum(0))
        same(gpu.cat([g, g * 2], 1), gpu.cat([x, x * 2], 1))
        same(g.transpose(1, 2).reshape(2, 12), x.transpose(1, 2).reshape(2, 12))  # a copy

    def test_in_place_writes_reach_every_view(self, gpu, dev, same):
        x = gpu.zeros(4, 5)
        g = x.to(dev)
        row = g[1]
        g[1:3, ::2] = 7.0
        x[1:3, ::2] = 7.0
        same(row, x[1])
        g.add_(1)
        x.add_(1)
        same(g, x)
        g.copy_(x.to(dev) * 3)
        x.copy_(x * 3)
        same(g, x)
        g[0].fill_(2.5)  # a Python number, written on the device
        x[0].fill_(2.5)
        same(g, x)
        g.copy_(x + 1)  # from the CPU, as PyTorch's copy_ allows
        same(g, x + 1)

    def test_moves_between_devices(self, gpu, dev):
        x = gpu.randn(3, 4)
        g = x.to(dev)
        assert g.device.type == dev and not g.is_cpu and x.to("cpu") is x
        assert g.to(dev) is g
        assert g.tolist() == x.tolist() and g.sum().item() == pytest.approx(x.sum().item(), rel=1e-6)
        assert g.cpu().device == gpu.device("cpu")
        assert repr(gpu.ones(2, dtype=gpu.int32, device=dev)) == (
            f"tensor([1, 1], device='{dev}:0', dtype=stagegrad.int32)")
        assert gpu.zeros(2, 3, device=dev).device.type == dev
        assert gpu.zeros_like(g).device.type == dev
        assert g.new_ones(2).device.type == dev
        b = gpu.tensor([True, False])
        assert b.to(dev).tolist() == [True, False]

    def test_mixing_devices_names_both(self, gpu, dev):
        g = gpu.ones(3, device=dev)
        with pytest.raises(RuntimeError, match=f"add.*{dev}:0.*cpu"):
            g + gpu.ones(3)
        with pytest.raises(RuntimeError, match=f"matmul.*{dev}:0.*cpu"):
            gpu.ones(2, 3, device=dev) @ gpu.ones(3, 2)

    def test_gradients_flow_back_across_the_move(self, gpu, dev):
        x = gpu.randn(5, 3, requires_grad=True)
        g = x.to(dev)
        ((g * g).sum() + (g.exp() * 2).mean()).backward()
        assert x.grad.device.type == "cpu"
        expected = 2 * x + x.exp() * 2 / 15
        assert_close(x.grad.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)

    def test_a_training_step_matches_the_cpu(self, gpu, dev):
        def step(device):
            gpu.manual_seed(0)
            model = gpu.nn.Sequential(gpu.nn.Linear(12, 16), gpu.nn.ReLU(), gpu.nn.Linear(16, 3))
            model.to(device)
            opt = gpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            x = gpu.randn(8, 12).to(device)
            y = gpu.randn(8, 3).to(device)
            for _ in range(3):
                opt.zero_grad()
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                opt.step()
            return [p.detach().cpu().numpy() for p in model.parameters()], loss.item()

        (cpu_params, cpu_loss), (gpu_params, gpu_loss) = step("cpu"), step(dev)
        assert gpu_loss == pytest.approx(cpu_loss, rel=1e-5)
        for a, b in zip(gpu_params, cpu_params):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    def test_indexing_gathers_and_scatters_match_the_cpu(self, gpu, dev, same):
        x = gpu.from_numpy(np.random.default_rng(5).standard_normal((6, 7)).astype(np.float32))
        g = x.to(dev)
        idx = gpu.tensor([[0, 5, 2], [1, 1, 6]])
        same(g.gather(1, idx.to(dev)), x.gather(1, idx))
        rows = gpu.tensor([4, 0, 4])
        same(g[rows.to(dev)], x[rows])
        same(g.T[rows.to(dev)], x.T[rows])  # through a transposed view
        flat = gpu.tensor([0, 41, 7])
        same(g.reshape(-1)[flat.to(dev)], x.reshape(-1)[flat])
        same(g[g > 0.5], x[x > 0.5])
        src = gpu.ones(2, 3)
        same(gpu.zeros(3, 7, device=dev).scatter_add(1, idx.to(dev), src.to(dev)),
             gpu.zeros(3, 7).scatter_add(1, idx, src))

    def test_out_of_range_indices_are_refused(self, gpu, dev):
        g = gpu.ones(3, 4, device=dev)
        with pytest.raises(IndexError):  # at the read back, where the device checks (cuda)
            g.gather(1, gpu.tensor([[0, 4]]).to(dev)).tolist()
        with pytest.raises(IndexError):
            g.reshape(-1)[gpu.tensor([12]).to(dev)].tolist()

    @pytest.mark.parametrize("accumulate", [False, True])
    def test_index_put_matches_the_cpu(self, gpu, dev, same, accumulate):
        x = gpu.zeros(5, 3)
        g = x.to(dev)
        where = gpu.tensor([1, 3, 1])
        vals = gpu.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
        if accumulate:
            g.index_add_(0, where.to(dev), vals.to(dev))
            x.index_add_(0, where, vals)
        else:
            g[where.to(dev)] = vals.to(dev)
            x[where] = vals
        same(g, x)
        g[g > 4] = -1.0
        x[x > 4] = -1.0
        same(g, x)

    @pytest.mark.parametrize("dims", [1, 2])
    def test_convolution_and_pooling_forward_and_backward_match_the_cpu(self, gpu, dev, dims):
        rng = np.random.default_rng(6)
        shape = (2, 3, 9) if dims == 1 else (2, 3, 9, 8)
        conv = (gpu.nn.Conv1d if dims == 1 else gpu.nn.Conv2d)(3, 4, 3, stride=2, padding=1, dilation=1)
        pool = (gpu.nn.MaxPool1d if dims == 1 else gpu.nn.MaxPool2d)(2)
        x = gpu.from_numpy(rng.standard_normal(shape).astype(np.float32))
        results = []
        for device in ("cpu", dev):
            conv.to(device)
            conv.zero_grad()
            xd = x.to(device).requires_grad_(True) if device == "cpu" else x.to(device)
            xd = xd.detach().requires_grad_(True)
            y = pool(gpu.relu(conv(xd)))
            (y * y).sum().backward()
            results.append([t.detach().cpu().numpy() for t in (y, xd.grad, conv.weight.grad, conv.bias.grad)])
        for a, b in zip(*results):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)

    @pytest.mark.parametrize("descending", [False, True])
    def test_sort_is_stable_and_orders_nan_last_as_the_cpu(self, gpu, dev, same, descending):
        x = gpu.tensor([[3.0, float("nan"), 1.0, 3.0, -0.0, 0.0, 1.0], [5.0, 4.0, 4.0, 4.0, 9.0, -1.0, 2.0]])
        for dim in (1, 0):
            got, want = x.to(dev).sort(dim, descending=descending), x.sort(dim, descending=descending)
            same(got.values, want.values)
            same(got.indices, want.indices)
        i = gpu.tensor([3, 1, 3, 2, 1], dtype=gpu.int32)
        same(i.to(dev).argsort(), i.argsort())

    @pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"])
    def test_scans_match_the_cpu(self, gpu, dev, same, op):
        x = gpu.tensor([[0.5, 2.0, float("nan"), 1.0], [3.0, 3.0, -1.0, 3.0], [1.0, -2.0, 0.5, 0.25]])
        for dim in (1, 0):
            got, want = getattr(x.to(dev), op)(dim), getattr(x, op)(dim)
            if op in ("cummax", "cummin"):
                same(got.values, want.values)
                same(got.indices, want.indices)
            else:
                same(got, want, rtol=1e-6)

    def test_classifier_training_with_embedding_and_cross_entropy_matches_the_cpu(self, gpu, dev):
        def train(device):
            gpu.manual_seed(1)
            model = gpu.nn.Sequential(gpu.nn.Embedding(20, 8), gpu.nn.Flatten(), gpu.nn.Linear(24, 5))
            model.to(device)
            opt = gpu.optim.Adam(model.parameters(), lr=0.05)
            tokens = gpu.randint(0, 20, (16, 3)).to(device)
            labels = gpu.randint(0, 5, (16,)).to(device)
            for _ in range(4):
                opt.zero_grad()
                loss = gpu.nn.functional.cross_entropy(model(tokens), labels)
                loss.backward()
                opt.step()
            return loss.item(), [p.detach().cpu().numpy() for p in model.parameters()]

        (cpu_loss, cpu_params), (gpu_loss, gpu_params) = train("cpu"), train(dev)
        assert gpu_loss == pytest.approx(cpu_loss, rel=1e-5)
        for a, b in zip(gpu_params, cpu_params):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)

    def test_the_default_device_places_new_tensors(self, gpu, dev):
        gpu.set_default_device(dev)
        try:
            assert gpu.get_default_device() == gpu.device(dev, 0)
            for t in (gpu.zeros(2), gpu.tensor([1.0]), gpu.arange(3), gpu.randn(2), gpu.eye(2)):
                assert t.device.type == dev
            assert gpu.from_numpy(np.ones(2)).device.type == "cpu"  # as in PyTorch
            assert gpu.zeros(2, device="cpu").device.type == "cpu"
        finally:
            gpu.set_default_device(None)
        assert gpu.zeros(2).device.type == "cpu"

    def test_as_tensor_keeps_a_tensors_device_unless_one_is_named(self, gpu, dev):
        g = gpu.ones(2, device=dev)
        assert gpu.as_tensor(g) is g
        assert gpu.as_tensor(g, device="cpu").device.type == "cpu"
        assert gpu.as_tensor([1.0, 2.0], device=dev).device.type == dev

    @pytest.mark.parametrize("name", ["softmax", "log_softmax"])
    @pytest.mark.parametrize("dim", [0, 1])
    def test_fused_softmax_is_one_launch_each_way_and_matches_the_cpu(self, gpu, dev, name, dim):
        rng = np.random.default_rng(7)
        x = gpu.from_numpy((rng.standard_normal((5, 130)) * 4).astype(np.float32))
        g = gpu.from_numpy(rng.standard_normal((5, 130)).astype(np.float32))
        out = []
        for device in ("cpu", dev):
            xd = x.to(device).detach().requires_grad_(True)
            before = _launches(gpu, dev)
            y = getattr(xd, name)(dim)
            forward = _launches(gpu, dev) - before
            y.backward(g.to(device))
            out.append((y.detach().cpu(), xd.grad.cpu()))
        if dim == 1:  # rows already contiguous: nothing to move before or after the kernel
            assert forward == 1
        for a, b in zip(*out):
            assert_close(b.numpy(), a.numpy(), rtol=2e-6, atol=2e-6)

    @pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.15, "weight": True}, {"reduction": "none"},
                                    {"reduction": "sum", "ignore_index": 2}])
    def test_fused_cross_entropy_matches_the_cpu(self, gpu, dev, kw):
        rng = np.random.default_rng(8)
        x = gpu.from_numpy((rng.standard_normal((9, 40)) * 3).astype(np.float32))
        t = gpu.tensor([3, 2, 39, 0, 2, 17, 5, 2, 11])
        w = gpu.from_numpy(rng.uniform(0.5, 2.0, 40).astype(np.float32))
        out = []
        for device in ("cpu", dev):
            xd = x.to(device).detach().requires_grad_(True)
            args = dict(kw, weight=w.to(device)) if kw.get("weight") else kw
            loss = gpu.nn.functional.cross_entropy(xd, t.to(device), **args)
            loss.sum().backward()
            out.append((loss.detach().cpu(), xd.grad.cpu()))
        for a, b in zip(*out):
            assert_close(b.numpy(), a.numpy(), rtol=2e-6, atol=1e-7)
        bad = gpu.tensor([0, 40, 1, 1, 1, 1, 1, 1, 1]).to(dev)
        # raised at the read back where the device checks the targets (cuda)
        with pytest.raises(IndexError, match="target 40 is out of bounds for 40 classes"):
            gpu.nn.functional.cross_entropy(x.to(dev), bad).item()

    @pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, weight_decay=0.1)),
                                         ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True)),
                                         ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                         ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5,
                                                      weight_decay=0.01)),
                                         ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5,
                                                          weight_decay=0.1)),
                                         ("RMSprop", dict(lr=0.01, maximize=True))])
    def test_fused_optimizer_steps_are_one_launch_per_parameter_or_group_and_match_the_cpu(self, gpu, dev,
                                                                                         name, kw):
        x = np.random.default_rng(9).standard_normal((2, 33)).astype(np.float32)
        results = []
        for device in ("cpu", dev):
            ps = [gpu.from_numpy(x[i].copy()).to(device).requires_grad_(True) for i in range(2)]
            opt = getattr(gpu.optim, name)(ps, **kw)
            for _ in range(4):
                opt.zero_grad()
                sum((p.tanh() ** 2).sum() for p in ps).backward()
                before = _launches(gpu, dev)
                opt.step()
            results.append([p.detach().cpu().numpy() for p in ps])
        assert _launches(gpu, dev) - before == (1 if self.GROUP_STEP else 2)
        for a, b in zip(*results):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)

    @pytest.mark.parametrize("affine", [True, False])
    def test_fused_layer_norm_is_one_launch_forward_and_matches_the_cpu(self, gpu, dev, affine):
        rng = np.random.default_rng(11)
        x = gpu.from_numpy((rng.standard_normal((4, 3, 70)) * 3 + 1).astype(np.float32))
        g = gpu.from_numpy(rng.standard_normal((4, 3, 70)).astype(np.float32))
        w, b = (gpu.from_numpy(rng.standard_normal(70).astype(np.float32)) for _ in range(2))
        out = []
        for device in ("cpu", dev):
            xd = x.to(device).detach().requires_grad_(True)
            wd, bd = ((t.to(device).detach().requires_grad_(True) for t in (w, b)) if affine
                      else (None, None))
            before = _launches(gpu, dev)
            y = gpu.nn.functional.layer_norm(xd, (70,), wd, bd)
            launches = _launches(gpu, dev) - before
            y.backward(g.to(device))
            out.append([y.detach().cpu(), xd.grad.cpu()] + ([wd.grad.cpu(), bd.grad.cpu()] if affine else []))
        assert launches == 1
        for a, b_ in zip(*out):
            assert_close(b_.numpy(), a.numpy(), rtol=2e-6, atol=2e-6)

    def test_dlpack_names_the_device_and_refuses_to_share_with_the_reason(self, gpu, dev):
        g = gpu.ones(2, device=dev)
        assert g.__dlpack_device__() == self.DLPACK_DEVICE
        with pytest.raises(gpu.CapabilityError, match="DLPack"):
            g.__dlpack__()


@pytest.mark.device("webgpu")
@pytest.mark.xdist_group("webgpu")
class TestWebGPU(OnEveryDevice):
    """The webgpu device: on every stage under test that has it, once each."""

    DLPACK_DEVICE = (15, 0)  # kDLWebGPU

    @pytest.mark.parametrize("src", ["bool", "int32", "int64", "float32"])
    @pytest.mark.parametrize("dst", ["bool", "int32", "int64", "float32"])
    def test_casts_match_the_cpu(self, gpu, dev, same, src, dst):
        check_cast(gpu, same, dev, src, dst)

    def test_float64_is_refused_with_the_reason(self, gpu):
        with pytest.raises(gpu.CapabilityError, match="float64.*WGSL"):
            gpu.zeros(3, dtype=gpu.float64).to("webgpu")
        with pytest.raises(gpu.CapabilityError, match="float64"):
            gpu.ones(2, device="webgpu").double()

    def test_a_convolution_too_large_to_bind_runs_in_batch_parts(self, gpu, same, monkeypatch):
        rt = sys.modules[gpu.__name__ + ".webgpu.runtime"].runtime()
        conv = gpu.nn.Conv2d(3, 5, 3, padding=1)
        x = gpu.from_numpy(np.random.default_rng(10).standard_normal((6, 3, 8, 8)).astype(np.float32))
        want = conv(x).detach()
        conv.to("webgpu")
        monkeypatch.setattr(rt, "max_binding", 1 << 14)  # two images' im2col (13.5 KiB) fit, three do not
        got = conv(x.to("webgpu")).detach()
        same(got, want, rtol=1e-5, atol=1e-5)
        with pytest.raises(MemoryError, match="exceed the largest buffer a kernel can bind"):
            gpu.nn.Conv2d(3, 5, 3).to("webgpu")(gpu.zeros(1, 3, 30, 30, device="webgpu"))

    def test_a_buffer_freed_under_recorded_launches_is_not_overwritten_before_they_run(self, gpu):
        """Launches are recorded and submitted together; a tensor freed meanwhile keeps its
        memory until they are, so an upload into the same size class cannot land first."""
        x = gpu.from_numpy(np.arange(1000, dtype=np.float32)).to("webgpu")
        y = x * 2  # recorded, not yet submitted
        del x
        z = gpu.from_numpy(np.full(1000, -1.0, np.float32)).to("webgpu")  # same size class
        assert y.cpu().numpy().tolist() == (np.arange(1000) * 2.0).tolist()
        assert z.cpu().numpy().tolist() == [-1.0] * 1000

    def test_launches_recorded_in_c_match_wgpu_py_and_raise_its_errors(self, gpu, monkeypatch):
        """The installed wgpu has the C functions the runtime records launches with; what they
        compute is what recording through wgpu-py computes, and NumPy's; a bind group that does
        not fit its kernel raises wgpu's validation error, as through wgpu-py."""
        import wgpu
        rt = sys.modules[gpu.__name__ + ".webgpu.runtime"].runtime()
        assert rt.recorder is not None, "the installed wgpu lacks what webgpu/record.py records with"
        rng = np.random.default_rng(11)
        a, b = (rng.standard_normal((70, 30)).astype(np.float32) for _ in range(2))

        def step():
            x, y = gpu.from_numpy(a).to("webgpu"), gpu.from_numpy(b).to("webgpu")
            return (x.exp() * y + x).sum(0).cpu().numpy()

        in_c = step()
        monkeypatch.setattr(rt, "recorder", None)
        assert in_c.tolist() == step().tolist()
        np.testing.assert_allclose(in_c, (np.exp(a) * b + a).sum(0), rtol=1e-5, atol=1e-5)
        monkeypatch.undo()
        source, spare = next(iter(rt._pipelines)), [rt.alloc(16) for _ in range(9)]
        with pytest.raises(wgpu.GPUValidationError, match="bindings"):
            rt.launch(source, spare, [0], 1)  # more buffers than the kernel binds
        for buffer in spare:
            rt.release(buffer)
        assert (gpu.ones(3, device="webgpu") * 2).tolist() == [2.0] * 3  # and the device goes on

    def test_the_devices_command_reports_what_it_measured(self, tmp_path):
        """``stagegrad devices --quick``: every time positive, each bandwidth its bytes over its
        time, each crossover the smallest size where a device's time is below stage 3's, a
        missing device with its reason, and a software adapter named as such."""
        r = subprocess.run([sys.executable, "-m", "stagegrad", "devices", "--quick", "--out", str(tmp_path)],
                           cwd=REPO, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        report = json.loads((tmp_path / "devices.json").read_text())
        text = (tmp_path / "devices.md").read_text()
        assert all(o["seconds"] > 0 for o in report["overhead"])
        for t in report["transfer"]:
            assert t["gib_s"] == pytest.approx(t["bytes"] / t["seconds"] / 2 ** 30)
            assert report["devices"][t["device"]]["available"]
        for name, info in report["devices"].items():  # a device missing here says why
            assert (name in report["columns"]) == info["available"]
            if not info["available"]:
                assert info["reason"] in text
        for c in report["columns"]:
            assert all(r["stage3_s"] > 0 and r["seconds"][c] > 0 for r in report["sweep"])
            for name, size in report["crossover"][c].items():
                faster = [r["size"] for r in report["sweep"]
                          if r["workload"] == name and r["seconds"][c] < r["stage3_s"]]
                assert size == (min(faster) if faster else None)
        gpu = report["devices"]["webgpu"]
        if gpu["available"] and gpu["software"]:
            assert "never GPU speed" in text and gpu["name"] in text
        # the cuda device's host cost, on any machine: the null launch mode on the host emulation
        null = report["null_launch"]
        assert null["available"], null.get("reason")
        assert null["add_launches"] == 1 and null["add_syncs"] == 0 and null["add_s"] > 0
        assert {m["batch"] for m in null["mlp"]} == {16, 64}
        assert len({m["launches"] for m in null["mlp"]}) == 1 and null["mlp"][0]["launches"] > 10
        # every zoo model's training step launches its kernels and never makes the host wait
        from stagegrad.models_bench import MODELS
        assert [m["model"] for m in null["zoo"]] == [m.title for m in MODELS.values()]
        assert all(m["launches"] > 10 and m["syncs"] == 0 and m["seconds"] > 0 for m in null["zoo"]), null["zoo"]
        assert any(o["device"] == "cuda (null launch)" for o in report["overhead"])
        assert "| cuda (null launch)" in text and "MLP step, batch 64" in text and "ResNet-18 step" in text


# ---------------------------------------------------------------- the cuda kernels' static checks

def _stage4_module(name):
    """``stage4_gpu.<name>``, or a skip saying why stage 4 does not import here."""
    try:
        return importlib.import_module(f"stage4_gpu.{name}")
    except ImportError as e:
        pytest.skip(f"stage4_gpu does not import here: {e}")


def _kernel_files():
    kernels = _stage4_module("cuda.kernels")
    return kernels, sorted(f[:-3] for f in os.listdir(kernels.DIR) if f.endswith(".cu"))


def _kind(param):
    """The argument kind (kernels.py's words) of one C parameter declaration."""
    if "*" in param:
        return "ptr"
    words = param.split()
    # common.cuh's structs, by value
    for struct, kind in (("Params", "params"), ("Hyper", "hyper"), ("TensorList", "tensors")):
        if struct in words:
            return kind
    if "long" in words or "i64" in words:
        return "i64"
    for c, kind in (("double", "f64"), ("float", "f32"), ("int", "i32")):
        if c in words:
            return kind
    raise AssertionError(f"a kernel parameter of no known kind: {param!r}")


def _nvrtc():
    """NVIDIA's NVRTC bindings (``cuda-bindings``, with the ``nvidia-cuda-nvrtc-cu12`` wheel's
    library: the test extra's), or a skip (an oracle of CI: ``conftest.ORACLE_MODULES``)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        pytest.skip(f"NVRTC's bindings are not installed ({e}): pip install -e '.[test]'")
    return nvrtc


def _nvrtc_compile(nvrtc, name, code, instances, options):
    """Compile ``code`` with NVRTC, each of ``instances`` added as a name expression (as the
    runtime adds the one it launches): NVRTC's log, the compiled binary (PTX for a
    ``compute_`` architecture, a cubin for an ``sm_`` one) or None where it failed, and each
    instance's lowered name."""
    def ok(result):
        err, *rest = result
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, f"{name}: NVRTC: {err}"
        return rest[0] if rest else None

    prog = ok(nvrtc.nvrtcCreateProgram(code.encode(), f"{name}.cu".encode(), 0, [], []))
    try:
        for instance in instances:
            ok(nvrtc.nvrtcAddNameExpression(prog, instance.encode()))
        opts = [o.encode() for o in options]
        (compiled,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        # NVRTC writes into the buffer it is given: a bytearray, never bytes (``b" " * 1`` is
        # Python's one cached b" ", which the write would change for the whole process)
        log = bytearray(ok(nvrtc.nvrtcGetProgramLogSize(prog)))
        ok(nvrtc.nvrtcGetProgramLog(prog, log))
        log = bytes(log).rstrip(b"\0 ").decode(errors="replace")
        if compiled != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return log or str(compiled), None, []
        # each instantiation exists under a lowered name
        lowered = [ok(nvrtc.nvrtcGetLoweredName(prog, i.encode())).decode() for i in instances]
        ptx = options[-1].startswith("--gpu-architecture=compute_")
        size, get = ((nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if ptx
                     else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN))
        binary = bytearray(ok(size(prog)))
        ok(get(prog, binary))
        return log, bytes(binary), lowered
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


_SIGNATURE = re.compile(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", re.S)
# what the emulation test runs on the host emulation (TestCuda's tests, by -k) and how many
# (kw1: label smoothing and class weights; Adam-kw0: Adam with weight decay)
EMULATED = ("TestCuda and (test_a_training_step_matches_the_cpu or test_null_launch or "
            "(test_fused_cross_entropy_matches_the_cpu and kw1) or (test_fused_optimizer_steps and Adam-kw0) "
            "or test_a_group_steps)")
EMULATED_COUNT = 8


# sm_80 (A100) and sm_90 (H100, H200), two ways. ``compute_``: every instantiation through
# NVRTC's front end (``--fdevice-syntax-only``), with __CUDA_ARCH__ set for each: the
# template instantiated and type-checked, its warnings and errors, its lowered name; under a
# second each file. ``sm_``: NVVM's code generation and ptxas (a cubin: registers, shared
# memory, the inline PTX's own errors) on a sample, each kernel once per element type it is
# instantiated for on sm_90 (so each dtype's branches and asm reach the assembler), once per
# kernel on sm_80. Generating code for every instantiation (993, most of them elementwise)
# would cost minutes of CI for what the sample already reaches.
NVRTC_TARGETS = ("compute_80", "compute_90", "sm_80", "sm_90")
CU_FILES = sorted(f[:-3] for f in os.listdir(REPO / "stage4_gpu" / "cuda" / "kernels") if f.endswith(".cu"))
# the arch-specific targets (kernels.ARCH: wgmma's sm_90a), for the files whose kernels need
# one: those kernels' instances compiled to PTX (which must hold the instruction, so the
# arch-specific path is the one compiled) and to a cubin
ARCH_TARGETS = (("hgemm_ladder", "compute_90a"), ("hgemm_ladder", "sm_90a"))


def _sample(launched, per_dtype):
    """One instantiation of each kernel of ``launched`` ((kernel, name expression) pairs),
    or of each kernel and first template argument (its element type) where ``per_dtype``."""
    def key(kernel, instance):
        return (kernel, instance.partition("<")[2].split(",")[0].rstrip(">")) if per_dtype else kernel
    return sorted({key(k, i): i for k, i in reversed(launched)}.values())


@pytest.mark.parametrize("name,arch", [(n, a) for n in CU_FILES for a in NVRTC_TARGETS] + list(ARCH_TARGETS))
def test_every_kernel_instance_compiles_with_nvrtc(name, arch):
    """Each .cu file as the runtime hands it to NVRTC (headers pasted in, the runtime's
    options), with the instantiations the runtime can launch added as name expressions,
    compiled with no GPU by NVRTC from its wheel: any error or warning fails, and each
    instantiation must have a lowered name (and, in a cubin, its symbol). An arch-specific
    target compiles the kernels of that target only."""
    nvrtc = _nvrtc()
    kernels = _stage4_module("cuda.kernels")
    runtime = _stage4_module("cuda.runtime")
    launched = sorted({(k, i) for k, i in kernels.instances() if kernels.KERNELS[k].file == name})
    assert launched, f"{name}.cu has no instantiation the runtime launches"
    specific = arch.endswith("a")
    if specific:
        assert {(kernels.KERNELS[k].file, kind + a) for k, (a, _) in kernels.ARCH.items()
                for kind in ("compute_", "sm_")} == set(ARCH_TARGETS)
        launched = [(k, i) for k, i in launched if kernels.ARCH.get(k, ("",))[0] == arch.split("_")[1]]
    front_end = arch.startswith("compute_") and not specific
    instances = [i for _, i in launched] if front_end or specific else _sample(launched, per_dtype=arch == "sm_90")
    options = (*runtime.OPTIONS, *(("--fdevice-syntax-only",) if front_end else ()), f"--gpu-architecture={arch}")
    log, binary, lowered = _nvrtc_compile(nvrtc, name, kernels.source(name), instances, options)
    assert binary is not None, f"{name}.cu does not compile for {arch}:\n{log[-4000:]}"
    assert "warning" not in log.lower(), f"{name}.cu compiles for {arch} with warnings:\n{log[-4000:]}"
    if not front_end:
        missing = [i for i, symbol in zip(instances, lowered) if symbol.encode() not in binary]
        assert not missing, f"{name}.cu: no kernel in the {arch} binary for {missing}"
    if specific and arch.startswith("compute_"):
        for ty in (b"f16.f16", b"bf16.bf16"):  # each dtype's
            assert b"wgmma.mma_async.sync.aligned.m64n128k16.f32." + ty in binary, f"{name}.cu: no {ty} wgmma"


@pytest.mark.device("cuda")
@pytest.mark.xdist_group("cuda")
class TestCuda(OnEveryDevice):
    """The cuda device: its kernels and launch layer checked without a GPU; the rest on
    every stage under test that has a usable GPU (or the emulation), once each."""

    DLPACK_DEVICE = (2, 0)  # kDLCUDA
    GROUP_STEP = True

    @pytest.mark.parametrize("src", ["bool", "int32", "int64", "float32", "float64"])
    @pytest.mark.parametrize("dst", ["bool", "int32", "int64", "float32", "float64"])
    def test_casts_match_the_cpu(self, gpu, dev, same, src, dst):
        check_cast(gpu, same, dev, src, dst)

    # ------------------------------------------------------------ without a GPU: static checks

    def test_every_kernel_file_is_launched_and_every_launch_has_a_file(self):
        kernels, files = _kernel_files()
        used = {k.file for k in kernels.KERNELS.values()}
        assert used == set(files), f"unlaunched files {set(files) - used}, missing files {used - set(files)}"
        named = defaultdict(set)
        for kernel, instance in kernels.instances():
            assert kernel in kernels.KERNELS, kernel
            assert instance == kernel or instance.startswith(kernel + "<"), (kernel, instance)
            named[kernel].add(instance)
        assert set(named) == set(kernels.KERNELS), set(kernels.KERNELS) - set(named)

    def test_every_launched_kernel_exists_with_the_declared_arguments(self):
        """kernels.KERNELS (what runtime.launch checks every launch against) matches the
        ``__global__`` signatures in the .cu files: the name, the number of parameters and
        the kind of each."""
        kernels, files = _kernel_files()
        found = {}
        for f in files:
            with open(os.path.join(kernels.DIR, f + ".cu"), encoding="utf-8") as src:
                for name, params in _SIGNATURE.findall(src.read()):
                    assert name not in found, f"kernel {name} defined twice"
                    found[name] = (f, tuple(_kind(p) for p in params.split(",")))
        for name, spec in kernels.KERNELS.items():
            assert name in found, f"{name} is launched but defined in no .cu file"
            assert found[name] == (spec.file, spec.args), (name, found[name], spec)

    def test_the_python_side_launches_only_kernels_of_the_table(self):
        kernels, _ = _kernel_files()
        folder = os.path.dirname(kernels.__file__)
        launched = set()
        for f in os.listdir(folder):
            if f.endswith(".py"):
                with open(os.path.join(folder, f), encoding="utf-8") as src:
                    launched |= set(re.findall(r'launch\(\s*"(\w+)"', src.read()))
        ladder = _stage4_module("cuda.ladder")
        launched |= {t.kernel for t in ladder.TIERS.values()}
        assert launched and launched <= set(kernels.KERNELS), launched - set(kernels.KERNELS)

    def test_the_compiled_launcher_refuses_what_would_corrupt_a_launch(self):
        """A launch argument's bytes are read as the kernel's parameter type, so the compiled
        launcher converts each to its kind's C type and refuses, before anything is queued or
        counted: a wrong count, a host object where a device pointer belongs, a float for an
        integer, more parameter words than common.cuh's struct holds, a malformed tensor list.
        Null mode here: the launches are counted, nothing runs."""
        launch = _stage4_module("_launch")
        kernels, _ = _kernel_files()
        with open(os.path.join(kernels.DIR, "common.cuh"), encoding="utf-8") as f:
            limits = dict(re.findall(r"#define (\w+_MAX|LIST_\w+) (\d+)", f.read()))
        for kind, define in (("params", "PARAMS_MAX"), ("hyper", "HYPER_MAX"), ("tensors", "LIST_MAX"),
                             ("buffers", "LIST_BUFFERS"), ("constants", "LIST_CONSTANTS")):
            assert launch.LIMITS[kind] == int(limits[define]), kind
        launcher = launch.Launcher(0, "null")
        k = launch.Kernel(launcher, "cross_entropy<int>", kernels.KERNELS["cross_entropy"].args, 0, 0)
        args = [[9, 40], 1 << 40, 2, 3, 4, 5, 6, 7, -100, 0.1]
        k.launch(3, 256, args)
        k.launch(10 ** 12, 256, tuple(args))  # past MAX_BLOCKS: the kernels loop past the grid
        k.launch_grid((2, 3), (16, 16), args)
        assert launcher.launches == 3
        refused = [(TypeError, "takes 10 arguments, got 9", args[:-1]),
                   (TypeError, "argument 1 is a pointer", [[9, 40], np.zeros(3)] + args[2:]),
                   (TypeError, "float", args[:8] + [-100.5, 0.1]),
                   (TypeError, "float", [[9, 40.0]] + args[1:]),
                   (ValueError, "65 parameter words, over the 64", [list(range(65))] + args[1:])]
        for error, message, wrong in refused:
            with pytest.raises(error, match=message):
                k.launch(3, 256, wrong)
        k.launch(0, 256, args)  # nothing to do
        assert launcher.launches == 3
        self._refuses_a_malformed_tensor_list(launch, kernels, launcher)
        assert launcher.launches == 5
        with pytest.raises(ValueError, match="no launch entry"):
            launch.Kernel(launch.Launcher(0), "fill<float>", kernels.KERNELS["fill"].args, 0, 0)
        with pytest.raises(ValueError, match="'driver' or 'null'"):
            launcher.mode = "nothing"

    @staticmethod
    def _refuses_a_malformed_tensor_list(launch, kernels, launcher):
        """A multi-tensor launch's list (one ``(elements, end block, addresses, constants)``
        row per tensor, packed into common.cuh's TensorList) is refused whole where it would
        not fill the struct as the kernel reads it: the wrong number of tensors, rows of
        another shape or of different lengths, more buffers or constants than an entry
        holds, a negative size, ends that decrease, a host object or a float in a row."""
        step = launch.Kernel(launcher, "adam_step", kernels.KERNELS["adam_step"].args, 0, 0)
        most = launch.LIMITS["tensors"]
        flags, hyper, addresses = [4096, 0, 0, 0], [0.1] * 7, [1 << 40, 2, 3, 4, 5]
        rows = [(33, t + 1, addresses, [0.5, 0.1]) for t in range(most + 1)]
        before = launcher.launches
        step.launch(1, 256, [flags, hyper, rows[:1]])
        step.launch(most, 256, [flags, hyper, rows[:most]])
        assert launcher.launches == before + 2
        refused = [(ValueError, "at most 12 hyperparameters", [flags, [0.1] * 13, rows[:1]]),
                   (ValueError, f"takes 1 to {most} tensors a launch, got 0", [flags, hyper, []]),
                   (ValueError, f"takes 1 to {most} tensors a launch, got {most + 1}", [flags, hyper, rows]),
                   (ValueError, re.escape("tensor 0 is (elements, end, addresses, constants), not 3 items"),
                    [flags, hyper, [rows[0][:3]]]),
                   (ValueError, "tensor 1 has 4 buffers and 2 constants, tensor 0 5 and 2",
                    [flags, hyper, [rows[0], (33, 2, addresses[:4], [0.5, 0.1])]]),
                   (ValueError, "tensor 1 has 5 buffers and 1 constants, tensor 0 5 and 2",
                    [flags, hyper, [rows[0], (33, 2, addresses, [0.5])]]),
                   (ValueError, "at most 5 buffers and 2 constants, got 6 and 2",
                    [flags, hyper, [(33, 1, addresses + [6], [0.5, 0.1])]]),
                   (ValueError, "at most 5 buffers and 2 constants, got 5 and 3",
                    [flags, hyper, [(33, 1, addresses, [0.5, 0.1, 0.2])]]),
                   (ValueError, "tensor 1 has 33 elements and ends at block 0",
                    [flags, hyper, [rows[0], (33, 0, addresses, [0.5, 0.1])]]),
                   (ValueError, "tensor 0 has -1 elements", [flags, hyper, [(-1, 1, addresses, [0.5, 0.1])]]),
                   (TypeError, "argument 2 is a pointer",
                    [flags, hyper, [(33, 1, addresses[:4] + [np.zeros(3)], [0.5, 0.1])]]),
                   (TypeError, "float", [flags, hyper, [(33.0, 1, addresses, [0.5, 0.1])]])]
        for error, message, wrong in refused:
            with pytest.raises(error, match=message):
                step.launch(1, 256, wrong)
        assert launcher.launches == before + 2

    def test_the_kernels_run_on_the_host_emulation_and_match_the_cpu(self):
        """The kernels' logic and the whole launch path (the compiled launcher calling an
        entry with cuLaunchKernel's signature, every argument by value) on the host
        emulation, in a subprocess with ``tools/cuda_on_host`` in CuPy's place: a training
        step, cross-entropy with label smoothing and weights (scalars by value), an Adam
        step (its hyperparameters by value) and the multi-tensor steps of SGD and Adam (a
        group's tensors by value) against the CPU, and the null launch mode."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(REPO / "tools" / "cuda_on_host"), str(REPO), os.environ.get("PYTHONPATH")) if p))
        env.pop("STAGEGRAD_CUDA_LAUNCH", None)
        r = subprocess.run([sys.executable, "-m", "pytest", "common_tests/test_gpu_devices.py", "-p",
                            "no:cacheprovider", "-n", "0", "--stages=stage4_gpu", "-k", EMULATED],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
        counts = dict((word, int(n)) for n, word in re.findall(r"(\d+) (passed|skipped|failed)", r.stdout))
        assert counts == {"passed": EMULATED_COUNT}, r.stdout[-2000:]

    # ------------------------------------------------------------ without a GPU: the refusals

    def test_without_a_gpu_cuda_is_refused_with_the_reason(self, sg):
        if sg.cuda.is_available():
            pytest.skip(f"a CUDA GPU is usable here ({sg.cuda.get_device_name()}): nothing is refused")
        error = importlib.import_module(sg.__name__ + ".device").DeviceError
        reason = sg.cuda.unavailable_reason()
        assert reason.startswith("cuda: ") and sg.cuda.device_count() == 0
        attempts = [lambda: sg.zeros(2, device="cuda"), lambda: sg.tensor([1.0]).cuda(),
                    lambda: sg.tensor([1.0]).to("cuda:0"), lambda: sg.ones(2, device=sg.device("cuda", 0)),
                    lambda: sg.set_default_device("cuda")]
        for attempt in attempts:
            with pytest.raises(error, match=r"'cuda(:0)?' is not available: no CUDA GPU") as e:
                attempt()
            assert reason in str(e.value) and "CPU" in str(e.value)
        assert sg.get_default_device() == sg.device("cpu")
        with pytest.raises(AssertionError, match="cuda.synchronize: no CUDA device"):
            sg.cuda.synchronize()
        sg.cuda.empty_cache()  # a program may call it unconditionally, as on PyTorch's CPU build
        assert sg.cuda.memory_allocated() == 0

    # ------------------------------------------------------------ on a GPU

    def test_float64_lives_on_the_device(self, gpu, same):
        """CUDA has 64-bit floats (WGSL has none): float64 tensors compute here, in float64."""
        rng = np.random.default_rng(12)
        x = gpu.from_numpy(rng.standard_normal((7, 9)))
        y = gpu.from_numpy(rng.standard_normal((9, 4)))
        g = x.to("cuda")
        assert g.dtype == gpu.float64
        same(g @ y.to("cuda"), x @ y, rtol=1e-12, atol=1e-12)
        same(g.exp().sum(1), x.exp().sum(1), rtol=1e-12, atol=1e-12)
        same(g.softmax(1), x.softmax(1), rtol=1e-12, atol=1e-12)
        same(g.to(gpu.float32), x.to(gpu.float32))
        same(gpu.ones(3, device="cuda").double(), gpu.ones(3).double())

    @pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
                                         ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True)),
                                         ("Adam", dict(lr=0.01, weight_decay=0.1)),
                                         ("AdamW", dict(lr=0.01, amsgrad=True))])
    def test_a_group_steps_in_one_launch_per_tensor_list_and_matches_the_cpu(self, gpu, name, kw):
        """Multi-tensor apply: an optimizer's step of a group is one launch, whatever the
        parameters' sizes (an MLP's, one over several blocks), and one per LIST_MAX tensors
        for a larger group; each matches the cpu stage's step to float32 rounding. The first
        step leaves one parameter without a gradient, so tensors of one launch differ in
        their own constants: Adam's bias corrections from each one's step count, SGD's
        momentum buffer that starts a step later."""
        most = _stage4_module("_launch").LIMITS["tensors"]
        rng = np.random.default_rng(5)
        mlp = [(130, 70), (130,), (3, 130), (3,), (1,)]
        for shapes, launches in ((mlp, 1), ([(3,)] * (most + 2), 2)):
            arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
            grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]
            results = []
            for device in ("cpu", "cuda"):
                ps = [gpu.from_numpy(a.copy()).to(device).requires_grad_(True) for a in arrays]
                opt = getattr(gpu.optim, name)(ps, **kw)
                counts = []
                for step, gs in enumerate(grads):
                    for k, (p, g) in enumerate(zip(ps, gs)):
                        p.grad = None if step == k == 0 else gpu.from_numpy(g).to(device)
                    before = _launches(gpu, "cuda")
                    opt.step()
                    counts.append(_launches(gpu, "cuda") - before)
                results.append([p.detach().cpu().numpy() for p in ps])
            assert counts == [launches] * 3
            for a, b in zip(*results):
                np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)

    def test_null_launches_are_counted_and_compute_nothing(self, gpu):
        """In null mode a launch is counted and nothing runs: a training step makes exactly
        the launches it makes in driver mode and changes no parameter, an in-place write
        leaves the memory as it was, and a read back gives zeros."""
        def step(model, opt, x, y):
            opt.zero_grad()
            gpu.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        gpu.manual_seed(0)
        model = gpu.nn.Sequential(gpu.nn.Linear(12, 16), gpu.nn.ReLU(), gpu.nn.Linear(16, 3)).to("cuda")
        opt = gpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = gpu.randn(8, 12).to("cuda"), gpu.tensor([0, 1, 2, 0, 1, 2, 0, 1]).to("cuda")
        step(model, opt, x, y)  # the momentum buffers exist from here on
        counts = []
        for mode in ("driver", "null"):
            before_params = [p.detach().cpu().numpy() for p in model.parameters()]  # read in driver mode
            gpu.cuda._set_launch_mode(mode)
            try:
                before = gpu.cuda._launch_count()
                step(model, opt, x, y)
                counts.append(gpu.cuda._launch_count() - before)
                if mode == "null":
                    assert gpu.full((5,), 7.0, device="cuda").tolist() == [0.0] * 5  # a read back
            finally:
                gpu.cuda._set_launch_mode("driver")
        assert counts[0] == counts[1] > 10
        for p, was in zip(model.parameters(), before_params):
            assert p.detach().cpu().numpy().tolist() == was.tolist()
        target = gpu.full((4,), 7.0, device="cuda")
        gpu.cuda._set_launch_mode("null")
        try:
            before = gpu.cuda._launch_count()
            target.copy_(gpu.arange(4.0, device="cuda"))
            target.add_(1.0)
            assert gpu.cuda._launch_count() - before >= 2
        finally:
            gpu.cuda._set_launch_mode("driver")
        assert target.tolist() == [7.0] * 4

    def test_moves_between_cuda_and_webgpu_go_through_the_host_and_mixing_names_both(self, gpu):
        if not gpu.webgpu.is_available():
            pytest.skip(f"no webgpu device: {gpu.webgpu.unavailable_reason()}")
        x = gpu.randn(3, 4)
        w = x.to("webgpu")
        c = w.to("cuda")
        assert c.device == gpu.device("cuda", 0) and c.tolist() == x.tolist()
        assert c.to("webgpu").tolist() == x.tolist()
        with pytest.raises(RuntimeError, match="add.*(cuda:0.*webgpu:0|webgpu:0.*cuda:0)"):
            c + w
        with pytest.raises(RuntimeError, match="matmul.*(cuda:0.*webgpu:0|webgpu:0.*cuda:0)"):
            c @ w.T

    def test_sort_of_rows_longer_than_shared_memory_matches_the_cpu(self, gpu, same):
        """Rows up to 2048 sort in shared memory (bitonic); longer ones by rank: both stable."""
        rng = np.random.default_rng(13)
        x = gpu.from_numpy(rng.integers(0, 50, (3, 3000)).astype(np.float32))
        for n in (3000, 2048, 1000, 1):
            for descending in (False, True):
                row = x[:, :n]
                got, want = row.to("cuda").sort(1, descending=descending), row.sort(1, descending=descending)
                same(got.values, want.values)
                same(got.indices, want.indices)

    @pytest.mark.parametrize("m,n,k", [(1, 1, 1), (127, 65, 33), (128, 128, 128), (300, 260, 68), (2, 3, 5)])
    def test_every_sgemm_tier_matches_cublas(self, gpu, m, n, k):
        """Each tier of the ladder on sizes that are not multiples of its tiles, with a batch
        of two, against cuBLAS (CuPy's matmul) and a float64 product on the host."""
        import cupy
        ladder = importlib.import_module(gpu.__name__ + ".cuda.ladder")
        rng = np.random.default_rng(14)
        a = rng.standard_normal((2, m, k)).astype(np.float32)
        b = rng.standard_normal((2, k, n)).astype(np.float32)
        da, db = cupy.asarray(a), cupy.asarray(b)
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(cupy.asnumpy(ladder.cublas(da, db)), want, rtol=1e-4, atol=1e-4)
        for tier in ladder.TIERS:
            if not ladder.fits(tier, m, n, k, da, db):
                assert ladder.TIERS[tier].vector and (k % 4 or n % 4)
                with pytest.raises(ValueError, match="multiples of 4"):
                    ladder.sgemm(tier, da, db)
                continue
            got = cupy.asnumpy(ladder.sgemm(tier, da, db))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=tier)

    def test_every_autotuned_configuration_matches_cublas(self, gpu):
        """Each instantiated tile configuration of the autotuned tier, forced, on sizes that
        are not multiples of any tile (K and N multiples of 4, as the float4 tiers need), with
        a batch of two."""
        import cupy
        ladder = importlib.import_module(gpu.__name__ + ".cuda.ladder")
        rng = np.random.default_rng(16)
        a = rng.standard_normal((2, 70, 36)).astype(np.float32)
        b = rng.standard_normal((2, 36, 52)).astype(np.float32)
        want = a.astype(np.float64) @ b.astype(np.float64)
        da, db = cupy.asarray(a), cupy.asarray(b)
        for config in ladder.CONFIGS:
            got = cupy.asnumpy(ladder.sgemm("autotuned", da, db, config=config))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=config.instance)

    @pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
    @pytest.mark.parametrize("m,n,k", [(70, 50, 36), (72, 56, 40), (1, 3, 2), (70, 130, 100)])
    def test_every_tensor_core_tier_matches_a_wide_product(self, gpu, dtype, m, n, k):
        """Each tensor-core tier, float16 and bfloat16, with a batch of two, on sizes that are
        not multiples of the tiles: K and N not multiples of 8 (every copy element by element)
        and multiples of 8 (the 16-byte copies, edges element by element); the last, tiles
        and K chunks of every tier more than one. The oracle: the
        float64 product of the rounded operands; float32 accumulation and one rounding to the
        dtype keep each element within one of its ulps."""
        import cupy
        ladder = importlib.import_module(gpu.__name__ + ".cuda.ladder")
        rng = np.random.default_rng(17)
        a32 = rng.standard_normal((2, m, k)).astype(np.float32)
        b32 = rng.standard_normal((2, k, n)).astype(np.float32)
        if dtype == "float16":
            a, b = a32.astype(np.float16), b32.astype(np.float16)
            wide, ctype, ulp = (lambda x: np.asarray(x).astype(np.float64)), "half_t", 2.0 ** -10
        else:  # bfloat16 as its bits: float32's top half, rounded to nearest even
            def bits(x):
                u = x.view(np.uint32).astype(np.uint64)
                return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            a, b = bits(a32), bits(b32)
            wide = lambda x: (np.asarray(x).astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # noqa: E731
            ctype, ulp = "bf16_t", 2.0 ** -7
        want = wide(a) @ wide(b)
        for tier in ladder.TENSOR_TIERS:
            out = cupy.empty((2, m, n), dtype=a.dtype)
            why = ladder.refusal(tier)  # wgmma off sm_90 (the emulation runs its twin)
            if why is not None:
                assert tier == "wgmma" and "9.0" in why, why
                with pytest.raises(ValueError, match="needs a compute capability 9.0"):
                    ladder.tensor_core(tier, cupy.asarray(a), cupy.asarray(b), out, ctype)
                continue
            ladder.tensor_core(tier, cupy.asarray(a), cupy.asarray(b), out, ctype)
            np.testing.assert_allclose(wide(cupy.asnumpy(out)), want, rtol=ulp, atol=1e-3, err_msg=tier)

    def test_matmul_engine_takes_any_float32_shape(self, gpu, same):
        """float32 products run the ladder's best tier, or the general tier where K or N is not
        a multiple of 4; every other dtype the strided kernel."""
        rng = np.random.default_rng(15)
        for shape_a, shape_b in (((5, 7), (7, 9)), ((3, 64, 32), (3, 32, 16)), ((130, 8), (8, 132))):
            a = gpu.from_numpy(rng.standard_normal(shape_a).astype(np.float32))
            b = gpu.from_numpy(rng.standard_normal(shape_b).astype(np.float32))
            same(a.to("cuda") @ b.to("cuda"), a @ b, rtol=1e-5, atol=1e-5)
            same(a.to("cuda") @ b.to("cuda").transpose(-1, -2).contiguous().transpose(-1, -2), a @ b,
                 rtol=1e-5, atol=1e-5)
        i = gpu.arange(12, dtype=gpu.int64).reshape(3, 4)
        same(i.to("cuda") @ i.T.to("cuda"), i @ i.T)

    def test_the_cuda_namespace_answers_for_the_gpu(self, gpu):
        assert gpu.cuda.device_count() == 1 and gpu.cuda.current_device() == 0
        # the usual device line: a tensor made on "cuda" reports index 0, as PyTorch's does
        assert gpu.zeros(2, device=gpu.device("cuda" if gpu.cuda.is_available() else "cpu")).device == (
            gpu.device("cuda", 0))
        gpu.cuda.set_device(0)
        assert isinstance(gpu.cuda.get_device_name(), str) and gpu.cuda.get_device_name()
        major, minor = gpu.cuda.get_device_capability()
        assert major >= 3
        x = gpu.ones(1 << 20, device="cuda")
        gpu.cuda.synchronize()
        assert gpu.cuda.memory_allocated() >= x.numel() * 4
        free, total = gpu.cuda.mem_get_info()
        assert 0 < free <= total
        del x
        gpu.cuda.empty_cache()
        with pytest.raises(RuntimeError, match="'cuda:1' does not exist"):
            gpu.zeros(1, device="cuda:1")

    def test_the_cuda_ladder_command_checks_and_times_every_tier(self, tmp_path):
        """``stagegrad cuda-ladder``: without a GPU it says why; with one, every tier (the
        tensor-core kernel's too) agrees with cuBLAS and has a positive time, and each
        fraction of cuBLAS is the ratio of the times; every convolution pass, on each rung of
        the ladder, agrees with PyTorch's and is timed beside cuDNN's."""
        r = subprocess.run([sys.executable, "-m", "stagegrad", "cuda-ladder", "--sizes", "64,100",
                            "--budget", "0.2", "--conv", "quick", "--out", str(tmp_path)],
                           cwd=REPO, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        report = json.loads((tmp_path / "cuda_ladder.json").read_text())
        text = (tmp_path / "cuda_ladder.md").read_text()
        if not report["available"]:
            assert report["reason"].startswith("cuda: ") and report["reason"] in text
            return
        tiers = [row for row in report["rows"] if row["kind"] == "tier"]
        # the SGEMM tiers, and the tensor-core tiers in float16 and bfloat16 but wgmma off sm_90
        # (the host emulation runs its twin)
        skipped = report["skipped"]
        assert set(skipped) <= {"wgmma"} and not (skipped and report["capability"] == [9, 0]), skipped
        assert all(f"{tier}: {why}" in text and "9.0" in why for tier, why in skipped.items())
        assert len(tiers) == 2 * (10 + 2 * (5 - len(skipped)))
        for row in report["rows"]:
            half = row["dtype"] != "float32"
            assert row["error"] is not None and row["error"] <= (1e-2 if half else 1e-4), row
            assert row["seconds"] > 0
            cublas = next(p for p in report["rows"]  # the 2-byte floats against cuBLAS's float16
                          if p["size"] == row["size"] and p["label"] == "cuBLAS (CuPy)"
                          and (p["dtype"] == "float16") == half)
            assert row["of_cublas"] == pytest.approx(cublas["seconds"] / row["seconds"])
        assert report["gpu"] in text
        if "conv_reason" in report:
            assert report["conv_reason"] in text
            return
        rungs = _stage4_module("cuda.conv").RUNGS
        assert len(report["conv"]) == 2 * 2 * 3 * (len(rungs) + 1)  # shapes, dtypes, passes, each rung and cuDNN
        assert [row["label"] for row in report["conv"][:len(rungs) + 1]] == [*rungs, "cuDNN (PyTorch)"]
        for row in report["conv"]:
            assert row["error"] <= (1e-2 if row["dtype"] == "float16" else 1e-4), row
            assert row["seconds"] > 0 and row["of_cudnn"] > 0
