"""Adadelta, as ``torch.optim.Adadelta``'s single-tensor path computes it."""
from .optimizer import Optimizer, addcmul_, path_options


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): the step is ``g * sqrt(acc_delta + eps) / sqrt(square_avg + eps)``,
    both running averages with weight ``rho``; ``lr`` scales it."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        **path_options(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _state_keys(self, group):
        return ("step", "square_avg", "acc_delta")

    def _update(self, p, group):
        state = self._states(group, [p])[0]
        state["step"] += 1
        rho, eps = group["rho"], group["eps"]
        grad = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        addcmul_(square_avg.mul_(rho), grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        delta.div_(std).mul_(grad)
        addcmul_(acc_delta.mul_(rho), delta, delta, value=1 - rho)
        p.add_(delta, alpha=-group["lr"])
