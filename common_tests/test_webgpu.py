"""The webgpu device against the CPU: every elementwise op, cast, reduction, product and
movement primitive computed by the project's WGSL kernels and compared with NumPy (and
with the same stage's CPU kernels, which the rest of the suite checks); moves between
devices, the errors for mixed devices and for dtypes WGSL lacks, and a training step.

In CI the device is Mesa's software Vulkan driver (lavapipe): the same kernels, compiled
for the CPU. The tests run once on each stage under test that has the device (the
``device`` marker), not on stages without devices nor on the device pins; a machine
without a Vulkan, Metal or D3D12 driver skips with the adapter's reason.
"""
import numpy as np
import pytest

from .oracle import assert_close

# on the stages that have the device, once each: the tests name each tensor's device
pytestmark = [pytest.mark.device("webgpu"), pytest.mark.xdist_group("webgpu")]

SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.7, 1e-7, -1e-6, 20.0, -20.0, 100.0,
                    -100.0, np.inf, -np.inf, np.nan, 0.999, -0.999, 3.0], dtype=np.float32)


@pytest.fixture
def gpu(sg):
    if not sg.webgpu.is_available():
        pytest.skip(sg.webgpu.unavailable_reason())
    sg.set_default_device(None)  # these tests name each tensor's device (the CPU is the oracle)
    return sg


def on(sg, array):
    return sg.from_numpy(np.ascontiguousarray(array)).to("webgpu")


def same(sg, gpu_result, cpu_result, rtol=2e-6, atol=1e-6):
    assert gpu_result.device == sg.device("webgpu", 0)
    assert gpu_result.dtype == cpu_result.dtype
    assert_close(gpu_result.cpu().numpy(), cpu_result.numpy(), rtol=rtol, atol=atol)


UNARY_FLOAT = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
               "sign", "reciprocal", "erf", "log1p", "floor", "ceil", "round", "tan", "asin",
               "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "expm1", "log2",
               "log10", "trunc", "erfc", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
               "logical_not"]
# tan near its poles divides by a small cosine: a last-bit difference there is 1e-5 of the result
LOOSE = {"tan": 1e-5}


@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_unary_float_ops_match_the_cpu(gpu, op):
    x = np.concatenate([SPECIAL, np.random.default_rng(0).standard_normal(60).astype(np.float32)])
    cpu = gpu.from_numpy(x)
    got = getattr(gpu, op)(cpu.to("webgpu"))
    same(gpu, got, getattr(gpu, op)(cpu), rtol=LOOSE.get(op, 4e-6), atol=1e-6)


@pytest.mark.parametrize("op", ["gelu", "silu"])
def test_activations_match_the_cpu(gpu, op):
    x = gpu.from_numpy(np.concatenate([SPECIAL, np.linspace(-8, 8, 101, dtype=np.float32)]))
    f = getattr(gpu.nn.functional, op)
    same(gpu, f(x.to("webgpu")), f(x), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", ["neg", "abs", "sign", "bitwise_not", "logical_not"])
def test_unary_integer_ops_match_the_cpu(gpu, op, dtype):
    x = gpu.from_numpy(np.array([0, 1, -1, 7, -8, 2**30, -2**30, 123456], dtype=dtype))
    same(gpu, getattr(gpu, op)(x.to("webgpu")), getattr(gpu, op)(x))


BINARY_FLOAT = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "floordiv",
                "remainder", "atan2", "copysign", "fmod", "hypot", "eq", "ne", "lt", "le", "gt",
                "ge", "logical_and", "logical_or"]


def binary(sg, op):
    """The public function of ``op`` (floor division is the ``//`` operator)."""
    return (lambda a, b: a // b) if op == "floordiv" else getattr(sg, op)


@pytest.mark.parametrize("op", BINARY_FLOAT)
def test_binary_float_ops_broadcast_and_match_the_cpu(gpu, op):
    a = np.repeat(SPECIAL[:, None], 4, 1)
    b = np.array([2.0, -0.5, 0.0, np.nan], dtype=np.float32)  # broadcast along rows
    ca, cb = gpu.from_numpy(a), gpu.from_numpy(b)
    f = binary(gpu, op)
    same(gpu, f(ca.to("webgpu"), cb.to("webgpu")), f(ca, cb), rtol=LOOSE.get(op, 4e-6))
    same(gpu, f(ca.to("webgpu").T, cb[:, None].to("webgpu")), f(ca.T, cb[:, None]),
         rtol=LOOSE.get(op, 4e-6))  # a transposed operand is read through its strides


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "pow", "maximum", "minimum", "floordiv",
                                "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
                                "bitwise_left_shift", "bitwise_right_shift", "eq", "lt", "ge"])
def test_binary_integer_ops_match_the_cpu(gpu, op, dtype):
    rng = np.random.default_rng(1)
    a = rng.integers(-50, 50, (6, 5)).astype(dtype)
    b = rng.integers(1, 9, (5,)).astype(dtype)
    if op in ("fmod", "remainder", "floordiv"):
        b[1] = -b[1]
    ca, cb = gpu.from_numpy(a), gpu.from_numpy(b)
    f = binary(gpu, op)
    same(gpu, f(ca.to("webgpu"), cb.to("webgpu")), f(ca, cb))


def test_integer_division_by_zero_is_refused_as_on_the_cpu(gpu):
    a, b = gpu.tensor([4, 5]), gpu.tensor([1, 0])
    with pytest.raises(ZeroDivisionError):
        a // b
    with pytest.raises(ZeroDivisionError):
        a.to("webgpu") // b.to("webgpu")
    with pytest.raises(ValueError, match="negative"):
        gpu.pow(a.to("webgpu"), gpu.tensor([2, -1]).to("webgpu"))


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "eq", "ne",
                                "bitwise_and", "bitwise_or", "bitwise_xor", "add", "mul"])
def test_bool_ops_match_the_cpu(gpu, op):
    a = gpu.tensor([[True, False, True, False]])
    b = gpu.tensor([[True], [False]])
    same(gpu, getattr(gpu, op)(a.to("webgpu"), b.to("webgpu")), getattr(gpu, op)(a, b))


def test_python_numbers_and_cpu_scalars_meet_device_tensors(gpu):
    x = gpu.from_numpy(SPECIAL[:8])
    g = x.to("webgpu")
    same(gpu, g * 3 + 1, x * 3 + 1)
    same(gpu, g / gpu.tensor(2.0), x / 2.0)  # a zero-dim CPU tensor joins, as in PyTorch
    same(gpu, gpu.where(g > 0, g, gpu.zeros(8, device="webgpu")), gpu.where(x > 0, x, gpu.zeros(8)))


@pytest.mark.parametrize("src", ["bool", "int32", "int64", "float32"])
@pytest.mark.parametrize("dst", ["bool", "int32", "int64", "float32"])
def test_casts_match_the_cpu(gpu, src, dst):
    x = gpu.from_numpy(np.array([0, 1, -2, 3.75, -4.5, 100], dtype=np.float32)).to(
        getattr(gpu, src))
    same(gpu, x.to("webgpu").to(getattr(gpu, dst)), x.to(getattr(gpu, dst)))


def test_float_to_int_refuses_nan_as_the_cpu_does(gpu):
    x = gpu.tensor([1.0, float("nan")])
    with pytest.raises(ValueError, match="nan"):
        x.to("webgpu").to(gpu.int64)


@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin", "any", "all", "mean"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2), -1])
def test_reductions_match_the_cpu(gpu, op, dim):
    x = np.random.default_rng(2).standard_normal((5, 70, 3)).astype(np.float32) * 0.3 + 1
    cx = gpu.from_numpy(x)
    if op in ("any", "all"):
        cx = cx > 1
    f = getattr(gpu, op)
    args = {} if dim is None else {"dim": dim}
    same(gpu, f(cx.to("webgpu"), **args), f(cx, **args), rtol=1e-5, atol=1e-5)
    same(gpu, f(cx.to("webgpu").transpose(0, 2), **args), f(cx.transpose(0, 2), **args),
         rtol=1e-5, atol=1e-5)


def test_reductions_propagate_nan_and_handle_integers(gpu):
    x = gpu.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, -1.0]])
    same(gpu, x.to("webgpu").amax(1), x.amax(1))
    same(gpu, x.to("webgpu").argmax(1), x.argmax(1))
    same(gpu, x.to("webgpu").argmin(1), x.argmin(1))
    i = gpu.tensor([[3, 9, 9, -2], [7, 7, 1, 7]], dtype=gpu.int32)
    same(gpu, i.to("webgpu").sum(1), i.sum(1))
    same(gpu, i.to("webgpu").argmax(1), i.argmax(1))  # the first of equal maxima
    same(gpu, i.to("webgpu").amin(0), i.amin(0))


def test_argmax_over_many_elements(gpu):
    x = gpu.from_numpy(np.random.default_rng(3).standard_normal((3, 5000)).astype(np.float32))
    same(gpu, x.to("webgpu").argmax(1), x.argmax(1))
    same(gpu, x.to("webgpu").argmin(), x.argmin())


@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (4, 5)), ((33, 17), (17, 40)),
                                              ((2, 3, 20, 18), (2, 3, 18, 7)), ((1, 1), (1, 1)),
                                              ((64, 64), (64, 64))])
def test_matmul_matches_the_cpu(gpu, shape_a, shape_b):
    rng = np.random.default_rng(4)
    a = gpu.from_numpy(rng.standard_normal(shape_a).astype(np.float32))
    b = gpu.from_numpy(rng.standard_normal(shape_b).astype(np.float32))
    same(gpu, a.to("webgpu") @ b.to("webgpu"), a @ b, rtol=1e-5, atol=1e-5)
    bt = b.transpose(-1, -2).contiguous()  # a transposed view, read through its strides
    same(gpu, a.to("webgpu") @ bt.to("webgpu").transpose(-1, -2), a @ b, rtol=1e-5, atol=1e-5)


def test_integer_and_empty_matmul(gpu):
    a = gpu.arange(12).reshape(3, 4)
    same(gpu, a.to("webgpu") @ a.T.to("webgpu"), a @ a.T)
    e = gpu.zeros(3, 0)
    same(gpu, e.to("webgpu") @ gpu.zeros(0, 2, device="webgpu"), e @ gpu.zeros(0, 2))


def test_views_alias_the_device_buffer(gpu):
    x = gpu.arange(24.0).reshape(2, 3, 4)
    g = x.to("webgpu")
    v = g.permute(2, 0, 1)[1:3, :, ::2]
    same(gpu, v, x.permute(2, 0, 1)[1:3, :, ::2])
    assert not v.is_contiguous() and v.storage_offset() == x.permute(2, 0, 1)[1:3, :, ::2].storage_offset()
    same(gpu, v.contiguous(), x.permute(2, 0, 1)[1:3, :, ::2].contiguous())
    same(gpu, g.diagonal(0, 1, 2), x.diagonal(0, 1, 2))
    same(gpu, g[:, 0].unfold(0, 2, 1), x[:, 0].unfold(0, 2, 1))
    same(gpu, g.expand(3, 2, 3, 4).sum(0), x.expand(3, 2, 3, 4).sum(0))
    same(gpu, gpu.cat([g, g * 2], 1), gpu.cat([x, x * 2], 1))
    same(gpu, g.transpose(1, 2).reshape(2, 12), x.transpose(1, 2).reshape(2, 12))  # a copy


def test_in_place_writes_reach_every_view(gpu):
    x = gpu.zeros(4, 5)
    g = x.to("webgpu")
    row = g[1]
    g[1:3, ::2] = 7.0
    x[1:3, ::2] = 7.0
    same(gpu, row, x[1])
    g.add_(1)
    x.add_(1)
    same(gpu, g, x)
    g.copy_(x.to("webgpu") * 3)
    x.copy_(x * 3)
    same(gpu, g, x)
    g[0].fill_(2.5)  # a Python number, written on the device
    x[0].fill_(2.5)
    same(gpu, g, x)
    g.copy_(x + 1)  # from the CPU, as PyTorch's copy_ allows
    same(gpu, g, x + 1)


def test_moves_between_devices(gpu):
    x = gpu.randn(3, 4)
    g = x.to("webgpu")
    assert g.device.type == "webgpu" and not g.is_cpu and x.to("cpu") is x
    assert g.to("webgpu") is g
    assert g.tolist() == x.tolist() and g.sum().item() == pytest.approx(x.sum().item(), rel=1e-6)
    assert g.cpu().device == gpu.device("cpu")
    assert repr(gpu.ones(2, dtype=gpu.int32, device="webgpu")) == (
        "tensor([1, 1], device='webgpu:0', dtype=stagegrad.int32)")
    assert gpu.zeros(2, 3, device="webgpu").device.type == "webgpu"
    assert gpu.zeros_like(g).device.type == "webgpu"
    assert g.new_ones(2).device.type == "webgpu"
    b = gpu.tensor([True, False])
    assert b.to("webgpu").tolist() == [True, False]


def test_mixing_devices_names_both(gpu):
    g = gpu.ones(3, device="webgpu")
    with pytest.raises(RuntimeError, match="add.*webgpu:0.*cpu"):
        g + gpu.ones(3)
    with pytest.raises(RuntimeError, match="matmul.*webgpu:0.*cpu"):
        gpu.ones(2, 3, device="webgpu") @ gpu.ones(3, 2)


def test_float64_is_refused_with_the_reason(gpu):
    with pytest.raises(gpu.CapabilityError, match="float64.*WGSL"):
        gpu.zeros(3, dtype=gpu.float64).to("webgpu")
    with pytest.raises(gpu.CapabilityError, match="float64"):
        gpu.ones(2, device="webgpu").double()


def test_gradients_flow_back_across_the_move(gpu):
    x = gpu.randn(5, 3, requires_grad=True)
    g = x.to("webgpu")
    ((g * g).sum() + (g.exp() * 2).mean()).backward()
    assert x.grad.device.type == "cpu"
    expected = 2 * x + x.exp() * 2 / 15
    assert_close(x.grad.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_training_step_matches_the_cpu(gpu):
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

    (cpu_params, cpu_loss), (gpu_params, gpu_loss) = step("cpu"), step("webgpu")
    assert gpu_loss == pytest.approx(cpu_loss, rel=1e-5)
    for a, b in zip(gpu_params, cpu_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_indexing_gathers_and_scatters_match_the_cpu(gpu):
    x = gpu.from_numpy(np.random.default_rng(5).standard_normal((6, 7)).astype(np.float32))
    g = x.to("webgpu")
    idx = gpu.tensor([[0, 5, 2], [1, 1, 6]])
    same(gpu, g.gather(1, idx.to("webgpu")), x.gather(1, idx))
    rows = gpu.tensor([4, 0, 4])
    same(gpu, g[rows.to("webgpu")], x[rows])
    same(gpu, g.T[rows.to("webgpu")], x.T[rows])  # through a transposed view
    flat = gpu.tensor([0, 41, 7])
    same(gpu, g.reshape(-1)[flat.to("webgpu")], x.reshape(-1)[flat])
    same(gpu, g[g > 0.5], x[x > 0.5])
    src = gpu.ones(2, 3)
    same(gpu, gpu.zeros(3, 7, device="webgpu").scatter_add(1, idx.to("webgpu"), src.to("webgpu")),
         gpu.zeros(3, 7).scatter_add(1, idx, src))


def test_out_of_range_indices_are_refused(gpu):
    g = gpu.ones(3, 4, device="webgpu")
    with pytest.raises(IndexError):
        g.gather(1, gpu.tensor([[0, 4]]).to("webgpu"))
    with pytest.raises(IndexError):
        g.reshape(-1)[gpu.tensor([12]).to("webgpu")]


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_the_cpu(gpu, accumulate):
    x = gpu.zeros(5, 3)
    g = x.to("webgpu")
    where = gpu.tensor([1, 3, 1])
    vals = gpu.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    if accumulate:
        g.index_add_(0, where.to("webgpu"), vals.to("webgpu"))
        x.index_add_(0, where, vals)
    else:
        g[where.to("webgpu")] = vals.to("webgpu")
        x[where] = vals
    same(gpu, g, x)
    g[g > 4] = -1.0
    x[x > 4] = -1.0
    same(gpu, g, x)


@pytest.mark.parametrize("dims", [1, 2])
def test_convolution_and_pooling_forward_and_backward_match_the_cpu(gpu, dims):
    rng = np.random.default_rng(6)
    shape = (2, 3, 9) if dims == 1 else (2, 3, 9, 8)
    conv = (gpu.nn.Conv1d if dims == 1 else gpu.nn.Conv2d)(3, 4, 3, stride=2, padding=1, dilation=1)
    pool = (gpu.nn.MaxPool1d if dims == 1 else gpu.nn.MaxPool2d)(2)
    x = gpu.from_numpy(rng.standard_normal(shape).astype(np.float32))
    results = []
    for device in ("cpu", "webgpu"):
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
def test_sort_is_stable_and_orders_nan_last_as_the_cpu(gpu, descending):
    x = gpu.tensor([[3.0, float("nan"), 1.0, 3.0, -0.0, 0.0, 1.0], [5.0, 4.0, 4.0, 4.0, 9.0, -1.0, 2.0]])
    for dim in (1, 0):
        got, want = x.to("webgpu").sort(dim, descending=descending), x.sort(dim, descending=descending)
        same(gpu, got.values, want.values)
        same(gpu, got.indices, want.indices)
    i = gpu.tensor([3, 1, 3, 2, 1], dtype=gpu.int32)
    same(gpu, i.to("webgpu").argsort(), i.argsort())


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"])
def test_scans_match_the_cpu(gpu, op):
    x = gpu.tensor([[0.5, 2.0, float("nan"), 1.0], [3.0, 3.0, -1.0, 3.0], [1.0, -2.0, 0.5, 0.25]])
    for dim in (1, 0):
        got, want = getattr(x.to("webgpu"), op)(dim), getattr(x, op)(dim)
        if op in ("cummax", "cummin"):
            same(gpu, got.values, want.values)
            same(gpu, got.indices, want.indices)
        else:
            same(gpu, got, want, rtol=1e-6)


def test_classifier_training_with_embedding_and_cross_entropy_matches_the_cpu(gpu):
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

    (cpu_loss, cpu_params), (gpu_loss, gpu_params) = train("cpu"), train("webgpu")
    assert gpu_loss == pytest.approx(cpu_loss, rel=1e-5)
    for a, b in zip(gpu_params, cpu_params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_default_device_places_new_tensors(gpu):
    gpu.set_default_device("webgpu")
    try:
        assert gpu.get_default_device() == gpu.device("webgpu", 0)
        for t in (gpu.zeros(2), gpu.tensor([1.0]), gpu.arange(3), gpu.randn(2), gpu.eye(2)):
            assert t.device.type == "webgpu"
        assert gpu.from_numpy(np.ones(2)).device.type == "cpu"  # as in PyTorch
        assert gpu.zeros(2, device="cpu").device.type == "cpu"
    finally:
        gpu.set_default_device(None)
    assert gpu.zeros(2).device.type == "cpu"


def test_dlpack_names_the_device_and_refuses_to_share_with_the_reason(gpu):
    g = gpu.ones(2, device="webgpu")
    assert g.__dlpack_device__() == (15, 0)  # kDLWebGPU
    with pytest.raises(gpu.CapabilityError, match="DLPack"):
        g.__dlpack__()


def test_as_tensor_keeps_a_tensors_device_unless_one_is_named(gpu):
    g = gpu.ones(2, device="webgpu")
    assert gpu.as_tensor(g) is g
    assert gpu.as_tensor(g, device="cpu").device.type == "cpu"
    assert gpu.as_tensor([1.0, 2.0], device="webgpu").device.type == "webgpu"


def _launches(sg):
    import sys
    return sys.modules[sg.__name__ + ".webgpu.runtime"].runtime().launches


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_fused_softmax_is_one_launch_each_way_and_matches_the_cpu(gpu, name, dim):
    rng = np.random.default_rng(7)
    x = gpu.from_numpy((rng.standard_normal((5, 130)) * 4).astype(np.float32))
    g = gpu.from_numpy(rng.standard_normal((5, 130)).astype(np.float32))
    out = []
    for device in ("cpu", "webgpu"):
        xd = x.to(device).detach().requires_grad_(True)
        before = _launches(gpu)
        y = getattr(xd, name)(dim)
        forward = _launches(gpu) - before
        y.backward(g.to(device))
        out.append((y.detach().cpu(), xd.grad.cpu()))
    if dim == 1:  # rows already contiguous: nothing to move before or after the kernel
        assert forward == 1
    for a, b in zip(*out):
        assert_close(b.numpy(), a.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.15, "weight": True}, {"reduction": "none"},
                                {"reduction": "sum", "ignore_index": 2}])
def test_fused_cross_entropy_matches_the_cpu(gpu, kw):
    rng = np.random.default_rng(8)
    x = gpu.from_numpy((rng.standard_normal((9, 40)) * 3).astype(np.float32))
    t = gpu.tensor([3, 2, 39, 0, 2, 17, 5, 2, 11])
    w = gpu.from_numpy(rng.uniform(0.5, 2.0, 40).astype(np.float32))
    out = []
    for device in ("cpu", "webgpu"):
        xd = x.to(device).detach().requires_grad_(True)
        args = dict(kw, weight=w.to(device)) if kw.get("weight") else kw
        loss = gpu.nn.functional.cross_entropy(xd, t.to(device), **args)
        loss.sum().backward()
        out.append((loss.detach().cpu(), xd.grad.cpu()))
    for a, b in zip(*out):
        assert_close(b.numpy(), a.numpy(), rtol=2e-6, atol=1e-7)
    with pytest.raises(IndexError, match="target 40 is out of bounds for 40 classes"):
        gpu.nn.functional.cross_entropy(x.to("webgpu"), gpu.tensor([0, 40, 1, 1, 1, 1, 1, 1, 1]).to("webgpu"))


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, weight_decay=0.1)),
                                     ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True)),
                                     ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                     ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.01)),
                                     ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5,
                                                      weight_decay=0.1)),
                                     ("RMSprop", dict(lr=0.01, maximize=True))])
def test_fused_optimizer_steps_are_one_launch_per_parameter_and_match_the_cpu(gpu, name, kw):
    x = np.random.default_rng(9).standard_normal((2, 33)).astype(np.float32)
    results = []
    for device in ("cpu", "webgpu"):
        ps = [gpu.from_numpy(x[i].copy()).to(device).requires_grad_(True) for i in range(2)]
        opt = getattr(gpu.optim, name)(ps, **kw)
        for _ in range(4):
            opt.zero_grad()
            sum((p.tanh() ** 2).sum() for p in ps).backward()
            before = _launches(gpu)
            opt.step()
        results.append([p.detach().cpu().numpy() for p in ps])
    assert _launches(gpu) - before == 2
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_a_convolution_too_large_to_bind_runs_in_batch_parts(gpu, monkeypatch):
    import sys
    rt = sys.modules[gpu.__name__ + ".webgpu.runtime"].runtime()
    conv = gpu.nn.Conv2d(3, 5, 3, padding=1)
    x = gpu.from_numpy(np.random.default_rng(10).standard_normal((6, 3, 8, 8)).astype(np.float32))
    want = conv(x).detach()
    conv.to("webgpu")
    monkeypatch.setattr(rt, "max_binding", 1 << 14)  # two images' im2col (13.5 KiB) fit, three do not
    got = conv(x.to("webgpu")).detach()
    same(gpu, got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(MemoryError, match="exceed the largest buffer a kernel can bind"):
        gpu.nn.Conv2d(3, 5, 3).to("webgpu")(gpu.zeros(1, 3, 30, 30, device="webgpu"))


def test_a_buffer_freed_under_recorded_launches_is_not_overwritten_before_they_run(gpu):
    """Launches are recorded and submitted together; a tensor freed meanwhile keeps its
    memory until they are, so an upload into the same size class cannot land first."""
    x = gpu.from_numpy(np.arange(1000, dtype=np.float32)).to("webgpu")
    y = x * 2  # recorded, not yet submitted
    del x
    z = gpu.from_numpy(np.full(1000, -1.0, np.float32)).to("webgpu")  # same size class
    assert y.cpu().numpy().tolist() == (np.arange(1000) * 2.0).tolist()
    assert z.cpu().numpy().tolist() == [-1.0] * 1000


@pytest.mark.parametrize("affine", [True, False])
def test_fused_layer_norm_is_one_launch_forward_and_matches_the_cpu(gpu, affine):
    rng = np.random.default_rng(11)
    x = gpu.from_numpy((rng.standard_normal((4, 3, 70)) * 3 + 1).astype(np.float32))
    g = gpu.from_numpy(rng.standard_normal((4, 3, 70)).astype(np.float32))
    w, b = (gpu.from_numpy(rng.standard_normal(70).astype(np.float32)) for _ in range(2))
    out = []
    for device in ("cpu", "webgpu"):
        xd = x.to(device).detach().requires_grad_(True)
        wd, bd = ((t.to(device).detach().requires_grad_(True) for t in (w, b)) if affine else (None, None))
        before = _launches(gpu)
        y = gpu.nn.functional.layer_norm(xd, (70,), wd, bd)
        launches = _launches(gpu) - before
        y.backward(g.to(device))
        out.append([y.detach().cpu(), xd.grad.cpu()] + ([wd.grad.cpu(), bd.grad.cpu()] if affine else []))
    assert launches == 1
    for a, b_ in zip(*out):
        assert_close(b_.numpy(), a.numpy(), rtol=2e-6, atol=2e-6)


def test_the_devices_command_reports_what_it_measured(tmp_path):
    """``stagegrad devices --quick``: every time positive, each bandwidth its bytes over its
    time, each crossover the smallest size where a device's time is below stage 3's, a
    missing device with its reason, and a software adapter named as such."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    r = subprocess.run([sys.executable, "-m", "stagegrad", "devices", "--quick", "--out", str(tmp_path)],
                       cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=600)
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
