"""A character-level GPT: token embeddings, ``n_layer`` pre-norm transformer blocks of
causal self-attention and an MLP, a final layer norm and a read-out tied to the embedding.

Positions are ``"learned"`` (a table, as GPT-2), ``"rotary"`` (RoPE: queries and keys
rotated by an angle proportional to their position, so attention scores depend on the
distance between tokens) or ``"sinusoidal"`` (the fixed encoding of "Attention Is All You
Need", added to the embeddings). ``n_kv_head < n_head`` gives grouped-query attention:
each key/value head serves ``n_head // n_kv_head`` query heads, shrinking the KV cache by
that factor. ``generate`` decodes with a ``KVCache``, so each new token costs one
position's work instead of a forward over the whole context.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def sinusoidal_encoding(length, dim, base=10000.0):
    """(length, dim): ``sin(p / base**(2i/dim))`` in the even columns, ``cos`` in the odd ones."""
    angles = _angles(length, dim, base)  # (length, ceil(dim / 2))
    table = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)[:, :dim]
    return table.float().to(torch.get_default_device())


def _angles(length, dim, base):
    """``p * base**(-2i/dim)`` for positions p and pairs i, in float64 on the CPU (a device
    may lack float64): rounded once to float32 at the end, the tables are the same on every
    framework and device."""
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64, device="cpu") * (-math.log(base) / dim))
    return torch.arange(length, dtype=torch.float64, device="cpu").unsqueeze(1) * inv_freq


class RotaryEmbedding(nn.Module):
    """Rotates pairs of features (``i`` and ``i + head_dim/2``) of queries and keys by
    ``position * base**(-2i/head_dim)``. The angles are a buffer, not parameters, and are
    not saved in the state_dict (they follow from the configuration)."""

    def __init__(self, head_dim, max_len, base=10000.0):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"RotaryEmbedding: head_dim must be even, got {head_dim}")
        angles = _angles(max_len, head_dim, base)
        angles = torch.cat([angles, angles], dim=-1)  # (max_len, head_dim): each angle for both halves
        device = torch.get_default_device()
        self.register_buffer("cos", angles.cos().float().to(device), persistent=False)
        self.register_buffer("sin", angles.sin().float().to(device), persistent=False)

    def forward(self, x, start=0):
        """``x`` (..., T, head_dim) at positions ``start .. start + T - 1``, rotated."""
        t, half = x.shape[-2], x.shape[-1] // 2
        if start + t > self.cos.shape[0]:
            raise ValueError(f"RotaryEmbedding: positions up to {start + t} exceed max_len "
                             f"{self.cos.shape[0]}")
        cos, sin = self.cos[start:start + t], self.sin[start:start + t]
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin


class KVCache:
    """The keys and values each attention layer has seen so far, for incremental decoding:
    a new token's query attends to them without recomputing the past."""

    def __init__(self, n_layer):
        self.keys = [None] * n_layer
        self.values = [None] * n_layer

    def __len__(self):
        """The number of positions cached."""
        return 0 if self.keys[0] is None else self.keys[0].shape[-2]

    def update(self, layer, k, v):
        """Append ``k``, ``v`` (B, H, T, D) for ``layer``; the whole cached keys and values."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=-2)
            v = torch.cat([self.values[layer], v], dim=-2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


class CausalSelfAttention(nn.Module):
    """Multi-head attention in which each position sees itself and the positions before it."""

    def __init__(self, n_embd, n_head, n_kv_head, dropout, rotary=None, bias=True):
        super().__init__()
        if n_embd % n_head or n_head % n_kv_head:
            raise ValueError(f"CausalSelfAttention: n_embd ({n_embd}) must be divisible by n_head "
                             f"({n_head}), and n_head by n_kv_head ({n_kv_head})")
        self.n_head, self.n_kv_head, self.head_dim = n_head, n_kv_head, n_embd // n_head
        # queries, keys and values from one matmul
        self.c_attn = nn.Linear(n_embd, (n_head + 2 * n_kv_head) * self.head_dim, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)
        self.dropout = dropout
        self.rotary = rotary

    def forward(self, x, cache=None, layer=0, start=0):
        """``x`` (B, T, C) at positions ``start ..``; with ``cache``, ``start`` positions precede it."""
        b, t, c = x.shape
        qkv = self.c_attn(x).view(b, t, self.n_head + 2 * self.n_kv_head, self.head_dim).transpose(1, 2)
        q, k, v = qkv.split([self.n_head, self.n_kv_head, self.n_kv_head], dim=1)
        if self.rotary is not None:
            q, k = self.rotary(q, start), self.rotary(k, start)
        if cache is not None:
            k, v = cache.update(layer, k, v)
        mask, causal = None, start == 0 and t > 1
        if start and t > 1:  # new queries after cached ones: query i sees keys up to start + i
            s = k.shape[-2]
            mask = (torch.arange(s, device=x.device).unsqueeze(0)
                    <= torch.arange(t, device=x.device).unsqueeze(1) + (s - t))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                           dropout_p=self.dropout if self.training else 0.0,
                                           enable_gqa=self.n_kv_head != self.n_head)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(b, t, c)))


class MLP(nn.Module):
    """Position-wise feed-forward: widen four times, GELU, project back."""

    def __init__(self, n_embd, dropout, bias=True):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm residual block: ``x + attn(ln(x))``, then ``x + mlp(ln(x))``."""

    def __init__(self, n_embd, n_head, n_kv_head, dropout, rotary, bias):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, n_kv_head, dropout, rotary, bias)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout, bias)

    def forward(self, x, cache=None, layer=0, start=0):
        x = x + self.attn(self.ln_1(x), cache, layer, start)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A decoder-only transformer language model over ``vocab_size`` tokens with a context
    of ``block_size``; ``forward(idx)`` gives next-token logits (B, T, vocab_size)."""

    def __init__(self, vocab_size, block_size=64, n_layer=4, n_head=4, n_embd=128, n_kv_head=None,
                 dropout=0.0, positions="learned", tie_weights=True, bias=True):
        super().__init__()
        if positions not in ("learned", "rotary", "sinusoidal"):
            raise ValueError(f"GPT: positions must be 'learned', 'rotary' or 'sinusoidal', got {positions!r}")
        self.block_size, self.n_layer, self.positions = block_size, n_layer, positions
        n_kv_head = n_kv_head or n_head
        self.wte = nn.Embedding(vocab_size, n_embd)
        if positions == "learned":
            self.wpe = nn.Embedding(block_size, n_embd)
        elif positions == "sinusoidal":
            self.register_buffer("wpe", sinusoidal_encoding(block_size, n_embd), persistent=False)
        # one rotary table, shared by every layer (it holds no parameters)
        rotary = RotaryEmbedding(n_embd // n_head, block_size) if positions == "rotary" else None
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(n_embd, n_head, n_kv_head, dropout, rotary, bias)
                               for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.apply(self._init_weights)
        if tie_weights:  # the read-out is the embedding table: fewer parameters, better small models
            self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by depth
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def forward(self, idx, cache=None):
        """Logits for every position of ``idx`` (B, T); with ``cache``, ``idx`` continues the
        positions already cached."""
        t = idx.shape[1]
        start = len(cache) if cache is not None else 0
        if start + t > self.block_size:
            raise ValueError(f"GPT: {start + t} positions exceed the context of {self.block_size}")
        x = self.wte(idx)
        if self.positions == "learned":
            x = x + self.wpe(torch.arange(start, start + t, device=idx.device))
        elif self.positions == "sinusoidal":
            x = x + self.wpe[start:start + t]
        x = self.drop(x)
        for layer, block in enumerate(self.h):
            x = block(x, cache, layer, start)
        return self.lm_head(self.ln_f(x))

    def stream(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """Yield the ``max_new_tokens`` sampled tokens (B, 1) that continue ``idx`` (B, T), one at
        a time. ``temperature`` divides the logits (lower: more conservative); ``top_k`` samples
        among the k most likely only. Decoding is incremental through a KV cache; when the
        context is full, the cache restarts from the last ``block_size // 2`` tokens."""
        if temperature <= 0:
            raise ValueError(f"GPT.generate: temperature must be positive, got {temperature}")
        cache, feed = KVCache(self.n_layer), idx[:, -self.block_size:]
        for _ in range(max_new_tokens):
            with torch.no_grad():  # per token: the caller runs between tokens in its own grad mode
                if len(cache) + feed.shape[1] > self.block_size:
                    cache, feed = KVCache(self.n_layer), idx[:, -(self.block_size // 2):]
                logits = self(feed, cache)[:, -1, :] / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                feed = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
                idx = torch.cat([idx, feed], dim=1)
            yield feed

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """``idx`` (B, T) continued by ``max_new_tokens`` tokens that ``stream`` samples."""
        tokens = list(self.stream(idx, max_new_tokens, temperature, top_k, generator))
        return torch.cat([idx, *tokens], dim=1) if tokens else idx
