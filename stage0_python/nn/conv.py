"""``Conv1d`` and ``Conv2d``: cross-correlation with stride, padding, dilation and
groups (``nn.functional.conv1d``/``conv2d`` do the work)."""
import math

from . import functional as F
from . import init
from .module import Module, Parameter, _empty

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _nd = 0
    _conv = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        name, nd = type(self).__name__, self._nd
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._ntuple(kernel_size, nd, name, "kernel_size")
        self.stride = F._ntuple(stride, nd, name, "stride")
        self.dilation = F._ntuple(dilation, nd, name, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid', an int or a tuple, "
                                 f"got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = F._ntuple(padding, nd, name, "padding")
        self.output_padding = (0,) * nd
        self.transposed = False
        self.groups = groups
        self.padding_mode = padding_mode
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(_empty(shape, dtype, device))
        if bias:
            self.bias = Parameter(_empty((out_channels,), dtype, device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _explicit_padding(self):
        """(last_left, last_right, ...) for F.pad when padding_mode is not 'zeros'."""
        pads = []
        for i in reversed(range(self._nd)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                pads += [total // 2, total - total // 2]
            elif self.padding == "valid":
                pads += [0, 0]
            else:
                pads += [self.padding[i], self.padding[i]]
        return pads

    def forward(self, input):
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2) or input.shape[-nd - 1] != self.in_channels:
            raise ValueError(f"{self._get_name()}({self.extra_repr()}): expected a {nd + 2}-D (batched) "
                             f"or {nd + 1}-D (unbatched) input with {self.in_channels} channels, got "
                             f"shape {tuple(input.shape)}")
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            x = F.pad(input, self._explicit_padding(), mode=self.padding_mode)
            return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """Input (N, C_in, L) or (C_in, L); weight (C_out, C_in/groups, k)."""
    _nd = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """Input (N, C_in, H, W) or (C_in, H, W); weight (C_out, C_in/groups, kh, kw)."""
    _nd = 2
    _conv = staticmethod(F.conv2d)
