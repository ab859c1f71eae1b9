"""The 2-byte floats: arithmetic, conversions and products in float16 and bfloat16, where
the stage computes in them (stage 3 on: ``LACKS`` does not name them) and PyTorch."""
from .common import IMPLS, Benchmark, lib, skip_if_slow, tensor

HALF_IMPLS = [name for name in IMPLS if name != "numpy"]  # NumPy has no bfloat16


def _half(name, dtype):
    """Skip an implementation that does not compute in ``dtype``."""
    if dtype in getattr(lib(name), "LACKS", ()):
        raise NotImplementedError(f"{name} lacks {dtype}")
    return getattr(lib(name), dtype)


class Arithmetic(Benchmark):
    params = [HALF_IMPLS, ["float16", "bfloat16"], [1_000_000]]
    param_names = ["impl", "dtype", "n"]

    def setup(self, name, dtype, n):
        skip_if_slow(name, elements=4 * n)
        d = _half(name, dtype)
        self.x = tensor(name, 1, n)
        self.a, self.b = self.x.to(d), tensor(name, 2, n).to(d)
        self.d = d

    def time_add(self, name, dtype, n):
        self.a + self.b

    def time_narrow(self, name, dtype, n):
        self.x.to(self.d)

    def time_widen(self, name, dtype, n):
        self.a.float()


class Matmul(Benchmark):
    params = [HALF_IMPLS, ["float16", "bfloat16"], [512]]
    param_names = ["impl", "dtype", "n"]

    def setup(self, name, dtype, n):
        skip_if_slow(name, flops=2 * n ** 3)
        d = _half(name, dtype)
        self.a, self.b = tensor(name, 1, n, n).to(d), tensor(name, 2, n, n).to(d)

    def time_matmul(self, name, dtype, n):
        self.a @ self.b
