"""The convolution layer of the journey report (8 to 16 channels, 3x3, padding 1, 28x28),
forward alone and forward plus backward."""
from .common import IMPLS, Benchmark, impl, memo, skip_if_slow, workloads


class Conv2d(Benchmark):
    params = [IMPLS, [1, 8]]
    param_names = ["impl", "batch"]

    def setup(self, name, batch):
        skip_if_slow(name, flops=workloads.conv_flops(batch))
        m = impl(name)
        self.forward = memo(("conv", name, batch, False), lambda: workloads.build_conv(m, batch, False))
        self.both = memo(("conv", name, batch, True), lambda: workloads.build_conv(m, batch, True))

    def time_forward(self, name, batch):
        self.forward()

    def time_forward_backward(self, name, batch):
        self.both()
