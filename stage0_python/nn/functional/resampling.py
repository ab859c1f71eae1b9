"""Resampling: ``interpolate`` and the ``upsample`` forms (nearest, nearest-exact, linear,
bilinear, trilinear; source indices as PyTorch computes them), and pixel (un)shuffle."""
import math
import numbers
import struct

from ... import shapes
from ...dtypes import int64
from ...shapes import ShapeError
from .helpers import _const


def _f32(v):
    """``v`` rounded to float32: PyTorch computes float32 resampling indices in float32."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _same(v):
    return v


# ------------------------------------------------------------------ interpolate

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear")


_LINEAR_ND = {"linear": 1, "bilinear": 2, "trilinear": 3}


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
        return x.index_select(dim, _const(idx, (n_out,), x, int64))
    if n_out == n_in:
        # PyTorch leaves an axis whose size does not change as it is, whatever scale_factor
        # says (for 2-D it skips the axis; 1-D agrees except that inf there can turn to nan)
        return x
    src = [_linear_source(o, n_in, n_out, scale, align_corners, rnd) for o in range(n_out)]
    lo = x.index_select(dim, _const([s[0] for s in src], (n_out,), x, int64))
    hi = x.index_select(dim, _const([s[1] for s in src], (n_out,), x, int64))
    lam = _const([s[2] for s in src], (n_out,) + (1,) * (x.ndim - 1 - dim), x)
    return lo * (1.0 - lam) + hi * lam


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """See torch.nn.functional.interpolate. Modes nearest, nearest-exact (3-D to 5-D
    input), linear (3-D), bilinear (4-D) and trilinear (5-D), one spatial axis at a time;
    source indices computed as PyTorch does, in float32 for float32 input, so non-integer
    scale factors pick the same pixels."""
    nd = input.ndim - 2
    if mode not in _MODES or nd not in (1, 2, 3):
        raise NotImplementedError(f"interpolate: only 3-D to 5-D inputs with modes {' | '.join(_MODES)} "
                                  f"are supported, got a {input.ndim}-D input and mode {mode!r}")
    if mode in _LINEAR_ND and _LINEAR_ND[mode] != nd:
        raise NotImplementedError(f"interpolate: got {input.ndim}D input, but {mode} mode needs "
                                  f"{_LINEAR_ND[mode] + 2}D input")
    if align_corners is not None and mode not in _LINEAR_ND:
        raise ValueError("interpolate: align_corners option can only be set with the interpolating "
                         "modes: linear | bilinear | bicubic | trilinear")
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
    shapes.check(tuple(input.shape[:2]) + out, "interpolate", input.dtype)
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
