"""Dropout: of elements, of whole channels (``dropout1d``, ``dropout2d``) and alpha
dropout; the masks come from the project's generator."""
import math
import warnings

from ... import backend as B
from ... import random as _random
from ...device import place
from ...shapes import ShapeError
from ...tensor import Tensor


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) (training
    only); the mask comes from the project's generator."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = 0.0
    else:
        u = Tensor._make(place(B.uniform(tuple(input.shape), 0.0, 1.0, input.dtype, _random.default_generator),
                               input.device))
        mask = (u < 1.0 - p).to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def _channel_dropout(input, p, training, inplace, name, dims):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    odd = name == "dropout2d" and input.ndim not in dims and input.ndim >= 2
    if odd:  # PyTorch warns and drops whole (sample, channel) slices of any other input
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
                      f"will result in an error in a future release. To retain the behavior and silence "
                      f"this warning, please use dropout instead.", UserWarning, stacklevel=3)
    elif input.ndim not in dims:
        raise ShapeError(f"{name}: expected a {dims[0]}-D (unbatched) or {dims[1]}-D (batched) input, "
                         f"got shape {tuple(input.shape)}")
    if not training or p == 0.0:
        return input
    batched = input.ndim == dims[1] or odd
    if name == "dropout2d" and not batched:  # 3-D
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
