"""A tiny two-layer model built from tensor ops, identical in a stage and in PyTorch,
for driving optimizers side by side."""
import numpy as np

from .oracle import need_torch

SHAPES = {"W1": (4, 5), "b1": (5,), "W2": (5, 3), "b2": (3,)}


def initial(dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    params = {k: (rng.standard_normal(s) * 0.5).astype(dtype) for k, s in SHAPES.items()}
    x = rng.standard_normal((8, 4)).astype(dtype)
    y = rng.standard_normal((8, 3)).astype(dtype)
    return params, x, y


def stage_tensor(sg, arr, requires_grad=False):
    arr = np.asarray(arr)
    return sg.tensor(arr.tolist(), dtype=getattr(sg, str(arr.dtype)), requires_grad=requires_grad)


class Pair:
    """The same parameters and data as stage tensors (``p``) and PyTorch tensors (``tp``)."""

    def __init__(self, sg, dtype="float32", seed=0):
        torch = need_torch()
        params, x, y = initial(dtype, seed)
        self.sg, self.torch = sg, torch
        self.names = list(params)
        self.p = [stage_tensor(sg, params[k], requires_grad=True) for k in self.names]
        self.tp = [torch.tensor(params[k], requires_grad=True) for k in self.names]
        self.x, self.y = stage_tensor(sg, x), stage_tensor(sg, y)
        self.tx, self.ty = torch.tensor(x), torch.tensor(y)

    @staticmethod
    def _loss(params, x, y):
        W1, b1, W2, b2 = params
        h = (x.matmul(W1) + b1).tanh()
        return ((h.matmul(W2) + b2 - y) ** 2).mean()

    def loss(self):
        return self._loss(self.p, self.x, self.y)

    def tloss(self):
        return self._loss(self.tp, self.tx, self.ty)

    def backward(self):
        self.loss().backward()
        self.tloss().backward()
