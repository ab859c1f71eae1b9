"""The optimizer base class: parameter groups, per-parameter state, state dicts.

``state_dict()`` uses PyTorch's layout, so the two can be compared key for key::

    {"state": {0: {"step": 3, "exp_avg": Tensor, ...}, 1: {...}},
     "param_groups": [{"lr": 0.01, ..., "params": [0, 1]}, ...]}

Parameters are numbered in the order they appear across the groups; state is keyed by
that number. A step count is a Python int (PyTorch keeps a 0-dim float tensor; a loaded
tensor step is converted). Updates run under ``no_grad`` and only use in-place tensor
methods, so a parameter that is a view into shared storage is updated in place.
"""
from ..autograd import enable_grad, no_grad
from ..tensor import Tensor


def lerp_(start, end, weight):
    """``start += weight * (end - start)`` in place, in PyTorch's two forms (the second
    is exact at ``weight == 1``)."""
    if weight < 0.5:
        start.add_(end - start, alpha=weight)
    else:
        start.copy_(end - (end - start) * (1 - weight))
    return start


class Optimizer:
    """Base class. Subclasses pass their hyperparameter ``defaults`` and implement ``step``."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
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
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's ``.grad``: drop it (default) or fill it with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach()
                    p.grad.zero_()

    def step(self, closure=None):
        """One update of every parameter that has a gradient (``closure`` re-evaluates the
        loss first, with grad mode on, and its value is returned)."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, group)
        return loss

    def _update(self, p, group):
        """The rule: update ``p`` in place from ``p.grad`` and its state."""
        raise NotImplementedError(f"{type(self).__name__} does not define its update rule")

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
        cast to the parameter's dtype, so the source dict can be reused.
        """
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("optimizer state dict must be a dict with keys 'state' and 'param_groups'")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(saved_groups)} parameter groups, "
                             f"the optimizer has {len(self.param_groups)}")
        id_map = {}
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"loaded state dict's parameter group {i} has {len(saved['params'])} "
                                 f"parameters, the optimizer's has {len(group['params'])}")
            id_map.update(zip(saved["params"], group["params"]))
        new_state = {}
        for key, value in state_dict["state"].items():
            if key not in id_map:
                raise ValueError(f"loaded state dict has state for parameter {key!r}, which is in no "
                                 f"parameter group (known ids: {sorted(id_map)})")
            p = id_map[key]
            new_state[p] = {k: self._load_value(p, key, k, v) for k, v in value.items()}
        self.state = new_state
        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            g = {k: v for k, v in saved.items() if k != "params"}
            g["params"] = group["params"]
            for name, default in self.defaults.items():
                g.setdefault(name, default)  # an older dict may lack a newer option
            new_groups.append(g)
        self.param_groups = new_groups

    @staticmethod
    def _load_value(p, pid, key, value):
        if key == "step":
            return int(value.item()) if isinstance(value, Tensor) else int(value)
        if not isinstance(value, Tensor):
            return value
        if value.ndim and tuple(value.shape) != tuple(p.shape):
            raise ValueError(f"loaded state {key!r} for parameter {pid} has shape {tuple(value.shape)}, "
                             f"but the parameter has shape {tuple(p.shape)}")
        value = value.detach().clone()
        if value.dtype.is_floating_point and value.dtype is not p.dtype:
            value = value.to(p.dtype)
        return value
