"""Convolution and its adjoint: ``conv1d``/``conv2d`` on the backend's convolution kernels where
it offers them (groups 1 or depthwise), else as im2col and one matmul per group; ``conv3d`` as
a sum of ``conv2d``s over depth;
``conv_transpose1d``/``2d``/``3d`` as a matmul to columns and col2im (in 3-D, two 2-D col2ims)."""
import math

from ... import shapes
from ...autocast import lower as _lower
from ...creation import cat, stack
from ...device import max_buffer_bytes
from ...shapes import ShapeError
from .helpers import _batched, _ntuple
from .im2col import _check_geometry, _Fold, _im2col_shape, _Unfold
from .image_kernels import Conv2d, _takes
from .padding import pad


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    input, weight, bias = _lower(input, weight, bias)
    x, batched = _batched(input, nd, name)
    if weight.ndim != nd + 2:
        raise ShapeError(f"{name}: weight must be {nd + 2}-D, got shape {tuple(weight.shape)}")
    stride = _ntuple(stride, nd, name, "stride")
    dilation = _ntuple(dilation, nd, name, "dilation")
    N, C, *size = x.shape
    O, Cg, *kernel = weight.shape
    _check_geometry(name, kernel, dilation, (0,) * nd, stride)
    if groups < 1 or O % groups:
        raise ValueError(f"{name}: groups={groups} must be positive and divide the "
                         f"{O} output channels of weight {tuple(weight.shape)}")
    if C != Cg * groups:
        raise ShapeError(f"{name}: input of shape {tuple(input.shape)} has {C} channels, but weight of "
                         f"shape {tuple(weight.shape)} with groups={groups} expects {Cg * groups}")
    if bias is not None and tuple(bias.shape) != (O,):
        raise ShapeError(f"{name}: bias must have shape ({O},), got {tuple(bias.shape)}")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            padding = tuple(t // 2 for t in total)
            extra = [t - 2 * (t // 2) for t in total]  # odd totals pad one more on the right
            if any(extra):
                x = pad(x, [v for e in reversed(extra) for v in (0, e)])
        else:
            raise ValueError(f"{name}: padding must be 'valid', 'same', an int or a tuple, got {padding!r}")
    else:
        padding = _ntuple(padding, nd, name, "padding")
    _, out_size = _im2col_shape(name, x, tuple(kernel), dilation, padding, stride)
    shapes.check((N, O, *out_size), name, x.dtype)
    if (groups == 1 or (groups == C and Cg == 1)) and _takes("conv2d", x, weight, bias):
        x2, w2, k, s, p, d, size = x, weight, tuple(kernel), stride, padding, dilation, tuple(out_size)
        if nd == 1:  # conv1d as a conv2d of height 1
            x2, w2 = x.unsqueeze(2), weight.unsqueeze(2)
            k, s, p, d, size = (1, *k), (1, *s), (0, *p), (1, *d), (1, *size)
        out = Conv2d.apply(x2, w2, bias, (*k, *s, *p, *d), size, groups).reshape(N, O, *out_size)
        return out if batched else out.squeeze(0)
    limit = max_buffer_bytes(x.device)
    col_bytes = max(Cg * groups * math.prod(kernel), O) * math.prod(out_size) * x.element_size()
    if limit is not None and N > 1 and N * col_bytes > limit:
        # a device that binds at most ``limit`` bytes to a kernel gets the batch in parts
        per = max(1, limit // col_bytes)
        return cat([_conv(x[i:i + per], weight, bias, stride, padding, dilation, groups, nd, name)
                    for i in range(0, N, per)])
    cols = _Unfold.apply(x, tuple(kernel), dilation, padding, stride)  # (N, C*K, L)
    K, L = Cg * math.prod(kernel), cols.shape[2]
    if groups == 1:
        out = weight.reshape(O, K).matmul(cols)  # (N, O, L)
    else:
        # each group's filters see only that group's channels: a batch of g matmuls
        w = weight.reshape(groups, O // groups, K)
        out = w.matmul(cols.reshape(N, groups, K, L))
    out = out.reshape(N, O, *out_size)
    if bias is not None:
        out = out + bias.reshape(O, *([1] * nd))
    return out if batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of (N, C, L) by (O, C/groups, k)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of (N, C, H, W) by (O, C/groups, kh, kw)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of (N, C, D, H, W) by (O, C/groups, kd, kh, kw): for
    each output depth, the sum over the filter's depth of the 2-D convolutions of one input
    depth slice by one filter slice. So it runs on ``conv2d``'s kernels and its backward is
    theirs; it makes D_out x kd of them, correct rather than fast."""
    input, weight, bias = _lower(input, weight, bias)
    x, batched = _batched(input, 3, "conv3d")
    if weight.ndim != 5:
        raise ShapeError(f"conv3d: weight must be 5-D, got shape {tuple(weight.shape)}")
    stride, dilation = _ntuple(stride, 3, "conv3d", "stride"), _ntuple(dilation, 3, "conv3d", "dilation")
    C, (O, Cg, *kernel) = x.shape[1], weight.shape
    _check_geometry("conv3d", kernel, dilation, (0,) * 3, stride)
    if groups < 1 or O % groups or C != Cg * groups:
        raise ShapeError(f"conv3d: input of shape {tuple(input.shape)} and weight of shape "
                         f"{tuple(weight.shape)} do not fit groups={groups}")
    if isinstance(padding, str):
        if padding not in ("valid", "same") or (padding == "same" and any(s != 1 for s in stride)):
            raise ValueError(f"conv3d: padding must be 'valid', 'same' (stride 1), an int or a tuple, "
                             f"got {padding!r}")
        totals = [d * (k - 1) if padding == "same" else 0 for d, k in zip(dilation, kernel)]
        pads = [(t // 2, t - t // 2) for t in totals]  # an odd total pads one more on the right
    else:
        pads = [(p, p) for p in _ntuple(padding, 3, "conv3d", "padding")]
    if any(p for pair in pads for p in pair):
        x = pad(x, [v for pair in reversed(pads) for v in pair])
    depth = (x.shape[2] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    if depth < 1:
        raise ShapeError(f"conv3d: input of shape {tuple(input.shape)} is smaller than the kernel "
                         f"{tuple(kernel)} with dilation {dilation} in depth")
    slices = []
    for od in range(depth):
        terms = [conv2d(x[:, :, od * stride[0] + kd * dilation[0]], weight[:, :, kd], None, stride[1:], 0,
                        dilation[1:], groups) for kd in range(kernel[0])]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        slices.append(total)
    out = stack(slices, dim=2)
    if bias is not None:
        out = out + bias.reshape(O, 1, 1, 1)
    return out if batched else out.squeeze(0)


# ------------------------------------------------------------------ transposed convolution

def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    """The adjoint of convolution: every input position scatters ``weight``-scaled copies
    of itself into the output, i.e. a matmul to columns and fold (col2im). Folding into
    the uncropped size, then cropping ``padding`` and extending by ``output_padding``
    (pad handles both signs) covers output_padding up to max(stride, dilation) - 1."""
    input, weight, bias = _lower(input, weight, bias)
    x, batched = _batched(input, nd, name)
    if weight.ndim != nd + 2:
        raise ShapeError(f"{name}: weight must be {nd + 2}-D, got shape {tuple(weight.shape)}")
    s, p, op, d = (_ntuple(v, nd, name, w) for v, w in ((stride, "stride"), (padding, "padding"),
                                                        (output_padding, "output_padding"),
                                                        (dilation, "dilation")))
    N, C, *size = x.shape
    Cw, Og, *kernel = weight.shape
    _check_geometry(name, kernel, d, p, s)
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
    shapes.check((N, O * math.prod(kernel), math.prod(size)), name, x.dtype)
    shapes.check((N, O, *full), name, x.dtype)
    if nd == 3:
        shapes.check((N, O * kernel[0] * size[0], *full[1:]), name, x.dtype)
    K, L = math.prod(kernel), math.prod(size)
    Cg = C // groups
    # weight (C, O/g, *k) -> per group (O/g * K, C/g): the transpose of conv's filter matrix
    w = weight.reshape(groups, Cg, Og * K).transpose(1, 2)
    cols = w.matmul(x.reshape(N, groups, Cg, L)).reshape(N, O * K, L)
    if nd == 1:  # fold is 2-D: a 1-D signal is a height-1 image
        y = _Fold.apply(cols, (1, full[0]), (1, kernel[0]), (1, d[0]), (0, 0), (1, s[0])).squeeze(2)
    elif nd == 3:
        y = _fold3d(cols, O, size, full, kernel, d, s)
    else:
        y = _Fold.apply(cols, tuple(full), tuple(kernel), tuple(d), (0, 0), tuple(s))
    crop = [v for pi, o in zip(reversed(p), reversed(op)) for v in (-pi, o - pi)]
    if any(crop):
        y = pad(y, crop)
    if bias is not None:
        y = y + bias.reshape(O, *([1] * nd))
    return y if batched else y.squeeze(0)


def _fold3d(cols, C, size, full, kernel, d, s):
    """col2im in 3-D as two 2-D folds, since the sum is separable: fold each (depth tap,
    input depth) pair's columns over height and width, then fold the depth taps over depth
    (as a height-1 image). ``cols`` is (N, C * kd*kh*kw, D*H*W); the result (N, C, *full)."""
    N = cols.shape[0]
    (kd, kh, kw), (D, H, W) = kernel, size
    # (c, kd, khw) x (D, HW) -> (c, kd, D, khw) x (HW): one 2-D fold per (c, kd, D)
    c = cols.reshape(N, C, kd, kh * kw, D, H * W).permute(0, 1, 2, 4, 3, 5)
    c = c.reshape(N, C * kd * D * kh * kw, H * W)
    hw = _Fold.apply(c, tuple(full[1:]), (kh, kw), tuple(d[1:]), (0, 0), tuple(s[1:]))
    # (c, kd, D, y, x) -> (c, y, x, kd) x (D): one 1-D fold per (c, y, x)
    area = full[1] * full[2]
    c = hw.reshape(N, C, kd, D, area).permute(0, 1, 4, 2, 3).reshape(N, C * area * kd, D)
    y = _Fold.apply(c, (1, full[0]), (1, kd), (1, d[0]), (0, 0), (1, s[0]))
    return y.reshape(N, C, full[1], full[2], full[0]).permute(0, 1, 4, 2, 3)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See torch.nn.functional.conv_transpose1d: weight (C_in, C_out/groups, k)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See torch.nn.functional.conv_transpose2d: weight (C_in, C_out/groups, kh, kw)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See torch.nn.functional.conv_transpose3d: weight (C_in, C_out/groups, kd, kh, kw)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                           "conv_transpose3d")
