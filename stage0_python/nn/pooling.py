"""Pooling layers over ``nn.functional``'s pools."""
from . import functional as F
from .functional.helpers import _ntuple
from .module import Module


def _check(layer, input, nd):
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{layer._get_name()}({layer.extra_repr()}): expected a {nd + 2}-D (batched) "
                         f"or {nd + 1}-D (unbatched) input, got shape {tuple(input.shape)}")


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """See torch.nn.MaxPool1d."""
    def forward(self, input):
        _check(self, input, 1)
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """See torch.nn.MaxPool2d."""
    def forward(self, input):
        _check(self, input, 2)
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """See torch.nn.MaxPool3d (``F.max_pool3d``'s limits)."""
    def forward(self, input):
        _check(self, input, 3)
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """See torch.nn.AvgPool1d."""
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        # stored as 1-tuples, as PyTorch does (its repr shows them)
        self.kernel_size = _ntuple(kernel_size, 1, "AvgPool1d", "kernel_size")
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1, "AvgPool1d", "stride")
        self.padding = _ntuple(padding, 1, "AvgPool1d", "padding")
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        _check(self, input, 1)
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """See torch.nn.AvgPool2d."""
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        _check(self, input, 2)
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """See torch.nn.AvgPool3d."""
    def forward(self, input):
        _check(self, input, 3)
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptivePoolNd(Module):
    """Pooling of ``_nd`` dims to a fixed ``output_size``."""
    _nd = 0

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    def forward(self, input):
        _check(self, input, self._nd)
        fn = F.adaptive_avg_pool1d if self._nd == 1 else F.adaptive_avg_pool2d
        return fn(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed ``output_size`` (an int, or a pair whose ``None``
    entries keep the input's size)."""
    _nd = 2


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """See torch.nn.AdaptiveAvgPool1d."""
    _nd = 1


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        _check(self, input, self._nd)
        fn = F.adaptive_max_pool1d if self._nd == 1 else F.adaptive_max_pool2d
        return fn(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """See torch.nn.AdaptiveMaxPool1d."""
    _nd = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """See torch.nn.AdaptiveMaxPool2d (``None`` in output_size keeps that input size)."""
    _nd = 2


class _MaxUnpoolNd(Module):
    _nd = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        name, nd = type(self).__name__, self._nd
        self.kernel_size = _ntuple(kernel_size, nd, name, "kernel_size")
        self.stride = _ntuple(stride if stride is not None else kernel_size, nd, name, "stride")
        self.padding = _ntuple(padding, nd, name, "padding")

    def forward(self, input, indices, output_size=None):
        fn = F.max_unpool1d if self._nd == 1 else F.max_unpool2d
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """See torch.nn.MaxUnpool1d: places values at MaxPool1d's indices, zeros elsewhere."""
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """See torch.nn.MaxUnpool2d: places values at MaxPool2d's indices, zeros elsewhere."""
    _nd = 2
