"""Normalisation: batch and layer (each on the backend's kernels where it offers them), group,
RMS, instance and local response normalisation."""
import math
import numbers

from ... import backend as B
from ...autocast import float32 as _float32
from ...autograd import Function, no_grad
from ...device import fused
from ...shapes import ShapeError
from ...tensor import Tensor
from .activations import relu6
from .helpers import _buffer, _tensors
from .image_kernels import BatchNorm, _takes
from .padding import pad


def _normalize(x, dims, eps):
    mean = x.mean(dim=dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=dims, keepdim=True)  # biased, as the layers use
    return centered * (var + eps).rsqrt(), mean, var


def _check_per_channel(op, input, **tensors):
    """Each of ``tensors`` that is given must hold one value per channel (dim 1)."""
    C = input.shape[1]
    for what, t in tensors.items():
        if t is not None and tuple(t.shape) != (C,):
            raise ShapeError(f"{op}: {what} must have shape ({C},) for input of shape "
                             f"{tuple(input.shape)}, got {tuple(t.shape)}")


def _scale_shift(y, weight, bias, shape):
    """``y * weight + bias``, each of the two that is given, holding one value per channel,
    reshaped to ``shape`` first."""
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims. In training, batch
    statistics are used and the running ones updated in place (variance unbiased)."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, None)


_ACTIVATIONS = {None: lambda y: y, "relu": lambda y: y.relu(), "relu6": lambda y: relu6(y)}


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, act):
    """``batch_norm`` then ``act`` (None, "relu" or "relu6"): one kernel where the backend
    fuses them (``Sequential`` pairs a batch norm with the ReLU or ReLU6 after it)."""
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input with a channel dim, got shape {tuple(input.shape)}")
    C = input.shape[1]
    _check_per_channel("batch_norm", input, running_mean=running_mean, running_var=running_var,
                       weight=weight, bias=bias)
    shape = (C,) + (1,) * (input.ndim - 2)
    dims = (0,) + tuple(range(2, input.ndim))
    n = input.shape[0] * math.prod(input.shape[2:])  # values per channel
    if training and n == 1:
        raise ValueError(f"batch_norm: expected more than 1 value per channel when training, "
                         f"got input of shape {tuple(input.shape)}")
    if not training and (running_mean is None or running_var is None):
        raise ValueError("batch_norm: running_mean and running_var are required when training=False")
    if input.numel() == 0:  # no batch or no channels: nothing to normalise, no statistics to update
        return _ACTIVATIONS[act](_scale_shift(input, weight, bias, shape))
    if _fits_batch_norm(input, weight, bias, running_mean, running_var):
        return BatchNorm.apply(input, weight, bias, running_mean, running_var, training, float(momentum),
                               float(eps), act)
    if training:
        y, mean, var = _normalize(input, dims, eps)
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(C) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.reshape(C) * (momentum * n / (n - 1)))
    else:
        y = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    return _ACTIVATIONS[act](_scale_shift(y, weight, bias, shape))


def _fits_batch_norm(input, *per_channel):
    """Whether the backend's batch-norm kernel takes these: float32 or float64 (the running
    statistics are updated in place), one dtype, contiguous running statistics."""
    return (input.dtype.name in ("float32", "float64") and input.numel() > 0
            and _takes("batch_norm", input, *per_channel)
            and all(t is None or B.is_contiguous(t._data) for t in per_channel[2:]))


def _trailing(input, normalized_shape, name):
    ns = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if not ns or tuple(input.shape[input.ndim - len(ns):]) != ns or input.ndim < len(ns):
        raise ShapeError(f"{name}: expected an input whose trailing dimensions are {ns}, got shape "
                         f"{tuple(input.shape)}")
    return ns, tuple(range(input.ndim - len(ns), input.ndim))


class _LayerNorm(Function):
    """Layer norm on the backend's fused kernels: a row's statistics, the normalisation,
    scale and shift in one pass; the backward keeps only the mean and 1/std of each row."""

    @staticmethod
    def forward(ctx, x, weight, bias, shape, eps):
        w, b = _buffer(weight), _buffer(bias)
        y, mean, rstd = B.layer_norm(x._data, B.prod(shape), w, b, eps)
        ctx.stats, ctx.shape = (mean, rstd), shape
        ctx.save_for_backward(x, weight)
        return Tensor._make(y)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        grads = B.layer_norm_backward(g._data, x._data, *ctx.stats, _buffer(weight), ctx.shape, need[0], need[1],
                                      need[2])
        return (*_tensors(*grads), None, None)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""
    input, weight, bias = _float32("layer_norm", input, weight, bias)
    ns, dims = _trailing(input, normalized_shape, "layer_norm")
    if fused("layer_norm", input._data) and input.dtype.is_floating_point and all(
            t is None or (t.dtype is input.dtype and tuple(t.shape) == ns) for t in (weight, bias)):
        return _LayerNorm.apply(input, weight, bias, ns, float(eps))
    y = _normalize(input, dims, eps)[0]
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each of ``num_groups`` channel groups over its channels and spatial dims."""
    input, weight, bias = _float32("group_norm", input, weight, bias)
    if input.ndim < 2:
        raise ShapeError(f"group_norm: expected an input with a channel dim, got shape {tuple(input.shape)}")
    N, C = input.shape[:2]
    if num_groups < 1 or C % num_groups:
        raise ShapeError(f"group_norm: {C} channels of input {tuple(input.shape)} cannot be split "
                         f"into {num_groups} groups")
    group = C // num_groups * math.prod(input.shape[2:])  # not -1, which an empty batch leaves ambiguous
    y = _normalize(input.reshape(N, num_groups, group), (2,), eps)[0].reshape(input.shape)
    shape = (C,) + (1,) * (input.ndim - 2)
    return _scale_shift(y, weight, bias, shape)


# the machine epsilon of each float dtype: RMSNorm's default eps, as in PyTorch
_EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide by the root mean square over the trailing dims (no centering), then scale."""
    ns, dims = _trailing(input, normalized_shape, "rms_norm")
    if eps is None:
        eps = _EPS.get(input.dtype.name, 2.0 ** -23)
    y = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return y if weight is None else y * weight


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """See torch.nn.functional.instance_norm: each (sample, channel) normalised over its
    spatial dims; running statistics, when given, track the batch average of the
    per-instance mean and unbiased variance, as PyTorch's do."""
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected an input of shape (N, C, *spatial), got shape "
                         f"{tuple(input.shape)}")
    N, C = input.shape[:2]
    _check_per_channel("instance_norm", input, running_mean=running_mean, running_var=running_var,
                       weight=weight, bias=bias)
    shape = (C,) + (1,) * (input.ndim - 2)
    dims = tuple(range(2, input.ndim))
    if use_input_stats:
        n = math.prod(input.shape[2:])
        if n <= 1:
            raise ValueError(f"instance_norm: expected more than 1 spatial element when training, got "
                             f"input of shape {tuple(input.shape)}")
        y, mean, var = _normalize(input, dims, eps)
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
    return _scale_shift(y, weight, bias, shape)


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
    sq = pad(sq, pads)
    window = sq.narrow(1, 0, C)
    for j in range(1, size):
        window = window + sq.narrow(1, j, C)
    return input / (window * (alpha / size) + k) ** beta
