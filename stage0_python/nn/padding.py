"""Padding layers: ``nn.functional.pad`` with the mode and padding fixed at construction."""
from . import functional as F
from .functional.helpers import _ntuple
from .module import Module


class _PadNd(Module):
    _nd = 0
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        # an int pads every side; a tuple is (left, right[, top, bottom]) as F.pad takes it
        self.padding = _ntuple(padding, 2 * self._nd, type(self).__name__, "padding")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}" + (f", value={self.value}" if type(self).__name__.startswith("Const") else "")


class ReflectionPad1d(_PadNd):
    """See torch.nn.ReflectionPad1d."""
    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """See torch.nn.ReflectionPad2d."""
    _nd, _mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    """See torch.nn.ReplicationPad1d."""
    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """See torch.nn.ReplicationPad2d."""
    _nd, _mode = 2, "replicate"


class CircularPad1d(_PadNd):
    """See torch.nn.CircularPad1d."""
    _nd, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """See torch.nn.CircularPad2d."""
    _nd, _mode = 2, "circular"


class ConstantPad1d(_PadNd):
    """See torch.nn.ConstantPad1d."""
    _nd = 1

    def __init__(self, padding, value):
        super().__init__(padding, value)


class ConstantPad2d(_PadNd):
    """See torch.nn.ConstantPad2d."""
    _nd = 2

    def __init__(self, padding, value):
        super().__init__(padding, value)


class ZeroPad1d(_PadNd):
    """See torch.nn.ZeroPad1d."""
    _nd = 1

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(_PadNd):
    """See torch.nn.ZeroPad2d."""
    _nd = 2

    def __init__(self, padding):
        super().__init__(padding, 0.0)
