"""Attention and transformer layers against PyTorch: scaled_dot_product_attention (every
mask kind, causal with L == S and L != S, scale, GQA, any number of leading dims),
MultiheadAttention (layouts, kdim/vdim, bias_kv, zero attention, padding and attention
masks, weights averaged or per head, unbatched), the encoder and decoder layers, their
stacks and nn.Transformer: outputs, input gradients and every parameter gradient under
a random upstream, float32 and float64; state_dict layout; errors."""
import copy
import math

import numpy as np
import pytest

from .helpers_core import T, check_grads
from .helpers_nn import rand, run_both, same_layer
from .oracle import assert_close, need_torch

pytestmark = [pytest.mark.needs_torch,
              # PyTorch's own notices, about mixing bool and float masks (done on purpose
              # here) and about its nested-tensor fast path
              pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")]

DTYPES = ["float32", "float64"]
# random weights of unit scale make large scores and sharp softmaxes: float32 rounding
# (another summation order than PyTorch's) then reaches a few 1e-5 on values near 20
LOOSE = {"float32": dict(rtol=1e-3, atol=1e-4), "float64": {}}


def _is_torch(nn):
    return nn.__name__.startswith("torch")


def _converted(sg, make, dtype):
    """``make`` in ``dtype``: PyTorch's layer cast with ``.double()``, ours with ``.to``."""
    if dtype == "float32":
        return make
    return lambda nn: make(nn).double() if _is_torch(nn) else make(nn).to(sg.float64)


def _const(sg, nn, arr):
    """The NumPy array ``arr`` as a constant tensor of the framework ``nn`` belongs to."""
    if arr is None:
        return None
    return need_torch().tensor(np.asarray(arr)) if _is_torch(nn) else T(sg, np.asarray(arr))


def _wrapped(sg, make, call, masks=None):
    """``make(nn)`` inside a module whose forward is ``call(inner, masks, *inputs)``, the
    masks (NumPy arrays) made constants of the right framework: run_both then compares
    what ``call`` returns, gradients included."""
    masks = masks or {}

    def build(nn):
        inner = make(nn)
        consts = {k: _const(sg, nn, v) for k, v in masks.items()}

        class Wrapper(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            def forward(self, *xs):
                return call(self.inner, consts, *xs)
        return Wrapper()
    return build


def _bool_mask(shape, seed, p=0.3):
    """A random bool mask with at least one False per row (True entries are ``p`` likely)."""
    m = np.random.default_rng(seed).random(shape) < p
    m[..., 0] = False
    return m


# ------------------------------------------------------------------ scaled_dot_product_attention

def _causal_float(n, dtype):
    """PyTorch's causal float mask: -inf above the diagonal."""
    return np.triu(np.full((n, n), -np.inf, dtype=dtype), 1)


SDPA = [
    # (name, q shape, k shape, v shape, kwargs, mask)
    ("4d_ev_ne_e", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), {}, None),
    ("3d", (2, 4, 6), (2, 3, 6), (2, 3, 5), {}, None),
    ("2d", (3, 4), (5, 4), (5, 2), {}, None),
    ("5d_broadcast_batch", (2, 1, 2, 3, 4), (1, 3, 2, 4, 4), (1, 3, 2, 4, 3), {}, None),
    ("bool_mask_2d", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), {}, _bool_mask((3, 5), 1)),
    ("bool_mask_4d", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), {}, _bool_mask((2, 1, 3, 5), 2)),
    ("float_mask", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), {}, "float"),
    ("causal_square", (2, 2, 4, 4), (2, 2, 4, 4), (2, 2, 4, 3), {"is_causal": True}, None),
    ("causal_l_lt_s", (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), {"is_causal": True}, None),
    ("causal_l_gt_s", (1, 2, 5, 4), (1, 2, 3, 4), (1, 2, 3, 4), {"is_causal": True}, None),
    ("scale", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), {"scale": 0.3}, _bool_mask((3, 5), 3)),
    ("gqa", (2, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), {"enable_gqa": True}, None),
    ("gqa_causal", (1, 6, 4, 4), (1, 2, 4, 4), (1, 2, 4, 4), {"enable_gqa": True, "is_causal": True}, None),
    ("gqa_3d_mask", (4, 3, 4), (1, 5, 4), (1, 5, 4), {"enable_gqa": True}, _bool_mask((4, 3, 5), 4)),
    # longer than a fused kernel's block of query rows and tile of keys (stage 3: 64 and 256)
    ("long_causal", (1, 2, 300, 4), (1, 2, 600, 4), (1, 2, 600, 3), {"is_causal": True}, None),
    ("long_bool_mask", (1, 1, 70, 4), (1, 1, 530, 4), (1, 1, 530, 3), {}, _bool_mask((70, 530), 5)),
    ("long_float_mask", (1, 2, 3, 4), (1, 2, 520, 4), (1, 2, 520, 4), {}, "float"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,qs,ks,vs,kw,mask", SDPA, ids=[c[0] for c in SDPA])
def test_sdpa_matches_torch(sg, name, qs, ks, vs, kw, mask, dtype):
    torch = need_torch()
    if isinstance(mask, str):  # an additive mask, with a -inf entry
        mask = rand((1, 2, qs[-2], ks[-2]), dtype, seed=9)
        mask[0, 1, 0, 2] = -np.inf
    ours, theirs = (None, None) if mask is None else (T(sg, mask), torch.tensor(mask))
    check_grads(sg, lambda q, k, v: sg.nn.functional.scaled_dot_product_attention(q, k, v, ours, **kw),
                lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, theirs, **kw),
                rand(qs, dtype, seed=1), rand(ks, dtype, seed=2), rand(vs, dtype, seed=3))


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.capability("float64")
def test_sdpa_fully_masked_row_gives_zeros_as_torch(sg, kind):
    """PyTorch 2.x's scaled_dot_product_attention gives zeros (not NaN) for a query whose
    every key is masked, and no gradient through that row; the stage does the same."""
    torch = need_torch()
    m = _bool_mask((3, 4), 5)
    m[1] = False
    mask = m if kind == "bool" else np.where(m, 0.0, -np.inf).astype("float64")
    ours, theirs = T(sg, mask), torch.tensor(mask)
    xs = check_grads(sg, lambda q, k, v: sg.nn.functional.scaled_dot_product_attention(q, k, v, ours),
                     lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, theirs),
                     rand((2, 3, 4), "float64", seed=1), rand((2, 4, 4), "float64", seed=2),
                     rand((2, 4, 2), "float64", seed=3))
    out = sg.nn.functional.scaled_dot_product_attention(*xs, ours)
    assert np.array(out.tolist())[:, 1].tolist() == [[0.0, 0.0]] * 2
    assert not np.isnan(np.array(xs[0].grad.tolist())).any()


def test_sdpa_empty_key_sequence(sg):
    """No keys at all: every output is zero, as in PyTorch."""
    F = sg.nn.functional
    out = F.scaled_dot_product_attention(sg.zeros(2, 3, 4), sg.zeros(2, 0, 4), sg.zeros(2, 0, 5))
    assert tuple(out.shape) == (2, 3, 5) and out.abs().sum().item() == 0.0


def test_sdpa_dropout_seeded_and_unbiased(sg):
    """dropout_p > 0: PyTorch's masks cannot be matched, so check that the same seed gives
    the same result (and gradient), and that the scaled weights keep their mean: with equal
    scores and unit values every output is 1 on average."""
    F = sg.nn.functional
    q, k = T(sg, rand((1, 2, 3, 4), seed=1)), T(sg, rand((1, 2, 5, 4), seed=2))
    v = T(sg, rand((1, 2, 5, 3), seed=3), requires_grad=True)
    results = []
    for _ in range(2):
        sg.manual_seed(7)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
        v.grad = None
        out.sum().backward()
        results.append((out.tolist(), v.grad.tolist()))
    assert results[0] == results[1]
    assert results[0][0] != F.scaled_dot_product_attention(q, k, v).tolist()
    n, S = 3000, 8
    sg.manual_seed(3)
    out = F.scaled_dot_product_attention(sg.zeros(n, 2), sg.zeros(S, 2), sg.ones(S, 1), dropout_p=0.5)
    vals = np.array(out.tolist())
    # each output is (kept keys) / S / (1 - p): mean 1, standard deviation 1/sqrt(S) per row
    assert abs(vals.mean() - 1.0) < 4 / math.sqrt(S * n)
    assert set(np.round(vals.ravel() * S / 2).astype(int)) <= set(range(S + 1))


def test_sdpa_errors(sg):
    F = sg.nn.functional
    q, k, v = sg.zeros(2, 4, 3, 8), sg.zeros(2, 2, 5, 8), sg.zeros(2, 2, 5, 6)
    with pytest.raises(ValueError, match="is_causal"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=sg.ones(3, 5, dtype=sg.bool_), is_causal=True,
                                       enable_gqa=True)
    with pytest.raises(sg.ShapeError, match=r"heads.*\(3\).*\(4\)"):
        F.scaled_dot_product_attention(q, sg.zeros(2, 3, 5, 8), sg.zeros(2, 3, 5, 6), enable_gqa=True)
    with pytest.raises(TypeError, match="attn_mask.*int64"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=sg.ones(3, 5, dtype=sg.int64), enable_gqa=True)
    with pytest.raises(sg.ShapeError, match=r"\(3, 4\).*\(2, 4, 3, 5\)"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=sg.ones(3, 4, dtype=sg.bool_), enable_gqa=True)
    with pytest.raises(TypeError, match="floating"):
        F.scaled_dot_product_attention(*(t.to(sg.int64) for t in (q, q, q)))
    with pytest.raises(sg.ShapeError, match=r"\(2, 2, 5, 7\)"):
        F.scaled_dot_product_attention(q, sg.zeros(2, 2, 5, 7), v, enable_gqa=True)
    with pytest.raises(sg.ShapeError, match=r"\(2, 2, 4, 6\)"):
        F.scaled_dot_product_attention(q, k, sg.zeros(2, 2, 4, 6), enable_gqa=True)
    with pytest.raises(ValueError, match="dropout probability"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.5, enable_gqa=True)
    with pytest.raises(RuntimeError):  # the shape errors are RuntimeErrors too, as PyTorch's
        F.scaled_dot_product_attention(q, sg.zeros(2, 3, 5, 8), sg.zeros(2, 3, 5, 6), enable_gqa=True)


@pytest.mark.capability("float64")
def test_sdpa_refuses_a_mask_or_operand_of_another_float_dtype(sg):
    F = sg.nn.functional
    q, k, v = sg.zeros(2, 4, 3, 8), sg.zeros(2, 2, 5, 8), sg.zeros(2, 2, 5, 6)
    with pytest.raises(TypeError, match="attn_mask.*float64"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=sg.ones(3, 5, dtype=sg.float64), enable_gqa=True)
    with pytest.raises(TypeError, match="same dtype.*float32, float64"):
        F.scaled_dot_product_attention(q, k.double(), v, enable_gqa=True)


# ------------------------------------------------------------------ MultiheadAttention

def _mha_call(sg, kw):
    """A call of the layer with ``kw`` and the masks; when there are weights, the output
    and the weights flattened into one tensor, so that both are compared."""
    def call(m, masks, q, k, v):
        out, w = m(q, k, v, key_padding_mask=masks.get("kpm"), attn_mask=masks.get("attn"), **kw)
        if w is None:
            return out
        cat = sg.cat if isinstance(out, sg.Tensor) else need_torch().cat
        return cat([out.reshape(-1), w.reshape(-1)])
    return call


MHA = [
    # (name, constructor kwargs, forward kwargs, (L, S, N), masks)
    ("default", {}, {}, (3, 4, 2), {}),
    ("batch_first_per_head", {"batch_first": True}, {"average_attn_weights": False}, (3, 4, 2), {}),
    ("kdim_vdim_no_weights", {"kdim": 6, "vdim": 5}, {"need_weights": False}, (3, 4, 2), {}),
    ("kdim_vdim_weights", {"kdim": 6, "vdim": 5, "batch_first": True}, {}, (3, 4, 2), {}),
    ("bias_kv_zero_attn_bool_masks", {"add_bias_kv": True, "add_zero_attn": True}, {}, (3, 4, 2),
     {"kpm": "bool", "attn": "bool2"}),
    ("bias_kv_zero_attn_no_weights", {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True},
     {"need_weights": False}, (3, 4, 2), {"kpm": "bool", "attn": "float3"}),
    ("float_kpm_3d_mask", {}, {"average_attn_weights": False}, (3, 5, 2), {"kpm": "float", "attn": "float3"}),
    ("float_kpm_no_weights", {"batch_first": True}, {"need_weights": False}, (4, 3, 2),
     {"kpm": "float", "attn": "bool2"}),
    ("no_bias", {"bias": False}, {}, (3, 4, 2), {"attn": "bool2"}),
    ("causal_hint", {"batch_first": True}, {"need_weights": False, "is_causal": True}, (4, 4, 2),
     {"attn": "causal"}),
    ("causal_hint_with_padding", {}, {"need_weights": False, "is_causal": True}, (4, 4, 2),
     {"attn": "causal", "kpm": "bool"}),
    ("unbatched", {}, {"average_attn_weights": False}, (3, 4, None), {"kpm": "bool", "attn": "bool3"}),
    ("unbatched_no_weights", {"kdim": 6, "vdim": 5}, {"need_weights": False}, (3, 4, None),
     {"kpm": "float", "attn": "float2"}),
]


def _mha_masks(masks, L, S, N, H, dtype):
    out = {}
    for key, kind in masks.items():
        if key == "kpm":
            shape = (S,) if N is None else (N, S)
        else:
            shape = (L, S) if kind.endswith("2") or kind == "causal" else ((N or 1) * H, L, S)
        if kind == "causal":
            out[key] = np.triu(np.full(shape, -np.inf, dtype=dtype), 1)
        elif kind.startswith("bool"):
            out[key] = _bool_mask(shape, len(out) + 11)
        else:
            m = rand(shape, dtype, seed=len(out) + 21)
            m[..., -1] = -np.inf  # the last key masked everywhere
            out[key] = m
    return out


def _mha_inputs(kw, L, S, N, dtype):
    E, kd, vd = 8, kw.get("kdim", 8), kw.get("vdim", 8)

    def shape(n, d):
        if N is None:
            return (n, d)
        return (N, n, d) if kw.get("batch_first") else (n, N, d)
    return [rand(shape(L, E), dtype, seed=1), rand(shape(S, kd), dtype, seed=2),
            rand(shape(S, vd), dtype, seed=3)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,ckw,fkw,sizes,masks", MHA, ids=[c[0] for c in MHA])
def test_multihead_attention_matches_torch(sg, name, ckw, fkw, sizes, masks, dtype):
    L, S, N = sizes
    make = _wrapped(sg, _converted(sg, lambda nn: nn.MultiheadAttention(8, 2, **ckw), dtype),
                    _mha_call(sg, fkw), _mha_masks(masks, L, S, N, 2, dtype))
    ours, theirs = same_layer(sg, make)
    run_both(sg, ours, theirs, _mha_inputs(ckw, L, S, N, dtype), **LOOSE[dtype])


def test_multihead_attention_dropout_train_and_eval(sg):
    """dropout=0.5: in eval mode the layer matches PyTorch; in training it drops weights
    with the stage's generator, reproducibly under a seed."""
    kw = {"batch_first": True}
    make = _wrapped(sg, lambda nn: nn.MultiheadAttention(8, 2, dropout=0.5, **kw), _mha_call(sg, {}))
    ours, theirs = same_layer(sg, make)
    run_both(sg, ours, theirs, _mha_inputs(kw, 3, 4, 2, "float32"), train=False, **LOOSE["float32"])
    q = T(sg, _mha_inputs(kw, 3, 4, 2, "float32")[0])
    ours.train()
    outs = []
    for _ in range(2):
        sg.manual_seed(4)
        outs.append(ours.inner(q, q, q)[1].tolist())
    assert outs[0] == outs[1]
    ours.eval()
    assert ours.inner(q, q, q)[1].tolist() != outs[0]


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_fully_padded_sample(sg, need_weights):
    """A sample whose every key is padded: with need_weights PyTorch's layer gives NaN
    (its own softmax), without it zeros (scaled_dot_product_attention); so does the stage."""
    torch = need_torch()
    ours, theirs = same_layer(sg, lambda nn: nn.MultiheadAttention(8, 2, batch_first=True))
    x = rand((2, 3, 8), "float64", seed=1).astype("float32")
    kpm = np.zeros((2, 3), dtype=bool)
    kpm[0] = True
    out, w = ours(*(T(sg, x),) * 3, key_padding_mask=T(sg, kpm), need_weights=need_weights)
    tout, tw = theirs(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(kpm), need_weights=need_weights)
    assert_close(out, tout, rtol=1e-5, atol=1e-6)
    assert np.isnan(np.array(out.tolist())[0]).all() == need_weights
    if need_weights:
        assert_close(w, tw)


@pytest.mark.parametrize("ckw", [{}, {"kdim": 6, "vdim": 5, "add_bias_kv": True}, {"bias": False}],
                         ids=["packed", "separate_bias_kv", "no_bias"])
def test_multihead_attention_parameters_as_torch(sg, ckw):
    """The same parameter names, order and shapes as PyTorch's (its state_dict loads);
    PyTorch's initialisation: zero biases, xavier-uniform projections, all from the seed."""
    torch = need_torch()
    theirs = torch.nn.MultiheadAttention(8, 2, **ckw)
    ours = sg.nn.MultiheadAttention(8, 2, **ckw)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    ours.load_state_dict({k: T(sg, v.numpy()) for k, v in theirs.state_dict().items()})
    assert isinstance(ours.out_proj, sg.nn.Linear)
    if ckw.get("bias", True):
        assert not any(ours.in_proj_bias.tolist()) and not any(ours.out_proj.bias.tolist())
    w = ours.in_proj_weight if not ckw.get("kdim") else ours.k_proj_weight
    bound = math.sqrt(6.0 / sum(w.shape))
    assert np.abs(np.array(w.tolist())).max() <= bound
    sg.manual_seed(1)
    a = sg.nn.MultiheadAttention(8, 2, **ckw).state_dict()
    sg.manual_seed(1)
    b = sg.nn.MultiheadAttention(8, 2, **ckw).state_dict()
    assert all(a[k].tolist() == b[k].tolist() for k in a)


def test_multihead_attention_errors(sg):
    nn = sg.nn
    with pytest.raises(sg.ShapeError, match="embed_dim 8 must be divisible by num_heads 3"):
        nn.MultiheadAttention(8, 3)
    m = nn.MultiheadAttention(8, 2)
    x = sg.zeros(3, 2, 8)
    with pytest.raises(sg.ShapeError, match=r"embedding dim to be 8.*\(3, 2, 6\)"):
        m(sg.zeros(3, 2, 6), x, x)
    with pytest.raises(sg.ShapeError, match=r"key_padding_mask of shape \(N, S\) = \(2, 3\).*\(2, 4\)"):
        m(x, x, x, key_padding_mask=sg.zeros(2, 4, dtype=sg.bool_))
    with pytest.raises(sg.ShapeError, match=r"2-D attn_mask has shape \(3, 4\), expected \(3, 3\)"):
        m(x, x, x, attn_mask=sg.zeros(3, 4, dtype=sg.bool_))
    with pytest.raises(sg.ShapeError, match=r"3-D attn_mask has shape \(2, 3, 3\), expected \(4, 3, 3\)"):
        m(x, x, x, attn_mask=sg.zeros(2, 3, 3, dtype=sg.bool_))
    with pytest.raises(TypeError, match="key_padding_mask.*int64"):
        m(x, x, x, key_padding_mask=sg.zeros(2, 3, dtype=sg.int64))
    with pytest.raises(ValueError, match="is_causal"):
        m(x, x, x, is_causal=True)
    with pytest.raises(sg.ShapeError, match=r"all 3-D .* or all 2-D"):
        m(x, sg.zeros(3, 8), sg.zeros(3, 8))
    with pytest.raises(sg.ShapeError, match=r"key \(4, 2, 8\) and value \(3, 2, 8\)"):
        m(x, sg.zeros(4, 2, 8), x)
    with pytest.raises(sg.ShapeError, match=r"key projection weight.*\(8, 8\).*\(8, 6\)"):
        m(x, sg.zeros(3, 2, 6), x)


@pytest.mark.capability("float64")
def test_multihead_attention_refuses_a_float_mask_of_another_dtype(sg):
    m, x = sg.nn.MultiheadAttention(8, 2), sg.zeros(3, 2, 8)
    with pytest.raises(TypeError, match="attn_mask.*float64"):
        m(x, x, x, attn_mask=sg.zeros(3, 3, dtype=sg.float64))


# ------------------------------------------------------------------ transformer layers

def _layer_kw(norm_first, activation, dropout):
    return dict(dim_feedforward=16, dropout=dropout, norm_first=norm_first, activation=activation)


def _activation(nn, name):
    """relu/gelu by name, or a callable: the tanh GELU module."""
    return nn.GELU(approximate="tanh") if name == "callable" else name


def _enc_call(m, masks, x):
    return m(x, src_mask=masks.get("src_mask"), src_key_padding_mask=masks.get("kpm"))


def _stack_call(m, masks, x):
    return m(x, mask=masks.get("src_mask"), src_key_padding_mask=masks.get("kpm"))


def _dec_call(m, masks, x, mem):
    return m(x, mem, tgt_mask=masks.get("tgt_mask"), memory_mask=masks.get("memory_mask"),
             tgt_key_padding_mask=masks.get("kpm"), memory_key_padding_mask=masks.get("mem_kpm"))


LAYER_CASES = [
    # (norm_first, activation, batch_first, train with dropout 0.0 / eval with dropout 0.1)
    (False, "relu", False, False), (True, "relu", True, False), (False, "gelu", True, True),
    (True, "gelu", False, True), (True, "callable", True, False),
]
LAYER_IDS = [f"{'pre' if c[0] else 'post'}-{c[1]}-{'bf' if c[2] else 'sf'}-{'train' if c[3] else 'eval'}"
             for c in LAYER_CASES]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first,act,batch_first,train", LAYER_CASES, ids=LAYER_IDS)
def test_encoder_layer_matches_torch(sg, norm_first, act, batch_first, train, dtype):
    N, S = 2, 4
    masks = {"src_mask": _causal_float(S, dtype), "kpm": _bool_mask((N, S), 3)}
    make = _wrapped(sg, _converted(sg, lambda nn: nn.TransformerEncoderLayer(
        8, 2, batch_first=batch_first, **_layer_kw(norm_first, _activation(nn, act), 0.0 if train else 0.1)),
        dtype), _enc_call, masks)
    ours, theirs = same_layer(sg, make)
    shape = (N, S, 8) if batch_first else (S, N, 8)
    run_both(sg, ours, theirs, [rand(shape, dtype)], train=train, **LOOSE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first,act,batch_first,train", LAYER_CASES, ids=LAYER_IDS)
def test_decoder_layer_matches_torch(sg, norm_first, act, batch_first, train, dtype):
    N, T_, S = 2, 3, 4
    masks = {"tgt_mask": _causal_float(T_, dtype), "memory_mask": _bool_mask((T_, S), 5),
             "kpm": _bool_mask((N, T_), 6), "mem_kpm": _bool_mask((N, S), 7)}
    make = _wrapped(sg, _converted(sg, lambda nn: nn.TransformerDecoderLayer(
        8, 2, batch_first=batch_first, **_layer_kw(norm_first, _activation(nn, act), 0.0 if train else 0.1)),
        dtype), _dec_call, masks)
    ours, theirs = same_layer(sg, make)
    shape = (lambda n: (N, n, 8)) if batch_first else (lambda n: (n, N, 8))
    run_both(sg, ours, theirs, [rand(shape(T_), dtype), rand(shape(S), dtype, seed=4)], train=train,
             **LOOSE[dtype])


def test_layers_unbatched(sg):
    """(S, E) inputs with 1-D padding masks."""
    make = _wrapped(sg, lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), _enc_call,
                    {"kpm": _bool_mask((4,), 8)})
    run_both(sg, *same_layer(sg, make), [rand((4, 8), "float64").astype("float32")], **LOOSE["float32"])
    make = _wrapped(sg, lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True),
                    _dec_call, {"tgt_mask": _causal_float(3, "float32")})
    run_both(sg, *same_layer(sg, make), [rand((3, 8)), rand((4, 8), seed=2)], **LOOSE["float32"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post", "pre"])
def test_encoder_and_decoder_stacks_match_torch(sg, norm_first, dtype):
    """Two deep-copied layers and a final LayerNorm; the causal float mask is recognised
    (is_causal=None) as PyTorch does."""
    N, T_, S = 2, 3, 4
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, batch_first=True)

    def enc(nn):
        layer = nn.TransformerEncoderLayer(8, 2, **kw)
        return nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=False)

    masks = {"src_mask": _causal_float(S, dtype), "kpm": _bool_mask((N, S), 3)}
    ours, theirs = same_layer(sg, _wrapped(sg, _converted(sg, enc, dtype), _stack_call, masks))
    run_both(sg, ours, theirs, [rand((N, S, 8), dtype)], **LOOSE[dtype])
    assert ours.inner.layers[0].linear1 is not ours.inner.layers[1].linear1

    def dec(nn):
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, **kw), 2, norm=nn.LayerNorm(8))

    masks = {"tgt_mask": _causal_float(T_, dtype), "mem_kpm": _bool_mask((N, S), 4)}
    ours, theirs = same_layer(sg, _wrapped(sg, _converted(sg, dec, dtype), _dec_call, masks))
    run_both(sg, ours, theirs, [rand((N, T_, 8), dtype), rand((N, S, 8), dtype, seed=5)], **LOOSE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first", [False, True], ids=["sf", "bf"])
def test_transformer_matches_torch(sg, batch_first, dtype):
    N, S, T_ = 2, 4, 3

    def make(nn):
        return nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
                              dropout=0.0, batch_first=batch_first, norm_first=batch_first)

    def call(m, masks, src, tgt):
        return m(src, tgt, tgt_mask=masks["tgt_mask"], src_key_padding_mask=masks["src_kpm"],
                 memory_key_padding_mask=masks["src_kpm"], tgt_key_padding_mask=masks["tgt_kpm"])

    masks = {"tgt_mask": _causal_float(T_, dtype),
             "src_kpm": _bool_mask((N, S), 1), "tgt_kpm": _bool_mask((N, T_), 2)}
    ours, theirs = same_layer(sg, _wrapped(sg, _converted(sg, make, dtype), call, masks))
    shape = (lambda n: (N, n, 8)) if batch_first else (lambda n: (n, N, 8))
    run_both(sg, ours, theirs, [rand(shape(S), dtype), rand(shape(T_), dtype, seed=2)], **LOOSE[dtype])


def test_transformer_state_dict_and_init(sg):
    """The same keys, order and shapes as PyTorch's (its state_dict loads strictly);
    matrices re-initialised xavier-uniform, reproducibly under a seed."""
    torch = need_torch()
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16)
    theirs = torch.nn.Transformer(**kw)
    sg.manual_seed(2)
    ours = sg.nn.Transformer(**kw)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    ours.load_state_dict({k: T(sg, v.numpy()) for k, v in theirs.state_dict().items()})
    sg.manual_seed(2)
    again = sg.nn.Transformer(**kw).state_dict()
    fresh = sg.nn.Transformer(**kw).state_dict()
    w = "decoder.layers.1.linear2.weight"
    assert again[w].tolist() != fresh[w].tolist()
    assert np.abs(np.array(fresh[w].tolist())).max() <= math.sqrt(6.0 / (8 + 16))
    for make in (lambda nn: nn.TransformerEncoderLayer(8, 2, bias=False),
                 lambda nn: nn.TransformerDecoderLayer(8, 2, 32, activation="gelu")):
        assert list(make(sg.nn).state_dict()) == list(make(torch.nn).state_dict())


def test_generate_square_subsequent_mask(sg):
    torch = need_torch()
    for sz in (1, 4):
        m = sg.nn.Transformer.generate_square_subsequent_mask(sz)
        assert m.dtype == sg.float32
        assert_close(m, torch.nn.Transformer.generate_square_subsequent_mask(sz))


@pytest.mark.capability("float64")
def test_generate_square_subsequent_mask_in_float64(sg):
    torch = need_torch()
    m = sg.nn.Transformer.generate_square_subsequent_mask(3, dtype=sg.float64)
    assert m.dtype == sg.float64
    assert_close(m, torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64))


def test_deepcopy_of_modules(sg):
    """copy.deepcopy (used to clone the stacks' layers) gives independent parameters with
    the same values, type, requires_grad and grads, buffers included."""
    m = sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.BatchNorm1d(4), sg.nn.MultiheadAttention(4, 2))
    m[0](sg.ones(2, 3)).sum().backward()
    m.eval()
    c = copy.deepcopy(m)
    assert not c.training and type(c[2].out_proj) is type(m[2].out_proj)
    for (name, p), (_, q) in zip(m.state_dict(keep_vars=True).items(), c.state_dict(keep_vars=True).items()):
        assert p is not q and type(p) is type(q) and p.tolist() == q.tolist(), name
        assert p.requires_grad == q.requires_grad
    assert c[0].weight.grad.tolist() == m[0].weight.grad.tolist() and c[0].weight.grad is not m[0].weight.grad
    with sg.no_grad():
        c[0].weight.add_(1.0)
    assert c[0].weight.tolist() != m[0].weight.tolist()


def test_transformer_errors(sg):
    nn = sg.nn
    with pytest.raises(ValueError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(sg.ShapeError, match="divisible"):
        nn.TransformerDecoderLayer(8, 3)
    t = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(sg.ShapeError, match=r"batch number.*\(4, 2, 8\).*\(3, 1, 8\)"):
        t(sg.zeros(4, 2, 8), sg.zeros(3, 1, 8))
    with pytest.raises(sg.ShapeError, match=r"d_model \(8\)"):
        t(sg.zeros(4, 2, 6), sg.zeros(3, 2, 6))
    with pytest.raises(sg.ShapeError, match="both 3-D"):
        t(sg.zeros(4, 2, 8), sg.zeros(3, 8))
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    with pytest.raises(ValueError, match="is_causal"):
        layer(sg.zeros(3, 2, 8), is_causal=True)


def test_functional_names_exported(sg):
    F = sg.nn.functional
    assert {"scaled_dot_product_attention", "multi_head_attention_forward"} <= set(F.__all__)
    for name in ("MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
                 "TransformerEncoderLayer", "TransformerDecoderLayer"):
        assert getattr(sg.nn, name).__doc__
