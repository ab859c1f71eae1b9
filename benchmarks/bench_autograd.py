"""Framework overhead: the cost of one tiny op, with and without building a graph, and
of walking a long graph backward."""
from .common import IMPLS, Benchmark, need_autograd, tensor


class Overhead(Benchmark):
    """``a + b`` on 4 elements, 100 times per call (read the time as per 100 ops)."""
    params = [IMPLS, ["no grad", "grad"]]
    param_names = ["impl", "mode"]

    def setup(self, name, mode):
        if mode == "grad":
            need_autograd(name)
        self.a = tensor(name, 1, 4, requires_grad=mode == "grad")
        self.b = tensor(name, 2, 4)

    def time_add_x100(self, name, mode):
        a, b = self.a, self.b
        for _ in range(100):
            a + b


class Backward(Benchmark):
    """A chain of ``n`` multiply-adds on 4 elements, forward and backward."""
    params = [IMPLS, [10, 100, 1000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        need_autograd(name)
        self.x = tensor(name, 1, 4, requires_grad=True)

    def time_chain_forward_backward(self, name, n):
        y = self.x
        for _ in range(n):
            y = y * 1.001 + 0.5
        self.x.grad = None
        y.sum().backward()
