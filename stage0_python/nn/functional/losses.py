"""The regression and divergence losses: smooth L1, Huber and KL divergence. The
classification and basic regression losses live in the stage's ``functional`` and are
re-exported by the package."""
import warnings

from ...autocast import float32 as _float32
from ...functional import _reduce
from ...ops import where
from ...tensor import Tensor


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated ``size_average``/``reduce`` pair, mapped to a reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                  f"instead.", stacklevel=3)
    return reduction


def _difference(input, target, op):
    if not isinstance(target, Tensor):
        raise TypeError(f"{op}: target must be a Tensor, got {type(target).__name__}")
    if tuple(input.shape) != tuple(target.shape):
        # broadcast as PyTorch does, with its warning
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the input size "
                      f"({list(input.shape)}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", stacklevel=3)
    return input - target


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input -
    target``); ``beta=0`` is the L1 loss."""
    input, target = _float32("loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = _difference(input, target, "smooth_l1_loss")
    ad = d.abs()
    loss = ad if beta == 0 else where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``; an
    optional ``weight`` of the input's shape scales each element before the reduction."""
    input, target, weight = _float32("loss", input, target, weight)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = _difference(input, target, "huber_loss")
    ad = d.abs()
    loss = where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError(f"huber_loss: weight of shape {list(weight.shape)} must match the input's "
                             f"shape {list(input.shape)}")
        loss = loss * weight
    return _reduce(loss, reduction, "huber_loss")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``:
    ``target * (log(target) - input)``, 0 where ``target`` is 0 (``log_target``: the target
    is a log-probability too). ``'batchmean'`` divides the sum by the batch size."""
    input, target = _float32("loss", input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support "
                      "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                      "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                      "major release.", stacklevel=2)
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"kl_div: reduction must be 'mean', 'batchmean', 'sum' or 'none', got {reduction!r}")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t): 0 * log(0) counts as 0; a negative target still gives NaN
        loss = where(target == 0, 0.0, target * target.log()) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction, "kl_div")
