"""The containers ``Sequential``, ``ModuleList`` and ``ModuleDict``: modules that hold
other modules, so that the parent registers their parameters."""
import operator
from collections import OrderedDict
from itertools import islice

from ..device import fused
from .module import Module, _addindent


def _index(idx, n, what):
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for {what} of length {n}")
    return i % n


def _fused_activation(first, second):
    """The activation ``second`` when the backend fuses it into ``first``, neither subclassed
    nor hooked, else None: "relu", "gelu" or "gelu_tanh" after a ``Linear``, "relu" or
    "relu6" after a ``BatchNorm1d``/``BatchNorm2d``."""
    from .activation import GELU, ReLU, ReLU6  # (this module is imported by module.py, before them)
    from .linear import Linear
    from .normalization import BatchNorm1d, BatchNorm2d
    if first._forward_hooks or first._forward_pre_hooks or second._forward_hooks or second._forward_pre_hooks:
        return None
    if type(first) is Linear and fused("linear", first.weight._data):
        if type(second) is ReLU:
            return "relu"
        if type(second) is GELU:
            return "gelu" if second.approximate == "none" else "gelu_tanh"
    if type(first) in (BatchNorm1d, BatchNorm2d) and fused("batch_norm"):  # (the layer checks its input)
        if type(second) is ReLU:
            return "relu"
        if type(second) is ReLU6:
            return "relu6"
    return None


class _Numbered(Module):
    """What ``Sequential`` and ``ModuleList`` share: their modules, in order, keyed ``0``,
    ``1``, ... again after every insertion or deletion, as in PyTorch."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def _renumber(self, modules):
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)


class Sequential(_Numbered):
    """Modules called in order, each on the previous one's output. Built from modules
    (named ``0``, ``1``, ...) or from one ``OrderedDict`` of named modules."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, x):
        modules = list(self._modules.values())
        i = 0
        while i < len(modules):
            act = _fused_activation(modules[i], modules[i + 1]) if i + 1 < len(modules) else None
            if act is None:
                x = modules[i](x)
                i += 1
            else:  # a Linear or batch norm then its activation, in one fused call: the same values
                x = modules[i]._forward_then(x, act)
                i += 2
        return x

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self), type(self).__name__)
        return next(islice(self._modules.values(), i, None))

    def __setitem__(self, idx, module):
        i = _index(idx, len(self), type(self).__name__)
        key = list(self._modules)[i]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "Sequential")]]):
            del self._modules[key]
        self._renumber(list(self._modules.values()))

    def append(self, module):
        """See torch.nn.Sequential.append."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """See torch.nn.Sequential.extend."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """See torch.nn.Sequential.insert."""
        items = list(self._modules.values())
        n = len(items)
        if not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index} is out of range for length {n}")
        items.insert(index % (n + 1) if index < 0 else index, module)
        self._renumber(items)
        return self


class ModuleList(_Numbered):
    """A list of modules whose parameters the parent registers."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), type(self).__name__))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self), type(self).__name__)), module)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[_index(idx, len(items), type(self).__name__)]
        self._renumber(items)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def append(self, module):
        """See torch.nn.ModuleList.append."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """See torch.nn.ModuleList.extend."""
        if not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for m in list(modules):
            self.append(m)
        return self

    def insert(self, index, module):
        """See torch.nn.ModuleList.insert."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)

    def __repr__(self):
        # runs of identical modules print once, as "(0-2): 3 x Linear(...)", as in PyTorch
        reprs = [repr(m) for m in self]
        if not reprs:
            return type(self).__name__ + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            body = _addindent(reprs[start], 2)
            if i - start == 1:
                lines.append(f"({start}): {body}")
            else:
                lines.append(f"({start}-{i - 1}): {i - start} x {body}")
            start = i
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList is a container and has no forward; iterate over it")


class ModuleDict(Module):
    """A dict of modules (insertion-ordered) whose parameters the parent registers."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        """See torch.nn.ModuleDict.keys."""
        return self._modules.keys()

    def values(self):
        """See torch.nn.ModuleDict.values."""
        return self._modules.values()

    def items(self):
        """See torch.nn.ModuleDict.items."""
        return self._modules.items()

    def pop(self, key):
        """See torch.nn.ModuleDict.pop."""
        return self._modules.pop(key)

    def clear(self):
        """See torch.nn.ModuleDict.clear."""
        self._modules.clear()

    def update(self, modules):
        """See torch.nn.ModuleDict.update."""
        items = modules.items() if hasattr(modules, "items") else modules
        for pair in items:
            key, m = pair
            self[key] = m

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict is a container and has no forward; index it by key")
