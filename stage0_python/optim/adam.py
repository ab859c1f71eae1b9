"""Adam and AdamW, following the order of operations of PyTorch's single-tensor path,
so float32 results agree to rounding."""
from .. import backend as B
from ..device import fused
from .optimizer import Optimizer, adam_first_moment, path_options


class Adam(Optimizer):
    """Adam (Kingma & Ba). ``weight_decay`` adds ``wd * p`` to the gradient (L2), unless
    ``decoupled_weight_decay`` shrinks the parameter directly (AdamW). ``amsgrad`` keeps the
    running maximum of the second moment."""

    _STEP_COUNTED = True  # a bias correction or a decayed rate from the step count

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay,
                        **path_options(foreach=foreach, capturable=capturable, differentiable=differentiable,
                                       fused=fused))
        super().__init__(params, defaults)

    def _state_keys(self, group):
        keys = ("step", "exp_avg", "exp_avg_sq")
        return keys + ("max_exp_avg_sq",) if group["amsgrad"] else keys

    def _update(self, p, group):
        grad = -p.grad if group["maximize"] else p.grad
        state = self._state_for(p)
        if not state:
            state.update(self._fresh_state(p, group))
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        grad, step = adam_first_moment(p, grad, state, group)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        step_size = lr / bias_correction1
        second = exp_avg_sq
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(state["max_exp_avg_sq"].maximum(exp_avg_sq))
            second = state["max_exp_avg_sq"]
        denom = (second.sqrt() / bias_correction2_sqrt).add_(group["eps"])
        p.addcdiv_(exp_avg, denom, value=-step_size)

    def _step_group(self, group, params):
        if not params or not fused("adam", params[0]._data):
            return False
        states = self._states(group, params)
        amsgrad = group["amsgrad"]
        done = B.adam_step(
            [p._data for p in params], [p.grad._data for p in params], [s["exp_avg"]._data for s in states],
            [s["exp_avg_sq"]._data for s in states],
            [s["max_exp_avg_sq"]._data for s in states] if amsgrad else None,
            [s["step"] + 1 for s in states], group["lr"], group["betas"], group["eps"], group["weight_decay"],
            group["decoupled_weight_decay"], group["maximize"])
        if done:
            for s in states:
                s["step"] += 1
        return done


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * wd`` each step."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 *, maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize, foreach=foreach, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True)
