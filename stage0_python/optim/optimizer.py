"""The optimizer base class: parameter groups, per-parameter state, state dicts.

``state_dict()`` uses PyTorch's layout, so the two can be compared key for key::

    {"state": {0: {"step": 3, "exp_avg": Tensor, ...}, 1: {...}},
     "param_groups": [{"lr": 0.01, ..., "params": [0, 1]}, ...]}

Parameters are numbered in the order they appear across the groups; state is keyed by
that number. A step count is a Python int (PyTorch keeps a 0-dim float tensor; a loaded
tensor step is converted). Updates run under ``no_grad`` and only use in-place tensor
methods, so a parameter that is a view into shared storage is updated in place.

Updates are all or nothing: ``step()`` first checks every group's hyperparameters and
every gradient and state tensor it is about to use, and only then updates the first
parameter; ``load_state_dict`` and ``add_param_group`` check what they are given the
same way before they change anything. A hyperparameter is checked against the kind of
its default as the constructor declares it (a bool, a real number, a tuple of real
numbers) and against PyTorch's constructor checks (``lr >= 0``, ``0 <= beta < 1``, ...);
NaN is refused everywhere.
"""
import functools
import inspect

from .. import creation
from ..autograd import clear_grads, enable_grad, no_grad
from ..tensor import Tensor

# PyTorch's constructor checks: these must be >= 0 (the comparison also refuses NaN),
# and the words its message uses for each
_NON_NEGATIVE = {"lr": "learning rate", "eps": "epsilon value", "weight_decay": "weight_decay value",
                 "momentum": "momentum value", "alpha": "alpha value", "lr_decay": "lr_decay value",
                 "initial_accumulator_value": "initial_accumulator_value value",
                 "momentum_decay": "momentum_decay value"}


def lerp_(start, end, weight):
    """``start += weight * (end - start)`` in place, in PyTorch's two forms (the second
    is exact at ``weight == 1``)."""
    if weight < 0.5:
        start.add_(end - start, alpha=weight)
    else:
        start.copy_(end - (end - start) * (1 - weight))
    return start


def addcmul_(start, t1, t2, value):
    """``start += value * t1 * t2`` in PyTorch's order (``value * t1`` first), so results
    round as its do; ``Tensor.addcmul_`` keeps the order stage 3's fused steps reproduce."""
    return start.add_(t1 * value * t2)


def addcdiv_(start, t1, t2, value):
    """``start += value * t1 / t2`` in PyTorch's order (see ``addcmul_``)."""
    return start.add_(t1 * value / t2)


def adam_first_moment(p, grad, state, group):
    """How a step of the Adam family (Adam, RAdam, NAdam) begins: count it, apply the weight
    decay ``wd`` (``wd * p`` added to the gradient, or, with ``decoupled_weight_decay``, ``p``
    shrunk in place by ``1 - lr * wd``), and move ``exp_avg`` toward the gradient by
    ``1 - beta1``. Returns the gradient, decayed, and the step count."""
    state["step"] += 1
    lr, wd = group["lr"], group["weight_decay"]
    if wd != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        else:
            grad = grad.add(p, alpha=wd)
    lerp_(state["exp_avg"], grad, 1 - group["betas"][0])
    return grad, state["step"]


def path_options(**options):
    """PyTorch's keywords that choose how a step runs (``foreach``, ``fused``, ``capturable``,
    ``differentiable``; each optimizer passes those PyTorch's takes), returned to be kept in
    each group as PyTorch keeps them, so state dicts match key for key. A stage always picks
    its own path: stage 3 and stage 4's devices run a fused step where the backend has one
    (stage 3 a whole group in one call, ``cuda`` in one launch), the others loop over
    parameters, so ``foreach``, ``fused`` and ``capturable`` change nothing here (an optimizer
    whose step depends on its count is refused in a CUDA graph capture either way:
    ``Optimizer._refuse_capture``). A step never records autograd history, so
    ``differentiable=True`` is refused, not ignored."""
    for name in ("foreach", "fused"):
        value = options.get(name)
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{name} must be None or a bool, got {value!r}")
    if options.get("differentiable") is True:
        raise NotImplementedError("differentiable=True: optimizer steps here run under no_grad "
                                  "and cannot be differentiated through")
    if options.get("fused") and options.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    return options


def _is_real(value):
    """A number the tensor methods take as a scalar: a Python int or float (bool is a flag)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@functools.lru_cache(maxsize=None)
def _declared_defaults(cls):
    """The defaults the constructors of ``cls`` declare (the most derived one wins): what a
    hyperparameter's kind is checked against, because ``self.defaults`` holds the caller's
    values, which may be the wrong ones."""
    declared = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):  # a builtin's __init__ (object's) declares nothing
            continue
        declared.update((p.name, p.default) for p in params if p.default is not inspect.Parameter.empty)
    return declared


def _check_kind(value, reference):
    """``None`` if ``value`` is of ``reference``'s kind, else what was expected."""
    if isinstance(reference, bool):
        return None if isinstance(value, bool) else "a bool"
    if _is_real(reference):
        return None if _is_real(value) else "a real number (int or float)"
    if isinstance(reference, tuple):
        ok = isinstance(value, (tuple, list)) and len(value) == len(reference) and all(map(_is_real, value))
        return None if ok else f"a tuple of {len(reference)} real numbers"
    return None  # no rule for other kinds (None, strings): a subclass checks its own


def _check_range(name, value):
    """PyTorch's constructor checks; and nowhere a NaN, or an int too large for a float."""
    if value is None or isinstance(value, str):
        return  # an unset option (foreach=None: PyTorch's "choose for me") or a name
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if name in _NON_NEGATIVE and not 0.0 <= value:
        raise ValueError(f"Invalid {_NON_NEGATIVE[name]}: {value}")
    if name == "rho" and not 0.0 <= value <= 1.0:
        raise ValueError(f"Invalid rho value: {value}")
    if name == "betas":
        for i, beta in enumerate(values):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    for v in values:
        if v != v:
            raise ValueError(f"Invalid {name} value: {value}")
        try:
            float(v)
        except OverflowError:
            raise ValueError(f"Invalid {name} value: an int of {len(str(v))} digits is too large "
                             "for a float") from None


class Optimizer:
    """Base class. Subclasses pass their hyperparameter ``defaults`` and implement ``_update``
    (and ``_state_keys`` when they keep per-parameter state)."""

    # whether a step computes values on the host from its step count (a bias correction, a
    # decayed rate): a CUDA graph would freeze them, so such a step is not captured
    _STEP_COUNTED = False

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self._check_group(self.defaults, "the defaults")
        self.state = {}  # parameter -> dict of its state (PyTorch: defaultdict(dict))
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            f"or dicts, but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group):
        """Add a group (a dict with ``params`` and optional hyperparameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs; use a list")
        params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not getattr(p, "is_leaf", True):
                raise ValueError("can't optimize a non-leaf Tensor")
        group["params"] = params
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self._check_group(group, f"parameter group {len(self.param_groups)}")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's ``.grad``: drop it (default) or fill it with zeros."""
        clear_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        """One update of every parameter that has a gradient (``closure`` re-evaluates the
        loss first, with grad mode on, and its value is returned)."""
        if self._STEP_COUNTED:
            self._refuse_capture()
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        work = self._checked_work()
        with no_grad():
            for group in self.param_groups:
                params = [p for p, g in work if g is group]
                if params and not self._step_group(group, params):
                    for p in params:
                        self._update(p, group)
        return loss

    def _refuse_capture(self):
        """Refuse a step while a CUDA graph is captured, as PyTorch refuses one that is not
        ``capturable``: its replays would repeat the values computed from this step's count.
        (No optimizer here keeps its step count on the device, so ``capturable=True`` does
        not make it capturable either.)"""
        from .. import cuda  # the stage's: stage 0's says nothing is ever captured
        if cuda.is_current_stream_capturing():
            raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of {type(self).__name__}, "
                               f"whose step computes values on the host from its step count (a bias correction, "
                               f"a decayed rate), which every replay would repeat; capture forward and backward, "
                               f"and step the optimizer after each replay (capturable=True is not supported)")

    def _update(self, p, group):
        """The rule: update ``p`` in place from ``p.grad`` and its state."""
        raise NotImplementedError(f"{type(self).__name__} does not define its update rule")

    def _step_group(self, group, params):
        """Update all of ``params`` (those of ``group`` with a gradient) in one call of the
        backend's multi-tensor step, as ``_update`` would one by one, and return True; or
        return False, changing nothing, where the backend has none that fits (then
        ``_update`` runs for each)."""
        return False

    def _states(self, group, params):
        """Each parameter's state, made fresh where it has none yet."""
        states = [self._state_for(p) for p in params]
        for p, state in zip(params, states):
            if not state:
                state.update(self._fresh_state(p, group))
        return states

    def _state_keys(self, group):
        """The state entries ``_update`` reads once a parameter has state, under ``group``'s
        hyperparameters (so that a missing one is refused before any parameter changes)."""
        return ()

    # state entries that are Python floats, not tensors (PyTorch keeps them as 0-dim tensors)
    _scalar_state = ()

    def _fresh_state(self, p, group):
        """A parameter's first state: step 0 and a zero tensor like ``p`` for every other key."""
        return {k: 0 if k == "step" else 1.0 if k in self._scalar_state else creation.zeros_like(p)
                for k in self._state_keys(group)}

    # ------------------------------------------------------------------ checks

    def _checked_work(self):
        """The (parameter, group) pairs ``step`` updates, after checking everything those
        updates read: a step then changes every parameter or, on an error, none."""
        for i, group in enumerate(self.param_groups):
            self._check_group(group, f"parameter group {i}")
        work = []
        index = 0
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._check_grad(index, p)
                    self._check_state(index, p, self.state.get(p), group)
                    work.append((p, group))
                index += 1
        return work

    def _check_group(self, group, where):
        """Every hyperparameter of the optimizer is present in ``group`` and of its
        default's kind and range (``where`` names the group in the message)."""
        declared = _declared_defaults(type(self))
        for name, default in self.defaults.items():
            if name not in group:
                raise ValueError(f"{type(self).__name__}: {where} has no {name!r}")
            value = group[name]
            if name in ("foreach", "fused"):  # declared None: "choose for me", or a bool
                expected = None if value is None or isinstance(value, bool) else "None or a bool"
            else:
                expected = _check_kind(value, declared.get(name, default))
            if expected is not None:
                raise TypeError(f"{type(self).__name__}: {name}={value!r} in {where} is a "
                                f"{type(value).__name__}; expected {expected}")
            try:
                _check_range(name, value)
            except ValueError as e:
                raise ValueError(f"{e} ({type(self).__name__}, {where})") from None

    def _check_grad(self, index, p):
        g = p.grad
        where = f"{type(self).__name__}.step: parameter {index}"
        if not isinstance(g, Tensor):
            raise TypeError(f"{where} has a .grad of type {type(g).__name__}; expected a Tensor")
        if not p.dtype.is_floating_point:
            raise TypeError(f"{where} has dtype {p.dtype.name}; only floating-point parameters "
                            "can be optimized")
        if tuple(g.shape) != tuple(p.shape):
            raise ValueError(f"{where} has shape {tuple(p.shape)} but its gradient has shape "
                             f"{tuple(g.shape)}")
        if g.dtype is not p.dtype:
            raise TypeError(f"{where} has dtype {p.dtype.name} but its gradient has dtype "
                            f"{g.dtype.name}")

    def _check_state(self, index, p, state, group):
        """``state`` holds what ``_update`` reads: a non-negative int ``step`` and
        floating-point tensors of ``p``'s shape."""
        if not state:
            return
        where = f"{type(self).__name__}: the state of parameter {index}"
        missing = [k for k in self._state_keys(group) if k not in state]
        if missing:
            raise ValueError(f"{where} lacks {', '.join(map(repr, missing))}, which its parameter "
                             "group's settings need")
        for key, value in state.items():
            if key == "step":
                if not isinstance(value, int) or isinstance(value, bool):
                    raise TypeError(f"{where} has step={value!r}; expected an int")
                if value < 0:
                    raise ValueError(f"{where} has step={value}; expected a count >= 0")
            elif key in self._scalar_state:
                if not _is_real(value) or value != value:
                    raise TypeError(f"{where} has {key}={value!r}; expected a real number")
            elif not isinstance(value, Tensor):
                raise TypeError(f"{where} has {key!r} of type {type(value).__name__}; expected a Tensor")
            elif tuple(value.shape) != tuple(p.shape):
                raise ValueError(f"{where} has {key!r} of shape {tuple(value.shape)}, but the "
                                 f"parameter has shape {tuple(p.shape)}")
            elif not value.dtype.is_floating_point:
                raise TypeError(f"{where} has {key!r} of dtype {value.dtype.name}; expected a "
                                "floating-point tensor")

    def _state_for(self, p):
        st = self.state.get(p)
        if st is None:
            st = self.state[p] = {}
        return st

    # ------------------------------------------------------------------ state dicts

    def state_dict(self):
        """Hyperparameters and state; tensors in it are the live state (not copies)."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        by_id = {id(p): p for g in self.param_groups for p in g["params"]}
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in by_id and s}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and state saved by ``state_dict`` (ours or PyTorch's layout).

        Groups are matched by position and parameters by order; state tensors are copied and
        cast to the parameter's dtype, so the source dict can be reused. Everything is
        checked as ``step`` would check it before anything is replaced: a refused dict
        leaves the optimizer as it was.
        """
        saved_groups, saved_state = _saved_sections(state_dict)
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(saved_groups)} parameter groups, "
                             f"the optimizer has {len(self.param_groups)}")
        id_map = {}
        new_groups = []
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"loaded state dict's parameter group {i} has {len(saved['params'])} "
                                 f"parameters, the optimizer's has {len(group['params'])}")
            g = {k: v for k, v in saved.items() if k != "params"}
            g["params"] = group["params"]
            for name, default in self.defaults.items():
                g.setdefault(name, default)  # an older dict may lack a newer option
            self._check_group(g, f"loaded parameter group {i}")
            new_groups.append(g)
            id_map.update((pid, (p, g)) for pid, p in zip(saved["params"], group["params"]))
        if len(id_map) != sum(len(g["params"]) for g in new_groups):
            raise ValueError("loaded state dict numbers a parameter twice in its parameter groups")
        new_state = {}
        for key, value in saved_state.items():
            if key not in id_map:
                raise ValueError(f"loaded state dict has state for parameter {key!r}, which is in no "
                                 f"parameter group (known ids: {sorted(id_map)})")
            if not isinstance(value, dict):
                raise TypeError(f"loaded state dict's state for parameter {key!r} is a "
                                f"{type(value).__name__}; expected a dict")
            p, group = id_map[key]
            new_state[p] = {k: _loaded_value(p, k, v, k in self._scalar_state) for k, v in value.items()}
            self._check_state(key, p, new_state[p], group)
        self.state = new_state
        self.param_groups = new_groups


def _saved_sections(state_dict):
    """The ``param_groups`` and ``state`` of a state dict, after checking their layout."""
    if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
        raise ValueError("optimizer state dict must be a dict with keys 'state' and 'param_groups'")
    groups, state = state_dict["param_groups"], state_dict["state"]
    if not isinstance(groups, (list, tuple)) or not all(
            isinstance(g, dict) and isinstance(g.get("params"), (list, tuple)) for g in groups):
        raise ValueError("optimizer state dict's 'param_groups' must be a list of dicts, each with "
                         "a 'params' list")
    if not isinstance(state, dict):
        raise ValueError(f"optimizer state dict's 'state' must be a dict, got {type(state).__name__}")
    return groups, state


def _loaded_value(p, key, value, scalar=False):
    """A loaded state entry as ``_update`` keeps it: a step held in a one-element tensor
    (PyTorch keeps a 0-dim float tensor, of either library) or a whole float becomes an
    int, a tensor becomes a copy in ``p``'s floating dtype on ``p``'s device (as PyTorch's:
    a checkpoint loads on the CPU). Anything else is kept as it is, for ``_check_state`` to
    refuse."""
    if key == "step" or scalar:
        if not isinstance(value, (int, float)) and callable(getattr(value, "item", None)):
            try:
                value = value.item()
            except (ValueError, RuntimeError, TypeError):
                pass  # several elements: refused by _check_state
        if scalar:
            return float(value) if _is_real(value) else value
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if not isinstance(value, Tensor):
        return value
    value = value.detach()
    if value.dtype.is_floating_point and value.dtype is not p.dtype:
        value = value.to(p.dtype)
    return value.to(p.device).clone()
