"""Activation layers: thin modules over ``nn.functional``."""
import warnings

from . import functional as F
from . import init
from .module import Module, Parameter, _empty


def _inplace_repr(inplace, sep=""):
    return f"{sep}inplace=True" if inplace else ""


class _InplaceActivation(Module):
    """An activation whose only option is ``inplace``; ``_fn`` names its functional form."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return getattr(F, self._fn)(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class ReLU(_InplaceActivation):
    """See torch.nn.ReLU."""
    _fn = "relu"


class GELU(Module):
    """``approximate='tanh'`` uses the tanh approximation of the Gaussian CDF."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(_InplaceActivation):
    """See torch.nn.SiLU."""
    _fn = "silu"


class Tanh(Module):
    """See torch.nn.Tanh."""
    def forward(self, input):
        return input.tanh()


class Sigmoid(Module):
    """See torch.nn.Sigmoid."""
    def forward(self, input):
        return input.sigmoid()


class Softplus(Module):
    """See torch.nn.Softplus."""
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class LeakyReLU(Module):
    """See torch.nn.LeakyReLU."""
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


def _softmax_dim(name, ndim):
    # PyTorch's legacy rule for dim=None, with its warning
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class _AlongDim(Module):
    """A softmax over ``dim`` (None: PyTorch's legacy choice, with its warning); ``_fn``
    names its functional form."""
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = _softmax_dim(self._fn, input.ndim) if self.dim is None else self.dim
        return getattr(F, self._fn)(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """See torch.nn.Softmax."""
    _fn = "softmax"


class LogSoftmax(_AlongDim):
    """See torch.nn.LogSoftmax."""
    _fn = "log_softmax"


class ELU(Module):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace, ", ")


class CELU(ELU):
    """``x`` where ``x > 0``, else ``alpha * (exp(x / alpha) - 1)``."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class SELU(_InplaceActivation):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    _fn = "selu"


class Mish(_InplaceActivation):
    """``x * tanh(softplus(x))``."""
    _fn = "mish"


class Hardswish(_InplaceActivation):
    """``x * relu6(x + 3) / 6``."""
    _fn = "hardswish"

    def extra_repr(self):
        return ""  # PyTorch's repr leaves out inplace here


class Hardsigmoid(_InplaceActivation):
    """``relu6(x + 3) / 6``."""
    _fn = "hardsigmoid"

    def extra_repr(self):
        return ""  # PyTorch's repr leaves out inplace here


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]`` (``min_value``/``max_value`` are PyTorch's
    deprecated spellings)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_repr(self.inplace, ", ")


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input):
        return F.tanhshrink(input)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, computed without overflow."""

    def forward(self, input):
        return F.logsigmoid(input)


class GLU(Module):
    """Gated linear unit over ``dim``: ``a * sigmoid(b)`` of the two halves."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Threshold(Module):
    """``value`` where ``x <= threshold``, else ``x``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + _inplace_repr(self.inplace, ", ")


class Softmin(_AlongDim):
    """``softmax(-x)`` over ``dim``."""
    _fn = "softmin"


class PReLU(Module):
    """``x`` where ``x > 0``, else ``weight * x``, with a learned slope (one, or one per
    channel: ``num_parameters``), each starting at ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(_empty((num_parameters,), dtype, device))
        self.reset_parameters()

    def reset_parameters(self):
        """Set every slope back to ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Hardshrink(Module):
    """0 where ``|x| <= lambd``, else ``x``."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """0 where ``|x| <= lambd``, else ``x`` moved ``lambd`` towards 0."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)
