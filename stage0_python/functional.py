"""Activations, softmax and losses, composed from the primitives.

``softmax``/``log_softmax`` are Functions of their own: the composite would keep every
intermediate alive, and the hand-written backward is one line. A backend that lists
``softmax``/``log_softmax`` in ``FUSED`` runs its own kernels, forward and backward, and
one that lists ``cross_entropy`` computes the loss of class-index targets and its
gradient in one pass each (``CrossEntropy``); the composites stay the reference.

It builds on ``Tensor``'s base, not on ``Tensor``: ``Tensor.softmax`` calls it, and its
mixin (elementwise.py) imports it while the class is being made.
"""
import math

from stage0_python.vocabulary import ArgumentError

from . import backend as B
from . import shapes
from .autocast import float32 as _float32
from .device import fused, place
from .dtypes import int32, int64
from .graph import Function
from .ops import where
from .shapes import ShapeError
from .tensor_core import TensorCore

wrap = TensorCore._make


def _rows_fused(name, t):
    """Whether the backend's fused kernel ``name`` takes ``t``: rows need a dimension (a 0-d
    tensor is one row of one element, which the composite handles)."""
    return t.ndim > 0 and fused(name, t._data)


def _shift(x, dim):
    # a row whose max is infinite becomes NaN (inf - inf), as in PyTorch; an empty tensor
    # has no rows to shift (and an empty dim no maximum)
    return x - x.amax(dim=dim, keepdim=True) if x.numel() else x


class _Softmaxes(Function):
    """Softmax, or its log (``log``), along ``dim``: the backend's fused kernels, forward and
    backward, where its ``FUSED`` lists ``name``, and elsewhere the composite (``composite``
    of the shifted input, ``composite_backward``), which stays the reference."""

    name, log = "softmax", False

    @classmethod
    def forward(cls, ctx, x, dim):
        if _rows_fused(cls.name, x):
            y = wrap((B.log_softmax if cls.log else B.softmax)(x._data, dim))
        else:
            y = cls.composite(_shift(x, dim), dim)
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        (y,) = ctx.saved_tensors
        if _rows_fused(cls.name, y):
            return wrap(B.softmax_backward(g._data, y._data, ctx.dim, cls.log)), None
        return cls.composite_backward(g, y, ctx.dim), None


class LogSoftmax(_Softmaxes):
    name, log = "log_softmax", True

    @staticmethod
    def composite(s, dim):
        return s - s.exp().sum(dim=dim, keepdim=True).log()

    @staticmethod
    def composite_backward(g, y, dim):
        return g - y.exp() * g.sum(dim=dim, keepdim=True)


class Softmax(_Softmaxes):
    @staticmethod
    def composite(s, dim):
        e = s.exp()
        return e / e.sum(dim=dim, keepdim=True)

    @staticmethod
    def composite_backward(g, y, dim):
        return y * (g - (g * y).sum(dim=dim, keepdim=True))


class LogSigmoid(Function):
    """log(sigmoid(x)) = -(log1p(exp(-|x|)) + relu(-x)): no overflow for any x, and a
    backward written from the smooth derivative, 1 - sigmoid(x), so x = 0 gets no
    arbitrary subgradient from |x| or relu."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return -((x.abs() * -1).exp().log1p() + (-x).relu())

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (-x).sigmoid()


def logsigmoid(input):
    """See torch.nn.functional.logsigmoid."""
    return LogSigmoid.apply(_float_input(input, "logsigmoid"))


def _float_input(x, op):
    if not isinstance(x, TensorCore):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating-point input, got {x.dtype.name}")
    return x


def softmax(input, dim, dtype=None):
    """See torch.nn.functional.softmax."""
    (input,) = _float32("softmax", input)
    x = _float_input(input.to(dtype) if dtype is not None else input, "softmax")
    return Softmax.apply(x, x._dim(dim, "softmax"))


def log_softmax(input, dim, dtype=None):
    """See torch.nn.functional.log_softmax."""
    (input,) = _float32("log_softmax", input)
    x = _float_input(input.to(dtype) if dtype is not None else input, "log_softmax")
    return LogSoftmax.apply(x, x._dim(dim, "log_softmax"))


def relu(input):
    """See torch.nn.functional.relu (``sg.nn.functional.relu`` adds ``inplace=``)."""
    return input.relu()


class _Gelu(Function):
    """GELU forward and backward each one pass of the backend's kernel (``gelu``), where the
    composite is a dozen elementwise operations and their graph nodes."""

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.approximate = approximate
        ctx.save_for_backward(x)
        return wrap(B.gelu(x._data, approximate))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return wrap(B.gelu_backward(g._data, x._data, ctx.approximate)), None


def gelu(input, approximate="none"):
    """See torch.nn.functional.gelu. Where the backend fuses it (``FUSED``: stage 3), one
    kernel each way, computed in the input's dtype (float32 within a few ulp, where
    ``Tensor.gelu`` rounds once from float64)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if input.dtype.is_floating_point and fused("gelu", input._data):
        return _Gelu.apply(input, approximate)
    if approximate == "none":
        return input.gelu()
    return 0.5 * input * (1 + (math.sqrt(2 / math.pi) * (input + 0.044715 * input ** 3)).tanh())


def silu(input):
    """See torch.nn.functional.silu (``sg.nn.functional.silu`` adds ``inplace=``)."""
    return input.silu()


def sigmoid(input):
    """See torch.nn.functional.sigmoid."""
    return input.sigmoid()


def tanh(input):
    """See torch.nn.functional.tanh."""
    return input.tanh()


def softplus(input, beta=1.0, threshold=20.0):
    """See torch.nn.functional.softplus."""
    z = input * beta
    return where(z > threshold, input, -logsigmoid(-z) / beta)


def one_hot(tensor, num_classes=-1):
    """See torch.nn.functional.one_hot."""
    if tensor.dtype not in (int64, int32):
        raise TypeError(f"one_hot: expected an integer tensor, got {tensor.dtype.name}")
    if num_classes < -1:
        raise ValueError(f"one_hot: num_classes must be -1 (inferred) or non-negative, got {num_classes}")
    if tensor.numel():
        lo, hi = tensor.min().item(), tensor.max().item()
        if lo < 0:
            raise ArgumentError(f"one_hot: class values must be non-negative, got {lo}")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise ArgumentError(f"one_hot: class value {hi} is out of range for num_classes={num_classes}")
    elif num_classes == -1:
        raise ValueError("one_hot: cannot infer the number of classes from an empty tensor")
    shapes.check((*tensor.shape, num_classes), "one_hot", int64)
    classes = wrap(place(B.arange(0, num_classes, 1, int64), tensor.device))
    return (tensor.unsqueeze(-1) == classes).long()


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _check_class_target(input, target, op):
    """Input (N, C, d1...) or (C,); target (N, d1...) or () of class indices."""
    if target.dtype not in (int64, int32):
        raise TypeError(f"{op}: expected class indices of dtype int64, got {target.dtype.name} "
                        f"(float targets of the input's shape are class probabilities)")
    expected = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.ndim > 1 else ()
    if tuple(target.shape) != expected:
        raise ShapeError(f"{op}: expected target of shape {list(expected)} for input of shape "
                         f"{list(input.shape)}, got {list(target.shape)}")


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """See torch.nn.functional.nll_loss."""
    input, target, weight = _float32("loss", input, target, weight)
    return _nll_loss(input, target, weight, ignore_index, reduction, "nll_loss")


def _nll_loss(input, target, weight, ignore_index, reduction, op):
    _float_input(input, op)
    _check_class_target(input, target, op)
    C = input.shape[1] if input.ndim > 1 else input.shape[0]
    if weight is not None and tuple(weight.shape) != (C,):
        raise ShapeError(f"{op}: weight must have shape [{C}], got {list(weight.shape)}")
    keep = target != ignore_index
    safe = where(keep, target, 0).long()
    bad = shapes.out_of_range(safe, 0, C)
    if bad is not None:
        raise IndexError(f"{op}: target {bad} is out of bounds for {C} classes")
    logp = input if input.ndim > 1 else input.unsqueeze(0)
    idx = safe if input.ndim > 1 else safe.unsqueeze(0)
    picked = logp.gather(1, idx.unsqueeze(1)).squeeze(1)
    w = keep.to(input.dtype) if weight is None else weight.index_select(0, idx.reshape(-1)).reshape(idx.shape) * keep
    loss = -picked * w
    if input.ndim == 1:
        loss, w = loss.squeeze(0), w.squeeze(0)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction, op)


class CrossEntropy(Function):
    """Cross-entropy of logits (N, C) and class indices (N,) on the backend's fused kernels:
    the forward keeps the probabilities, and the backward is ``scale * (p - onehot)`` with
    the smoothing and weight terms, in one pass over the rows."""

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction, label_smoothing):
        wdata = None if weight is None else weight._data
        loss, wrow, probs = B.cross_entropy(x._data, target._data, wdata, ignore_index, label_smoothing)
        loss, wrow = wrap(loss), wrap(wrow)
        ctx.args = target._data, wdata, ignore_index, label_smoothing, reduction
        ctx.probs = probs
        if reduction == "mean":
            ctx.wsum = wrow.sum()
            return loss.sum() / ctx.wsum
        return _reduce(loss, reduction, "cross_entropy")

    @staticmethod
    def backward(ctx, g):
        target, weight, ignore_index, label_smoothing, reduction = ctx.args
        if reduction == "mean":
            g = g / ctx.wsum
        scale = g.expand(target.shape[0]).contiguous() if g.ndim == 0 else g
        gx = B.cross_entropy_backward(ctx.probs, target, weight, scale._data, ignore_index, label_smoothing)
        return wrap(gx), None, None, None, None, None


def _fused_cross_entropy(input, target, weight):
    """Whether the fused kernel computes this loss: logits (N, C) and class indices, with
    a weight (if any) of the input's dtype that needs no gradient."""
    return (fused("cross_entropy", input._data) and input.ndim == 2 and not target.dtype.is_floating_point
            and (weight is None or (weight.dtype is input.dtype and not weight.requires_grad)))


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """The cross-entropy of logits ``input`` (C), (N, C) or (N, C, d1, ...) against class
    indices or class probabilities ``target``, as ``torch.nn.functional.cross_entropy``."""
    input, target, weight = _float32("loss", input, target, weight)
    _float_input(input, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if _fused_cross_entropy(input, target, weight):
        _check_class_target(input, target, "cross_entropy")
        C = input.shape[1]
        if weight is not None and tuple(weight.shape) != (C,):
            raise ShapeError(f"cross_entropy: weight must have shape [{C}], got {list(weight.shape)}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        return CrossEntropy.apply(input, target, weight, ignore_index, reduction, float(label_smoothing))
    cdim = 1 if input.ndim > 1 else 0
    C = input.shape[cdim]
    logp = log_softmax(input, cdim)
    wshape = [1] * input.ndim
    wshape[cdim] = C
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise ShapeError(f"cross_entropy: probability targets must match the input shape "
                             f"{list(input.shape)}, got {list(target.shape)}")
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / C
        prod = logp * target if weight is None else logp * target * weight.reshape(wshape)
        loss = -prod.sum(dim=cdim)
        if reduction == "mean":  # over every position (N * d1 * ...), as PyTorch
            return loss.sum() / loss.numel()
        return _reduce(loss, reduction, "cross_entropy")
    nll = _nll_loss(logp, target, weight, ignore_index, reduction, "cross_entropy")
    if not label_smoothing:
        return nll
    keep = target != ignore_index
    per_class = logp if weight is None else logp * weight.reshape(wshape)
    smooth = -per_class.sum(dim=cdim) * keep
    if reduction == "mean":
        if weight is None:
            denom = keep.sum()
        else:
            safe = where(keep, target, 0).long().reshape(-1)
            denom = (weight.index_select(0, safe) * keep.reshape(-1)).sum()
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction, "cross_entropy")
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / C)


def _check_same_shape(input, target, op):
    if not isinstance(target, TensorCore):
        raise TypeError(f"{op}: target must be a Tensor, got {type(target).__name__}")
    if tuple(input.shape) != tuple(target.shape):
        raise ShapeError(f"{op}: target shape {list(target.shape)} must match input shape "
                         f"{list(input.shape)}")


def mse_loss(input, target, reduction="mean"):
    """See torch.nn.functional.mse_loss."""
    input, target = _float32("loss", input, target)
    _float_input(input, "mse_loss")
    _check_same_shape(input, target, "mse_loss")
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(input, target, reduction="mean"):
    """See torch.nn.functional.l1_loss."""
    input, target = _float32("loss", input, target)
    _check_same_shape(input, target, "l1_loss")
    return _reduce((input - target).abs(), reduction, "l1_loss")


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """See torch.nn.functional.binary_cross_entropy_with_logits."""
    input, target, weight = _float32("loss", input, target, weight)
    _float_input(input, "binary_cross_entropy_with_logits")
    _check_same_shape(input, target, "binary_cross_entropy_with_logits")
    neg_log_sig = -logsigmoid(input)  # log(1 + exp(-x)), stable for any x
    if pos_weight is None:
        loss = (1 - target) * input + neg_log_sig
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * neg_log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """See torch.nn.functional.binary_cross_entropy."""
    input, target, weight = _float32("loss", input, target, weight)
    _check_same_shape(input, target, "binary_cross_entropy")
    loss = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


__all__ = ["softmax", "log_softmax", "relu", "gelu", "silu", "sigmoid", "tanh", "softplus", "logsigmoid",
           "one_hot", "nll_loss", "cross_entropy", "mse_loss", "l1_loss",
           "binary_cross_entropy_with_logits", "binary_cross_entropy"]
