"""RMSprop, as ``torch.optim.RMSprop`` computes it (Hinton's lecture 6e; centered per Graves)."""
from .. import backend as B
from ..device import fused
from .optimizer import Optimizer, lerp_, path_options


class RMSprop(Optimizer):
    """``v = alpha * v + (1 - alpha) * g**2``; divide ``g`` by ``sqrt(v) + eps`` (``centered``
    subtracts the square of the running mean of ``g`` first), optionally through momentum."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                        centered=centered, maximize=maximize,
                        **path_options(capturable=capturable, foreach=foreach, differentiable=differentiable))
        super().__init__(params, defaults)

    def _state_keys(self, group):
        return (("step", "square_avg") + ("momentum_buffer",) * (group["momentum"] > 0)
                + ("grad_avg",) * bool(group["centered"]))

    def _update(self, p, group):
        grad = -p.grad if group["maximize"] else p.grad
        state = self._state_for(p)
        if not state:
            state.update(self._fresh_state(p, group))
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

    def _step_group(self, group, params):
        if not params or not fused("rmsprop", params[0]._data):
            return False
        states = self._states(group, params)

        def each(key, wanted):
            return [s[key]._data for s in states] if wanted else None
        done = B.rmsprop_step(
            [p._data for p in params], [p.grad._data for p in params], each("square_avg", True),
            each("grad_avg", group["centered"]), each("momentum_buffer", group["momentum"] > 0), group["lr"],
            group["alpha"], group["eps"], group["weight_decay"], group["momentum"], group["maximize"])
        if done:
            for s in states:
                s["step"] += 1
        return done
