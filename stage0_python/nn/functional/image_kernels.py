"""Convolution, pooling and batch norm on the backend's own kernels, where it offers them
(``FUSED``: stage 3's implicit-GEMM convolution, depthwise convolution, pooling and batch norm
read the image directly, with no unfold copy and no composite of primitives).

``conv2d``, ``max_pool2d``, ``avg_pool2d`` and ``batch_norm`` check the arguments and work out
the geometry, then call the Functions here when ``_takes`` says the kernel fits, else their
composite, which stays the reference these kernels are tested against. A window is the tuple
(kh, kw, sh, sw, ph, pw, dh, dw); an output size (oh, ow)."""
from ... import backend as B
from ...autograd import Function
from ...device import fused
from ...tensor import Tensor
from .helpers import _buffer, _tensors


def _takes(name, *tensors):
    """Whether the backend's kernel ``name`` takes these tensors (None ones ignored): offered
    for their buffers, and all of one float dtype."""
    given = [t for t in tensors if t is not None]
    dtype = given[0].dtype
    return (dtype.is_floating_point and all(t.dtype is dtype for t in given)
            and fused(name, *(t._data for t in given)))


class Conv2d(Function):
    """Convolution of (N, C, H, W) by (O, C/groups, kh, kw) for groups 1 or groups == C (depthwise);
    the backward gives the input's, the filters' and the bias's gradients."""

    @staticmethod
    def forward(ctx, x, w, b, window, out, groups):
        y = B.conv2d(x._data, w._data, _buffer(b), window, out, groups)
        ctx.window, ctx.groups = window, groups
        ctx.save_for_backward(x, w)
        return Tensor._make(y)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        grads = B.conv2d_backward(g._data, x._data, w._data, ctx.window, ctx.groups, *need[:3])
        return (*_tensors(*grads), None, None, None)


class MaxPool2d(Function):
    """Max pooling over the last two dims: (the maxima, their flat positions h * W + w)."""

    @staticmethod
    def forward(ctx, x, window, out):
        y, index = B.max_pool2d(x._data, window, out)
        ctx.index, ctx.shape, ctx.window = index, tuple(x.shape), window
        return Tensor._make(y), Tensor._make(index)

    @staticmethod
    def backward(ctx, g, _):
        return Tensor._make(B.max_pool2d_backward(g._data, ctx.index, ctx.shape, ctx.window)), None, None


class AvgPool2d(Function):
    """Average pooling over the last two dims (PyTorch's divisor rule, or ``divisor`` when not 0)."""

    @staticmethod
    def forward(ctx, x, window, out, include_pad, divisor):
        ctx.shape, ctx.args = tuple(x.shape), (window, include_pad, divisor)
        return Tensor._make(B.avg_pool2d(x._data, window, out, include_pad, divisor))

    @staticmethod
    def backward(ctx, g):
        return Tensor._make(B.avg_pool2d_backward(g._data, ctx.shape, *ctx.args)), None, None, None, None


class BatchNorm(Function):
    """Batch norm of (N, C, ...) per channel, optionally followed by an activation (``act``:
    None, "relu" or "relu6"); in training the running statistics (when given) are updated in
    place by the forward."""

    @staticmethod
    def forward(ctx, x, w, b, running_mean, running_var, training, momentum, eps, act):
        bufs = (_buffer(t) for t in (w, b, running_mean, running_var))
        y, mean, rstd = B.batch_norm(x._data, *bufs, training, momentum, eps, act)
        for t in (running_mean, running_var):
            if training and t is not None:
                t._data.version += 1
        ctx.stats, ctx.mode = (mean, rstd), (training, act)
        out = Tensor._make(y)
        ctx.save_for_backward(x, w, out if act else None)
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        grads = B.batch_norm_backward(g._data, x._data, _buffer(y), *ctx.stats, _buffer(w), *ctx.mode, *need[:3])
        return (*_tensors(*grads), None, None, None, None, None, None)
