"""Attention: ``scaled_dot_product_attention`` and the forward of a multi-head attention
layer. Composites of differentiable ops (matmul, softmax, masked_fill, dropout, linear),
so the backward needs nothing of its own; where the backend offers its ``attention``
kernel (``FUSED``: stage 3), ``_Attention`` runs forward and backward without the L x S
score matrix, and the composite is the reference it is tested against."""
import math

from stage0_python.vocabulary import ArgumentError

from ... import backend as B
from ...autograd import Function, is_grad_enabled
from ...creation import cat, ones, zeros
from ...device import fused
from ...dtypes import bool_, float32, float64
from ...functional import softmax
from ...ops import where
from ...shapes import ShapeError
from ...tensor import Tensor
from .dropouts import dropout
from .linear_maps import linear
from .padding import pad

_NEG_INF = float("-inf")


def _shape(t):
    return tuple(t.shape)


def _check_qkv(op, query, key, value):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected {name} to be a Tensor, got {type(t).__name__}")
    if not (query.dtype == key.dtype == value.dtype):
        raise TypeError(f"{op}: expected query, key and value to have the same dtype, got "
                        f"{query.dtype.name}, {key.dtype.name} and {value.dtype.name}")
    if not query.dtype.is_floating_point:
        raise TypeError(f"{op}: expected floating-point query, key and value, got {query.dtype.name}")


def _check_mask_dtype(op, name, mask, like):
    """A mask is bool or of the input's floating dtype."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}: expected {name} to be a Tensor, got {type(mask).__name__}")
    if mask.dtype.name != "bool" and mask.dtype != like.dtype:
        raise TypeError(f"{op}: expected {name} to be bool or {like.dtype.name} (the query's dtype), "
                        f"got {mask.dtype.name}")


def _repeat_kv(query, key, value):
    """GQA: each key/value head serves ``Hq / Hk`` consecutive query heads."""
    if min(query.ndim, key.ndim, value.ndim) < 3:
        raise ShapeError(f"scaled_dot_product_attention: enable_gqa needs a heads dim (-3) in query, key "
                         f"and value, got shapes {_shape(query)}, {_shape(key)}, {_shape(value)}")
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hk != hv or hk == 0 or hq % hk:
        raise ShapeError(f"scaled_dot_product_attention: the number of heads in key ({hk}) and value "
                         f"({hv}) must be equal and divide the number of heads in query ({hq})")
    if hq == hk:
        return key, value
    return key.repeat_interleave(hq // hk, dim=-3), value.repeat_interleave(hq // hk, dim=-3)


def _check_mask_shape(op, mask, scores_shape):
    """A mask must broadcast to the attention scores' shape (..., L, S)."""
    try:
        full = B.broadcast_shapes(_shape(mask), scores_shape)
    except (ValueError, RuntimeError):
        full = None
    if full != scores_shape:
        raise ShapeError(f"{op}: attn_mask of shape {_shape(mask)} does not broadcast to the attention "
                         f"scores' shape {scores_shape} (..., L, S)")


def _masked(op, scores, mask):
    """``scores`` with ``mask`` applied: a bool mask sends its False positions to -inf, a
    float mask is added. It must broadcast to ``scores``."""
    _check_mask_shape(op, mask, _shape(scores))
    if mask.dtype.name == "bool":
        return scores.masked_fill(~mask, _NEG_INF)
    return scores + mask


class _Attention(Function):
    """Attention of (n, L, E) queries on (n / group, S, E) keys and (n / group, S, Ev) values,
    with a (1 or n, L, S) mask or causal, on the backend's kernel."""

    @staticmethod
    def forward(ctx, q, k, v, mask, causal, scale):
        m = None if mask is None else mask._data
        out, ctx.lse = B.attention(q._data, k._data, v._data, m, causal, scale)
        out = Tensor._make(out)
        ctx.mask, ctx.causal, ctx.scale = m, causal, scale
        ctx.save_for_backward(q, k, v, out)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out = ctx.saved_tensors
        grads = B.attention_backward(g._data, q._data, k._data, v._data, out._data, ctx.lse, ctx.mask,
                                     ctx.causal, ctx.scale)
        return (*(Tensor._make(d) for d in grads), None, None, None)


def _fused_attention(op, query, key, value, attn_mask, is_causal, scale, enable_gqa):
    """``scaled_dot_product_attention`` on the backend's kernel, or None where it does not
    apply: other dtypes, leading dims that broadcast rather than match (GQA's heads aside), a
    float mask that needs its own gradient, or a backend without the kernel."""
    dtype, lead = query.dtype, _shape(query)[:-2]
    if dtype not in (float32, float64) or not fused("attention", query._data):
        return None
    if key.ndim != query.ndim or value.ndim != query.ndim or _shape(key)[:-2] != _shape(value)[:-2]:
        return None
    group = 1
    if _shape(key)[:-2] != lead:
        if not enable_gqa or query.ndim < 3 or _shape(key)[:-3] != lead[:-1]:
            return None
        if key.shape[-3] == 0 or lead[-1] % key.shape[-3]:
            return None  # the composite raises the error
        group = lead[-1] // key.shape[-3]
    L, S, E, Ev = query.shape[-2], key.shape[-2], query.shape[-1], value.shape[-1]
    n = math.prod(lead)
    mask = None
    if attn_mask is not None:
        if attn_mask.requires_grad and is_grad_enabled():
            return None
        full = lead + (L, S)
        _check_mask_shape(op, attn_mask, full)
        if all(d == 1 for d in _shape(attn_mask)[:-2]):  # one plane for every problem
            plane = attn_mask.reshape(*_shape(attn_mask)[-2:]) if attn_mask.ndim > 2 else attn_mask
            mask = plane.expand(1, L, S)
        else:
            mask = attn_mask.expand(*full).reshape(n, L, S)
    out = _Attention.apply(query.reshape(n, L, E), key.reshape(n // group, S, E),
                           value.reshape(n // group, S, Ev), mask, is_causal, scale)
    return out.reshape(*lead, L, Ev)


def _safe_softmax(scores):
    """Softmax over the last dim; a row with every position masked (all -inf) gives zeros
    rather than NaN, as PyTorch's scaled_dot_product_attention does."""
    if scores.shape[-1] == 0:
        return scores
    dead = scores.detach().amax(dim=-1, keepdim=True) == _NEG_INF
    # the shortcut reads a value back: on a device the host would wait for it, so a device
    # takes the path that is right for every row
    if scores.device.type == "cpu" and not dead.any().item():
        return softmax(scores, -1)
    # the dead rows see zeros instead of -inf, so neither value nor gradient meets a NaN
    return where(dead, 0.0, softmax(where(dead, 0.0, scores), -1))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """See torch.nn.functional.scaled_dot_product_attention: ``softmax(q @ k^T * scale +
    mask) @ v`` over shapes (..., L, E), (..., S, E), (..., S, Ev) -> (..., L, Ev).

    A bool ``attn_mask`` marks with True the positions that take part; a float one is
    added to the scores; either broadcasts to (..., L, S). ``is_causal`` lets query ``i``
    see keys ``0..i`` (top-left aligned when L != S). ``scale`` defaults to 1/sqrt(E).
    ``enable_gqa`` repeats each key/value head (dim -3) over a group of query heads. A
    query whose every key is masked gets zeros, as in PyTorch. Dropout (``dropout_p``)
    applies whenever it is positive, with masks from the stage's generator."""
    op = "scaled_dot_product_attention"
    _check_qkv(op, query, key, value)
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ShapeError(f"{op}: expected query, key and value of at least 2 dims (..., L, E), got "
                         f"shapes {_shape(query)}, {_shape(key)}, {_shape(value)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"{op}: query (..., L, E) {_shape(query)}, key (..., S, E) {_shape(key)} and "
                         f"value (..., S, Ev) {_shape(value)} do not fit together")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ArgumentError(f"{op}: an explicit attn_mask should not be set when is_causal=True")
    if attn_mask is not None:
        _check_mask_dtype(op, "attn_mask", attn_mask, query)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    if dropout_p == 0.0:
        out = _fused_attention(op, query, key, value, attn_mask, is_causal, scale, enable_gqa)
        if out is not None:
            return out
    if enable_gqa:
        key, value = _repeat_kv(query, key, value)
    L, S = query.shape[-2], key.shape[-2]
    scores = (query * scale) @ key.transpose(-2, -1)
    if is_causal:
        attn_mask = ones(L, S, dtype=bool_, device=query.device).tril()  # query i sees keys 0..i
    if attn_mask is not None:
        _check_mask_dtype(op, "attn_mask", attn_mask, query)
        scores = _masked(op, scores, attn_mask)
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value


# ------------------------------------------------------------------ multi-head attention

def _mha_batched(op, query, key, value, key_padding_mask, attn_mask):
    """True for (L, N, E) inputs, False for unbatched (L, E) ones; the dims of key, value
    and the masks must agree with the query's."""
    shapes = f"query {_shape(query)}, key {_shape(key)}, value {_shape(value)}"
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ShapeError(f"{op}: expected query, key and value all 3-D (batched) or all 2-D "
                         f"(unbatched), got {shapes}")
    batched = query.ndim == 3
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise ShapeError(f"{op}: expected a {query.ndim - 1}-D key_padding_mask for a {query.ndim}-D "
                         f"query, got shape {_shape(key_padding_mask)}")
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise ShapeError(f"{op}: expected a 2-D or 3-D attn_mask, got shape {_shape(attn_mask)}")
    return batched


def _additive(op, name, mask, like):
    """A mask as the float to add to the scores: bool True (masked out, the layer's
    convention) becomes -inf, False 0; a float mask is used as it is."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}: expected {name} to be a Tensor, got {type(mask).__name__}")
    if mask.dtype.name == "bool":
        return zeros(_shape(mask), dtype=like.dtype, device=mask.device).masked_fill(mask, _NEG_INF)
    if mask.dtype != like.dtype:
        raise TypeError(f"{op}: only bool and floating types of {name} are supported, and a float "
                        f"{name} must have the query's dtype {like.dtype.name}; got {mask.dtype.name}")
    return mask


def _pad_key_column(mask):
    """One more key position that every query may see (bias_k or the zero key)."""
    return None if mask is None else pad(mask, (0, 1))


def _in_projections(op, query, key, value, E, in_proj_weight, in_proj_bias, separate, q_w, k_w, v_w):
    if separate:
        if q_w is None or k_w is None or v_w is None:
            raise ValueError(f"{op}: use_separate_proj_weight=True needs q_proj_weight, k_proj_weight "
                             f"and v_proj_weight")
        weights = (q_w, k_w, v_w)
    else:
        if in_proj_weight is None:
            raise ValueError(f"{op}: in_proj_weight is None while use_separate_proj_weight=False")
        weights = (in_proj_weight[:E], in_proj_weight[E:2 * E], in_proj_weight[2 * E:])
    biases = (None,) * 3 if in_proj_bias is None else \
        (in_proj_bias[:E], in_proj_bias[E:2 * E], in_proj_bias[2 * E:])
    out = []
    for name, x, w, b in zip(("query", "key", "value"), (query, key, value), weights, biases):
        if w.ndim != 2 or tuple(w.shape) != (E, x.shape[-1]):
            raise ShapeError(f"{op}: the {name} projection weight has shape {_shape(w)}, expected "
                             f"({E}, {x.shape[-1]}) for a {name} of shape {_shape(x)}")
        out.append(linear(x, w, b))
    return out


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                                 out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
                                 attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights=True, is_causal=False):
    """See torch.nn.functional.multi_head_attention_forward: the forward of
    ``nn.MultiheadAttention`` on (L, N, E) / (S, N, kdim) / (S, N, vdim) inputs, or
    unbatched (L, E) ones. Returns ``(output, weights)``, weights ``None`` unless
    ``need_weights``.

    Masks follow the layer's convention: bool True means *masked out*; float masks are
    added. ``is_causal`` is a hint that ``attn_mask`` is causal, and needs it. With
    ``need_weights`` a query whose every key is masked gives NaN, as PyTorch's; without,
    it gives zeros (PyTorch then goes through scaled_dot_product_attention)."""
    op = "multi_head_attention_forward"
    _check_qkv(op, query, key, value)
    batched = _mha_batched(op, query, key, value, key_padding_mask, attn_mask)
    if not batched:  # a batch of one; a 3-D mask (heads, L, S) is then (N * heads, L, S) already
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    if E != embed_dim_to_check:
        raise ShapeError(f"{op}: expected the query's embedding dim to be {embed_dim_to_check}, got "
                         f"query of shape {_shape(query)}")
    if num_heads < 1 or E % num_heads:
        raise ShapeError(f"{op}: embed_dim {E} is not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2] or key.shape[1] != N:
        raise ShapeError(f"{op}: key {_shape(key)} and value {_shape(value)} must share (S, N), with N "
                         f"the query's batch size {N}")
    H, hd = num_heads, E // num_heads
    S0 = key.shape[0] if static_k is None else static_k.shape[1]
    if is_causal and attn_mask is None:
        raise ValueError(f"{op}: is_causal is a hint that attn_mask is causal: pass the mask too "
                         f"(or call scaled_dot_product_attention with is_causal=True)")

    key_padding_mask = _additive(op, "key_padding_mask", key_padding_mask, query)
    if key_padding_mask is not None and _shape(key_padding_mask) != (N, S0):
        raise ShapeError(f"{op}: expected key_padding_mask of shape (N, S) = ({N}, {S0}), got "
                         f"{_shape(key_padding_mask)}")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint stands for the mask: the causal path of scaled_dot_product_attention
    else:
        attn_mask = _additive(op, "attn_mask", attn_mask, query)
        is_causal = False  # the mask, merged with the padding mask, is what counts
    if attn_mask is not None:
        expected = (L, S0) if attn_mask.ndim == 2 else (N * H, L, S0)
        if _shape(attn_mask) != expected:
            raise ShapeError(f"{op}: the {attn_mask.ndim}-D attn_mask has shape {_shape(attn_mask)}, "
                             f"expected {expected}")
        if attn_mask.ndim == 2:
            attn_mask = attn_mask.unsqueeze(0)

    q, k, v = _in_projections(op, query, key, value, E, in_proj_weight, in_proj_bias,
                              use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight)
    if bias_k is not None or bias_v is not None:
        if bias_k is None or bias_v is None or static_k is not None or static_v is not None:
            raise ValueError(f"{op}: bias_k and bias_v go together, and not with static_k/static_v")
        k = cat([k, bias_k.reshape(1, 1, E).expand(1, N, E)])
        v = cat([v, bias_v.reshape(1, 1, E).expand(1, N, E)])
        attn_mask, key_padding_mask = _pad_key_column(attn_mask), _pad_key_column(key_padding_mask)

    # heads become batch entries: (N * H, length, head_dim)
    q = q.reshape(L, N * H, hd).transpose(0, 1)
    k, v = (_heads(op, name, t, static, N * H, hd) for name, t, static in
            (("static_k", k, static_k), ("static_v", v, static_v)))
    if add_zero_attn:
        z = zeros((N * H, 1, hd), dtype=q.dtype, device=q.device)
        k, v = cat([k, z], dim=1), cat([v, z], dim=1)
        attn_mask, key_padding_mask = _pad_key_column(attn_mask), _pad_key_column(key_padding_mask)
    S = k.shape[1]
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(N, 1, 1, S).expand(N, H, 1, S).reshape(N * H, 1, S)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * (1.0 / math.sqrt(hd))) @ k.transpose(1, 2)
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = (weights @ v).transpose(0, 1).reshape(L * N, E)
        weights = weights.reshape(N, H, L, S)
        if average_attn_weights:
            weights = weights.mean(dim=1)
    else:
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.reshape(N, H, -1, S)
        out = scaled_dot_product_attention(q.reshape(N, H, L, hd), k.reshape(N, H, S, hd),
                                           v.reshape(N, H, S, hd), attn_mask, dropout_p, is_causal)
        out, weights = out.permute(2, 0, 1, 3).reshape(L * N, E), None
    out = linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights


def _heads(op, name, t, static, NH, hd):
    """(S, N, E) -> (N * H, S, head_dim), or the given static tensor, checked."""
    if static is None:
        return t.reshape(t.shape[0], NH, hd).transpose(0, 1)
    if static.ndim != 3 or static.shape[0] != NH or static.shape[2] != hd:
        raise ShapeError(f"{op}: expected {name} of shape (N * num_heads, S, head_dim) = ({NH}, S, {hd}), "
                         f"got {_shape(static)}")
    return static
