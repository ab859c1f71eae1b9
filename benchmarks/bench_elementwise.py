"""Elementwise arithmetic: memory-bound loops over contiguous float32 data."""
from .common import IMPLS, Benchmark, lib, skip_if_slow, tensor


class Binary(Benchmark):
    params = [IMPLS, [1_000, 100_000, 10_000_000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=n)
        self.a, self.b = tensor(name, 1, n), tensor(name, 2, n)

    def time_add(self, name, n):
        self.a + self.b

    def time_mul(self, name, n):
        self.a * self.b

    def time_add_scalar(self, name, n):
        self.a + 1.5


class Broadcast(Benchmark):
    """An (n, n) matrix plus a row: the row is read n times."""
    params = [IMPLS, [100, 1000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=n * n)
        self.a, self.row = tensor(name, 1, n, n), tensor(name, 2, n)

    def time_add_row(self, name, n):
        self.a + self.row


class Unary(Benchmark):
    params = [IMPLS, [1_000, 100_000, 1_000_000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=2 * n)  # transcendental: a few times an add
        self.a = tensor(name, 3, n)
        np_ = lib(name) if name == "numpy" else None
        self.exp = np_.exp if np_ else type(self.a).exp
        self.tanh = np_.tanh if np_ else type(self.a).tanh
        self.relu = (lambda x: np_.maximum(x, 0)) if np_ else type(self.a).relu

    def time_exp(self, name, n):
        self.exp(self.a)

    def time_tanh(self, name, n):
        self.tanh(self.a)

    def time_relu(self, name, n):
        self.relu(self.a)
