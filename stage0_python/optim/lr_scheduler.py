"""Learning-rate schedulers with PyTorch's semantics and arithmetic.

Each scheduler computes the next rate from the *current* ``group["lr"]`` (PyTorch's
recursive form), not from a closed formula, so the float values match PyTorch's step by
step, including the rounding that accumulates. ``step(epoch)`` with an explicit epoch uses
the closed form where one exists, as PyTorch does.
"""
import math
import types
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "PolynomialLR",
           "ExponentialLR", "LinearLR", "CosineAnnealingLR", "SequentialLR", "ReduceLROnPlateau",
           "ChainedScheduler", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR"]


def _lrs(optimizer):
    return [group["lr"] for group in optimizer.param_groups]


def _per_group(name, optimizer, value):
    """``value`` for each group: a list or tuple of one per group, or one value for all."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(value)} values, param_groups has {n}.")
        return list(value)
    return [value] * n


def _momentum_groups(optimizer, max_momentums, base_momentums):
    """Start every group at its maximum momentum (SGD's ``momentum`` or the first of Adam's
    ``betas``) and record both bounds in the group, as PyTorch's cyclic schedulers do.
    Returns whether the optimizer's momentum is ``betas[0]``."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    use_beta1 = "betas" in optimizer.defaults
    for top, bottom, group in zip(max_momentums, base_momentums, optimizer.param_groups):
        _set_momentum(group, top, use_beta1)
        group["max_momentum"] = top
        group["base_momentum"] = bottom
    return use_beta1


def _set_momentum(group, value, use_beta1):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class LRScheduler:
    """Base class: ``last_epoch`` counts ``step()`` calls (-1 before the first, which the
    constructor makes), ``get_lr()`` gives the next rates, ``get_last_lr()`` the current ones."""

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                                   "resuming a scheduler with last_epoch >= 0")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        """The learning rates for the current step, one per parameter group: what each scheduler defines.
        See torch.optim.lr_scheduler.LRScheduler.get_lr."""
        raise NotImplementedError

    def get_last_lr(self):
        """The learning rates the last ``step`` set; see torch.optim.lr_scheduler.LRScheduler.get_last_lr."""
        return list(self._last_lr)

    def step(self, epoch=None):
        """Advance one step and set each group's learning rate; see
        torch.optim.lr_scheduler.LRScheduler.step."""
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)

    def state_dict(self):
        """Every attribute except the optimizer (plain numbers and lists: serializable)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restore the state that ``state_dict`` returned; see
        torch.optim.lr_scheduler.LRScheduler.load_state_dict."""
        self.__dict__.update(state_dict)


def _lambdas(lr_lambda, optimizer):
    """One function per parameter group, as ``_per_group`` with PyTorch's message for them."""
    n = len(optimizer.param_groups)
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != n:
            raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
        return list(lr_lambda)
    return [lr_lambda] * n


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``; one function, or one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        # functions are not state; a callable object's attributes are (as in PyTorch)
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else dict(f.__dict__)
                               for f in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state)
        for f, attrs in zip(self.lr_lambdas, lambdas):
            if attrs is not None:
                f.__dict__.update(attrs)


class MultiplicativeLR(LRScheduler):
    """Multiply the rate by ``lr_lambda(epoch)`` every epoch; one function, or one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer)
        for f in self.lr_lambdas:
            if not callable(f):
                raise TypeError(f"lr_lambda should be a function, but got {type(f).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        return [lr * f(self.last_epoch) for f, lr in zip(self.lr_lambdas, _lrs(self.optimizer))]

    state_dict = LambdaLR.state_dict
    load_state_dict = LambdaLR.load_state_dict


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [lr * self.gamma for lr in _lrs(self.optimizer)]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each milestone epoch (a milestone listed twice
    multiplies by ``gamma**2``)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in _lrs(self.optimizer)]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the rate by ``factor`` for the first ``total_iters`` epochs, then restore it."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = _lrs(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _get_closed_form_lr(self):
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the rate as ``(1 - epoch / total_iters) ** power`` down to 0 at ``total_iters``."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        e, T = self.last_epoch, self.total_iters
        factor = ((1.0 - e / T) / (1.0 - (e - 1) / T)) ** self.power
        return [lr * factor for lr in _lrs(self.optimizer)]

    def _get_closed_form_lr(self):
        e, T = self.last_epoch, self.total_iters
        return [base * (1.0 - min(T, e) / T) ** self.power for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        return [lr * self.gamma for lr in _lrs(self.optimizer)]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the rate by a factor going linearly from ``start_factor`` to ``end_factor``
    over ``total_iters`` epochs (a warm-up when ``start_factor < end_factor``)."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or "
                             "equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = _lrs(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [lr * ratio for lr in lrs]

    def _get_closed_form_lr(self):
        delta = self.end_factor - self.start_factor
        return [base * (self.start_factor + delta * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base rate to ``eta_min`` over ``T_max`` epochs (SGDR without
    restarts), in PyTorch's recursive form."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs, e, T, lo = _lrs(self.optimizer), self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return lrs
        if self._step_count == 1 and e > 0:
            return [lo + (base - lo) * (1 + math.cos(e * math.pi / T)) / 2 for base in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [lr + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, lrs)]
        ratio = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
        return [ratio * (lr - lo) + lo for lr in lrs]

    def _get_closed_form_lr(self):
        lo, cos = self.eta_min, math.cos(math.pi * self.last_epoch / self.T_max)
        return [lo + (base - lo) * (1 + cos) / 2 for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Hand over from one scheduler to the next at each milestone, e.g. a ``LinearLR``
    warm-up followed by ``CosineAnnealingLR``."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, sched in enumerate(schedulers):
            if not hasattr(sched, "optimizer"):
                raise TypeError(f"SequentialLR at index {i} should have `optimizer` as its attribute.")
            if isinstance(sched, ReduceLROnPlateau):
                raise ValueError("SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires "
                                 f"additional kwargs to be specified when calling `step`, but got one at "
                                 f"index {i} in the given schedulers sequence.")
            if sched.optimizer is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but "
                                 f"scheduler {type(sched).__name__} at index {i} has another one.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more "
                             "than the number of milestone points, but got number of schedulers "
                             f"{len(schedulers)} and the number of milestones to be equal to "
                             f"{len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # the sub-schedulers' constructors each stepped once: undo that, then start the first
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for sched in self._schedulers:
            sched.last_epoch -= 1
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)  # a scheduler taking over restarts from its epoch 0
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        subs = state.pop("_schedulers")
        self.__dict__.update(state)
        for sched, sub in zip(self._schedulers, subs):
            sched.load_state_dict(sub)


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` once a metric has not improved for ``patience``
    epochs; ``step(metric)`` is called with the metric each epoch."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor = factor
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _lrs(optimizer)
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self):
        """Whether the scheduler is waiting out ``cooldown`` steps after a reduction."""
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        """Whether the metric ``a`` improves on ``best`` by ``mode``, ``threshold`` and ``threshold_mode``."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch=None):
        current = float(metrics.item() if hasattr(metrics, "item") else metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _lrs(self.optimizer)

    def _reduce_lr(self):
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the optimizer "
                                   f"({len(self.optimizer.param_groups)}) differs from when "
                                   f"ReduceLROnPlateau was initialized ({len(self.min_lrs)}); "
                                   "set `min_lrs` to match.")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together, each applying its change to the rate the previous
    one left (e.g. ``ConstantLR`` warm-up times ``ExponentialLR`` decay)."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, sched in enumerate(schedulers):
            if not hasattr(sched, "optimizer"):
                raise TypeError(f"ChainedScheduler at index {i} should have `optimizer` as its attribute.")
            if isinstance(sched, ReduceLROnPlateau):
                raise ValueError("ChainedScheduler does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling `step`, but got "
                                 f"one at index {i} in the given schedulers sequence.")
            if sched.optimizer is not optimizer:
                raise ValueError("ChainedScheduler expects all schedulers to belong to the same optimizer, "
                                 f"but got scheduler {type(sched).__name__} at index {i} with another one.")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = _lrs(optimizer)

    def step(self):
        """Step every scheduler in order."""
        for sched in self._schedulers:
            sched.step()
        self._last_lr = _lrs(self.optimizer)

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


class CyclicLR(LRScheduler):
    """Cycle the rate between ``base_lr`` and ``max_lr`` (Smith, 2017), ``step_size_up``
    steps up and ``step_size_down`` down; ``triangular2`` halves the amplitude each cycle,
    ``exp_range`` scales it by ``gamma**step``. With ``cycle_momentum`` the momentum (or
    Adam's ``beta1``) cycles the opposite way between ``max_momentum`` and ``base_momentum``.
    Meant to be stepped after every batch."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                self.use_beta1 = _momentum_groups(optimizer, self.max_momentums, self.base_momentums)
            else:
                self.use_beta1 = "betas" in optimizer.defaults
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        # the built-in modes fix how the amplitude scales (per cycle or per step)
        if self._scale_fn_custom is None and self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self._scale_fn_custom is None:
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        """The amplitude's scale at cycle (or step) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * scale_factor * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            bounds = zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums)
            for group, bottom, top in bounds:
                _set_momentum(group, top - (top - bottom) * scale_factor * scale, self.use_beta1)
        return lrs

    def state_dict(self):
        """As the base class's; a custom ``scale_fn`` is kept only as its attributes."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        keep = fn is not None and not isinstance(fn, types.FunctionType)
        state["_scale_fn_custom"] = dict(fn.__dict__) if keep else None
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom", None)
        self.__dict__.update(state)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base rate to ``eta_min`` over ``T_0`` epochs, then a restart
    at the base rate, each period ``T_mult`` times longer (SGDR, Loshchilov & Hutter).
    ``step(epoch)`` accepts a fractional epoch, for stepping within an epoch."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lo = self.eta_min
        cos = math.cos(math.pi * self.T_cur / self.T_i)
        return [lo + (base - lo) * (1 + cos) / 2 for base in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or jump to ``epoch`` (which may be fractional)."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                # the period that contains epoch: T_0 * (T_mult**n - 1) / (T_mult - 1) <= epoch
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2017): the rate rises from ``max_lr / div_factor`` to
    ``max_lr`` over ``pct_start`` of ``total_steps``, then anneals (``"cos"`` or
    ``"linear"``) to ``initial_lr / final_div_factor``; ``three_phase`` comes back down to
    the initial rate symmetrically before the final annealing. The momentum (or Adam's
    ``beta1``) moves the opposite way when ``cycle_momentum``. Stepped after every batch."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        up = float(pct_start * self.total_steps) - 1
        # each phase: (last step, group key of its start rate, of its end rate, same for momentum)
        if three_phase:
            self._schedule_phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                 "max_momentum"),
                (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._schedule_phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for top, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            tops = _per_group("max_momentum", optimizer, max_momentum)
            bottoms = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                self.use_beta1 = _momentum_groups(optimizer, tops, bottoms)
            else:
                self.use_beta1 = "betas" in optimizer.defaults
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._schedule_phases):
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        _set_momentum(group, self._anneal(group[m0], group[m1], pct), self.use_beta1)
                    break
                start = end
        return lrs
