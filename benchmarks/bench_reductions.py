"""Reductions over all elements and along one axis of an (n, n) matrix."""
from .common import IMPLS, Benchmark, dim, skip_if_slow, tensor


class Reduce(Benchmark):
    params = [IMPLS, [100, 1000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=n * n)
        self.a = tensor(name, 1, n, n)
        self.rows, self.cols = dim(name, 1), dim(name, 0)

    def time_sum(self, name, n):
        self.a.sum()

    def time_sum_rows(self, name, n):
        self.a.sum(**self.rows)

    def time_sum_columns(self, name, n):
        self.a.sum(**self.cols)

    def time_mean_rows(self, name, n):
        self.a.mean(**self.rows)

    def time_argmax_rows(self, name, n):
        self.a.argmax(**self.rows)
