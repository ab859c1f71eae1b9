"""``Identity`` and ``Linear``."""
import math

from ..shapes import ShapeError
from . import functional as F
from . import init
from .functional.linear_maps import _linear
from .module import Module, _weight_and_bias


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last dimension.

    Weight and bias start as U(-1/sqrt(in_features), 1/sqrt(in_features)), PyTorch's
    default (``kaiming_uniform_`` with ``a=sqrt(5)`` for the weight)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), out_features if bias else None, dtype, device)

    def reset_parameters(self):
        """Draw the parameters again as the constructor does (PyTorch's scheme, from the project's
        generator)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return self._forward_then(input, None)

    def _forward_then(self, input, act):
        """The layer then ``act`` (None, "relu", "gelu" or "gelu_tanh"): ``Sequential`` fuses the pair."""
        if input.ndim == 0 or input.shape[-1] != self.in_features:
            raise ShapeError(f"{self!r}: expected an input whose last dimension is {self.in_features}, "
                             f"got shape {tuple(input.shape)}")
        return _linear(input, self.weight, self.bias, act)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """See torch.nn.Bilinear: ``y = x1 @ weight[o] @ x2 + bias[o]``; weight and bias start
    as U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as PyTorch's."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), out_features if bias else None,
                         dtype, device)

    def reset_parameters(self):
        """Draw the parameters again as the constructor does (PyTorch's scheme, from the project's
        generator)."""
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
