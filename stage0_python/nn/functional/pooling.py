"""Pooling: max and average pooling over windows (on the backend's pooling kernels where it
offers them, else im2col), adaptive average and max pooling to a fixed output size, and
max-unpooling."""
import math
import numbers

from ... import shapes
from ...autograd import Function
from ...creation import stack
from ...dtypes import bool_, iinfo, int64
from ...ops import where
from ...shapes import ShapeError
from .helpers import _batched, _const, _ntuple
from .im2col import _check_geometry, _Unfold
from .image_kernels import AvgPool2d, MaxPool2d, _takes
from .padding import pad


def _default_stride(stride):
    """Whether ``stride`` asks for the default, the kernel size (None, or an empty tuple)."""
    return stride is None or (not isinstance(stride, int) and len(stride) == 0)


def _pool_args(name, kernel_size, stride, padding, dilation=1):
    k = _ntuple(kernel_size, 2, name, "kernel_size")
    s = k if _default_stride(stride) else _ntuple(stride, 2, name, "stride")
    p = _ntuple(padding, 2, name, "padding")
    d = _ntuple(dilation, 2, name, "dilation")
    _check_geometry(name, k, d, p, s)
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        raise ShapeError(f"{name}: padding {p} should be at most half of the kernel size {k}")
    return k, s, p, d


def _pool_out(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= size + p:  # the last window must start inside the input or left padding
        out -= 1
    return out


def _pool_setup(input, name, k, s, p, d, ceil_mode):
    """The input as (N*C, 1, H, W), the output size, and the extra right padding that
    ceil_mode's partial windows need."""
    x, batched = _batched(input, 2, name)
    N, C, H, W = x.shape
    out = [_pool_out(n, *g, ceil_mode) for n, g in zip((H, W), zip(k, s, p, d))]
    if min(out) < 1:
        raise ShapeError(f"{name}: kernel {k} with dilation {d} and padding {p} does not fit input "
                         f"of shape {tuple(input.shape)}")
    shapes.check((N * C, k[0] * k[1], out[0] * out[1]), name, x.dtype)
    extra = [max(0, (o - 1) * si + di * (ki - 1) + 1 - (n + 2 * pi))
             for o, n, ki, si, pi, di in zip(out, (H, W), k, s, p, d)]
    return x.reshape(N * C, 1, H, W), (N, C, H, W), out, extra, batched


def _lowest(dtype):
    """What max pooling pads with, so that padding never wins: -inf, or an integer dtype's
    least value (an integer has no -inf)."""
    return -math.inf if dtype.is_floating_point else iinfo(dtype).min


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over each window; padding never wins (it is -inf, or an integer dtype's least
    value). With ``return_indices``,
    also the flat position (h * W + w) of each maximum in its input plane."""
    k, s, p, d = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    x, (N, C, H, W), (oh, ow), (eh, ew), batched = _pool_setup(input, "max_pool2d", k, s, p, d, ceil_mode)
    if _takes("max_pool2d", x):
        out, idx = MaxPool2d.apply(x, (*k, *s, *p, *d), (oh, ow))
        out, idx = out.reshape(N, C, oh, ow), idx.reshape(N, C, oh, ow)
        if not batched:
            out, idx = out.squeeze(0), idx.squeeze(0)
        return (out, idx) if return_indices else out
    if any(p) or eh or ew:
        x = pad(x, (p[1], p[1] + ew, p[0], p[0] + eh), value=_lowest(x.dtype))
    cols = _Unfold.apply(x, k, d, (0, 0), s)  # (N*C, kh*kw, oh*ow)
    vals, arg = cols.max(dim=1)
    # PyTorch's pooling lets every NaN take over, so a window's last NaN is its maximum, where
    # its gradient goes (max(dim) picks the first): the first NaN of the flipped window
    nan = cols.isnan()
    # nan.any() reads a value back: on a device the host would wait for it, so a device takes
    # the path that is right with or without NaN
    if cols.device.type != "cpu" or nan.any():
        last = (k[0] * k[1] - 1) - nan.flip(1).to(int64).argmax(dim=1)
        arg = where(nan.any(dim=1), last, arg)
        vals = cols.gather(1, arg.unsqueeze(1)).squeeze(1)
    out = vals.reshape(N, C, oh, ow)
    if not batched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    # window offset (arg) + window origin -> position in the unpadded input plane
    L = oh * ow
    rows = _const([(l // ow) * s[0] - p[0] for l in range(L)], (L,), arg, int64)
    cols_ = _const([(l % ow) * s[1] - p[1] for l in range(L)], (L,), arg, int64)
    h = rows + (arg // k[1]) * d[0]
    w = cols_ + (arg % k[1]) * d[1]
    idx = (h * W + w).reshape(N, C, oh, ow)
    return out, idx if batched else idx.squeeze(0)


def _avg_counts(size, k, s, p, out, include_pad):
    """How many elements each window averages along one axis (PyTorch's rule: padding
    counts when ``include_pad``, the ceil-mode overhang never does)."""
    counts = []
    for o in range(out):
        start = o * s - p
        end = min(start + k, size + p)
        full = end - start
        start, end = max(start, 0), min(end, size)
        counts.append(full if include_pad else max(end - start, 1))
    return counts


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """See torch.nn.functional.avg_pool2d."""
    k, s, p, d = _pool_args("avg_pool2d", kernel_size, stride, padding)
    x, (N, C, H, W), (oh, ow), (eh, ew), batched = _pool_setup(input, "avg_pool2d", k, s, p, d, ceil_mode)
    if divisor_override is not None and not divisor_override:
        raise ValueError("avg_pool2d: divisor_override must be non-zero")
    if _takes("avg_pool2d", x):
        out = AvgPool2d.apply(x, (*k, *s, *p, *d), (oh, ow), count_include_pad, float(divisor_override or 0))
        out = out.reshape(N, C, oh, ow)
        return out if batched else out.squeeze(0)
    if eh or ew:
        x = pad(x, (0, ew, 0, eh))
    sums = _Unfold.apply(x, k, d, p, s).sum(dim=1)  # (N*C, oh*ow)
    if divisor_override is not None:
        out = sums / divisor_override
    else:
        ch = _avg_counts(H, k[0], s[0], p[0], oh, count_include_pad)
        cw = _avg_counts(W, k[1], s[1], p[1], ow, count_include_pad)
        out = sums / _const([a * b for a in ch for b in cw], (oh * ow,), sums)
    out = out.reshape(N, C, oh, ow)
    return out if batched else out.squeeze(0)


def _as_2d_pool(fn, input, name, kernel_size, stride, padding, **kw):
    """A 1-D pool as a 2-D pool over a height-1 plane."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"{name}: expected a 2-D (unbatched) or 3-D (batched) input, got shape "
                         f"{tuple(input.shape)}")
    one = lambda v: (1, _ntuple(v, 1, name, "size")[0])  # noqa: E731
    stride = None if _default_stride(stride) else one(stride)
    padding = (0, _ntuple(padding, 1, name, "padding")[0])
    out = fn(input.unsqueeze(-2), one(kernel_size), stride, padding, **kw)
    if isinstance(out, tuple):
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """See torch.nn.functional.max_pool1d."""
    return _as_2d_pool(max_pool2d, input, "max_pool1d", kernel_size, stride, padding,
                       dilation=(1, _ntuple(dilation, 1, "max_pool1d", "dilation")[0]),
                       ceil_mode=ceil_mode, return_indices=return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """See torch.nn.functional.avg_pool1d."""
    return _as_2d_pool(avg_pool2d, input, "avg_pool1d", kernel_size, stride, padding,
                       ceil_mode=ceil_mode, count_include_pad=count_include_pad)


# ------------------------------------------------------------------ adaptive pooling

def _over_depth(input, name, kernel_size, stride, padding, fill, pool2d, combine, ceil_mode=False):
    """A 3-D pool as 2-D pools of depth slices: each output depth combines (``combine``:
    max, or a sum) ``pool2d`` of the depth slices its window covers, the depth padded with
    ``fill`` (and, in ``ceil_mode``, by the last window's overhang). Runs on the 2-D pools'
    kernels and backward; D_out x kd of them."""
    if input.ndim not in (4, 5):
        raise ShapeError(f"{name}: expected a 4-D (unbatched) or 5-D (batched) input, got shape "
                         f"{tuple(input.shape)}")
    x = input if input.ndim == 5 else input.unsqueeze(0)
    k = _ntuple(kernel_size, 3, name, "kernel_size")
    s = k if _default_stride(stride) else _ntuple(stride, 3, name, "stride")
    p = _ntuple(padding, 3, name, "padding")
    _check_geometry(name, k, (1, 1, 1), p, s)
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        raise ShapeError(f"{name}: padding {p} should be at most half of the kernel size {k}")
    depth = _pool_out(x.shape[2], k[0], s[0], p[0], 1, ceil_mode)
    if depth < 1:
        raise ShapeError(f"{name}: input of shape {tuple(input.shape)} is smaller than the kernel {k}")
    extra = max(0, (depth - 1) * s[0] + k[0] - (x.shape[2] + 2 * p[0]))
    if p[0] or extra:
        x = pad(x, (0, 0, 0, 0, p[0], p[0] + extra), value=fill)
    slices = []
    for od in range(depth):
        out = None
        for kd in range(k[0]):
            part = pool2d(x[:, :, od * s[0] + kd], k[1:], s[1:], p[1:])
            out = part if out is None else combine(out, part)
        slices.append(out)
    out = stack(slices, dim=2)
    return out if input.ndim == 5 else out.squeeze(0)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """See torch.nn.functional.max_pool3d: dilation 1, no ceil_mode, no indices (each raises
    NotImplementedError naming it)."""
    if dilation not in (1, (1, 1, 1)) or ceil_mode or return_indices:
        raise NotImplementedError("max_pool3d: dilation, ceil_mode and return_indices are not supported")
    return _over_depth(input, "max_pool3d", kernel_size, stride, padding, _lowest(input.dtype), max_pool2d,
                       lambda a, b: a.maximum(b))


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """See torch.nn.functional.avg_pool3d: each window's sum (2-D sums of depth slices, added
    over depth) over its count, by avg_pool2d's rule on each axis (padding counted when
    ``count_include_pad``, ceil_mode's overhang never), or over ``divisor_override``."""
    k = _ntuple(kernel_size, 3, "avg_pool3d", "kernel_size")
    if divisor_override is not None and not divisor_override:
        raise ValueError("avg_pool3d: divisor_override must be non-zero")
    total = _over_depth(input, "avg_pool3d", k, stride, padding, 0.0,
                        lambda x, k2, s, p: avg_pool2d(x, k2, s, p, ceil_mode, divisor_override=1),
                        lambda a, b: a + b, ceil_mode)
    if divisor_override is not None:
        return total / divisor_override
    s = k if _default_stride(stride) else _ntuple(stride, 3, "avg_pool3d", "stride")
    p = _ntuple(padding, 3, "avg_pool3d", "padding")
    out = total.shape[-3:]
    cd, ch, cw = (_avg_counts(n, *g, o, count_include_pad)
                  for n, g, o in zip(input.shape[-3:], zip(k, s, p), out))
    return total / _const([a * b * c for a in cd for b in ch for c in cw], tuple(out), total)


def _adaptive_weights(n_in, n_out, like):
    """(n_out, n_in) averaging matrix: row i averages input[floor(i*n/m) : ceil((i+1)*n/m)]."""
    vals = []
    for i in range(n_out):
        a, b = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        vals.extend(1.0 / (b - a) if a <= j < b else 0.0 for j in range(n_in))
    return _const(vals, (n_out, n_in), like)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size: separable, so A_h @ x @ A_w^T."""
    x, batched = _batched(input, 2, "adaptive_avg_pool2d")
    H, W = x.shape[2:]
    if isinstance(output_size, numbers.Integral):
        output_size = (output_size, output_size)
    oh, ow = (n if o is None else int(o) for o, n in zip(tuple(output_size), (H, W)))
    if oh < 1 or ow < 1 or H < 1 or W < 1:
        raise ShapeError(f"adaptive_avg_pool2d: output size {(oh, ow)} and input of shape "
                         f"{tuple(input.shape)} must be non-empty")
    shapes.check((*x.shape[:2], oh, ow), "adaptive_avg_pool2d", x.dtype)
    if H % oh == 0 and W % ow == 0 and _takes("avg_pool2d", x):  # equal windows: one average pooling
        kh, kw = H // oh, W // ow
        out = AvgPool2d.apply(x, (kh, kw, kh, kw, 0, 0, 1, 1), (oh, ow), True, 0.0)
        return out if batched else out.squeeze(0)
    if oh != H:
        x = _adaptive_weights(H, oh, x).matmul(x)
    if ow != W:
        x = x.matmul(_adaptive_weights(W, ow, x).transpose(0, 1))
    return x if batched else x.squeeze(0)


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
    x, batched = _batched(input, 2, "adaptive_max_pool2d")
    N, C, H, W = x.shape
    oh, ow = _output_pair(output_size, (H, W), "adaptive_max_pool2d")
    shapes.check((N, C, oh, ow), "adaptive_max_pool2d", x.dtype)
    rows, kh = _adaptive_windows(H, oh)
    cols, kw = _adaptive_windows(W, ow)
    g = x.index_select(2, _const(sum(rows, []), (oh * kh,), x, int64))
    g = g.index_select(3, _const(sum(cols, []), (ow * kw,), x, int64))
    g = g.reshape(N, C, oh, kh, ow, kw).permute(0, 1, 2, 4, 3, 5).reshape(N, C, oh, ow, kh * kw)
    vals, arg = g.max(dim=-1)
    if not batched:
        vals = vals.squeeze(0)
    if not return_indices:
        return vals
    # window position -> flat input position, through the same index tables
    table = [[r * W + c for r in rows[i] for c in cols[j]] for i in range(oh) for j in range(ow)]
    table = _const(table, (1, oh * ow, kh * kw), arg, int64).expand(N * C, oh * ow, kh * kw)
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
    return _as_2d(adaptive_avg_pool2d, input, "adaptive_avg_pool1d", output_size)


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
        kept = where(_const(keep, tuple(index.shape), x, bool_), x, 0.0)
        return x.new_zeros((x.shape[0], size)).scatter_add(1, index, kept)

    @staticmethod
    def backward(ctx, g):
        return g.gather(1, ctx.index), None, None


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, name):
    x, batched = _batched(input, nd, name)
    k = _ntuple(kernel_size, nd, name, "kernel_size")
    s = k if stride is None else _ntuple(stride, nd, name, "stride")
    p = _ntuple(padding, nd, name, "padding")
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
    shapes.check((N, C, total), name, x.dtype)
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
