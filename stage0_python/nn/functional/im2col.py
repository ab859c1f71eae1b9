"""im2col and its adjoint: ``unfold`` and ``fold``, backend kernels wrapped in a
``Function`` pair whose backwards are each other, on which convolution and pooling build."""
import math

from stage0_python.vocabulary import ArgumentError

from ... import backend as B
from ... import shapes
from ...autograd import Function
from ...shapes import ShapeError
from ...tensor import Tensor
from .helpers import _ntuple


class _Unfold(Function):
    """(N, C, *spatial) -> (N, C * prod(kernel), L): every receptive field as a column."""

    @staticmethod
    def forward(ctx, x, kernel, dilation, padding, stride):
        ctx.geometry = (tuple(x.shape[2:]), kernel, dilation, padding, stride)
        return Tensor._make(B.unfold(x._data, kernel, dilation, padding, stride))

    @staticmethod
    def backward(ctx, g):
        # unfold is linear; its adjoint sums each column back where it was read: fold
        return _Fold.apply(g, *ctx.geometry), None, None, None, None


class _Fold(Function):
    """The adjoint of ``_Unfold``: sums columns back into (N, C, *output_size)."""

    @staticmethod
    def forward(ctx, cols, output_size, kernel, dilation, padding, stride):
        ctx.geometry = (kernel, dilation, padding, stride)
        return Tensor._make(B.fold(cols._data, output_size, kernel, dilation, padding, stride))

    @staticmethod
    def backward(ctx, g):
        return _Unfold.apply(g, *ctx.geometry), None, None, None, None, None


def _out_size(size, k, d, p, s):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _check_geometry(name, kernel, dilation, padding, stride):
    """PyTorch's rules for a sliding window: kernel, dilation and stride positive, padding
    non-negative (each a tuple with one entry per spatial dim)."""
    for what, values, least in (("kernel size", kernel, 1), ("dilation", dilation, 1),
                                ("stride", stride, 1), ("padding", padding, 0)):
        if min(values) < least:
            rule = "positive" if least else "non-negative"
            raise ArgumentError(f"{name}: {what} must be {rule}, got {tuple(values)}")


def _im2col_shape(name, x, kernel, dilation, padding, stride):
    """The (N, C * K, L) shape ``_Unfold`` produces from ``x``, checked before anything is
    allocated: a window that does not fit, or columns that cannot exist, raise here."""
    _check_geometry(name, kernel, dilation, padding, stride)
    out = [_out_size(n, *g) for n, g in zip(x.shape[2:], zip(kernel, dilation, padding, stride))]
    if min(out) < 1:
        raise ShapeError(f"{name}: kernel {tuple(kernel)} with dilation {tuple(dilation)} does not fit "
                         f"input of shape {tuple(x.shape)} padded by {tuple(padding)}")
    cols = (x.shape[0], x.shape[1] * math.prod(kernel), math.prod(out))
    return shapes.check(cols, name, x.dtype), out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col of a (N, C, H, W) or (C, H, W) input: (N, C * kh * kw, L)."""
    if input.ndim not in (3, 4):
        raise ShapeError(f"unfold: expected a 3-D or 4-D input, got shape {tuple(input.shape)}")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    geom = [_ntuple(v, 2, "unfold", w) for v, w in
            ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride"))]
    _im2col_shape("unfold", x, *geom)
    out = _Unfold.apply(x, *geom)
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of ``unfold``: ``(N, C * kh * kw, L) -> (N, C, *output_size)``."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"fold: expected a 2-D or 3-D input, got shape {tuple(input.shape)}")
    x = input if input.ndim == 3 else input.unsqueeze(0)
    size = _ntuple(output_size, 2, "fold", "output_size")
    k, d, p, s = (_ntuple(v, 2, "fold", w) for v, w in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                                         (padding, "padding"), (stride, "stride")))
    _check_geometry("fold", k, d, p, s)
    shapes.check((x.shape[0], x.shape[1] // (k[0] * k[1]), *size), "fold", x.dtype)
    blocks = _out_size(size[0], k[0], d[0], p[0], s[0]) * _out_size(size[1], k[1], d[1], p[1], s[1])
    if x.shape[1] % (k[0] * k[1]) or x.shape[2] != blocks:
        raise ShapeError(f"fold: input of shape {tuple(input.shape)} does not fit output_size {size} "
                         f"with kernel {k}: expected dim 1 divisible by {k[0] * k[1]} and {blocks} blocks")
    out = _Fold.apply(x, size, k, d, p, s)
    return out if input.ndim == 3 else out.squeeze(0)
