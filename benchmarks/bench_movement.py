"""Movement and views of an (n, n) matrix: O(1) where a stage has strided views, a full
copy where it has not."""
from .common import IMPLS, Benchmark, lib, skip_if_slow, tensor


class Views(Benchmark):
    params = [IMPLS, [100, 1000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=n * n)
        self.a, self.row = tensor(name, 1, n, n), tensor(name, 2, 1, n)
        m = lib(name)
        if name == "numpy":
            self.expand = lambda: m.broadcast_to(self.row, (n, n))
            self.contiguous = lambda: m.ascontiguousarray(self.a.T)
            self.cat = lambda: m.concatenate([self.a, self.a], axis=0)
        else:
            self.expand = lambda: self.row.expand(n, n)
            self.contiguous = lambda: self.a.T.contiguous()
            self.cat = lambda: m.cat([self.a, self.a], dim=0)

    def time_transpose(self, name, n):
        self.a.T

    def time_expand(self, name, n):
        self.expand()

    def time_slice(self, name, n):
        self.a[::2, 1:n // 2]

    def time_reshape(self, name, n):
        self.a.reshape(n * n)

    def time_contiguous_of_transpose(self, name, n):
        self.contiguous()  # a real copy everywhere: the price views defer

    def time_cat(self, name, n):
        self.cat()


class ExpandMemory(Benchmark):
    """Peak memory of expanding a row to (n, n): nothing for a view, n*n floats for a copy."""
    params = [IMPLS, [1000, 3000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=n * n)
        self.row = tensor(name, 2, 1, n)
        m = lib(name)
        self.expand = (lambda: m.broadcast_to(self.row, (n, n))) if name == "numpy" else (
            lambda: self.row.expand(n, n))

    def peakmem_expand(self, name, n):
        self.keep = self.expand()
