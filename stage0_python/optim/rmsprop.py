"""RMSprop, as ``torch.optim.RMSprop`` computes it (Hinton's lecture 6e; centered per Graves)."""
from .. import creation
from .optimizer import Optimizer, lerp_


class RMSprop(Optimizer):
    """``v = alpha * v + (1 - alpha) * g**2``; divide ``g`` by ``sqrt(v) + eps`` (``centered``
    subtracts the square of the running mean of ``g`` first), optionally through momentum."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 *, maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if alpha < 0.0:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                        centered=centered, maximize=maximize)
        super().__init__(params, defaults)

    def _update(self, p, group):
        grad = -p.grad if group["maximize"] else p.grad
        state = self._state_for(p)
        if not state:
            state["step"] = 0
            state["square_avg"] = creation.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = creation.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = creation.zeros_like(p)
        state["step"] += 1
        alpha, wd = group["alpha"], group["weight_decay"]
        if wd != 0:
            grad = grad.add(p, alpha=wd)
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            lerp_(grad_avg, grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt()  # PyTorch: addcmul(.., value=-1)
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(group["eps"])
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).addcdiv_(grad, avg)
            p.add_(buf, alpha=-group["lr"])
        else:
            p.addcdiv_(grad, avg, value=-group["lr"])
