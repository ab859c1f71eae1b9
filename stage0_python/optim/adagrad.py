"""Adagrad, as ``torch.optim.Adagrad``'s single-tensor path computes it."""
from .. import creation
from .optimizer import Optimizer, addcdiv_, addcmul_, path_options


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011): ``sum += g**2``; ``p -= clr * g / (sqrt(sum) + eps)`` with
    ``clr = lr / (1 + (step - 1) * lr_decay)``. ``sum`` starts at ``initial_accumulator_value``.

    As in PyTorch, the constructor's parameters have state from the start (a state dict
    names them all); a group added later gets its state at its first step. Either way the
    sum starts at the constructor's ``initial_accumulator_value``."""

    _STEP_COUNTED = True  # a bias correction or a decayed rate from the step count

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize,
                        **path_options(foreach=foreach, differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)
        for group in self.param_groups:
            self._states(group, group["params"])

    def _state_keys(self, group):
        return ("step", "sum")

    def _fresh_state(self, p, group):
        return {"step": 0, "sum": creation.full_like(p, self.defaults["initial_accumulator_value"])}

    def _update(self, p, group):
        state = self._states(group, [p])[0]
        state["step"] += 1
        grad = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        addcmul_(state["sum"], grad, grad, value=1)
        std = state["sum"].sqrt().add_(group["eps"])
        addcdiv_(p, grad, std, value=-clr)
