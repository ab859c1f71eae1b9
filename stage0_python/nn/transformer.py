"""The transformer layers: encoder and decoder layers, their stacks and ``Transformer``,
with ``torch.nn``'s names, so that a PyTorch state dict loads. Built from
``MultiheadAttention``, ``Linear``, ``Dropout`` and ``LayerNorm``."""
import copy

from ..creation import full
from ..dtypes import float32
from ..shapes import ShapeError
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """A float (sz, sz) mask: 0 on and below the diagonal, -inf above it (position i may
    attend to positions 0..i)."""
    return full((sz, sz), float("-inf"), dtype=dtype or float32, device=device).triu(1)


def _get_seq_len(x, batch_first):
    return x.shape[0] if x.ndim == 2 else x.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal, size):
    """``is_causal`` as given; when it is None, whether ``mask`` is exactly the causal float
    mask of ``size`` (PyTorch's rule for the stacks' ``is_causal=None``)."""
    if is_causal is not None:
        return bool(is_causal)
    if mask is None or mask.ndim != 2 or tuple(mask.shape) != (size, size):
        return False
    causal = _generate_square_subsequent_mask(size, dtype=mask.dtype) \
        if mask.dtype.is_floating_point else None
    return causal is not None and bool((mask == causal).all().item())


def _activation(activation, who):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str) or not callable(activation):
        raise ValueError(f"{who}: activation should be relu/gelu or a callable, not {activation!r}")
    return activation


def _clones(module, n):
    """``n`` independent deep copies of ``module`` (the stacks' layers share nothing)."""
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class _Layer(Module):
    """What the encoder and decoder layers share, made in PyTorch's order (its state dict's):
    self-attention, with ``memory`` attention over the encoder's output too
    (``multihead_attn``), the feed-forward block (linear1, activation, dropout, linear2),
    and a LayerNorm and a dropout for each of these blocks (``norm1``, ``dropout1``, ...)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                 norm_first, bias, device, dtype, memory):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        if memory:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                     batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        if memory:
            self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if memory:
            self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer" if memory else "TransformerEncoderLayer")

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)


class TransformerEncoderLayer(_Layer):
    """See torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block
    (linear1, activation, dropout, linear2), each with dropout, a residual connection and
    a LayerNorm, applied after the residual (post-norm) or, with ``norm_first``, before
    the block. ``activation`` is "relu", "gelu" or a callable. PyTorch's inference fast
    path is not reproduced: the result is the same as its reference path."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None,
                 dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, device, dtype, memory=False)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """``src`` (S, N, E), (N, S, E) with ``batch_first``, or (S, E); ``is_causal`` is
        a hint that ``src_mask`` is causal."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(_Layer):
    """See torch.nn.TransformerDecoderLayer: self-attention over ``tgt``, attention over
    ``memory`` (``multihead_attn``), then the feed-forward block; each with dropout, a
    residual connection and a LayerNorm (``norm1``..``norm3``), post-norm or, with
    ``norm_first``, pre-norm."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None,
                 dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, device, dtype, memory=True)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        """``tgt`` (T, N, E) and ``memory`` (S, N, E) (batch first with ``batch_first``, or
        unbatched); the ``*_is_causal`` flags are hints that the matching mask is causal."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class _Stack(Module):
    """``num_layers`` deep copies of ``layer`` (``layers.0``, ...), applied in turn, then
    ``norm`` if given."""

    def __init__(self, layer, num_layers, norm):
        super().__init__()
        self.layers = _clones(layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def _is_causal(self, mask, is_causal, x):
        """``is_causal``; when it is None, whether ``mask`` is exactly the causal float mask of
        ``x``'s sequence."""
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        return _detect_is_causal_mask(mask, is_causal, _get_seq_len(x, batch_first))


class TransformerEncoder(_Stack):
    """See torch.nn.TransformerEncoder: ``num_layers`` deep copies of ``encoder_layer``
    (``layers.0``, ...) applied in turn, then ``norm`` if given. ``enable_nested_tensor``
    and ``mask_check`` are accepted and ignored (there is no nested-tensor fast path)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__(encoder_layer, num_layers, norm)
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """``is_causal=None`` means: causal if ``mask`` is exactly the causal float mask."""
        is_causal = self._is_causal(mask, is_causal, src)
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(_Stack):
    """See torch.nn.TransformerDecoder: ``num_layers`` deep copies of ``decoder_layer``
    applied in turn to ``tgt`` with the same ``memory``, then ``norm`` if given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__(decoder_layer, num_layers, norm)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        """``tgt_is_causal=None`` means: causal if ``tgt_mask`` is exactly the causal float mask."""
        tgt_is_causal = self._is_causal(tgt_mask, tgt_is_causal, tgt)
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """See torch.nn.Transformer: an encoder of ``num_encoder_layers`` layers and a decoder
    of ``num_decoder_layers``, each stack ending in a LayerNorm (``encoder.norm``,
    ``decoder.norm``), or the given ``custom_encoder``/``custom_decoder``. Every parameter
    with more than one dim is re-initialised with ``xavier_uniform_``, as PyTorch does."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        layer_kw = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                        layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first,
                        bias=bias, **kw)

        def stack(custom, stack_class, layer_class, num_layers):
            if custom is not None:
                return custom
            layer = layer_class(d_model, nhead, **layer_kw)
            return stack_class(layer, num_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.encoder = stack(custom_encoder, TransformerEncoder, TransformerEncoderLayer, num_encoder_layers)
        self.decoder = stack(custom_decoder, TransformerDecoder, TransformerDecoderLayer, num_decoder_layers)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None,
                tgt_is_causal=None, memory_is_causal=False):
        """``src`` (S, N, E) and ``tgt`` (T, N, E), batch first with ``batch_first``, or
        unbatched (S, E) and (T, E); returns the decoder's output, shaped as ``tgt``."""
        batched = src.ndim == 3
        if src.ndim != tgt.ndim or src.ndim not in (2, 3):
            raise ShapeError(f"Transformer: expected src and tgt both 3-D (batched) or both 2-D, got "
                             f"shapes {tuple(src.shape)} and {tuple(tgt.shape)}")
        if batched and src.shape[0 if self.batch_first else 1] != tgt.shape[0 if self.batch_first else 1]:
            raise ShapeError(f"Transformer: the batch number of src {tuple(src.shape)} and tgt "
                             f"{tuple(tgt.shape)} must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature number of src {tuple(src.shape)} and tgt "
                             f"{tuple(tgt.shape)} must be equal to d_model ({self.d_model})")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A float (sz, sz) mask with -inf above the diagonal and 0 elsewhere: position
        ``i`` may attend to positions ``0..i``."""
        return _generate_square_subsequent_mask(sz, device, dtype)
