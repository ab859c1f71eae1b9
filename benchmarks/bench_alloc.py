"""Allocation: creating tensors, temporaries in expressions, and the buffer pool of the
stages that have one (``sg.memory``)."""
from .common import IMPLS, Benchmark, impl, lib, memo, skip_if_slow, tensor, workloads


class Allocate(Benchmark):
    params = [IMPLS, [1_000, 100_000, 1_000_000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=4 * n)
        self.zeros = lib(name).zeros
        self.a, self.b, self.c = (tensor(name, s, n) for s in (1, 2, 3))

    def time_zeros(self, name, n):
        self.zeros(n)

    def time_temporaries(self, name, n):
        (self.a + self.b) * self.c - self.a  # three temporaries, freed at once

    def peakmem_temporaries(self, name, n):
        for _ in range(5):
            (self.a + self.b) * self.c - self.a


def _memory(name):
    memory = getattr(lib(name), "memory", None) if impl(name).kind == "stage" else None
    if memory is None:
        raise NotImplementedError(f"{name} has no buffer pool (sg.memory)")
    return memory


class Pool(Benchmark):
    """The buffer pool on and off, for the stages with ``sg.memory``."""
    params = [IMPLS, ["on", "off"]]
    param_names = ["impl", "pool"]

    def setup(self, name, pool):
        self.memory = _memory(name)
        self.memory.set_pool_enabled(pool == "on")
        self.a, self.b, self.c = (tensor(name, s, 10_000) for s in (1, 2, 3))

    def teardown(self, name, pool):
        if getattr(self, "memory", None) is not None:
            self.memory.set_pool_enabled(True)

    def _churn(self, times):
        for _ in range(times):
            ((self.a + self.b) * self.c).sum()

    def time_temporaries_x20(self, name, pool):
        self._churn(20)

    def track_hit_rate_temporaries(self, name, pool):
        """The fraction of allocations the pool serves in a loop of expressions."""
        self._churn(2)  # fill the pool
        self.memory.reset_stats()
        self._churn(20)
        s = self.memory.stats()
        return s["hits"] / max(1, s["allocations"])

    track_hit_rate_temporaries.unit = "fraction"


class PoolTraining(Benchmark):
    """The pool during MLP training (batch 64), after a first step has filled it."""
    params = [IMPLS]
    param_names = ["impl"]

    def setup(self, name):
        self.memory = _memory(name)
        skip_if_slow(name, flops=workloads.mlp_flops(workloads.MLP_BATCH))
        self.step = memo(("mlp", name, workloads.MLP_BATCH),
                         lambda: workloads.build_mlp_step(impl(name), workloads.MLP_BATCH))
        self.step()

    def _measured_step(self):
        self.memory.reset_stats()
        self.step()
        return self.memory.stats()

    def track_hit_rate(self, name):
        s = self._measured_step()
        return s["hits"] / max(1, s["allocations"])

    track_hit_rate.unit = "fraction"

    def track_peak_bytes_in_use(self, name):
        return self._measured_step()["peak_bytes_in_use"]

    track_peak_bytes_in_use.unit = "bytes"
