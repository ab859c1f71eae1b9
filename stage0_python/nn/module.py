"""``Module`` and ``Parameter``: the bookkeeping every layer inherits, with PyTorch's
names and rules (the containers are in ``container.py``).

Attribute assignment sorts values into three ordered registries: a ``Parameter`` goes to
``_parameters``, a ``Module`` to ``_modules``, and a tensor given to ``register_buffer``
to ``_buffers``. Everything else (``parameters()``, ``state_dict()``, ``train()``,
``to()``, ``repr``) walks those registries.
"""
from collections import OrderedDict, namedtuple

from ..autograd import clear_grads, no_grad
from ..creation import empty
from ..dtypes import BY_NAME, DType
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: a leaf that requires grad by default and that
    ``Module.__setattr__`` registers. It shares ``data``'s storage, as in PyTorch."""
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}")
        p = Tensor.__new__(cls)
        p._init(data.detach()._data, bool(requires_grad))  # a fresh leaf on data's storage
        return p

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            p.grad = self.grad.detach().clone()
        memo[id(self)] = p
        return p


def _empty(shape, dtype=None, device=None):
    """A zero-filled tensor for a layer to initialise (the layers' ``dtype=``/``device=``)."""
    t = empty(*shape, dtype=dtype)
    return t if device is None else t.to(device=device)


def _with_options(head, *options):
    """A layer's ``extra_repr``: ``head``, then ``, name=value`` for each ``(name, value,
    shown)`` of ``options`` that is ``shown`` (PyTorch shows an option that is not its default)."""
    return head + "".join(f", {name}={value}" for name, value, shown in options if shown)


def _weight_and_bias(layer, weight_shape, bias_size, dtype, device):
    """Give ``layer`` its ``weight`` of ``weight_shape`` and its ``bias`` of ``bias_size``
    elements (None: a ``bias`` parameter that is None), then draw them (``reset_parameters``)."""
    layer.weight = Parameter(_empty(weight_shape, dtype, device))
    if bias_size is not None:
        layer.bias = Parameter(_empty((bias_size,), dtype, device))
    else:
        layer.register_parameter("bias", None)
    layer.reset_parameters()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictError(RuntimeError, ValueError):
    """A state dict that does not fit the module. PyTorch raises ``RuntimeError`` here;
    it is also a ``ValueError``, the project's error for mismatched shapes."""


def _quoted(keys):
    return ", ".join(f'"{k}"' for k in keys)


def _loadable(key, t, value, errors):
    """``value`` converted to ``t``'s dtype, ready to be copied into ``t``; or ``None``
    after appending to ``errors`` why it cannot be (PyTorch's wording)."""
    if not isinstance(value, Tensor):
        errors.append(f'While copying the parameter named "{key}", expected a Tensor from '
                      f"checkpoint but received {type(value).__name__}")
        return None
    if tuple(value.shape) != tuple(t.shape):
        errors.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} "
                      f"from checkpoint, the shape in current model is {tuple(t.shape)}.")
        return None
    try:
        # the cast is where a value can still fail (nan into an integer buffer): do it
        # now, while nothing has been copied yet
        return value.detach().to(t.dtype)
    except (ValueError, TypeError, OverflowError) as e:
        errors.append(f'While copying the parameter named "{key}", whose dimensions in the model '
                      f"are {tuple(t.shape)} and whose dimensions in the checkpoint are "
                      f"{tuple(value.shape)}, an exception occurred : {e} (checkpoint dtype "
                      f"{value.dtype.name}, model dtype {t.dtype.name}).")
        return None


def _addindent(s, spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of every layer: subclass, create parameters and submodules in
    ``__init__`` (after calling ``super().__init__()``) and implement ``forward``."""

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments "
                            f"{args} {kwargs}")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        """The computation of the module, which subclasses define; call the module, not this. See
        torch.nn.Module.forward."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    # ------------------------------------------------------------ registration

    def _check_name(self, name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')

    def _check_entry(self, store, kind, name, value, cls):
        """PyTorch's checks of ``value`` (None or a ``cls``) registered as the ``kind`` ``name``
        in the registry ``store`` (``_parameters``, ``_buffers``)."""
        if store not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        self._check_name(name, kind)
        if hasattr(self, name) and name not in self.__dict__[store]:
            raise KeyError(f"attribute '{name}' already exists")
        if value is not None and not isinstance(value, cls):
            raise TypeError(f"cannot assign '{type(value).__name__}' object to {kind} '{name}' "
                            f"({cls.__name__} or None required)")

    def register_parameter(self, name, param):
        """See torch.nn.Module.register_parameter."""
        self._check_entry("_parameters", "parameter", name, param, Parameter)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that is module state but not a parameter (running statistics);
        ``persistent=False`` keeps it out of ``state_dict``."""
        self._check_entry("_buffers", "buffer", name, tensor, Tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Register ``module`` as the child ``name``; see torch.nn.Module.add_module. ``register_module``
        is the same."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")

        def forget(keep):
            # the registry assigned to keeps the name where it stands (state_dict order, as PyTorch)
            for registry in (d, params, modules, buffers):
                if registry is not None and registry is not keep:
                    registry.pop(name, None)

        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            forget(params)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            forget(modules)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(Module or None expected)")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        # only reached when normal lookup fails: look in the registries
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            r = d.get(registry)
            if r is not None and name in r:
                return r[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for registry in ("_parameters", "_buffers", "_modules"):
            r = self.__dict__.get(registry)
            if r is not None and name in r:
                del r[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(super().__dir__())
        for registry in ("_parameters", "_buffers", "_modules"):
            keys.update(self.__dict__.get(registry, ()))
        return sorted(keys)

    def register_forward_pre_hook(self, hook):
        """``hook(module, args)`` runs before ``forward``; it may return new args."""
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """``hook(module, args, output)`` runs after ``forward``; it may return a new output."""
        return _HookHandle(self._forward_hooks, hook)

    # ------------------------------------------------------------ traversal

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """See torch.nn.Module.named_modules."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """See torch.nn.Module.modules."""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """See torch.nn.Module.named_children."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """See torch.nn.Module.children."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, registry, prefix, recurse, remove_duplicate):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, m in mods:
            for name, t in m.__dict__[registry].items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield mod_prefix + ("." if mod_prefix else "") + name, t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, parameter) pairs; a parameter shared by two modules appears once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """See torch.nn.Module.parameters."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """See torch.nn.Module.named_buffers."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """See torch.nn.Module.buffers."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        """See torch.nn.Module.get_submodule."""
        mod = self
        for item in target.split(".") if target else ():
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{item}` "
                                     f"(looking up '{target}')")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target):
        """See torch.nn.Module.get_parameter."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first) and on ``self``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes and gradients

    def train(self, mode=True):
        """See torch.nn.Module.train."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {type(mode).__name__}")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        """See torch.nn.Module.eval."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on every parameter; see ``torch.nn.Module.requires_grad_``."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """See torch.nn.Module.zero_grad."""
        clear_grads(self.parameters(), set_to_none)

    # ------------------------------------------------------------ state

    def _state_items(self):
        """Every (key, tensor) that ``state_dict`` holds, shared tensors under every name."""
        for prefix, m in self.named_modules(remove_duplicate=False):
            pre = prefix + "." if prefix else ""
            for name, p in m._parameters.items():
                if p is not None:
                    yield pre + name, p
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent_buffers_set:
                    yield pre + name, b

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """An ordered dict of parameters and persistent buffers, keyed by dotted name.
        Tensors are detached but share storage with the module's."""
        dest = OrderedDict() if destination is None else destination
        for key, t in self._state_items():
            dest[prefix + key] = t if keep_vars else t.detach()
        return dest

    def load_state_dict(self, state_dict, strict=True):
        """Copy ``state_dict`` into the module's tensors. Keys must match exactly when
        ``strict``, and every value must be a tensor of the right shape that converts to
        the target's dtype. Everything is checked (and converted) before the first copy,
        so on any error the module is left exactly as it was."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        own = OrderedDict(self._state_items())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if unexpected:
                errors.append(f"Unexpected key(s) in state_dict: {_quoted(unexpected)}. ")
            if missing:
                errors.append(f"Missing key(s) in state_dict: {_quoted(missing)}. ")
        sources = {}
        for key, t in own.items():
            if key in state_dict:
                source = _loadable(key, t, state_dict[key], errors)
                if source is not None:
                    sources[key] = source
        if errors:
            raise StateDictError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                                 + "\n\t".join(errors))
        with no_grad():
            for key, t in own.items():
                if key in sources:
                    t.copy_(sources[key])
        return _IncompatibleKeys(missing, unexpected)

    def _apply(self, fn):
        """Replace every parameter's and buffer's contents with ``fn(tensor)``, keeping the
        tensor objects (so optimizers holding them stay valid)."""
        for m in self.children():
            m._apply(fn)
        with no_grad():
            for registry in (self._parameters, self._buffers):
                for name, t in registry.items():
                    if t is None:
                        continue
                    new = fn(t)
                    if new is t:
                        continue
                    t.data = new
                    if t.grad is not None:
                        t.grad = fn(t.grad)
        return self

    def to(self, *args, **kwargs):
        """``to(dtype)`` casts floating-point parameters and buffers (integer buffers such
        as ``num_batches_tracked`` keep their type); other arguments go to ``Tensor.to``."""
        dtype, device = kwargs.get("dtype"), kwargs.get("device")
        for a in args:
            if isinstance(a, DType) or (isinstance(a, str) and a in BY_NAME):
                dtype = a
            else:
                device = a
        if isinstance(dtype, str):
            dtype = BY_NAME[dtype]
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            if t.dtype.is_floating_point and dtype is not None:
                t = t.to(dtype=dtype)
            return t if device is None else t.to(device=device)
        return self._apply(convert)

    def float(self):
        """Cast the floating-point parameters and buffers to float32; see torch.nn.Module.float."""
        return self._apply(lambda t: t.float() if t.dtype.is_floating_point else t)

    def double(self):
        """Cast the floating-point parameters and buffers to float64; see torch.nn.Module.double."""
        return self._apply(lambda t: t.double() if t.dtype.is_floating_point else t)

    def half(self):
        """Floating parameters and buffers to float16 (CapabilityError where the stage lacks it)."""
        return self._apply(lambda t: t.half() if t.dtype.is_floating_point else t)

    def bfloat16(self):
        """Floating parameters and buffers to bfloat16 (CapabilityError where the stage lacks it)."""
        return self._apply(lambda t: t.bfloat16() if t.dtype.is_floating_point else t)

    # ------------------------------------------------------------ repr

    def extra_repr(self):
        """Override to describe the module's own settings on the first line of its repr."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): {_addindent(repr(m), 2)}" for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                s += extra_lines[0]
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"


class _HookHandle:
    _next_id = 0

    def __init__(self, registry, hook):
        self.registry = registry
        self.id = _HookHandle._next_id
        _HookHandle._next_id += 1
        registry[self.id] = hook

    def remove(self):
        self.registry.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# the containers live in container.py, as in PyTorch; importable from here too
from .container import ModuleDict, ModuleList, Sequential  # noqa: E402,F401
