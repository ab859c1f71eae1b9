"""Every nn layer against PyTorch: the same layer with the same weights must give the
same output, input gradient, parameter gradients and buffers (running statistics), in
train and eval mode; small conv/pool/norm cases also pass float64 finite differences."""
import math

import numpy as np
import pytest

from .helpers_core import T, gradcheck, settled, upstream
from .helpers_nn import compare_grads, load_from_torch, rand, run_both, same_layer, tol
from .oracle import assert_close, need_torch, need_torch_at_least

pytestmark = [pytest.mark.needs_torch,
              pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel:UserWarning")]

# (id, make(nn) -> layer, input shape); ``make`` is called with torch.nn and sg.nn alike
LAYERS = [
    ("linear", lambda nn: nn.Linear(5, 3), (4, 5)),
    ("linear_nobias_3d", lambda nn: nn.Linear(5, 3, bias=False), (2, 3, 5)),
    ("linear_1d_input", lambda nn: nn.Linear(4, 2), (4,)),
    ("conv1d", lambda nn: nn.Conv1d(3, 4, 3), (2, 3, 8)),
    ("conv1d_stride_pad_dil_groups", lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
     (2, 4, 9)),
    ("conv1d_same_even_kernel", lambda nn: nn.Conv1d(2, 3, 4, padding="same"), (2, 2, 7)),
    ("conv1d_unbatched", lambda nn: nn.Conv1d(2, 3, 3, padding=1), (2, 6)),
    ("conv2d", lambda nn: nn.Conv2d(3, 4, 3), (2, 3, 5, 5)),
    ("conv2d_stride_pad", lambda nn: nn.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 6, 6)),
    ("conv2d_rect_dil_groups", lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2),
                                                    dilation=(1, 2), groups=2), (2, 4, 6, 5)),
    ("conv2d_depthwise_nobias", lambda nn: nn.Conv2d(3, 6, 3, groups=3, bias=False), (1, 3, 5, 5)),
    ("conv2d_same", lambda nn: nn.Conv2d(2, 3, (4, 3), padding="same", dilation=(1, 2)), (1, 2, 6, 7)),
    ("conv2d_valid", lambda nn: nn.Conv2d(2, 2, 2, padding="valid"), (1, 2, 4, 4)),
    ("conv2d_unbatched", lambda nn: nn.Conv2d(2, 3, 3, padding=1), (2, 4, 4)),
    ("conv2d_reflect", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 5, 5)),
    ("conv2d_replicate", lambda nn: nn.Conv2d(2, 2, 3, padding=2, padding_mode="replicate"), (1, 2, 4, 4)),
    ("conv2d_circular", lambda nn: nn.Conv2d(2, 2, 3, padding=(1, 2), padding_mode="circular"), (1, 2, 4, 5)),
    ("maxpool2d", lambda nn: nn.MaxPool2d(2), (2, 3, 6, 6)),
    ("maxpool2d_stride_pad", lambda nn: nn.MaxPool2d(3, stride=2, padding=1), (2, 2, 7, 7)),
    ("maxpool2d_ceil_dilation", lambda nn: nn.MaxPool2d((3, 2), stride=2, padding=(1, 0), dilation=(1, 2),
                                                        ceil_mode=True), (1, 2, 8, 9)),
    ("maxpool2d_unbatched", lambda nn: nn.MaxPool2d(2), (2, 5, 5)),
    ("maxpool1d", lambda nn: nn.MaxPool1d(3, stride=2, padding=1), (2, 3, 9)),
    ("avgpool2d", lambda nn: nn.AvgPool2d(2), (2, 3, 6, 6)),
    ("avgpool2d_pad_exclude", lambda nn: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
     (2, 2, 7, 7)),
    ("avgpool2d_ceil", lambda nn: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), (1, 2, 6, 6)),
    ("avgpool2d_ceil_exclude", lambda nn: nn.AvgPool2d(2, 2, ceil_mode=True, count_include_pad=False),
     (1, 2, 5, 5)),
    ("avgpool2d_divisor", lambda nn: nn.AvgPool2d(2, divisor_override=3), (1, 2, 4, 4)),
    ("avgpool3d_ceil_exclude", lambda nn: nn.AvgPool3d((3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1),
                                                       ceil_mode=True, count_include_pad=False), (1, 2, 4, 3, 6)),
    ("avgpool3d_ceil_divisor", lambda nn: nn.AvgPool3d(2, ceil_mode=True, divisor_override=3), (2, 3, 5, 4)),
    ("avgpool1d", lambda nn: nn.AvgPool1d(3, 2, 1), (2, 3, 8)),
    ("adaptive_avg", lambda nn: nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 5, 7)),
    ("adaptive_avg_global", lambda nn: nn.AdaptiveAvgPool2d(1), (2, 3, 4, 4)),
    ("adaptive_avg_none", lambda nn: nn.AdaptiveAvgPool2d((None, 2)), (1, 2, 3, 5)),
    ("adaptive_avg_larger", lambda nn: nn.AdaptiveAvgPool2d((5, 4)), (1, 1, 3, 3)),
    ("batchnorm1d", lambda nn: nn.BatchNorm1d(4), (6, 4)),
    ("batchnorm1d_3d", lambda nn: nn.BatchNorm1d(3, momentum=0.3), (4, 3, 5)),
    ("batchnorm1d_cumulative", lambda nn: nn.BatchNorm1d(3, momentum=None), (5, 3)),
    ("batchnorm1d_noaffine", lambda nn: nn.BatchNorm1d(3, affine=False), (5, 3)),
    ("batchnorm2d", lambda nn: nn.BatchNorm2d(3), (2, 3, 4, 4)),
    ("batchnorm2d_nobias", lambda nn: nn.BatchNorm2d(2, bias=False), (3, 2, 2, 2)),
    ("batchnorm2d_no_running", lambda nn: nn.BatchNorm2d(3, track_running_stats=False), (2, 3, 3, 3)),
    ("layernorm", lambda nn: nn.LayerNorm(5), (2, 3, 5)),
    ("layernorm_2d_noaffine", lambda nn: nn.LayerNorm((3, 5), elementwise_affine=False), (2, 3, 5)),
    ("layernorm_nobias", lambda nn: nn.LayerNorm(4, bias=False, eps=1e-3), (3, 4)),
    ("groupnorm", lambda nn: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    ("groupnorm_nobias", lambda nn: nn.GroupNorm(1, 3, bias=False), (2, 3, 2, 2)),
    ("groupnorm_3d_noaffine", lambda nn: nn.GroupNorm(3, 6, affine=False), (2, 6, 4)),
    ("rmsnorm", lambda nn: nn.RMSNorm(5), (2, 3, 5)),
    ("rmsnorm_2d_eps", lambda nn: nn.RMSNorm([3, 5], eps=1e-3), (2, 3, 5)),
    ("flatten", lambda nn: nn.Flatten(), (2, 3, 4)),
    ("flatten_0_1", lambda nn: nn.Flatten(0, 1), (2, 3, 4)),
    ("unflatten", lambda nn: nn.Unflatten(1, (2, 3)), (2, 6)),
    ("identity", lambda nn: nn.Identity(), (2, 3)),
    ("relu", lambda nn: nn.ReLU(), (3, 4)),
    ("gelu", lambda nn: nn.GELU(), (3, 4)),
    ("gelu_tanh", lambda nn: nn.GELU(approximate="tanh"), (3, 4)),
    ("silu", lambda nn: nn.SiLU(), (3, 4)),
    ("tanh", lambda nn: nn.Tanh(), (3, 4)),
    ("sigmoid", lambda nn: nn.Sigmoid(), (3, 4)),
    ("leaky_relu", lambda nn: nn.LeakyReLU(0.2), (3, 4)),
    ("softplus", lambda nn: nn.Softplus(beta=2.0, threshold=3.0), (3, 4)),
    ("softmax", lambda nn: nn.Softmax(dim=1), (2, 3, 4)),
    ("log_softmax", lambda nn: nn.LogSoftmax(dim=-1), (2, 3, 4)),
    ("small_cnn", lambda nn: nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(2, 2, 3, padding=1), nn.GroupNorm(1, 2), nn.GELU(), nn.AdaptiveAvgPool2d(2),
        nn.Flatten(), nn.Dropout(0.0), nn.Linear(8, 3), nn.LogSoftmax(dim=1)), (2, 1, 6, 6)),
]


def _converted(sg, make, dtype):
    """``make`` in ``dtype``: PyTorch's layer cast with ``.double()``, ours with ``.to``."""
    if dtype == "float32":
        return make
    return lambda nn: make(nn).double() if nn.__name__.startswith("torch") else make(nn).to(sg.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(sg, name, make, shape, train, dtype):
    if name in ("batchnorm2d_nobias", "groupnorm_nobias"):
        need_torch_at_least("2.13", "bias=False in BatchNorm and GroupNorm")
    ours, theirs = same_layer(sg, _converted(sg, make, dtype))
    run_both(sg, ours, theirs, [rand(shape, dtype)], train=train)


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.BatchNorm1d(3), (5, 3)),
    (lambda nn: nn.BatchNorm1d(3, momentum=None), (4, 3, 2)),
    (lambda nn: nn.BatchNorm2d(2, momentum=0.5), (3, 2, 2, 3)),
], ids=["bn1d", "bn1d_cumulative", "bn2d"])
def test_batchnorm_running_stats_over_steps(sg, make, shape):
    """Three training batches update running mean, variance and the batch count exactly
    as PyTorch does; eval mode then normalises with those statistics."""
    ours, theirs = same_layer(sg, make, randomize=False)
    for step in range(3):
        run_both(sg, ours, theirs, [rand(shape, seed=step, low=-1.0 + step, high=2.0 + step)], train=True)
        ours.zero_grad()
        theirs.zero_grad()
    assert ours.num_batches_tracked.item() == 3
    run_both(sg, ours, theirs, [rand(shape, seed=9)], train=False)


def test_batchnorm_eval_uses_running_stats(sg):
    """In eval mode the output depends only on the running statistics, not on the batch."""
    bn = sg.nn.BatchNorm1d(2).eval()
    with sg.no_grad():
        bn.running_mean.copy_(sg.tensor([1.0, -1.0]))
        bn.running_var.copy_(sg.tensor([4.0, 0.25]))
    x = sg.tensor([[3.0, 0.0], [1.0, -1.0]])
    expected = (np.array([[3.0, 0.0], [1.0, -1.0]]) - [1.0, -1.0]) / np.sqrt(np.array([4.0, 0.25]) + 1e-5)
    assert_close(bn(x), expected.astype(np.float32))
    assert bn.num_batches_tracked.item() == 0


# ------------------------------------------------------------------ embedding and losses

@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 1}, {"padding_idx": -1},
                                    {"scale_grad_by_freq": True}, {"max_norm": 1.0},
                                    {"max_norm": 1.5, "norm_type": 1.0}],
                         ids=["plain", "padding_idx", "padding_idx_negative", "scale_grad_by_freq",
                              "max_norm", "max_norm_l1"])
def test_embedding_matches_torch(sg, kwargs):
    ours, theirs = same_layer(sg, lambda nn: nn.Embedding(6, 3, **kwargs))
    idx = np.array([[0, 1, 5], [1, 1, 2]], dtype=np.int64)
    run_both(sg, ours, theirs, [idx])  # max_norm renormalises in place: state compared too


def test_embedding_init_and_padding_row(sg):
    emb = sg.nn.Embedding(5, 4, padding_idx=2)
    w = emb.weight.detach().numpy()
    assert np.all(w[2] == 0) and np.all(w[[0, 1, 3, 4]] != 0)
    pre = sg.nn.Embedding.from_pretrained(sg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert not pre.weight.requires_grad
    assert pre(sg.tensor([1, 0])).tolist() == [[3.0, 4.0], [1.0, 2.0]]


LOSSES = [
    ("ce", lambda nn: nn.CrossEntropyLoss(), "class"),
    ("ce_weight_sum", lambda nn: nn.CrossEntropyLoss(weight=nn._w(4), reduction="sum"), "class"),
    ("ce_ignore_smooth", lambda nn: nn.CrossEntropyLoss(ignore_index=2, label_smoothing=0.1), "class"),
    ("ce_none", lambda nn: nn.CrossEntropyLoss(reduction="none"), "class"),
    ("ce_probs", lambda nn: nn.CrossEntropyLoss(), "probs"),
    ("nll", lambda nn: nn.NLLLoss(), "class"),
    ("nll_weight_ignore", lambda nn: nn.NLLLoss(weight=nn._w(4), ignore_index=0), "class"),
    ("mse", lambda nn: nn.MSELoss(), "same"),
    ("mse_sum", lambda nn: nn.MSELoss(reduction="sum"), "same"),
    ("bce_logits", lambda nn: nn.BCEWithLogitsLoss(), "binary"),
    ("bce_logits_pos_weight", lambda nn: nn.BCEWithLogitsLoss(pos_weight=nn._w(4), reduction="none"),
     "binary"),
]


class _NN:
    """An ``nn`` namespace that also makes a fixed positive class-weight tensor of its
    framework, so one ``make`` builds either loss."""

    def __init__(self, nn, to_tensor):
        self._nn, self._to = nn, to_tensor

    def __getattr__(self, name):
        return getattr(self._nn, name)

    def _w(self, n):
        return self._to(np.linspace(0.5, 2.0, n).astype(np.float32))


@pytest.mark.parametrize("name,make,target", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_torch(sg, name, make, target):
    torch = need_torch()
    ours = make(_NN(sg.nn, lambda a: T(sg, a)))
    theirs = make(_NN(torch.nn, torch.from_numpy))
    x = rand((5, 4))
    rng = np.random.default_rng(3)
    if target == "class":
        y = np.array([0, 2, 3, 1, 2], dtype=np.int64)
    elif target == "probs":
        p = rng.uniform(size=(5, 4))
        y = (p / p.sum(1, keepdims=True)).astype(np.float32)
    elif target == "binary":
        y = (rng.uniform(size=(5, 4)) < 0.5).astype(np.float32)
    else:
        y = rand((5, 4), seed=7)
    xs, _ = run_both(sg, ours, theirs, [x, y])
    assert xs[0].grad is not None


# ------------------------------------------------------------------ dropout

def test_dropout_statistics_and_gradient(sg):
    p, n = 0.3, 4000
    drop = sg.nn.Dropout(p)
    x = sg.tensor(rand((n,), low=0.5, high=1.5).tolist(), requires_grad=True)
    out = drop(x)
    g = upstream((n,))
    out.backward(T(sg, g))
    o, xv, grad = out.detach().numpy(), x.detach().numpy(), x.grad.numpy()
    kept = o != 0
    frac = 1 - kept.mean()
    assert abs(frac - p) < 4 * math.sqrt(p * (1 - p) / n), f"dropped fraction {frac}, expected {p}"
    np.testing.assert_allclose(o[kept], xv[kept] / (1 - p), rtol=1e-6)
    # the gradient is the upstream gradient through the same mask and scale
    np.testing.assert_allclose(grad, np.where(kept, g / (1 - p), 0), rtol=1e-6, atol=0)


def test_dropout_eval_and_edge_probabilities(sg):
    x = sg.tensor(rand((50,)).tolist(), requires_grad=True)
    assert sg.nn.Dropout(0.5).eval()(x) is x
    assert sg.nn.Dropout(0.0)(x) is x
    out = sg.nn.Dropout(1.0)(x)
    assert np.all(out.detach().numpy() == 0)
    out.sum().backward()
    assert np.all(x.grad.numpy() == 0)
    with pytest.raises(ValueError, match="dropout probability"):
        sg.nn.Dropout(1.5)
    with pytest.raises(ValueError, match="dropout probability"):
        sg.nn.functional.dropout(x, p=-0.1)


def test_dropout_mask_is_reproducible(sg):
    x = sg.ones(200)
    sg.manual_seed(5)
    a = sg.nn.functional.dropout(x, 0.5).tolist()
    sg.manual_seed(5)
    b = sg.nn.functional.dropout(x, 0.5).tolist()
    c = sg.nn.functional.dropout(x, 0.5).tolist()
    assert a == b and a != c


# ------------------------------------------------------------------ functional extras

def test_max_pool_indices_match_torch(sg):
    torch = need_torch()
    x = rand((2, 2, 7, 6))
    F = sg.nn.functional
    for kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
               {"kernel_size": (2, 3), "stride": 2, "dilation": (2, 1), "ceil_mode": True}):
        out, idx = F.max_pool2d(T(sg, x), return_indices=True, **kw)
        tout, tidx = torch.nn.functional.max_pool2d(torch.from_numpy(x), return_indices=True, **kw)
        assert_close(out, tout)
        assert idx.tolist() == tidx.tolist()
    # ties, and windows with several NaNs: the first maximum wins, and every NaN takes over
    ties = np.random.default_rng(3).choice(np.array([0.0, 1.0, np.nan], "float32"), size=(2, 2, 6, 8))
    for kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}):
        out, idx = F.max_pool2d(T(sg, ties), return_indices=True, **kw)
        tout, tidx = torch.nn.functional.max_pool2d(torch.from_numpy(ties), return_indices=True, **kw)
        np.testing.assert_array_equal(out.numpy(), tout.numpy())
        assert idx.tolist() == tidx.tolist(), kw
    out, idx = sg.nn.MaxPool1d(2, return_indices=True)(T(sg, x[0]))
    tout, tidx = torch.nn.MaxPool1d(2, return_indices=True)(torch.from_numpy(x[0]))
    assert_close(out, tout)
    assert idx.tolist() == tidx.tolist()


def test_unfold_fold_match_torch(sg):
    torch = need_torch()
    F, TF = sg.nn.functional, torch.nn.functional
    kw = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}
    x = rand((2, 3, 5, 4))
    xs = T(sg, x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    cols, tcols = F.unfold(xs, **kw), TF.unfold(tx, **kw)
    assert_close(cols, tcols)
    c = rand(tuple(tcols.shape), seed=1)
    cs = T(sg, c, requires_grad=True)
    tc = torch.tensor(c, requires_grad=True)
    img, timg = F.fold(cs, (5, 4), **kw), TF.fold(tc, (5, 4), **kw)
    assert_close(img, timg)
    # each one's backward is the other
    for out, tout, inp, tinp in ((cols, tcols, xs, tx), (img, timg, cs, tc)):
        g = upstream(tuple(tout.shape))
        out.backward(T(sg, g))
        tout.backward(torch.from_numpy(g))
        assert_close(inp.grad, tinp.grad)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch(sg, mode):
    torch = need_torch()
    x = rand((1, 2, 4, 5))
    pads = (2, 1, 1, 3) if mode != "constant" else (2, -1, 0, 3)
    kw = {"value": 1.5} if mode == "constant" else {}
    xs = T(sg, x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    out = sg.nn.functional.pad(xs, pads, mode=mode, **kw)
    tout = torch.nn.functional.pad(tx, pads, mode=mode, **kw)
    assert_close(out, tout)
    g = upstream(tuple(tout.shape))
    out.backward(T(sg, g))
    tout.backward(torch.from_numpy(g))
    assert_close(xs.grad, tx.grad)


@pytest.mark.parametrize("fn", ["relu", "silu", "leaky_relu"])
def test_inplace_activation_matches_torch(sg, fn):
    """``inplace=True`` on an intermediate result: same values, same gradient, and the
    intermediate itself holds the result."""
    torch = need_torch()
    x = rand((3, 4))
    xs = T(sg, x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    h, th = xs * 2.0, tx * 2.0
    out = getattr(sg.nn.functional, fn)(h, inplace=True)
    tout = getattr(torch.nn.functional, fn)(th, inplace=True)
    assert out is h
    assert_close(out, tout)
    g = upstream((3, 4))
    out.backward(T(sg, g))
    tout.backward(torch.from_numpy(g))
    assert_close(xs.grad, tx.grad)


def test_softmax_without_dim_follows_torch_rule(sg):
    x = rand((2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = sg.nn.Softmax()(T(sg, x))
    e = np.exp(x - x.max(1, keepdims=True))
    assert_close(out, e / e.sum(1, keepdims=True))


# ------------------------------------------------------------------ finite differences (float64)

def _f64(shape, seed=0):
    return rand(shape, "float64", seed=seed)


GRADCHECK = [
    ("conv2d_groups_stride_dilation",
     lambda F: lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2), groups=2),
     [(1, 2, 4, 5), (2, 1, 2, 2), (2,)]),
    ("conv1d_same", lambda F: lambda x, w: F.conv1d(x, w, padding="same"), [(1, 2, 5), (2, 2, 2)]),
    ("max_pool2d_ceil", lambda F: lambda x: F.max_pool2d(x, 2, stride=2, padding=1, ceil_mode=True),
     [(1, 1, 5, 4)]),
    ("avg_pool2d_exclude", lambda F: lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                            count_include_pad=False), [(1, 1, 4, 5)]),
    ("adaptive_avg_pool2d", lambda F: lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [(1, 1, 3, 4)]),
    ("batch_norm_train", lambda F: lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     [(3, 2, 2), (2,), (2,)]),
    ("layer_norm", lambda F: lambda x, w, b: F.layer_norm(x, (3,), w, b), [(2, 3), (3,), (3,)]),
    ("group_norm", lambda F: lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 2), (4,), (4,)]),
    ("rms_norm", lambda F: lambda x, w: F.rms_norm(x, (3,), w), [(2, 3), (3,)]),
    ("fold", lambda F: lambda c: F.fold(c, (3, 3), 2), [(1, 4, 4)]),
    ("pad_reflect", lambda F: lambda x: F.pad(x, (1, 2), mode="reflect"), [(1, 2, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRADCHECK, ids=[c[0] for c in GRADCHECK])
@pytest.mark.capability("float64")
def test_gradcheck_float64(sg, name, fn, shapes):
    gradcheck(sg, fn(sg.nn.functional), *[_f64(s, seed=i) for i, s in enumerate(shapes)])


@pytest.mark.capability("float64")
def test_embedding_gradcheck(sg):
    # padding_idx and scale_grad_by_freq change the gradient on purpose: PyTorch checks those
    idx = sg.tensor([[0, 2], [2, 2]])
    w = T(sg, _f64((3, 2)), requires_grad=True)
    assert sg.autograd.gradcheck(lambda w: sg.nn.functional.embedding(idx, w), [w])


# ------------------------------------------------------------------ bad input

BAD = [
    ("Linear", lambda nn: nn.Linear(4, 2), (3, 5), ValueError),
    ("Conv2d", lambda nn: nn.Conv2d(3, 2, 3), (1, 2, 5, 5), ValueError),
    ("Conv2d", lambda nn: nn.Conv2d(3, 2, 3), (3, 5), ValueError),
    ("Conv2d", lambda nn: nn.Conv2d(1, 2, 4), (1, 1, 3, 3), ValueError),
    ("Conv1d", lambda nn: nn.Conv1d(2, 2, 3), (1, 3, 5), ValueError),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(2), (4, 4), ValueError),
    ("max_pool2d", lambda nn: nn.MaxPool2d(4), (1, 1, 3, 3), ValueError),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(2), (2, 1, 2, 2, 2), ValueError),
    ("BatchNorm1d", lambda nn: nn.BatchNorm1d(3), (4, 2), ValueError),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3), (4, 3, 2), ValueError),
    ("batch_norm", lambda nn: nn.BatchNorm1d(3), (1, 3), ValueError),
    ("LayerNorm", lambda nn: nn.LayerNorm(4), (2, 5), ValueError),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 4), (2, 3, 2), ValueError),
    ("RMSNorm", lambda nn: nn.RMSNorm((2, 3)), (2, 3, 2), ValueError),
]


@pytest.mark.parametrize("name,make,shape,error", BAD, ids=[f"{c[0]}_{i}" for i, c in enumerate(BAD)])
def test_bad_input_shape_raises_clear_error(sg, name, make, shape, error):
    layer = make(sg.nn)
    x = sg.randn(*shape)
    before = x.tolist()
    with pytest.raises(error) as info:
        layer(x)
    msg = str(info.value)
    assert name.lower() in msg.lower() and str(tuple(shape)) in msg, msg
    assert x.tolist() == before


def test_bad_constructor_and_functional_arguments(sg):
    nn, F = sg.nn, sg.nn.functional
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="half of the kernel"):
        F.max_pool2d(sg.randn(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match="conv2d.*bias"):
        F.conv2d(sg.randn(1, 2, 3, 3), sg.randn(4, 2, 2, 2), sg.randn(3))
    with pytest.raises(ValueError, match="linear"):
        F.linear(sg.randn(2, 3), sg.randn(4, 2))
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


def test_embedding_bad_indices(sg):
    emb = sg.nn.Embedding(4, 2)
    # "out of bounds": the gather's words, where the device checks (and raises at a read back)
    with pytest.raises(IndexError, match="index 4 is out of (range|bounds)"):
        settled(emb(sg.tensor([0, 4])))
    with pytest.raises(IndexError, match="index -1 is out of (range|bounds)"):
        settled(emb(sg.tensor([-1, 0])))
    with pytest.raises(TypeError, match="integer"):
        emb(sg.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="padding_idx"):
        sg.nn.Embedding(4, 2, padding_idx=4)


@pytest.mark.capability("float64")
def test_layers_accept_dtype_argument(sg):
    torch = need_torch()
    lin = sg.nn.Linear(3, 2, dtype=sg.float64)
    assert lin.weight.dtype == sg.float64 and lin.bias.dtype == sg.float64
    bn = sg.nn.BatchNorm1d(3, dtype=sg.float64)
    assert bn.running_mean.dtype == sg.float64 and bn.num_batches_tracked.dtype == sg.int64
    x = rand((2, 3), "float64")
    theirs = torch.nn.Linear(3, 2, dtype=torch.float64)
    load_from_torch(sg, lin, theirs)
    assert_close(lin(T(sg, x)), theirs(torch.from_numpy(x)), *tol("float64"))
    compare_grads(lin, theirs, *tol("float64"))
