"""``Conv1d``, ``Conv2d``, ``Conv3d`` and the transposes ``ConvTranspose1d``/``2d``/``3d``: cross-correlation
with stride, padding, dilation and groups, and its adjoint (``nn.functional`` does the work)."""
import math

from . import functional as F
from . import init
from .functional.helpers import _ntuple
from .module import Module, _weight_and_bias, _with_options

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _nd = 0
    _conv = None
    _transposed = False

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
        self.kernel_size = _ntuple(kernel_size, nd, name, "kernel_size")
        self.stride = _ntuple(stride, nd, name, "stride")
        self.dilation = _ntuple(dilation, nd, name, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid', an int or a tuple, "
                                 f"got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, nd, name, "padding")
        self.output_padding = (0,) * nd
        self.transposed = self._transposed
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:  # the adjoint's weight is conv's read the other way: (in, out/g, k...)
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        _weight_and_bias(self, shape, out_channels if bias else None, dtype, device)

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

    def _check_input(self, input):
        """ValueError unless ``input`` is a batched or unbatched input with ``in_channels``."""
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2) or input.shape[-nd - 1] != self.in_channels:
            raise ValueError(f"{self._get_name()}({self.extra_repr()}): expected a {nd + 2}-D (batched) "
                             f"or {nd + 1}-D (unbatched) input with {self.in_channels} channels, got "
                             f"shape {tuple(input.shape)}")

    def forward(self, input):
        self._check_input(input)
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            x = F.pad(input, self._explicit_padding(), mode=self.padding_mode)
            return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return _with_options(
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}",
            ("padding", self.padding, self.padding != (0,) * len(self.padding)),
            ("dilation", self.dilation, self.dilation != (1,) * len(self.dilation)),
            ("groups", self.groups, self.groups != 1), ("bias", False, self.bias is None),
            ("padding_mode", self.padding_mode, self.padding_mode != "zeros"))


class Conv1d(_ConvNd):
    """Input (N, C_in, L) or (C_in, L); weight (C_out, C_in/groups, k)."""
    _nd = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """Input (N, C_in, H, W) or (C_in, H, W); weight (C_out, C_in/groups, kh, kw)."""
    _nd = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    """Input (N, C_in, D, H, W) or (C_in, D, H, W); weight (C_out, C_in/groups, kd, kh, kw)."""
    _nd = 3
    _conv = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'{name}: only "zeros" padding_mode is supported, got {padding_mode!r}')
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or a tuple, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.output_padding = _ntuple(output_padding, self._nd, name, "output_padding")

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output ``output_size`` (PyTorch accepts sizes
        from the smallest up to stride - 1 more)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        size = list(output_size)[-nd:]
        if len(output_size) not in (nd, nd + 1, nd + 2):
            raise ValueError(f"{self._get_name()}: output_size must have {nd} or {nd + 2} elements, "
                             f"got {tuple(output_size)}")
        pads = []
        for i, want in enumerate(size):
            least = ((input.shape[-nd + i] - 1) * self.stride[i] - 2 * self.padding[i]
                     + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not least <= want < least + self.stride[i]:
                raise ValueError(f"{self._get_name()}: requested an output size of {tuple(size)}, but "
                                 f"valid sizes range from {least} to {least + self.stride[i] - 1} in "
                                 f"dim {i} (for an input of shape {tuple(input.shape)})")
            pads.append(want - least)
        return tuple(pads)

    def forward(self, input, output_size=None):
        self._check_input(input)
        op = self._output_padding(input, output_size)
        return type(self)._conv(input, self.weight, self.bias, self.stride, self.padding, op,
                                self.groups, self.dilation)

    def extra_repr(self):
        return _with_options(super().extra_repr(),
                             ("output_padding", self.output_padding, self.output_padding != (0,) * self._nd))


class ConvTranspose1d(_ConvTransposeNd):
    """See torch.nn.ConvTranspose1d: weight (C_in, C_out/groups, k)."""
    _nd = 1
    _conv = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """See torch.nn.ConvTranspose2d: weight (C_in, C_out/groups, kh, kw)."""
    _nd = 2
    _conv = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """See torch.nn.ConvTranspose3d: weight (C_in, C_out/groups, kd, kh, kw)."""
    _nd = 3
    _conv = staticmethod(F.conv_transpose3d)
