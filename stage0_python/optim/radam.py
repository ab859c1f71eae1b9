"""RAdam, as ``torch.optim.RAdam``'s single-tensor path computes it."""
from .optimizer import Optimizer, adam_first_moment, addcmul_, path_options


class RAdam(Optimizer):
    """Rectified Adam (Liu et al., 2019): plain momentum SGD while the variance of the
    adaptive rate is intractable (``rho_t <= 5``), Adam scaled by the rectification term
    after; ``decoupled_weight_decay`` shrinks the parameter directly (RAdamW)."""

    _STEP_COUNTED = True  # a bias correction or a decayed rate from the step count

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        **path_options(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _state_keys(self, group):
        return ("step", "exp_avg", "exp_avg_sq")

    def _update(self, p, group):
        state = self._states(group, [p])[0]
        grad = -p.grad if group["maximize"] else p.grad
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        grad, step = adam_first_moment(p, grad, state, group)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(group["eps"])
            p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
        else:
            p.add_(corrected * lr, alpha=-1.0)
