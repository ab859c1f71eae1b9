"""More of ``torch.nn.functional``: instance and local response normalisation, channel
and alpha dropout, the bilinear form and bags of embeddings. Composites of
differentiable ops; ``functional`` re-exports every public name here."""
import math
import warnings

from . import functional as F
from .. import random as _random
from .. import backend as B
from ..autograd import no_grad
from ..dtypes import bool_, int64
from ..shapes import ShapeError
from ..tensor import Tensor, where
from ..device import place

__all__ = ["instance_norm", "local_response_norm", "dropout1d", "dropout2d", "alpha_dropout",
           "bilinear", "embedding_bag"]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """See torch.nn.functional.instance_norm: each (sample, channel) normalised over its
    spatial dims; running statistics, when given, track the batch average of the
    per-instance mean and unbiased variance, as PyTorch's do."""
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected an input of shape (N, C, *spatial), got shape "
                         f"{tuple(input.shape)}")
    N, C = input.shape[:2]
    F._check_per_channel("instance_norm", input, running_mean=running_mean, running_var=running_var,
                         weight=weight, bias=bias)
    shape = (C,) + (1,) * (input.ndim - 2)
    dims = tuple(range(2, input.ndim))
    if use_input_stats:
        n = math.prod(input.shape[2:])
        if n <= 1:
            raise ValueError(f"instance_norm: expected more than 1 spatial element when training, got "
                             f"input of shape {tuple(input.shape)}")
        y, mean, var = F._normalize(input, dims, eps)
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(N, C).mean(dim=0) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.reshape(N, C).mean(dim=0) * (momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: running_mean and running_var are required when "
                             "use_input_stats=False")
        y = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """See torch.nn.functional.local_response_norm: divide by (k + alpha * mean of the
    squares over ``size`` neighbouring channels, zero-padded) ** beta."""
    if input.ndim < 3:
        raise ShapeError(f"local_response_norm: expected an input of 3 or more dims, got shape "
                         f"{tuple(input.shape)}")
    if size < 1:
        raise ValueError(f"local_response_norm: size must be positive, got {size}")
    C = input.shape[1]
    if input.numel() == 0:
        return input * 1.0
    sq = input * input
    # zero-pad the channel dim (dim 1): size//2 before, (size-1)//2 after
    pads = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    sq = F.pad(sq, pads)
    window = sq.narrow(1, 0, C)
    for j in range(1, size):
        window = window + sq.narrow(1, j, C)
    return input / (window * (alpha / size) + k) ** beta


def _channel_dropout(input, p, training, inplace, name, dims):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in dims:
        raise ShapeError(f"{name}: expected a {dims[0]}-D (unbatched) or {dims[1]}-D (batched) input, "
                         f"got shape {tuple(input.shape)}")
    if not training or p == 0.0:
        return input
    batched = input.ndim == dims[1]
    if name == "dropout2d" and not batched:
        # PyTorch (2.x) still reads a 3-D input as (N, C, L) here, and warns that it will change
        warnings.warn("dropout2d: received a 3-D input; as PyTorch does, it is read as (N, C, L) and "
                      "whole (sample, channel) rows are dropped; use dropout1d for that", UserWarning,
                      stacklevel=3)
        batched = True
    # one draw per (sample, channel), broadcast over the spatial dims
    lead = tuple(input.shape[:2] if batched else input.shape[:1])
    mask_shape = lead + (1,) * (input.ndim - len(lead))
    if p == 1.0:
        mask = input.new_zeros(mask_shape)
    else:
        u = Tensor._make(place(B.uniform(mask_shape, 0.0, 1.0, input.dtype, _random.default_generator),
                               input.device))
        mask = (u < 1.0 - p).to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """See torch.nn.functional.dropout1d: zero whole channels of (N, C, L) or (C, L)."""
    return _channel_dropout(input, p, training, inplace, "dropout1d", (2, 3))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """See torch.nn.functional.dropout2d: zero whole channels of (N, C, H, W); a 3-D input
    is read as (N, C, L) with a warning, as PyTorch 2.x does."""
    return _channel_dropout(input, p, training, inplace, "dropout2d", (3, 4))


# SELU's scale * alpha: alpha dropout sets dropped units to SELU's negative saturation
_SELU_SAT = 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """See torch.nn.functional.alpha_dropout: dropped units become SELU's saturation
    value, then an affine map restores zero mean and unit variance."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    a = 1.0 / math.sqrt((_SELU_SAT * _SELU_SAT * p + 1) * (1 - p))
    u = Tensor._make(place(B.uniform(tuple(input.shape), 0.0, 1.0, input.dtype, _random.default_generator),
                           input.device))
    keep = (u < 1.0 - p).to(input.dtype)
    # kept: a * x + a * sat * p; dropped: a * sat * (p - 1)
    shift = (keep - 1.0) * (_SELU_SAT * a) + _SELU_SAT * a * p
    if inplace:
        return input.mul_(keep * a).add_(shift)
    return input * (keep * a) + shift


def bilinear(input1, input2, weight, bias=None):
    """See torch.nn.functional.bilinear: y[..., o] = x1 @ weight[o] @ x2 + bias[o]."""
    if weight.ndim != 3:
        raise ShapeError(f"bilinear: weight must be 3-D (out, in1, in2), got shape {tuple(weight.shape)}")
    O, I1, I2 = weight.shape
    if input1.ndim < 1 or input1.shape[-1] != I1 or input2.ndim < 1 or input2.shape[-1] != I2 \
            or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise ShapeError(f"bilinear: inputs of shapes {tuple(input1.shape)} and {tuple(input2.shape)} do "
                         f"not fit weight {tuple(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (O,):
        raise ShapeError(f"bilinear: bias must have shape ({O},), got {tuple(bias.shape)}")
    t = input1.matmul(weight.permute(1, 0, 2).reshape(I1, O * I2))  # (..., O * I2)
    y = (t.reshape(*input1.shape[:-1], O, I2) * input2.unsqueeze(-2)).sum(dim=-1)
    return y if bias is None else y + bias


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
        F._embedding_renorm_(weight, F._const([idx[j] for j in keep], (-1,), input, int64), max_norm,
                             norm_type)
    out_zero = weight.new_zeros((nbags, D))
    if not keep:
        return out_zero * weight.sum() if weight.requires_grad else out_zero
    sel = F._const([idx[j] for j in keep], (len(keep),), input, int64)
    rows = F.embedding(sel, weight, scale_grad_by_freq=scale_grad_by_freq)  # (n, D)
    if per_sample_weights is not None:
        w = per_sample_weights.reshape(-1).index_select(0, F._const(keep, (len(keep),), input, int64))
        rows = rows * w.unsqueeze(1)
    bag_of = [bag[j] for j in keep]
    if mode in ("sum", "mean"):
        index = F._const(bag_of, (len(keep), 1), input, int64).expand(len(keep), D)
        out = out_zero.scatter_add(0, index, rows)
        if mode == "mean":
            counts = [0] * nbags
            for b in bag_of:
                counts[b] += 1
            out = out / F._const([max(c, 1) for c in counts], (nbags, 1), out)
        return out
    # max: lay the bags out as (nbags, longest) with a -inf row for the gaps
    members = [[] for _ in range(nbags)]
    for r, b in enumerate(bag_of):
        members[b].append(r)
    width = max(len(m) for m in members)
    pad_row = len(keep)
    table = [m + [pad_row] * (width - len(m)) for m in members]
    table_t = F._const(sum(table, []), (nbags * width,), input, int64)
    ext = F.cat([rows, rows.new_full((1, D), -math.inf)], 0)
    vals = ext.index_select(0, table_t).reshape(nbags, width, D).max(dim=1)[0]
    empty = F._const([not m for m in members], (nbags, 1), input, bool_)
    return where(empty, 0.0, vals)

