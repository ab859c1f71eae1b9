"""Adamax, as ``torch.optim.Adamax``'s single-tensor path computes it."""
from .optimizer import Optimizer, addcdiv_, lerp_, path_options


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7): Adam with the infinity norm. ``exp_inf =
    max(beta2 * exp_inf, |g| + eps)``; ``p -= lr / (1 - beta1**step) * exp_avg / exp_inf``."""

    _STEP_COUNTED = True  # a bias correction or a decayed rate from the step count

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        **path_options(foreach=foreach, differentiable=differentiable, capturable=capturable))
        super().__init__(params, defaults)

    def _state_keys(self, group):
        return ("step", "exp_avg", "exp_inf")

    def _update(self, p, group):
        state = self._states(group, [p])[0]
        grad = -p.grad if group["maximize"] else p.grad
        beta1, beta2 = group["betas"]
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_inf.mul_(beta2).maximum_(grad.abs().add_(group["eps"]))
        clr = group["lr"] / (1 - beta1 ** state["step"])
        addcdiv_(p, exp_avg, exp_inf, value=-clr)
