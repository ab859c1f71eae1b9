"""Matrix products: the kernel where loop order, tiling, SIMD and threads all show."""
from .common import IMPLS, Benchmark, skip_if_slow, tensor


class Matmul(Benchmark):
    params = [IMPLS, [16, 64, 256, 1024]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, flops=2 * n ** 3)
        self.a, self.b = tensor(name, 1, n, n), tensor(name, 2, n, n)

    def time_matmul(self, name, n):
        self.a @ self.b

    def time_matmul_transposed(self, name, n):
        self.a @ self.b.T  # a strided operand: copied or read through strides


class BatchedMatmul(Benchmark):
    """16 independent (n, n) products in one call."""
    params = [IMPLS, [16, 64]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, flops=16 * 2 * n ** 3)
        self.a, self.b = tensor(name, 1, 16, n, n), tensor(name, 2, 16, n, n)

    def time_bmm(self, name, n):
        self.a @ self.b


class MatVec(Benchmark):
    """A matrix-vector product: memory-bound, unlike the square matmul."""
    params = [IMPLS, [256, 2048]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, flops=2 * n * n)
        self.a, self.x = tensor(name, 1, n, n), tensor(name, 2, n)

    def time_matvec(self, name, n):
        self.a @ self.x
