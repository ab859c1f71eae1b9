"""Stochastic gradient descent with momentum, as ``torch.optim.SGD`` computes it."""
from .. import backend as B
from .. import creation
from ..device import fused
from .optimizer import Optimizer, path_options


class SGD(Optimizer):
    """``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on the first step);
    Nesterov uses ``g + momentum * buf``; then ``p -= lr * update``."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize,
                        **path_options(foreach=foreach, differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)  # checks the kinds and ranges first
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _update(self, p, group):
        grad = -p.grad if group["maximize"] else p.grad
        wd, momentum = group["weight_decay"], group["momentum"]
        if wd != 0:
            grad = grad.add(p, alpha=wd)
        if momentum != 0:
            state = self._state_for(p)
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(grad, alpha=-group["lr"])

    def _step_group(self, group, params):
        if not params or not fused("sgd", params[0]._data):
            return False
        bufs = first = None
        if group["momentum"] != 0:
            states = [self._state_for(p) for p in params]
            first = [s.get("momentum_buffer") is None for s in states]
            # a new buffer is written whole by the step (it starts as the gradient)
            bufs = [creation.empty_like(p) if f else s["momentum_buffer"] for p, s, f in zip(params, states, first)]
        done = B.sgd_step(
            [p._data for p in params], [p.grad._data for p in params], bufs and [b._data for b in bufs], first,
            group["lr"], group["momentum"], group["dampening"], group["weight_decay"], group["nesterov"],
            group["maximize"])
        if done and bufs:
            for s, b in zip(states, bufs):
                s["momentum_buffer"] = b
        return done
