"""``MultiheadAttention``: the layer over ``functional.multi_head_attention_forward``."""
from ..shapes import ShapeError
from . import functional as F
from . import init
from .linear import Linear
from .module import Module, Parameter, _empty


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under PyTorch's name for ``MultiheadAttention.out_proj`` (PyTorch uses
    the subclass to keep dynamic quantization away from it); here it is a plain Linear."""


class MultiheadAttention(Module):
    """See torch.nn.MultiheadAttention: ``num_heads`` attention heads of size
    ``embed_dim // num_heads`` over projected query, key and value, then ``out_proj``.

    Parameters as PyTorch's: ``in_proj_weight`` (3E, E) when ``kdim == vdim == embed_dim``,
    else ``q_proj_weight``/``k_proj_weight``/``v_proj_weight``; ``in_proj_bias`` (3E);
    ``out_proj``; with ``add_bias_kv``, ``bias_k``/``bias_v`` (1, 1, E). Initialised as
    PyTorch does (``xavier_uniform_`` projections, zero biases, ``xavier_normal_`` bias_k/v) from
    the stage's generator. Bool masks mark with True what is *masked out*; float masks
    are added to the scores. Differs from PyTorch in its errors: ``ShapeError`` (a
    ``ValueError`` and ``RuntimeError``) where PyTorch asserts."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ShapeError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads "
                             f"{num_heads}")
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        E = embed_dim
        # registration order is PyTorch's, so state_dict keys come in the same order
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_empty((3 * E, E), dtype, device))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(_empty((E, E), dtype, device))
            self.k_proj_weight = Parameter(_empty((E, self.kdim), dtype, device))
            self.v_proj_weight = Parameter(_empty((E, self.vdim), dtype, device))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_empty((3 * E,), dtype, device))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(E, E, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(_empty((1, 1, E), dtype, device))
            self.bias_v = Parameter(_empty((1, 1, E), dtype, device))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """Returns ``(attn_output, attn_weights)``: the output (L, N, E), or (N, L, E) with
        ``batch_first``, or (L, E) unbatched; the weights (N, L, S) averaged over heads, or
        (N, num_heads, L, S) with ``average_attn_weights=False``, or None unless
        ``need_weights``."""
        batched = query.ndim == 3
        if self.batch_first and batched:  # the functional form is sequence-first
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
            self.out_proj.bias, training=self.training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return out, weights
