"""NAdam, as ``torch.optim.NAdam``'s single-tensor path computes it."""
import struct

from .optimizer import Optimizer, adam_first_moment, addcdiv_, addcmul_, path_options


def _float32(x):
    """``x`` rounded to float32: PyTorch keeps ``mu_product`` in a float32 0-dim tensor."""
    return struct.unpack("f", struct.pack("f", x))[0]


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat, 2016), whose momentum weight ``mu`` warms up with
    ``momentum_decay``; ``decoupled_weight_decay`` shrinks the parameter directly (NAdamW).

    The state's ``mu_product`` (the product of every ``mu`` so far) is a Python float
    rounded to float32 after each product, as PyTorch's float32 tensor holds it."""

    _STEP_COUNTED = True  # a bias correction or a decayed rate from the step count

    _scalar_state = ("mu_product",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize,
                        **path_options(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _state_keys(self, group):
        return ("step", "mu_product", "exp_avg", "exp_avg_sq")

    def _update(self, p, group):
        state = self._states(group, [p])[0]
        grad = -p.grad if group["maximize"] else p.grad
        beta1, beta2 = group["betas"]
        lr, decay = group["lr"], group["momentum_decay"]
        grad, step = adam_first_moment(p, grad, state, group)
        bias_correction2 = 1 - beta2 ** step
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        # float32 times float32 is exact in a double; one rounding then gives float32's product
        state["mu_product"] = mu_product = _float32(_float32(state["mu_product"]) * _float32(mu))
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(group["eps"])
        addcdiv_(p, grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        mu_product_next = mu_product * mu_next
        weight = (-lr * mu_next) / (1.0 - mu_product_next)
        addcdiv_(p, exp_avg, denom, value=weight)
