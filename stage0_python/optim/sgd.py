"""Stochastic gradient descent with momentum, as ``torch.optim.SGD`` computes it."""
from .optimizer import Optimizer


class SGD(Optimizer):
    """``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on the first step);
    Nesterov uses ``g + momentum * buf``; then ``p -= lr * update``."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
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
