"""Activation functions: the ReLU and ELU families, the hard and soft shrinks and
thresholds, GLU, PReLU and softmin. The core's (softmax, gelu, sigmoid, ...) live in the
stage's ``functional`` and are re-exported by the package."""
import warnings

from ... import functional as _core
from ...autograd import Function
from ...ops import where
from ...shapes import ShapeError
from .helpers import _inplace, _narrow


def relu(input, inplace=False):
    """See torch.nn.functional.relu."""
    return input.relu_() if inplace else input.relu()


def silu(input, inplace=False):
    """See torch.nn.functional.silu."""
    return _inplace(silu, input) if inplace else input.silu()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """See torch.nn.functional.leaky_relu."""
    if inplace:
        return _inplace(lambda x: leaky_relu(x, negative_slope), input)
    return where(input > 0, input, input * negative_slope)


def _act(fn, input, inplace):
    return _inplace(fn, input) if inplace else fn(input)


def _elu(x, alpha, scale=1.0, input_scale=1.0):
    # exp only sees the non-positive side: exp of a large x would overflow to inf, and the
    # unselected branch's zero gradient would become inf * 0 = nan
    neg = ((x.clamp(max=0.0) * input_scale).exp() - 1) * alpha
    out = where(x > 0, x, neg)
    return out if scale == 1.0 else out * scale


def elu(input, alpha=1.0, inplace=False):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``; at 0 the slope is ``alpha``,
    PyTorch's choice."""
    return _act(lambda x: _elu(x, alpha), input, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al."""
    return _act(lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE), input, inplace)


def celu(input, alpha=1.0, inplace=False):
    """``x`` where ``x > 0``, else ``alpha * (exp(x / alpha) - 1)``."""
    if alpha == 0:
        raise ValueError("celu: alpha must be non-zero (it divides the input)")
    return _act(lambda x: _elu(x, alpha, 1.0, 1.0 / alpha), input, inplace)


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    return _act(lambda x: x * _core.softplus(x).tanh(), input, inplace)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``: 0 up to -3, ``x`` from 3, a parabola between; at the kinks
    the slope is the outer piece's (0 at -3, 1 at 3), as in PyTorch."""
    # the middle piece is the fallback, so that NaN stays NaN
    return _act(lambda x: where(x <= -3, 0.0, where(x >= 3, x, x * (x + 3) / 6)), input, inplace)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``: 0 below -3, 1 above 3, linear between (slope 0 at the kinks)."""
    return _act(lambda x: _Hardtanh.apply(x + 3, 0.0, 6.0) / 6, input, inplace)


class _Hardtanh(Function):
    """``clamp(x, lo, hi)`` whose gradient is 0 at the bounds themselves, as PyTorch's
    (``Tensor.clamp`` passes it there)."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.bounds = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        # written as "outside" so that a NaN input passes its gradient, as in PyTorch
        return where((x <= lo) | (x >= hi), 0.0, g), None, None


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``x`` clamped to ``[min_val, max_val]``; the gradient is 0 outside and at the bounds."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _act(lambda x: _Hardtanh.apply(x, min_val, max_val), input, inplace)


def relu6(input, inplace=False):
    """``hardtanh(x, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    """``value`` where ``x <= threshold``, else ``x`` (a NaN stays NaN, as in PyTorch)."""
    return _act(lambda x: where(x <= threshold, value, x), input, inplace)


def glu(input, dim=-1):
    """Gated linear unit: split ``dim`` into halves ``a, b`` and return ``a * sigmoid(b)``."""
    if input.ndim == 0:
        raise ShapeError("glu: does not support scalars, the halved dimension must be even")
    d = input._dim(dim, "glu")
    n = input.shape[d]
    if n % 2:
        raise ShapeError(f"glu: halving dimension must be even, but dimension {d} of input of shape "
                         f"{tuple(input.shape)} is size {n}")
    return _narrow(input, d, 0, n // 2) * _narrow(input, d, n // 2, n // 2).sigmoid()


def _implicit_dim(name, ndim, stacklevel):
    # PyTorch's legacy rule for dim=None, with its warning
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x, dim)``; ``dtype`` casts the input first."""
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    x = input if dtype is None else input.to(dtype)
    return _core.softmax(-x, dim)


def prelu(input, weight):
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` holds one slope, or one per
    channel (dim 1 of the input)."""
    if weight.ndim > 1:
        raise ShapeError(f"prelu: weight must be a scalar or 1-D, got shape {tuple(weight.shape)}")
    n = weight.numel()
    if n == 1:
        w = weight.reshape(())
    else:
        if input.ndim == 0:
            raise ShapeError(f"prelu: a 0-dim input takes a single slope, got weight of shape "
                             f"{tuple(weight.shape)}")
        channels = input.shape[1] if input.ndim > 1 else 1
        if channels != n:
            raise ShapeError(f"prelu: weight has {n} slopes but the input of shape {tuple(input.shape)} "
                             f"has {channels} channels")
        w = weight.reshape((n,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, w * input)


def hardshrink(input, lambd=0.5):
    """0 where ``-lambd <= x <= lambd``, else ``x``."""
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def softshrink(input, lambd=0.5):
    """0 where ``-lambd <= x <= lambd``, else ``x`` moved ``lambd`` towards 0."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be non-negative, got {lambd}")
    # sign(x) rather than two branches, so that NaN stays NaN
    return where((input >= -lambd) & (input <= lambd), 0.0, input - input.sign() * lambd)
