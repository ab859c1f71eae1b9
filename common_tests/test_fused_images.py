"""The image kernels a stage offers (``FUSED``: conv2d, max_pool2d, avg_pool2d, batch_norm),
each against the composite it replaces (the same stage with ``FUSED`` emptied) and against
PyTorch, output and every gradient, on the geometries that break kernels: batch 1 and empty
batches, 1x1 and 2x2 images, channel counts off the SIMD width, strides on odd sizes, padding
as large as the kernel, dilation, depthwise with a channel multiplier, and inputs that are
not contiguous or are laid out channels-last."""
import importlib

import numpy as np
import pytest

from stagegrad.conv_ladder import algorithm

from .conftest import _loaded, _selected
from .oracle import need_torch
from .test_fused import _close, _data, check, composite


def _device_offers_conv(name):
    """Whether the device that stage ``name`` (``package[device]``) pins runs conv2d on its
    own kernel (``device.fused``, asked of a tensor on it)."""
    sg = _loaded[name]
    probe = sg.zeros(1, device=sg.DEVICE)._data
    return importlib.import_module(name.partition("[")[0] + ".device").fused("conv2d", probe)


def pytest_generate_tests(metafunc):
    """``fsg``: each stage under test whose backend has the image kernels (on the CPU: a device
    variant's tensors run the composites, which the rest of the suite tests). ``csg``: those,
    and each device variant whose device has a convolution kernel (cuda)."""
    for fixture in ("fsg", "csg"):
        if fixture in metafunc.fixturenames:
            selected = _selected(metafunc.config)
            names = [n for n in selected if "conv2d" in _loaded[n].backend.FUSED
                     and ("[" not in n or (fixture == "csg" and _device_offers_conv(n)))]
            params = [pytest.param(_loaded[n], id=n) for n in names] or [pytest.param(
                None, id="none", marks=pytest.mark.skip(reason=f"no stage under test ({', '.join(selected)}) "
                                                               "offers the image kernels"))]
            metafunc.parametrize(fixture, params)

DTYPES = ["float32", "float64"]

# (N, C, H, W, O, kernel, stride, padding, dilation, groups); kernel, stride, padding and
# dilation each a number or a (height, width) pair
CONVOLUTIONS = [
    (2, 3, 7, 9, 4, 3, 1, 1, 1, 1),
    (1, 5, 8, 8, 6, 3, 2, 1, 1, 1),      # batch 1, stride 2
    (3, 4, 9, 7, 5, 3, 2, 0, 1, 1),      # stride 2 on odd sizes
    (2, 17, 6, 6, 33, 1, 1, 0, 1, 1),    # 1x1: a plain GEMM; channels off the SIMD width
    (2, 3, 7, 7, 4, 1, 2, 0, 1, 1),      # 1x1 stride 2
    (2, 3, 8, 8, 4, 3, 1, 3, 1, 1),      # padding as large as the kernel
    (2, 3, 5, 5, 2, 3, 1, 2, 2, 1),      # dilation
    (1, 17, 2, 2, 33, 3, 1, 1, 1, 1),    # 2x2 image
    (2, 6, 1, 1, 5, 1, 1, 0, 1, 1),      # 1x1 image
    (5, 3, 11, 13, 7, 5, 3, 2, 1, 1),
    (3, 16, 4, 4, 8, 3, 1, 1, 1, 1),     # narrow outputs, images grouped side by side
    (2, 4, 7, 9, 4, 3, 1, 1, 1, 4),      # depthwise
    (2, 4, 8, 8, 8, 3, 2, 1, 1, 4),      # depthwise, multiplier 2, stride 2
    (2, 5, 6, 6, 5, 5, 1, 2, 2, 5),      # depthwise, dilation
    (2, 3, 5, 5, 6, 3, 1, 3, 1, 3),      # depthwise, padding past the adjoint's reach
    (0, 3, 6, 6, 4, 3, 1, 1, 1, 1),      # empty batch
    # rectangular kernels, and stride, padding and dilation that differ along height and width
    (2, 3, 7, 9, 4, (3, 5), (1, 2), (1, 2), 1, 1),
    (2, 4, 9, 8, 5, (1, 3), (2, 1), (0, 1), (1, 2), 1),
    (2, 6, 7, 8, 6, (2, 3), 1, (1, 0), (2, 1), 1),
    (2, 4, 8, 9, 4, (5, 3), (2, 1), (2, 1), 1, 4),   # depthwise
]


def _case_id(case):
    return "x".join(str(v).replace(", ", "-").strip("()") for v in case)


def _conv_arrays(case, dtype):
    N, C, H, W, O, k, _, _, _, g = case
    kh, kw = k if isinstance(k, tuple) else (k, k)
    return [_data((N, C, H, W), dtype), _data((O, C // g, kh, kw), dtype, 1), _data((O,), dtype, 2)]


def _conv(case):
    *_, s, p, d, g = case
    return lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, s, p, d, g)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONVOLUTIONS, ids=_case_id)
def test_conv2d(csg, case, dtype):
    check(csg, _conv(case), _conv_arrays(case, dtype), dtype)


@pytest.mark.parametrize("layout", ["channels_last", "strided"])
def test_conv2d_of_inputs_not_contiguous(csg, layout):
    case = (2, 6, 7, 9, 5, 3, 1, 1, 1, 1)
    x, w, b = _conv_arrays(case, "float32")
    if layout == "channels_last":  # the values of x, with strides (H*W*C, 1, W*C, C)
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        view = _conv(case)
    else:  # every other column of a wider image
        x = np.concatenate([x, x], axis=3)
        view = (lambda lib, x, w, b: _conv(case)(lib, x[..., ::2], w, b))
    check(csg, view, [x, w, b], "float32")


@pytest.mark.parametrize("bias", [True, False])
def test_conv1d_through_the_2d_kernel(csg, bias):
    x, w, b = _data((3, 5, 11), "float64"), _data((4, 5, 3), "float64", 1), _data((4,), "float64", 2)
    arrays = [x, w, b] if bias else [x, w]
    conv = (lambda lib, x, w, *b: lib.nn.functional.conv1d(x, w, *b, stride=2, padding=1))
    check(csg, conv, arrays, "float64")


# float16 and bfloat16: their epsilon (one result's rounding is half of it)
TWO_BYTE_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", [CONVOLUTIONS[i] for i in (0, 2, 3, 10, 12, 17)], ids=_case_id)
def test_conv2d_in_two_byte_floats(csg, case, dtype):
    """Output and every gradient in float16 and bfloat16 (the cuda device's tensor-core
    kernels) against PyTorch's float32 on the same rounded values: within one rounding of
    each result to the 2-byte type, since the products accumulate in float32."""
    torch = need_torch()
    *_, s, p, d, g = case
    arrays = _conv_arrays(case, "float32")
    tdtype = getattr(torch, dtype)
    ts = [torch.tensor(a).to(tdtype).float().requires_grad_() for a in arrays]
    want_y = torch.nn.functional.conv2d(*ts, s, p, d, g)
    seed = torch.tensor(_data(tuple(want_y.shape), "float32", 7)).to(tdtype).float()
    (want_y * seed).sum().backward()
    want = [want_y.detach()] + [t.grad for t in ts]
    xs = [csg.tensor(a).to(getattr(csg, dtype)).requires_grad_() for a in arrays]
    y = csg.nn.functional.conv2d(*xs, s, p, d, g)
    assert y.dtype == getattr(csg, dtype)
    y.backward(csg.tensor(seed.numpy()).to(getattr(csg, dtype)))
    eps = TWO_BYTE_EPS[dtype]
    for got, ref, what in zip([y.detach(), *(t.grad for t in xs)], want, ("output", "x", "w", "b")):
        ref = ref.numpy()
        np.testing.assert_allclose(got.float().numpy(), ref, rtol=eps, atol=eps * np.abs(ref).max(), err_msg=what)


# ---------------------------------------------------------------- convolution algorithms

# stride 1: what Winograd F(2x2, 3x3) (3x3) and the direct convolution (any kernel) compute
# where a stage has them (``backends.conv``)
ALGORITHM_CASES = [
    (2, 3, 7, 9, 4, 3, 1, 1, 1, 1),      # odd sizes: the last tiles cropped both ways
    (1, 6, 5, 6, 7, 3, 1, 0, 1, 1),      # no padding (the input gradient's is 2)
    (2, 4, 6, 5, 3, 3, 1, 2, 1, 1),      # padding 2 (the input gradient's is 0)
    (1, 17, 2, 2, 33, 3, 1, 1, 1, 1),    # 2x2 image: one tile; channels off the SIMD width
    (2, 5, 1, 1, 3, 3, 1, 2, 1, 1),      # 1x1 image, padded to a 3x3 output
    (4, 32, 24, 24, 32, 3, 1, 1, 1, 1),  # what "auto" sends to Winograd: many channels and tiles
    (0, 3, 6, 6, 4, 3, 1, 1, 1, 1),      # empty batch
    (3, 1, 9, 8, 5, 5, 1, 2, 1, 1),      # 5x5 on one channel: the MNIST CNN's first layer
    (2, 6, 7, 7, 9, 5, 1, 4, 1, 1),      # padding k - 1: the input gradient's is 0
    (2, 5, 6, 7, 4, 1, 1, 0, 1, 1),      # 1x1
    (1, 3, 4, 9, 2, 2, 1, 1, 1, 1),      # even kernel, 4 x 9 image
]


def _algorithms(sg):
    """The stage's convolution algorithms: ``builtin`` where it has one."""
    return getattr(sg.backend, "CONVS", ("builtin",))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ALGORITHM_CASES, ids=lambda c: "x".join(map(str, c)))
def test_conv2d_by_each_algorithm(fsg, case, dtype):
    for name in _algorithms(fsg):
        with algorithm(fsg, name):
            check(fsg, _conv(case), _conv_arrays(case, dtype), dtype)


# the weight gradient by taps reads any stride, padding and dilation (and the others run where
# they apply): rectangular kernels, tuple strides, padding and dilation, channels and output
# channels off the SIMD width and the register block, a chunk spanning images
TAPS_CASES = [
    (2, 17, 9, 11, 19, (3, 5), (1, 2), (1, 2), 1, 1),
    (3, 20, 8, 9, 7, (2, 3), (2, 1), (0, 1), (2, 1), 1),
    (2, 33, 5, 6, 40, 3, 2, 1, 1, 1),
    (5, 16, 4, 4, 16, 3, 1, 1, 1, 1),
    (2, 24, 10, 7, 13, (1, 3), 1, (0, 2), (1, 3), 1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", TAPS_CASES, ids=_case_id)
def test_conv2d_by_each_algorithm_on_odd_geometry(fsg, case, dtype):
    for name in _algorithms(fsg):
        with algorithm(fsg, name):
            check(fsg, _conv(case), _conv_arrays(case, dtype), dtype)


@pytest.mark.parametrize("case", [(2, 8, 12, 10, 6, 3, 1, 1, 1, 1), (1, 64, 9, 9, 64, 3, 1, 0, 1, 1)],
                         ids=lambda c: "x".join(map(str, c)))
def test_winograd_error_bound(fsg, case):
    """Winograd's transforms add and halve before the products, so its rounding differs from a
    direct sum's; it must stay within the direct sum's error bound: per output, a small
    multiple of float32's epsilon times the sum of |x| |w| over its taps (and likewise for
    each gradient, against the same sums of absolute values), computed in float64."""
    names = _algorithms(fsg)
    torch = need_torch()
    F = torch.nn.functional
    x, w, _ = _conv_arrays(case, "float32")
    *_, pad, _, _ = case
    g = _data((case[0], case[4], case[2] + 2 * pad - 2, case[3] + 2 * pad - 2), "float32", 7)
    x64, w64, g64 = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, g))
    y64 = F.conv2d(x64, w64, padding=pad)
    want = [y64, *torch.autograd.grad(y64, (x64, w64), g64)]
    ax, aw, ag = (t.detach().abs() for t in (x64, w64, g64))
    bound_y = F.conv2d(ax, aw, padding=pad)
    bound_x = torch.nn.grad.conv2d_input(ax.shape, aw, ag, padding=pad)
    bound_w = torch.nn.grad.conv2d_weight(ax, aw.shape, ag, padding=pad)
    eps = float(np.finfo(np.float32).eps)
    outputs = {}
    for name in names:
        with algorithm(fsg, name):
            sx, sw = fsg.tensor(x, requires_grad=True), fsg.tensor(w, requires_grad=True)
            sy = fsg.nn.functional.conv2d(sx, sw, padding=pad)
            sy.backward(fsg.tensor(g))
            for got, ref, bound, what in zip((sy, sx.grad, sw.grad), want, (bound_y, bound_x, bound_w),
                                             ("output", "input gradient", "weight gradient")):
                err = np.abs(got.detach().numpy().astype(np.float64) - ref.detach().numpy())
                limit = 16 * eps * bound.numpy()
                worst = np.max(err / np.maximum(limit, 1e-300))
                assert worst <= 1, f"{name}: {what} off by {worst:.2f} times 16 eps sum |x| |w|"
            outputs[name] = sy.detach().numpy()
    # each forced algorithm ran: its rounding is not the implicit GEMM's (Winograd's transforms
    # round differently at any size; the direct sum over 64 channels in another order than the
    # GEMM's blocked one; over 8 channels both sum in the same order, to the same bits)
    for name in ("winograd", "direct") if case[1] >= 64 else ("winograd",):
        if name in outputs:
            assert not np.array_equal(outputs[name], outputs["implicit"]), f"{name} gave the implicit GEMM's bits"


# (N, C, H, W, kernel, stride, padding, dilation, ceil_mode)
POOLS = [
    (2, 3, 7, 9, 3, 2, 1, 1, False),
    (1, 2, 8, 8, 2, 2, 0, 1, False),
    (2, 2, 5, 5, 3, 1, 1, 1, False),
    (2, 2, 7, 7, 3, 2, 1, 1, True),
    (1, 1, 2, 2, 2, 2, 1, 1, False),
    (2, 3, 9, 8, 3, 2, 1, 2, False),   # dilation (max pooling only)
    (0, 3, 6, 6, 2, 2, 0, 1, False),   # empty batch
    (2, 3, 12, 11, 2, 2, 0, 1, False),  # 2x2 stride 2: whole vectors of outputs, a tail, an odd width
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOLS, ids=lambda c: "x".join(map(str, c)))
def test_max_pool2d_and_its_indices(fsg, case, dtype):
    N, C, H, W, k, s, p, d, ceil = case
    x = _data((N, C, H, W), dtype)
    check(fsg, lambda lib, t: lib.nn.functional.max_pool2d(t, k, s, p, d, ceil), [x], dtype)
    torch = need_torch()
    _, want = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, p, d, ceil, return_indices=True)
    _, got = fsg.nn.functional.max_pool2d(fsg.tensor(x), k, s, p, d, ceil, return_indices=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_max_pool2d_ties_and_nan(fsg):
    x = np.array([[[[1.0, 1.0, 0.0], [np.nan, 2.0, 2.0], [-np.inf, -np.inf, np.nan]]]], dtype=np.float32)
    check(fsg, lambda lib, t: lib.nn.functional.max_pool2d(t, 2, 1), [x], "float32", grads=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_2x2_ties_and_nan(fsg, dtype):
    """2x2 windows of stride 2 (decided a vector of outputs at a time): values from a set so
    small that most windows tie, with NaN and infinities; the first maximum in scan order and
    the first NaN must win, in the output and in where the gradient goes."""
    values = np.array([0.0, 1.0, 1.0, np.nan, np.inf, -np.inf], dtype=dtype)
    x = np.random.default_rng(3).choice(values, size=(2, 3, 10, 14))
    check(fsg, lambda lib, t: lib.nn.functional.max_pool2d(t, 2), [x], dtype)


@pytest.mark.parametrize("divisor", [None, 3, -2])
@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("case", [c for c in POOLS if c[7] == 1], ids=lambda c: "x".join(map(str, c)))
def test_avg_pool2d(fsg, case, include_pad, divisor):
    N, C, H, W, k, s, p, _, ceil = case
    x = _data((N, C, H, W), "float64")
    pool = (lambda lib, t: lib.nn.functional.avg_pool2d(t, k, s, p, ceil, include_pad, divisor))
    check(fsg, pool, [x], "float64")


@pytest.mark.parametrize("size", [(1, 1), (2, 3), (6, 4)])
def test_adaptive_avg_pool2d_with_equal_windows(fsg, size):
    x = _data((2, 3, 6, 12), "float32")
    check(fsg, lambda lib, t: lib.nn.functional.adaptive_avg_pool2d(t, size), [x], "float32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 5, 3, 3), (6, 3), (3, 4, 7), (2, 17, 1, 1)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_and_its_running_statistics(fsg, shape, affine, training, dtype):
    C = shape[1]
    x = _data(shape, dtype) * 3 + 1
    per_channel = [_data((C,), dtype, 1), _data((C,), dtype, 2)] if affine else []

    def bn(lib, x, *wb, stats):
        mean, var = stats
        return lib.nn.functional.batch_norm(x, mean, var, *wb, training=training, momentum=0.3, eps=1e-3)

    def stats(lib):
        return [lib.tensor(_data((C,), dtype, 3)), lib.tensor(np.abs(_data((C,), dtype, 4)) + 0.5)]

    check(fsg, lambda lib, x, *wb: bn(lib, x, *wb, stats=stats(lib)), [x, *per_channel], dtype)
    torch = need_torch()
    ours, theirs = stats(fsg), stats(torch)  # the running statistics after one step
    bn(fsg, fsg.tensor(x), *(fsg.tensor(a) for a in per_channel), stats=ours)
    bn(torch, torch.tensor(x), *(torch.tensor(a) for a in per_channel), stats=theirs)
    for got, want in zip(ours, theirs):
        _close(got.numpy(), want.numpy(), dtype)


@pytest.mark.parametrize("act", ["relu", "relu6"])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_kernel_with_its_fused_activation(fsg, training, act):
    """The kernel's ReLU and ReLU6 options against the activation of batch_norm(x) of the
    composites (scaled so that ReLU6's upper bound is crossed too)."""
    B = fsg.backend
    x, w, b = _data((3, 4, 5, 5), "float64"), _data((4,), "float64", 1) * 5, _data((4,), "float64", 2) * 3
    g = _data((3, 4, 5, 5), "float64", 3)
    mean, var = fsg.tensor(_data((4,), "float64", 4)), fsg.tensor(np.abs(_data((4,), "float64", 5)) + 0.5)
    xb, wb, bb = (fsg.tensor(a)._data for a in (x, w, b))
    stats = (None, None) if training else (mean._data, var._data)
    y, mu, rstd = B.batch_norm(xb, wb, bb, *stats, training, 0.1, 1e-5, act)
    gy = fsg.tensor(g)._data
    gx, gw, gb = B.batch_norm_backward(gy, xb, y, mu, rstd, wb, training, act, True, True, True)
    with composite(fsg):
        xs, ws, bs = (fsg.tensor(a, requires_grad=True) for a in (x, w, b))
        out = getattr(fsg.nn.functional, act)(fsg.nn.functional.batch_norm(xs, mean.clone(), var.clone(), ws,
                                                                           bs, training=training))
        (out * fsg.tensor(g)).sum().backward()
    for got, want in ((y, out), (gx, xs.grad), (gw, ws.grad), (gb, bs.grad)):
        _close(fsg.Tensor._make(got).numpy(), want.detach().numpy(), "float64")


@pytest.mark.parametrize("act", ["ReLU", "ReLU6"])
@pytest.mark.parametrize("training", [True, False])
def test_sequential_fuses_batch_norm_and_its_activation(fsg, act, training):
    """Sequential(Conv2d, BatchNorm2d, ReLU/ReLU6), MobileNetV2's block: the fused pair's
    output, every gradient and the running statistics against PyTorch."""
    torch = need_torch()
    x = _data((4, 3, 6, 6), "float64") * 4
    w = _data((8, 3, 3, 3), "float64", 1)
    got = []
    for lib in (fsg, torch):
        nn = lib.nn
        m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), getattr(nn, act)())
        m = m.to(lib.float64)
        with lib.no_grad():
            m[0].weight.copy_(lib.tensor(w))
            m[1].weight.copy_(lib.tensor(_data((8,), "float64", 2) * 3))
            m[1].bias.copy_(lib.tensor(_data((8,), "float64", 3) * 3))
        m.train(training)
        xt = lib.tensor(x).requires_grad_()
        out = m(xt)
        (out * lib.tensor(_data(tuple(out.shape), "float64", 4))).sum().backward()
        stats = [m[1].running_mean.numpy(), m[1].running_var.numpy()]
        got.append([out.detach().numpy(), xt.grad.numpy(), *stats] + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*got):
        _close(a, b, "float64")
    container = importlib.import_module(fsg.__name__ + ".nn.container")
    assert container._fused_activation(m[1], m[2]) is None  # PyTorch's modules: never fused
    mine = fsg.nn.Sequential(fsg.nn.BatchNorm2d(8), getattr(fsg.nn, act)())
    assert container._fused_activation(mine[0], mine[1]) == act.lower()


def test_a_zoo_style_block_trains_the_same_as_pytorch(fsg):
    """conv, batch norm, relu, max pool, a depthwise conv and global average pooling in one
    step: the output and every parameter's gradient."""
    x = _data((4, 3, 12, 12), "float32")

    def block(lib, t, w1, w2, w3):
        F = lib.nn.functional
        h = F.relu(F.batch_norm(F.conv2d(t, w1, padding=1), None, None, training=True))
        h = F.max_pool2d(h, 2)
        h = F.conv2d(h, w2, padding=1, groups=8)
        h = F.conv2d(h, w3, stride=2)
        return F.adaptive_avg_pool2d(h, 1)

    shapes = [(8, 3, 3, 3), (16, 1, 3, 3), (5, 16, 1, 1)]
    filters = [_data(shape, "float32", seed) for seed, shape in enumerate(shapes, 1)]
    arrays = [x, *filters]
    check(fsg, block, arrays, "float32")
