"""Padding modes (negative pads included) and padding layers, instance and local response
norm, channel and alpha dropout, Bilinear and EmbeddingBag against PyTorch: outputs,
input and parameter gradients, running statistics, float32 and float64."""
import numpy as np
import pytest

from .helpers_core import T
from .helpers_nn import rand, run_both, same_layer
from .oracle import assert_close, need_torch
from .test_nn_layers import _converted
from .test_nn_upsample_conv_transpose import _compare

pytestmark = pytest.mark.needs_torch

DTYPES = ["float32", "float64"]

PADS = [
    ((2, 3, 6), (2, 1)), ((2, 3, 6), (-1, 2)), ((2, 3, 6), (2, -1)), ((2, 3, 6), (-2, -1)),
    ((3, 5), (1, 3)),  # unbatched 1-d
    ((1, 2, 4, 5), (1, 2, 3, 0)), ((1, 2, 4, 5), (-1, 2, 1, -2)), ((2, 3, 4), (2, 2, 1, 1)),
    ((1, 1, 3, 4, 5), (1, 1, 2, 0, 1, 2)),  # 3-d padding
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
@pytest.mark.parametrize("shape,pad", PADS, ids=[f"{s}-{p}" for s, p in PADS])
def test_pad_modes_match_torch(sg, shape, pad, mode, dtype):
    _compare(sg, lambda F, x: F.pad(x, pad, mode=mode), [rand(shape, dtype)], dtype)


@pytest.mark.capability("float64")
def test_pad_transposed_input_and_edge_values(sg):
    x = np.array([[[0.0, -0.0, np.inf, np.nan, -np.inf, 1.0]]], dtype="float32")
    for mode in ("reflect", "replicate", "circular"):
        _compare(sg, lambda F, t: F.pad(t, (3, -1), mode=mode), [x], "float32")
    y = rand((1, 3, 4), "float64")
    _compare(sg, lambda F, t: F.pad(t.transpose(1, 2), (2, 1), mode="reflect"), [y], "float64")


def test_pad_errors(sg):
    F = sg.nn.functional
    x = sg.zeros(1, 2, 3)
    with pytest.raises(sg.ShapeError, match="pad: reflect padding"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(sg.ShapeError, match="pad: circular padding"):
        F.pad(x, (4, 0), mode="circular")
    with pytest.raises(ValueError, match=r"pad: padding \(-2, -2\) would cut"):
        F.pad(x, (-2, -2), mode="replicate")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,make,shape", [
    ("ReflectionPad1d", lambda nn: nn.ReflectionPad1d((2, 1)), (2, 3, 5)),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d(2), (1, 2, 3, 4)),
    ("ReplicationPad1d", lambda nn: nn.ReplicationPad1d(3), (2, 4)),
    ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d((1, 0, 2, -1)), (1, 2, 3, 4)),
    ("CircularPad1d", lambda nn: nn.CircularPad1d((1, 2)), (1, 2, 4)),
    ("CircularPad2d", lambda nn: nn.CircularPad2d(1), (2, 3, 3)),
    ("ZeroPad1d", lambda nn: nn.ZeroPad1d((1, -1)), (1, 2, 4)),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), (1, 2, 3, 3)),
    ("ConstantPad1d", lambda nn: nn.ConstantPad1d(2, 3.5), (1, 2, 4)),
    ("ConstantPad2d", lambda nn: nn.ConstantPad2d((1, 0, 2, 1), -1.0), (2, 3, 3)),
])
def test_padding_layers_match_torch(sg, name, make, shape, dtype):
    ours, theirs = same_layer(sg, make)
    run_both(sg, ours, theirs, [rand(shape, dtype)])


# ------------------------------------------------------------------ normalisation

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("name,make,shape", [
    ("in1d", lambda nn: nn.InstanceNorm1d(3), (2, 3, 5)),
    ("in1d_affine", lambda nn: nn.InstanceNorm1d(3, affine=True), (2, 3, 4)),
    ("in1d_unbatched", lambda nn: nn.InstanceNorm1d(3, affine=True, track_running_stats=True), (3, 6)),
    ("in2d_track", lambda nn: nn.InstanceNorm2d(2, track_running_stats=True, momentum=0.3), (3, 2, 3, 4)),
    ("in2d_affine_track", lambda nn: nn.InstanceNorm2d(2, affine=True, track_running_stats=True),
     (2, 2, 3, 3)),
    ("lrn", lambda nn: nn.LocalResponseNorm(3), (2, 5, 4)),
    ("lrn_4d", lambda nn: nn.LocalResponseNorm(2, alpha=0.5, beta=0.6, k=2.0), (2, 4, 3, 2)),
    ("lrn_wide", lambda nn: nn.LocalResponseNorm(7, alpha=1.0), (1, 3, 2, 2, 2)),
])
def test_norm_layers_match_torch(sg, name, make, shape, train, dtype):
    ours, theirs = same_layer(sg, _converted(sg, make, dtype))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    run_both(sg, ours, theirs, [rand(shape, dtype)], train=train)


@pytest.mark.capability("float64")
def test_instance_norm_functional_and_errors(sg):
    torch = need_torch()
    x = rand((2, 3, 5), "float64")
    w, b = rand((3,), "float64", seed=1), rand((3,), "float64", seed=2)
    _compare(sg, lambda F, t, ww, bb: F.instance_norm(t, weight=ww, bias=bb), [x, w, b], "float64")
    rm, rv = sg.zeros(3, dtype=sg.float64), sg.ones(3, dtype=sg.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    sg.nn.functional.instance_norm(T(sg, x), rm, rv, momentum=0.2)
    torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, momentum=0.2)
    assert_close(rm, trm)
    assert_close(rv, trv)
    with pytest.raises(sg.ShapeError, match=r"instance_norm: weight.*\(2, 3, 5\)"):
        sg.nn.functional.instance_norm(T(sg, x), weight=sg.ones(2, dtype=sg.float64))
    with pytest.raises(sg.ShapeError, match=r"InstanceNorm2d\(2\).*\(1, 2\)"):
        sg.nn.InstanceNorm2d(2)(sg.zeros(1, 2))
    with pytest.raises(sg.ShapeError, match=r"InstanceNorm1d\(2\).*\(1, 3, 4\)"):
        sg.nn.InstanceNorm1d(2, affine=True)(sg.zeros(1, 3, 4))
    with pytest.raises(sg.ShapeError, match="local_response_norm"):
        sg.nn.functional.local_response_norm(sg.zeros(2, 3), 2)


# ------------------------------------------------------------------ dropout variants

@pytest.mark.filterwarnings("ignore:dropout2d")
@pytest.mark.parametrize("name,shape", [("dropout1d", (4, 50, 6)), ("dropout1d", (50, 6)),
                                        ("dropout2d", (4, 50, 3, 2)), ("dropout2d", (5, 40, 3))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_channel_dropout_zeroes_whole_channels(sg, name, shape, dtype):
    """Each channel is either all zero or all scaled by 1/(1-p); about p of them drop;
    the gradient carries the same mask; eval mode is the identity, as PyTorch's."""
    torch = need_torch()
    sg.manual_seed(0)
    p = 0.4
    x = T(sg, rand(shape, dtype, low=1.0, high=2.0), requires_grad=True)
    out = getattr(sg.nn.functional, name)(x, p, training=True)
    out.backward(sg.ones(*shape, dtype=getattr(sg, dtype)))
    y, g, xv = out.detach().numpy(), x.grad.numpy(), x.detach().numpy()
    # dropout2d reads a 3-D input as (N, C, L), as PyTorch 2.x does (with a warning)
    lead = 2 if len(shape) == 3 or name == "dropout2d" else 1
    ratio = (y / xv).reshape(int(np.prod(shape[:lead])), -1)
    for row in ratio:
        assert np.allclose(row, 0.0) or np.allclose(row, 1 / (1 - p))
    assert np.allclose(g.reshape(ratio.shape), ratio)
    dropped = np.mean([np.allclose(r, 0.0) for r in ratio])
    assert 0.2 < dropped < 0.6
    layer = {"dropout1d": sg.nn.Dropout1d, "dropout2d": sg.nn.Dropout2d}[name](p).eval()
    tlayer = {"dropout1d": torch.nn.Dropout1d, "dropout2d": torch.nn.Dropout2d}[name](p).eval()
    assert_close(layer(x), tlayer(torch.tensor(xv)))


@pytest.mark.capability("float64")
def test_alpha_dropout_preserves_statistics(sg):
    """On standard normal input, training-mode alpha dropout keeps mean 0 and variance 1
    (the property PyTorch's constants are chosen for), drops about p of the units to one
    value, and is the identity in eval mode, like PyTorch's."""
    torch = need_torch()
    sg.manual_seed(1)
    p = 0.3
    x = np.random.default_rng(2).standard_normal(20000)
    out = sg.nn.functional.alpha_dropout(T(sg, x), p, training=True).numpy()
    tout = torch.nn.functional.alpha_dropout(torch.tensor(x), p, training=True).numpy()
    for o in (out, tout):
        assert abs(o.mean()) < 0.03 and abs(o.var() - 1.0) < 0.05
    # the dropped units share one value, the most common output: PyTorch's
    vals, counts = np.unique(out, return_counts=True)
    tvals, tcounts = np.unique(tout, return_counts=True)
    low = vals[counts.argmax()]
    assert np.isclose(low, tvals[tcounts.argmax()])
    assert abs(counts.max() / out.size - p) < 0.02
    x3 = T(sg, x[:12].reshape(3, 4))
    assert_close(sg.nn.AlphaDropout(p).eval()(x3), torch.nn.AlphaDropout(p).eval()(torch.tensor(x[:12].reshape(3, 4))))
    assert sg.nn.functional.alpha_dropout(x3, p).tolist() == x3.tolist()  # training=False by default


def test_dropout_variants_errors(sg):
    with pytest.raises(ValueError, match="between 0 and 1"):
        sg.nn.functional.dropout2d(sg.zeros(1, 2, 3, 3), 1.5)
    with pytest.raises(sg.ShapeError, match=r"dropout1d.*\(1, 2, 3, 3\)"):
        sg.nn.functional.dropout1d(sg.zeros(1, 2, 3, 3))


# ------------------------------------------------------------------ Bilinear and EmbeddingBag

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(sg, dtype, bias):
    ours, theirs = same_layer(sg, _converted(sg, lambda nn: nn.Bilinear(3, 4, 5, bias=bias), dtype))
    run_both(sg, ours, theirs, [rand((6, 3), dtype, seed=1), rand((6, 4), dtype, seed=2)])
    run_both(sg, ours, theirs, [rand((2, 2, 3), dtype, seed=3), rand((2, 2, 4), dtype, seed=4)])
    with pytest.raises(sg.ShapeError, match=r"bilinear.*\(6, 3\).*\(6, 5\)"):
        ours(T(sg, rand((6, 3), dtype)), T(sg, rand((6, 5), dtype)))


def test_bilinear_init_as_torch(sg):
    layer = sg.nn.Bilinear(16, 3, 60)
    bound = 1 / np.sqrt(16)
    for p in (layer.weight, layer.bias):
        v = np.abs(p.detach().numpy())
        assert v.max() <= bound and v.max() > 0.5 * bound


BAGS = [
    # (input, offsets, kwargs)
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 4], {}),
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 2, 2, 5], {}),  # an empty bag
    ([[1, 2, 4], [4, 3, 9]], None, {}),
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 3, 8], dict(include_last_offset=True)),
    ([1, 0, 4, 0, 4, 3, 0, 9], [0, 3, 4], dict(padding_idx=0)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("inp,offsets,kw", BAGS, ids=[str(i) for i in range(len(BAGS))])
def test_embedding_bag_matches_torch(sg, inp, offsets, kw, mode, dtype):
    ours, theirs = same_layer(sg, _converted(sg, lambda nn: nn.EmbeddingBag(10, 3, mode=mode, **kw), dtype))
    args = [np.array(inp, dtype="int64")] + ([] if offsets is None else [np.array(offsets, dtype="int64")])
    run_both(sg, ours, theirs, args)


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_bag_per_sample_weights(sg, dtype):
    idx, off = np.array([1, 2, 4, 5, 4, 3], dtype="int64"), np.array([0, 2], dtype="int64")
    w = rand((10, 3), dtype, seed=1)
    psw = rand((6,), dtype, seed=2)
    _compare(sg, lambda F, i, o, ww, p: F.embedding_bag(i, ww, o, mode="sum", per_sample_weights=p),
             [idx, off, w, psw], dtype, grads=[False, False, True, True])
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        sg.nn.functional.embedding_bag(T(sg, idx), T(sg, w), T(sg, off), mode="mean",
                                       per_sample_weights=T(sg, psw))


def test_embedding_bag_errors(sg):
    F = sg.nn.functional
    w = sg.zeros(5, 2)
    with pytest.raises(IndexError, match="embedding_bag: index 7"):
        F.embedding_bag(sg.tensor([1, 7]), w, sg.tensor([0]))
    with pytest.raises(TypeError, match="embedding_bag: indices must be an integer tensor"):
        F.embedding_bag(sg.tensor([1.0]), w, sg.tensor([0]))
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(sg.tensor([[1, 2]]), w, sg.tensor([0]))
    with pytest.raises(sg.ShapeError, match=r"embedding_bag: weight must be 2-D"):
        F.embedding_bag(sg.tensor([1]), sg.zeros(5), sg.tensor([0]))


def test_existing_activation_layers_are_present(sg):
    """The activation layers real programs use exist under PyTorch's names (compared with
    PyTorch in test_nn_activations_losses.py)."""
    for name in ("PReLU", "GLU", "Hardtanh", "ReLU6", "ELU", "SELU", "CELU", "Mish", "Hardswish",
                 "Hardsigmoid", "Softsign", "Softmin", "Threshold", "Tanhshrink"):
        assert issubclass(getattr(sg.nn, name), sg.nn.Module), name
