"""interpolate / Upsample, transposed convolution, pixel (un)shuffle, max-unpooling and
adaptive pooling against PyTorch: outputs, input gradients and (for layers) parameter
gradients under a random upstream, float32 and float64, with odd and non-divisible
sizes, non-integer scale factors and both align_corners settings."""
import numpy as np
import pytest

from .helpers_core import T
from .helpers_nn import forward_backward_both, rand, run_both, same_layer
from .oracle import assert_close, need_torch
from .test_nn_layers import _converted

pytestmark = pytest.mark.needs_torch

DTYPES = ["float32", "float64"]


def _compare(sg, fn, inputs, dtype, grads=None):
    """``fn(F, *tensors)`` in the stage and in PyTorch on the arrays ``inputs``; compare the
    output and the gradient of every floating input under a random upstream."""
    torch = need_torch()
    grads = grads or [np.asarray(a).dtype.kind == "f" for a in inputs]
    _, out, _ = forward_backward_both(sg, lambda *xs: fn(sg.nn.functional, *xs),
                                      lambda *ts: fn(torch.nn.functional, *ts), inputs, grads, dtype)
    return out


# ------------------------------------------------------------------ interpolate

INTERP = [
    # (shape, kwargs): odd sizes, up and down, integer and non-integer factors
    ((2, 3, 5), dict(size=9, mode="nearest")),
    ((2, 3, 5), dict(size=3, mode="nearest")),
    ((1, 2, 7), dict(scale_factor=1.7, mode="nearest")),
    ((1, 2, 7), dict(scale_factor=0.45, mode="nearest")),
    ((1, 2, 6), dict(size=10, mode="nearest")),
    ((1, 2, 7), dict(scale_factor=2.3, mode="nearest-exact")),
    ((1, 2, 7), dict(size=4, mode="nearest-exact")),
    ((2, 2, 5), dict(size=8, mode="linear")),
    ((2, 2, 5), dict(size=8, mode="linear", align_corners=True)),
    ((2, 2, 9), dict(size=4, mode="linear", align_corners=False)),
    ((2, 2, 9), dict(size=1, mode="linear", align_corners=True)),
    ((1, 3, 6), dict(scale_factor=1.5, mode="linear")),
    ((1, 3, 6), dict(scale_factor=1.5, mode="linear", recompute_scale_factor=True)),
    ((1, 3, 6), dict(scale_factor=0.7, mode="linear", align_corners=True)),
    ((2, 2, 3, 5), dict(size=(4, 7), mode="nearest")),
    ((1, 2, 5, 4), dict(scale_factor=(1.5, 2.25), mode="nearest")),
    ((1, 2, 5, 4), dict(scale_factor=2, mode="nearest")),
    ((1, 2, 5, 6), dict(size=(3, 4), mode="nearest-exact")),
    ((2, 2, 3, 5), dict(size=(4, 7), mode="bilinear")),
    ((2, 2, 3, 5), dict(size=(4, 7), mode="bilinear", align_corners=True)),
    ((1, 2, 6, 7), dict(size=(4, 3), mode="bilinear")),
    ((1, 2, 6, 7), dict(size=(4, 3), mode="bilinear", align_corners=True)),
    ((1, 1, 5, 4), dict(scale_factor=1.3, mode="bilinear")),
    ((1, 1, 5, 4), dict(scale_factor=(0.6, 2.5), mode="bilinear", recompute_scale_factor=True)),
    ((1, 1, 1, 1), dict(size=(3, 2), mode="bilinear")),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,kw", INTERP, ids=[f"{s}-{k}" for s, k in INTERP])
def test_interpolate_matches_torch(sg, shape, kw, dtype):
    _compare(sg, lambda F, x: F.interpolate(x, **kw), [rand(shape, dtype)], dtype)


def test_interpolate_nearest_picks_torchs_pixels_exactly(sg):
    """Non-integer scales where float32 index arithmetic decides the pixel: the stage picks
    the same source for every output (the inputs are the positions themselves)."""
    torch = need_torch()
    for n in (3, 5, 7, 10, 11):
        x = np.arange(n, dtype="float32").reshape(1, 1, n)
        for kw in (dict(size=6), dict(size=17), dict(scale_factor=1.1), dict(scale_factor=2.6),
                   dict(scale_factor=0.6), dict(size=9, mode="nearest-exact"),
                   dict(scale_factor=1.7, mode="nearest-exact")):
            out = sg.nn.functional.interpolate(T(sg, x), **kw)
            assert out.tolist() == torch.nn.functional.interpolate(torch.tensor(x), **kw).tolist(), (n, kw)


@pytest.mark.capability("float64")
def test_interpolate_edge_values_and_transposed_input(sg):
    """nan, inf and -0.0 travel through nearest unchanged and through bilinear as PyTorch
    computes them; a transposed (non-contiguous) input gives the same result."""
    torch = need_torch()
    x = np.array([[[[0.0, -0.0, np.inf], [np.nan, 1.0, -np.inf]]]], dtype="float32")
    for kw in (dict(size=(3, 5)), dict(size=(4, 4), mode="bilinear"),
               dict(size=(3, 3), mode="bilinear", align_corners=True)):
        out = sg.nn.functional.interpolate(T(sg, x), **kw)
        assert_close(out, torch.nn.functional.interpolate(torch.tensor(x), **kw))
    x = rand((1, 2, 5, 3), "float64")
    _compare(sg, lambda F, t: F.interpolate(t.transpose(2, 3), size=(4, 6), mode="bilinear"), [x], "float64")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,make,shape", [
    ("upsample_nearest", lambda nn: nn.Upsample(scale_factor=2), (1, 2, 3, 4)),
    ("upsample_linear", lambda nn: nn.Upsample(size=7, mode="linear"), (2, 2, 4)),
    ("upsample_bilinear_ac", lambda nn: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True),
     (1, 2, 3, 5)),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(size=(5, 3)), (1, 2, 3, 4)),
    ("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 4)),
    ("PixelShuffle", lambda nn: nn.PixelShuffle(2), (2, 8, 3, 2)),
    ("PixelShuffle_unbatched", lambda nn: nn.PixelShuffle(3), (9, 2, 1)),
    ("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(2), (2, 1, 4, 6)),
    ("PixelUnshuffle_5d", lambda nn: nn.PixelUnshuffle(3), (2, 1, 2, 3, 3)),
])
def test_resampling_layers_match_torch(sg, name, make, shape, dtype):
    ours, theirs = same_layer(sg, make)
    run_both(sg, ours, theirs, [rand(shape, dtype)])


def test_interpolate_errors(sg):
    F = sg.nn.functional
    x3, x4 = sg.zeros(1, 2, 5), sg.zeros(1, 2, 3, 3)
    with pytest.raises(NotImplementedError, match="bilinear"):
        F.interpolate(x3, size=4, mode="bilinear")
    with pytest.raises(NotImplementedError, match="linear"):
        F.interpolate(x4, size=4, mode="linear")
    with pytest.raises(NotImplementedError, match="bicubicx"):
        F.interpolate(x4, size=4, mode="bicubicx")
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x3, size=4, mode="nearest", align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x3, size=4, scale_factor=2.0)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x3)
    with pytest.raises(ValueError, match="spatial dimensions"):
        F.interpolate(x3, size=(3, 3))
    with pytest.raises(sg.ShapeError, match=r"interpolate.*\(1, 2, 5\)"):
        F.interpolate(x3, scale_factor=0.1)
    with pytest.raises(TypeError, match="int64"):
        F.interpolate(sg.zeros(1, 2, 5, dtype=sg.int64), size=3)
    with pytest.raises(sg.ShapeError, match=r"pixel_shuffle.*\(1, 3, 2, 2\)"):
        F.pixel_shuffle(sg.zeros(1, 3, 2, 2), 2)
    with pytest.raises(sg.ShapeError, match=r"pixel_unshuffle.*\(1, 1, 3, 4\)"):
        F.pixel_unshuffle(sg.zeros(1, 1, 3, 4), 2)


# ------------------------------------------------------------------ transposed convolution

CT2 = [
    # (input shape, weight shape, kwargs)
    ((2, 3, 4, 5), (3, 2, 3, 3), {}),
    ((1, 2, 3, 4), (2, 3, 2, 3), dict(stride=2)),
    ((1, 2, 3, 4), (2, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    ((2, 4, 3, 3), (4, 1, 3, 3), dict(stride=2, padding=1, groups=2)),
    ((1, 4, 3, 4), (4, 3, 2, 2), dict(groups=4, dilation=2)),
    ((1, 2, 4, 3), (2, 2, 3, 3), dict(stride=2, dilation=3, output_padding=2)),  # op >= stride, < dilation
    ((1, 2, 3, 3), (2, 2, 3, 3), dict(padding=2)),  # padding crops everything but the centre
    ((3, 4, 5), (3, 2, 2, 3), dict(stride=1)),  # unbatched 2-D input: (C, H, W)
]

CT3 = [
    # non-cubic kernels; tuple stride/padding/dilation; groups=2 with output_padding
    ((1, 2, 3, 2, 3), (2, 3, 2, 3, 1), {}),
    ((1, 4, 2, 3, 2), (4, 1, 3, 2, 2), dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2),
                                            groups=2, dilation=(1, 2, 1))),
    ((4, 2, 2, 3), (4, 2, 2, 1, 3), dict(stride=2, padding=1, dilation=2, groups=2, output_padding=1)),  # unbatched
]

CT1 = [
    ((2, 3, 5), (3, 2, 3), {}),
    ((1, 2, 4), (2, 3, 4), dict(stride=3, padding=2, output_padding=1)),
    ((2, 4, 3), (4, 2, 2), dict(stride=2, groups=2, dilation=2, output_padding=1)),
    ((3, 6), (3, 1, 3), dict(padding=1)),  # unbatched
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("nd,xs,ws,kw", [(2, *c) for c in CT2] + [(1, *c) for c in CT1] + [(3, *c) for c in CT3],
                         ids=[f"2d{i}" for i in range(len(CT2))] + [f"1d{i}" for i in range(len(CT1))]
                         + [f"3d{i}" for i in range(len(CT3))])
def test_conv_transpose_functional_matches_torch(sg, nd, xs, ws, kw, bias, dtype):
    groups = kw.get("groups", 1)
    inputs = [rand(xs, dtype, seed=1), rand(ws, dtype, seed=2)]
    if bias:
        inputs.append(rand((ws[1] * groups,), dtype, seed=3))
    name = f"conv_transpose{nd}d"
    _compare(sg, lambda F, *t: getattr(F, name)(*t, **kw), inputs, dtype)


@pytest.mark.capability("float64")
def test_conv_transpose_is_the_adjoint_of_conv(sg):
    """<conv(x, w), y> == <x, conv_transpose(y, w)>: the transpose's defining property."""
    F = sg.nn.functional
    x, w = T(sg, rand((1, 2, 7, 6), "float64", seed=4)), T(sg, rand((3, 2, 3, 2), "float64", seed=5))
    y = T(sg, rand((1, 3, 4, 4), "float64", seed=6))
    lhs = (F.conv2d(x, w, stride=2, padding=1) * y).sum().item()
    rhs = (x * F.conv_transpose2d(y, w, stride=2, padding=1)).sum().item()
    assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(lhs))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,make,shape", [
    ("ct1d", lambda nn: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5)),
    ("ct1d_groups", lambda nn: nn.ConvTranspose1d(4, 6, 2, groups=2, bias=False, dilation=2), (1, 4, 3)),
    ("ct2d", lambda nn: nn.ConvTranspose2d(2, 3, (3, 2), stride=(2, 1), padding=(1, 0)), (2, 2, 3, 4)),
    ("ct2d_unbatched", lambda nn: nn.ConvTranspose2d(2, 2, 2, stride=2), (2, 3, 3)),
    ("ct3d", lambda nn: nn.ConvTranspose3d(4, 2, (2, 3, 1), stride=(1, 2, 2), padding=(0, 1, 0),
                                           output_padding=(0, 1, 1), groups=2), (1, 4, 2, 3, 2)),
    ("ct3d_nobias", lambda nn: nn.ConvTranspose3d(2, 3, 2, bias=False, dilation=(2, 1, 1)), (2, 2, 2, 2)),
])
def test_conv_transpose_layers_match_torch(sg, name, make, shape, dtype):
    ours, theirs = same_layer(sg, _converted(sg, make, dtype))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape)
    run_both(sg, ours, theirs, [rand(shape, dtype)])


def test_conv_transpose_output_size(sg):
    """forward(x, output_size=...) picks the output_padding that PyTorch picks, and refuses
    sizes outside [smallest, smallest + stride - 1]."""
    torch = need_torch()
    ours, theirs = same_layer(sg, lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=(3, 2), padding=1))
    x = rand((1, 2, 4, 5), "float64").astype("float32")
    for size in ((10, 9), (11, 10), (1, 3, 12, 10)):
        out = ours(T(sg, x), output_size=size)
        assert_close(out, theirs(torch.tensor(x), output_size=size), rtol=1e-4, atol=1e-5)
    for size in ((9, 9), (13, 9), (10, 11)):
        with pytest.raises(ValueError, match="output size"):
            ours(T(sg, x), output_size=size)
        with pytest.raises(ValueError):
            theirs(torch.tensor(x), output_size=size)


def test_conv_transpose_init_as_torch(sg):
    """Weight (in, out/groups, k...) and bias start U(-b, b) with b = 1/sqrt(fan_in), fan_in
    read from the weight's dim 1 as PyTorch's init does."""
    torch = need_torch()
    sg.manual_seed(0)
    ours = sg.nn.ConvTranspose2d(8, 12, 3, groups=2)
    theirs = torch.nn.ConvTranspose2d(8, 12, 3, groups=2)
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape) == (8, 6, 3, 3)
    bound = 1 / np.sqrt(6 * 9)
    for p in (ours.weight, ours.bias):
        v = p.detach().numpy()
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.8 * bound
    assert np.abs(theirs.bias.detach().numpy()).max() <= bound


def test_conv_transpose_errors(sg):
    F = sg.nn.functional
    x, w = sg.zeros(1, 2, 3, 3), sg.zeros(2, 3, 2, 2)
    with pytest.raises(sg.ShapeError, match=r"conv_transpose2d.*\(1, 3, 3, 3\).*\(2, 3, 2, 2\)"):
        F.conv_transpose2d(sg.zeros(1, 3, 3, 3), w)
    with pytest.raises(sg.ShapeError, match=r"conv_transpose2d: bias"):
        F.conv_transpose2d(x, w, sg.zeros(2))
    with pytest.raises(sg.ShapeError, match="conv_transpose1d: weight must be 3-D"):
        F.conv_transpose1d(sg.zeros(1, 2, 3), w)
    with pytest.raises(sg.ShapeError, match="conv_transpose3d: weight must be 5-D"):
        F.conv_transpose3d(sg.zeros(1, 2, 3, 3, 3), w)
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="stride must be positive"):
        F.conv_transpose2d(x, w, stride=0)
    with pytest.raises(sg.ShapeError, match="not positive"):
        F.conv_transpose2d(x, w, padding=3)
    with pytest.raises(ValueError, match="groups"):
        F.conv_transpose2d(x, w, groups=3)
    with pytest.raises(ValueError, match="zeros"):
        sg.nn.ConvTranspose2d(2, 2, 2, padding_mode="reflect")


# ------------------------------------------------------------------ unpooling and adaptive pooling

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k,s,p", [
    ((2, 3, 5, 6), 2, None, 0),
    ((1, 2, 7, 5), 3, 2, 1),  # overlapping windows: an element can be the max of two
    ((2, 4, 4), 2, 1, 0),  # unbatched
])
def test_max_unpool2d_round_trip_matches_torch(sg, shape, k, s, p, dtype):
    torch = need_torch()
    x = rand(shape, dtype)
    out, idx = sg.nn.functional.max_pool2d(T(sg, x), k, s, p, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, p, return_indices=True)
    assert idx.tolist() == tidx.tolist()
    _compare(sg, lambda F, v, i: F.max_unpool2d(v, i, k, s, p, output_size=shape[-2:]),
             [out.detach().numpy(), idx.numpy()], dtype)
    ours, theirs = sg.nn.MaxUnpool2d(k, s, p), torch.nn.MaxUnpool2d(k, s, p)
    assert_close(ours(out, idx), theirs(tout, tidx))


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_unpool1d_matches_torch(sg, dtype):
    torch = need_torch()
    x = rand((2, 3, 9), dtype)
    out, idx = sg.nn.functional.max_pool1d(T(sg, x), 3, 2, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool1d(torch.tensor(x), 3, 2, return_indices=True)
    assert idx.tolist() == tidx.tolist()
    _compare(sg, lambda F, v, i: F.max_unpool1d(v, i, 3, 2), [out.detach().numpy(), idx.numpy()], dtype)
    _compare(sg, lambda F, v, i: F.max_unpool1d(v, i, 3, 2, output_size=(2, 3, 10)),
             [out.detach().numpy(), idx.numpy()], dtype)
    assert_close(sg.nn.MaxUnpool1d(3, 2)(out, idx), torch.nn.MaxUnpool1d(3, 2)(tout, tidx))


def test_max_unpool_errors(sg):
    F = sg.nn.functional
    x, idx = sg.zeros(1, 1, 2, 2), sg.zeros(1, 1, 2, 2, dtype=sg.int64)
    with pytest.raises(sg.ShapeError, match=r"max_unpool2d.*\(1, 1, 2, 2\).*\(1, 1, 2\)"):
        F.max_unpool2d(x, sg.zeros(1, 1, 2, dtype=sg.int64), 2)
    with pytest.raises(TypeError, match="max_unpool2d: indices must be int64"):
        F.max_unpool2d(x, sg.zeros(1, 1, 2, 2, dtype=sg.int32), 2)
    with pytest.raises(IndexError, match="max_unpool2d: index 16"):
        F.max_unpool2d(x, idx + 16, 2)
    with pytest.raises(sg.ShapeError, match="max_unpool2d: output_size"):
        F.max_unpool2d(x, idx, 2, output_size=(7, 4))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,size", [
    ((2, 3, 7, 5), (3, 2)),  # non-divisible: windows overlap
    ((1, 2, 5, 6), 4),
    ((1, 2, 4, 6), (None, 4)),
    ((2, 3, 3), (5, 2)),  # unbatched; output larger than the input
    ((1, 1, 6, 6), 1),
])
def test_adaptive_max_pool2d_matches_torch(sg, shape, size, dtype):
    torch = need_torch()
    x = rand(shape, dtype)
    _compare(sg, lambda F, t: F.adaptive_max_pool2d(t, size), [x], dtype)
    _, idx = sg.nn.functional.adaptive_max_pool2d(T(sg, x), size, return_indices=True)
    _, tidx = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), size, return_indices=True)
    assert idx.tolist() == tidx.tolist()
    ours, theirs = same_layer(sg, lambda nn: nn.AdaptiveMaxPool2d(size))
    run_both(sg, ours, theirs, [x])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,size", [((2, 3, 7), 3), ((2, 3, 5), 5), ((3, 4), (6,)), ((1, 2, 10), 4)])
def test_adaptive_1d_pools_match_torch(sg, shape, size, dtype):
    torch = need_torch()
    x = rand(shape, dtype)
    _compare(sg, lambda F, t: F.adaptive_max_pool1d(t, size), [x], dtype)
    _compare(sg, lambda F, t: F.adaptive_avg_pool1d(t, size), [x], dtype)
    _, idx = sg.nn.functional.adaptive_max_pool1d(T(sg, x), size, return_indices=True)
    _, tidx = torch.nn.functional.adaptive_max_pool1d(torch.tensor(x), size, return_indices=True)
    assert idx.tolist() == tidx.tolist()
    for make in (lambda nn: nn.AdaptiveAvgPool1d(size), lambda nn: nn.AdaptiveMaxPool1d(size)):
        ours, theirs = same_layer(sg, make)
        run_both(sg, ours, theirs, [x])


def test_adaptive_pool_errors(sg):
    F = sg.nn.functional
    with pytest.raises(sg.ShapeError, match="adaptive_max_pool2d"):
        F.adaptive_max_pool2d(sg.zeros(1, 1, 3, 3), (0, 2))
    with pytest.raises(sg.ShapeError, match=r"adaptive_avg_pool1d.*\(1, 1, 1, 3\)"):
        F.adaptive_avg_pool1d(sg.zeros(1, 1, 1, 3), 2)
    with pytest.raises(sg.ShapeError, match="adaptive_max_pool1d"):
        F.adaptive_max_pool1d(sg.zeros(1, 1, 3), (2, 2))
