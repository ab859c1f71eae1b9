"""The MLP training step of the journey report (784-128-10, ReLU, cross-entropy, AdamW)
over batch sizes: per-sample cost against fixed per-step overhead."""
from .common import IMPLS, Benchmark, impl, memo, skip_if_slow, workloads


class TrainStep(Benchmark):
    params = [IMPLS, [16, 64, 256]]
    param_names = ["impl", "batch"]

    def setup(self, name, batch):
        skip_if_slow(name, flops=workloads.mlp_flops(batch))
        self.step = memo(("mlp", name, batch), lambda: workloads.build_mlp_step(impl(name), batch))

    def time_train_step(self, name, batch):
        self.step()

    def peakmem_train_step(self, name, batch):
        self.step()
