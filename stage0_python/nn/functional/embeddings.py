"""Embedding lookups: ``embedding`` and ``embedding_bag`` (sums, means or maxima of bags
of rows)."""
import math

from ... import shapes
from ...autograd import Function, no_grad
from ...creation import cat
from ...dtypes import bool_, int32, int64
from ...ops import where
from ...shapes import ShapeError
from .helpers import _const


class _Embedding(Function):
    """Rows of ``weight`` picked by ``indices``; the backward adds each output row's
    gradient into the row it came from (skipping ``padding_idx``)."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        flat = indices.reshape(-1)
        ctx.save_for_backward(flat)
        ctx.num, ctx.padding_idx, ctx.scale = weight.shape[0], padding_idx, scale_grad_by_freq
        # index_select, not weight[flat]: indexing would take a negative index from the end
        rows = weight.index_select(0, flat if flat.dtype in (int32, int64) else flat.long())
        return rows.reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, g):
        (flat,) = ctx.saved_tensors
        D = g.shape[-1]
        g = g.reshape(flat.shape[0], D)  # not -1: rows of width 0 leave it ambiguous
        if ctx.padding_idx is not None:
            g = g * (flat != ctx.padding_idx).to(g.dtype).unsqueeze(1)
        if ctx.scale:
            counts = g.new_zeros((ctx.num,)).scatter_add(0, flat, g.new_ones((flat.shape[0],)))
            g = g / counts[flat].unsqueeze(1)
        index = flat.unsqueeze(1).expand(flat.shape[0], D)
        return g.new_zeros((ctx.num, D)).scatter_add(0, index, g), None, None, None


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the referenced rows whose norm exceeds ``max_norm``."""
    with no_grad():
        rows = _const(sorted(set(indices.reshape(-1).tolist())), (-1,), indices, int64)
        sub = weight[rows]
        norms = (sub.abs() ** norm_type).sum(dim=1) ** (1.0 / norm_type)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = sub * scale.unsqueeze(1)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Look up rows of ``weight`` (num_embeddings, dim) by the integer tensor ``input``."""
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise TypeError(f"embedding: indices must be an integer tensor, got {input.dtype.name}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, dim), got shape "
                         f"{tuple(weight.shape)}")
    if sparse:
        raise ValueError("embedding: sparse gradients are not supported; use sparse=False")
    V = weight.shape[0]
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within num_embeddings {V}")
        padding_idx %= V
    # the gather below refuses the same values where its device checks them
    bad = None if shapes.checked_on_device(input) else shapes.out_of_range(input, 0, V)
    if bad is not None:
        raise IndexError(f"embedding: index {bad} is out of range for {V} embeddings")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _Embedding.apply(weight, input, padding_idx, scale_grad_by_freq)


def _bags(input, offsets, include_last_offset):
    """(flat indices, the bag of each, the number of bags) as Python lists."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for a 2-D input (each row is a bag)")
        B_, L = input.shape
        return input.reshape(-1).tolist(), [i // L for i in range(B_ * L)] if L else [], B_
    if input.ndim != 1:
        raise ShapeError(f"embedding_bag: input must be 1-D or 2-D, got shape {tuple(input.shape)}")
    if offsets is None:
        raise ValueError("embedding_bag: offsets are required for a 1-D input")
    if offsets.ndim != 1 or offsets.dtype.is_floating_point:
        raise TypeError(f"embedding_bag: offsets must be a 1-D integer tensor, got {offsets.dtype.name} "
                        f"of shape {tuple(offsets.shape)}")
    idx, off, n = input.tolist(), offsets.tolist(), input.shape[0]
    if include_last_offset:
        if not off:
            raise ValueError("embedding_bag: include_last_offset needs at least one offset")
        off, n = off[:-1], min(off[-1], n)
    if off and off[0] != 0:
        raise ValueError(f"embedding_bag: offsets[0] must be 0, got {off[0]}")
    if any(b < a for a, b in zip(off, off[1:])) or any(o > len(idx) for o in off):
        raise ValueError(f"embedding_bag: offsets {off} must be non-decreasing and at most {len(idx)}")
    bag = []
    ends = off[1:] + [n]
    for b, (a, e) in enumerate(zip(off, ends)):
        bag += [b] * (e - a)
    return idx[:n], bag, len(off)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """See torch.nn.functional.embedding_bag: the sum, mean or max of each bag's rows of
    ``weight``; empty bags give zeros and ``padding_idx`` entries are left out."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise TypeError(f"embedding_bag: indices must be an integer tensor, got {input.dtype.name}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding_bag: weight must be 2-D, got shape {tuple(weight.shape)}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights is only supported for "
                                      f"mode='sum', got mode={mode!r}")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ShapeError(f"embedding_bag: per_sample_weights of shape {tuple(per_sample_weights.shape)} "
                             f"must match input of shape {tuple(input.shape)}")
    if sparse:
        raise ValueError("embedding_bag: sparse gradients are not supported; use sparse=False")
    V, D = weight.shape
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise ValueError(f"embedding_bag: padding_idx {padding_idx} must be within num_embeddings {V}")
        padding_idx %= V
    idx, bag, nbags = _bags(input, offsets, include_last_offset)
    bad = [i for i in idx if not 0 <= i < V]
    if bad:
        raise IndexError(f"embedding_bag: index {bad[0]} is out of range for {V} embeddings")
    keep = [j for j, i in enumerate(idx) if i != padding_idx]
    if max_norm is not None and keep:
        _embedding_renorm_(weight, _const([idx[j] for j in keep], (-1,), input, int64), max_norm,
                           norm_type)
    out_zero = weight.new_zeros((nbags, D))
    if not keep:
        return out_zero * weight.sum() if weight.requires_grad else out_zero
    sel = _const([idx[j] for j in keep], (len(keep),), input, int64)
    rows = embedding(sel, weight, scale_grad_by_freq=scale_grad_by_freq)  # (n, D)
    if per_sample_weights is not None:
        w = per_sample_weights.reshape(-1).index_select(0, _const(keep, (len(keep),), input, int64))
        rows = rows * w.unsqueeze(1)
    bag_of = [bag[j] for j in keep]
    if mode in ("sum", "mean"):
        index = _const(bag_of, (len(keep), 1), input, int64).expand(len(keep), D)
        out = out_zero.scatter_add(0, index, rows)
        if mode == "mean":
            counts = [0] * nbags
            for b in bag_of:
                counts[b] += 1
            out = out / _const([max(c, 1) for c in counts], (nbags, 1), out)
        return out
    # max: lay the bags out as (nbags, longest) with a -inf row for the gaps
    members = [[] for _ in range(nbags)]
    for r, b in enumerate(bag_of):
        members[b].append(r)
    width = max(len(m) for m in members)
    pad_row = len(keep)
    table = [m + [pad_row] * (width - len(m)) for m in members]
    table_t = _const(sum(table, []), (nbags * width,), input, int64)
    ext = cat([rows, rows.new_full((1, D), -math.inf)], 0)
    vals = ext.index_select(0, table_t).reshape(nbags, width, D).max(dim=1)[0]
    empty = _const([not m for m in members], (nbags, 1), input, bool_)
    return where(empty, 0.0, vals)
