"""Resampling and spatial layers of ``torch.nn.functional``: interpolate, transposed
convolution, max-unpooling, adaptive max pooling, adaptive 1-d average pooling and pixel
shuffle. All are composites of differentiable ops (index_select, matmul, fold, max), so
their gradients come from those ops; ``functional`` re-exports every public name here."""
import math
import numbers
import struct

from . import functional as F
from ..autocast import lower as _lower
from ..autograd import Function
from ..dtypes import bool_, int64
from ..shapes import ShapeError
from ..tensor import where

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "conv_transpose1d",
           "conv_transpose2d", "max_unpool1d", "max_unpool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_avg_pool1d", "pixel_shuffle", "pixel_unshuffle"]


def _f32(v):
    """``v`` rounded to float32: PyTorch computes float32 resampling indices in float32."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _same(v):
    return v


# ------------------------------------------------------------------ interpolate

_MODES = ("nearest", "nearest-exact", "linear", "bilinear")
_LINEAR_ND = {"linear": 1, "bilinear": 2}


def _nearest_source(o, n_in, n_out, scale, exact):
    """PyTorch's CPU nearest_neighbor(_exact)_compute_source_index: float32 arithmetic
    whatever the input's dtype, and no shortcut for equal sizes (a scale_factor of 1.1
    on 3 elements gives 3 outputs that do not copy the input)."""
    s = _f32(1.0 / scale) if scale is not None and scale > 0 else _f32(n_in / n_out)
    if exact:
        return min(int(math.floor(_f32((o + 0.5) * s))), n_in - 1)
    return min(int(math.floor(_f32(o * s))), n_in - 1)


def _linear_source(o, n_in, n_out, scale, align_corners, rnd):
    """(index0, index1, lambda1) as PyTorch's area_pixel_compute_source_index and
    guard_index_and_lambda compute them (in the input's precision)."""
    if align_corners:
        s = rnd((n_in - 1) / (n_out - 1)) if n_out > 1 else 0.0
        real = rnd(s * o)
    else:
        s = rnd(1.0 / scale) if scale is not None and scale > 0 else rnd(rnd(n_in) / n_out)
        real = max(rnd(rnd(s * rnd(o + 0.5)) - 0.5), 0.0)
    i0 = min(int(math.floor(real)), n_in - 1)
    lam = min(max(rnd(real - i0), 0.0), 1.0)
    return i0, i0 + (1 if i0 < n_in - 1 else 0), lam


def _resample_axis(x, dim, n_out, mode, align_corners, scale):
    n_in = x.shape[dim]
    rnd = _f32 if x.dtype.name == "float32" else _same
    if mode in ("nearest", "nearest-exact"):
        idx = [_nearest_source(o, n_in, n_out, scale, mode == "nearest-exact") for o in range(n_out)]
        return x.index_select(dim, F._const(idx, (n_out,), x, int64))
    if n_out == n_in:
        # PyTorch leaves an axis whose size does not change as it is, whatever scale_factor
        # says (for 2-D it skips the axis; 1-D agrees except that inf there can turn to nan)
        return x
    src = [_linear_source(o, n_in, n_out, scale, align_corners, rnd) for o in range(n_out)]
    lo = x.index_select(dim, F._const([s[0] for s in src], (n_out,), x, int64))
    hi = x.index_select(dim, F._const([s[1] for s in src], (n_out,), x, int64))
    lam = F._const([s[2] for s in src], (n_out,) + (1,) * (x.ndim - 1 - dim), x)
    return lo * (1.0 - lam) + hi * lam


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """See torch.nn.functional.interpolate. Modes nearest, nearest-exact (3-D and 4-D
    input), linear (3-D) and bilinear (4-D); source indices computed as PyTorch does,
    in float32 for float32 input, so non-integer scale factors pick the same pixels."""
    nd = input.ndim - 2
    if mode not in _MODES or nd not in (1, 2):
        raise NotImplementedError(f"interpolate: only 3-D and 4-D inputs with modes {' | '.join(_MODES)} "
                                  f"are supported, got a {input.ndim}-D input and mode {mode!r}")
    if mode in _LINEAR_ND and _LINEAR_ND[mode] != nd:
        raise NotImplementedError(f"interpolate: got {input.ndim}D input, but {mode} mode needs "
                                  f"{_LINEAR_ND[mode] + 2}D input")
    if align_corners is not None and mode not in _LINEAR_ND:
        raise ValueError("interpolate: align_corners option can only be set with the interpolating "
                         "modes: linear | bilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if not input.dtype.is_floating_point:
        raise TypeError(f"interpolate: expected a floating-point input, got {input.dtype.name}")
    align_corners = bool(align_corners)
    spatial = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: " + ("only one of size or scale_factor should be defined"
                                            if size is not None else
                                            "either size or scale_factor should be defined"))
    if size is not None:
        out = (size,) * nd if isinstance(size, numbers.Integral) else tuple(size)
        if len(out) != nd:
            raise ValueError(f"interpolate: input with spatial dimensions {list(spatial)} and output "
                             f"size {out} must have the same number of spatial dimensions")
        out = tuple(int(o) for o in out)
        scales = (None,) * nd
    else:
        scales = (scale_factor,) * nd if isinstance(scale_factor, numbers.Real) else tuple(scale_factor)
        if len(scales) != nd:
            raise ValueError(f"interpolate: input with spatial dimensions {list(spatial)} and "
                             f"scale_factor {scales} must have the same number of spatial dimensions")
        out = tuple(int(math.floor(float(n) * s)) for n, s in zip(spatial, scales))
        if recompute_scale_factor:  # the kernel then derives the scale from the sizes
            scales = (None,) * nd
    if min(out) < 1 or min(spatial) < 1:
        raise ShapeError(f"interpolate: input and output sizes should be greater than 0, got input "
                         f"{tuple(input.shape)} and output size {out}")
    F.shapes.check(tuple(input.shape[:2]) + out, "interpolate", input.dtype)
    x = input
    for i, (n_out, scale) in enumerate(zip(out, scales)):
        x = _resample_axis(x, 2 + i, n_out, mode, align_corners, None if align_corners else scale)
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """See torch.nn.functional.upsample (deprecated there): ``interpolate``."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """See torch.nn.functional.upsample_nearest: ``interpolate(mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """See torch.nn.functional.upsample_bilinear: bilinear with align_corners=True."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ------------------------------------------------------------------ transposed convolution

def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    """The adjoint of convolution: every input position scatters ``weight``-scaled copies
    of itself into the output, i.e. a matmul to columns and fold (col2im). Folding into
    the uncropped size, then cropping ``padding`` and extending by ``output_padding``
    (pad handles both signs) covers output_padding up to max(stride, dilation) - 1."""
    input, weight, bias = _lower(input, weight, bias)
    x, batched = F._batched(input, nd, name)
    if weight.ndim != nd + 2:
        raise ShapeError(f"{name}: weight must be {nd + 2}-D, got shape {tuple(weight.shape)}")
    s, p, op, d = (F._ntuple(v, nd, name, w) for v, w in ((stride, "stride"), (padding, "padding"),
                                                          (output_padding, "output_padding"),
                                                          (dilation, "dilation")))
    N, C, *size = x.shape
    Cw, Og, *kernel = weight.shape
    F._check_geometry(name, kernel, d, p, s)
    if groups < 1 or Cw % groups:
        raise ValueError(f"{name}: groups={groups} must be positive and divide the {Cw} input channels "
                         f"of weight {tuple(weight.shape)}")
    if C != Cw:
        raise ShapeError(f"{name}: input of shape {tuple(input.shape)} has {C} channels, but weight of "
                         f"shape {tuple(weight.shape)} expects {Cw}")
    O = Og * groups
    if bias is not None and tuple(bias.shape) != (O,):
        raise ShapeError(f"{name}: bias must have shape ({O},), got {tuple(bias.shape)}")
    if any(o < 0 or (o >= si and o >= di) for o, si, di in zip(op, s, d)):
        raise ValueError(f"{name}: output_padding {op} must be non-negative and smaller than either "
                         f"stride {s} or dilation {d}")
    full = [(n - 1) * si + di * (k - 1) + 1 for n, si, di, k in zip(size, s, d, kernel)]
    out = [f - 2 * pi + o for f, pi, o in zip(full, p, op)]
    if min(out) < 1 or min(size) < 1:
        raise ShapeError(f"{name}: input of shape {tuple(input.shape)} with weight {tuple(weight.shape)}, "
                         f"stride {s}, padding {p} and dilation {d} gives an output size {tuple(out)} "
                         f"that is not positive")
    F.shapes.check((N, O * math.prod(kernel), math.prod(size)), name, x.dtype)
    F.shapes.check((N, O, *full), name, x.dtype)
    K, L = math.prod(kernel), math.prod(size)
    Cg = C // groups
    # weight (C, O/g, *k) -> per group (O/g * K, C/g): the transpose of conv's filter matrix
    w = weight.reshape(groups, Cg, Og * K).transpose(1, 2)
    cols = w.matmul(x.reshape(N, groups, Cg, L)).reshape(N, O * K, L)
    if nd == 1:  # fold is 2-D: a 1-D signal is a height-1 image
        y = F._Fold.apply(cols, (1, full[0]), (1, kernel[0]), (1, d[0]), (0, 0), (1, s[0])).squeeze(2)
    else:
        y = F._Fold.apply(cols, tuple(full), tuple(kernel), tuple(d), (0, 0), tuple(s))
    crop = [v for pi, o in zip(reversed(p), reversed(op)) for v in (-pi, o - pi)]
    if any(crop):
        y = F.pad(y, crop)
    if bias is not None:
        y = y + bias.reshape(O, *([1] * nd))
    return y if batched else y.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See torch.nn.functional.conv_transpose1d: weight (C_in, C_out/groups, k)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See torch.nn.functional.conv_transpose2d: weight (C_in, C_out/groups, kh, kw)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


# ------------------------------------------------------------------ max unpooling

class _MaxUnpool(Function):
    """Scatter each value to its flat index in an (M, size) plane of zeros; as in
    PyTorch, the last of repeated indices wins. The backward gathers at the indices."""

    @staticmethod
    def forward(ctx, x, index, size):
        ctx.index = index
        flat = index.tolist()
        keep = []
        for row in flat:  # keep only the last write to each position
            last = {v: j for j, v in enumerate(row)}
            keep.append([last[v] == j for j, v in enumerate(row)])
        kept = where(F._const(keep, tuple(index.shape), x, bool_), x, 0.0)
        return x.new_zeros((x.shape[0], size)).scatter_add(1, index, kept)

    @staticmethod
    def backward(ctx, g):
        return g.gather(1, ctx.index), None, None


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, name):
    x, batched = F._batched(input, nd, name)
    k = F._ntuple(kernel_size, nd, name, "kernel_size")
    s = k if stride is None else F._ntuple(stride, nd, name, "stride")
    p = F._ntuple(padding, nd, name, "padding")
    if indices.dtype is not int64:
        raise TypeError(f"{name}: indices must be int64, got {indices.dtype.name}")
    if tuple(indices.shape) != tuple(input.shape):
        raise ShapeError(f"{name}: input of shape {tuple(input.shape)} and indices of shape "
                         f"{tuple(indices.shape)} must have the same shape")
    N, C, *size = x.shape
    default = [(n - 1) * si - 2 * pi + ki for n, si, pi, ki in zip(size, s, p, k)]
    if output_size is None:
        out = default
    else:
        out = list(output_size)[-nd:] if len(output_size) >= nd else None
        if out is None or len(output_size) not in (nd, nd + 1, nd + 2) or any(
                not d_ - si < o < d_ + si for o, d_, si in zip(out, default, s)):
            raise ShapeError(f"{name}: output_size {tuple(output_size)} must be within one stride "
                             f"{s} of the default size {tuple(default)}")
    if min(out) < 1:
        raise ShapeError(f"{name}: input of shape {tuple(input.shape)} gives a non-positive output size "
                         f"{tuple(out)}")
    total = math.prod(out)
    F.shapes.check((N, C, total), name, x.dtype)
    idx = indices if batched else indices.unsqueeze(0)
    idx = idx.reshape(N * C, -1)
    if idx.numel():
        lo, hi = idx.min().item(), idx.max().item()
        if lo < 0 or hi >= total:
            raise IndexError(f"{name}: index {lo if lo < 0 else hi} is out of range for an output "
                             f"of size {tuple(out)}")
    y = _MaxUnpool.apply(x.reshape(N * C, -1), idx, total).reshape(N, C, *out)
    return y if batched else y.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """See torch.nn.functional.max_unpool1d: the inverse of max_pool1d(return_indices=True)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """See torch.nn.functional.max_unpool2d: the inverse of max_pool2d(return_indices=True)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


# ------------------------------------------------------------------ adaptive pooling

def _adaptive_windows(n_in, n_out):
    """PyTorch's windows: [floor(i*n/m), ceil((i+1)*n/m)); each padded to the longest
    by repeating its last position (a repeat never changes a max)."""
    spans = [((i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)) for i in range(n_out)]
    width = max(b - a for a, b in spans)
    return [[min(a + j, b - 1) for j in range(width)] for a, b in spans], width


def _output_pair(output_size, spatial, name):
    if isinstance(output_size, numbers.Integral):
        output_size = (output_size,) * len(spatial)
    out = tuple(n if o is None else int(o) for o, n in zip(tuple(output_size), spatial))
    if len(tuple(output_size)) != len(spatial) or min(out) < 1 or min(spatial) < 1:
        raise ShapeError(f"{name}: output_size {output_size} must have {len(spatial)} positive entries "
                         f"and the input non-empty spatial dims, got input of shape {spatial}")
    return out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """See torch.nn.functional.adaptive_max_pool2d: windows as PyTorch's (non-divisible
    sizes overlap); indices are flat positions h * W + w, as max_pool2d's."""
    x, batched = F._batched(input, 2, "adaptive_max_pool2d")
    N, C, H, W = x.shape
    oh, ow = _output_pair(output_size, (H, W), "adaptive_max_pool2d")
    F.shapes.check((N, C, oh, ow), "adaptive_max_pool2d", x.dtype)
    rows, kh = _adaptive_windows(H, oh)
    cols, kw = _adaptive_windows(W, ow)
    g = x.index_select(2, F._const(sum(rows, []), (oh * kh,), x, int64))
    g = g.index_select(3, F._const(sum(cols, []), (ow * kw,), x, int64))
    g = g.reshape(N, C, oh, kh, ow, kw).permute(0, 1, 2, 4, 3, 5).reshape(N, C, oh, ow, kh * kw)
    vals, arg = g.max(dim=-1)
    if not batched:
        vals = vals.squeeze(0)
    if not return_indices:
        return vals
    # window position -> flat input position, through the same index tables
    table = [[r * W + c for r in rows[i] for c in cols[j]] for i in range(oh) for j in range(ow)]
    table = F._const(table, (1, oh * ow, kh * kw), arg, int64).expand(N * C, oh * ow, kh * kw)
    idx = table.gather(2, arg.reshape(N * C, oh * ow, 1)).reshape(N, C, oh, ow)
    return vals, idx if batched else idx.squeeze(0)


def _as_2d(fn, input, name, output_size, **kw):
    if input.ndim not in (2, 3):
        raise ShapeError(f"{name}: expected a 2-D (unbatched) or 3-D (batched) input, got shape "
                         f"{tuple(input.shape)}")
    size = output_size if isinstance(output_size, numbers.Integral) else tuple(output_size)
    if not isinstance(size, numbers.Integral):
        if len(size) != 1:
            raise ShapeError(f"{name}: output_size must be an int or a 1-tuple, got {output_size}")
        size = size[0]
    out = fn(input.unsqueeze(-2), (1, size), **kw)
    if isinstance(out, tuple):
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """See torch.nn.functional.adaptive_max_pool1d."""
    return _as_2d(adaptive_max_pool2d, input, "adaptive_max_pool1d", output_size,
                  return_indices=return_indices)


def adaptive_avg_pool1d(input, output_size):
    """See torch.nn.functional.adaptive_avg_pool1d."""
    return _as_2d(F.adaptive_avg_pool2d, input, "adaptive_avg_pool1d", output_size)


# ------------------------------------------------------------------ pixel shuffle

def _check_factor(input, r, name):
    if not isinstance(r, numbers.Integral) or r < 1:
        raise ValueError(f"{name}: the factor must be a positive integer, got {r}")
    if input.ndim < 3:
        raise ShapeError(f"{name}: expected an input of at least 3 dims, got shape {tuple(input.shape)}")


def pixel_shuffle(input, upscale_factor):
    """See torch.nn.functional.pixel_shuffle: (*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = upscale_factor
    _check_factor(input, r, "pixel_shuffle")
    *lead, C, H, W = input.shape
    if C % (r * r):
        raise ShapeError(f"pixel_shuffle: the channel dim of input {tuple(input.shape)} must be "
                         f"divisible by upscale_factor squared ({r * r})")
    n = len(lead)
    x = input.reshape(*lead, C // (r * r), r, r, H, W)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, C // (r * r), H * r, W * r)


def pixel_unshuffle(input, downscale_factor):
    """See torch.nn.functional.pixel_unshuffle: (*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = downscale_factor
    _check_factor(input, r, "pixel_unshuffle")
    *lead, C, H, W = input.shape
    if H % r or W % r:
        raise ShapeError(f"pixel_unshuffle: the height and width of input {tuple(input.shape)} must be "
                         f"divisible by downscale_factor ({r})")
    n = len(lead)
    x = input.reshape(*lead, C, H // r, r, W // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, C * r * r, H // r, W // r)
