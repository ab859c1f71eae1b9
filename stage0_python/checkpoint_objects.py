"""What a checkpoint holds beyond plain data, and the allowlist that gates loading it.

Beside tensors and plain values (``serialization``), ``save`` writes what ``torch.save``
pickles and PyTorch 2.13's ``torch.load`` reads back only when asked:

- NumPy arrays and scalars of numbers and bools, as their dtype, shape and bytes
  (``{"ndarray": {"dtype": "<f4", "shape": [2], "offset": 0, "nbytes": 8, "scalar": false}}``);
- objects, as pickle's default protocol does it: the class by name and the instance's
  state (``{"object": [module, qualname, STATE]}``), a whole ``nn.Module`` among them;
- functions and classes, by name (``{"global": [module, qualname]}``);
- ``{"same": k}``: the k-th tensor, array or object met before, so that a tensor or module
  held in two places (tied weights) loads as one object.

Nothing is pickled and nothing is unpickled. ``load`` with ``weights_only=True`` (the
default) builds an array, an object or a global only if ``add_safe_globals`` or the
``safe_globals`` context allowed every global PyTorch's loader would ask for (for an array:
NumPy's ``_reconstruct``, ``ndarray``, ``dtype`` and the dtype's class; for an object: its
class; for a global: itself), and takes them from that allowlist, never importing a name
from the file. Otherwise it raises ``WeightsOnlyError`` with PyTorch's advice. Only
``weights_only=False`` imports the modules a file names, as ``torch.load`` then does.
"""
import copyreg
import importlib
import sys
import types

_SAFE = []  # what add_safe_globals allowed: objects, or (object, name) pairs, as given
_NUMPY_KINDS = "biufc"  # bool, signed, unsigned, float, complex: what an ndarray node holds


# ------------------------------------------------------------------ the allowlist

def add_safe_globals(safe_globals):
    """Allow ``load(weights_only=True)`` to build these classes and functions (or
    ``(object, "module.name")`` pairs), as torch.serialization.add_safe_globals."""
    for g in safe_globals:
        if isinstance(g, tuple) and not (len(g) == 2 and isinstance(g[1], str)):
            raise TypeError(f"add_safe_globals: expected an object or an (object, name) pair, got {g!r}")
        _SAFE.append(g)


def get_safe_globals():
    """The objects ``add_safe_globals`` allowed, as torch.serialization.get_safe_globals."""
    return list(_SAFE)


def clear_safe_globals():
    """Forget every allowed global, as torch.serialization.clear_safe_globals."""
    del _SAFE[:]


class safe_globals:  # noqa: N801  (PyTorch's name for this context manager)
    """``with safe_globals([...]):`` allows globals for the loads inside the block only,
    as torch.serialization.safe_globals."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)
        self._before = None

    def __enter__(self):
        self._before = list(_SAFE)
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, *exc):
        _SAFE[:] = self._before
        return False


def global_name(obj):
    """``obj``'s dotted name, as a checkpoint and PyTorch's messages spell it."""
    return f"{obj.__module__}.{obj.__qualname__}"


def _allowed():
    """The allowlist by name (an ``(object, name)`` pair under its name)."""
    named = {}
    for g in _SAFE:
        obj, name = g if isinstance(g, tuple) else (g, global_name(g))
        named[name] = obj
    return named


class Resolver:
    """Turns the names a checkpoint holds into objects, as ``weights_only`` allows."""

    def __init__(self, weights_only, stage):
        self.weights_only = weights_only
        self.stage = stage
        self.allowed = _allowed() if weights_only else None

    def resolve(self, module, qualname):
        """The global ``module.qualname``: from the allowlist, or (``weights_only=False``)
        imported."""
        name = f"{module}.{qualname}"
        if not self.weights_only:
            obj = _import(module, qualname)
            if obj is None:
                raise AttributeError(f"load: the checkpoint names {name}, which cannot be imported")
            return obj
        if name not in self.allowed:
            raise self.refusal([name])
        return self.allowed[name]

    def require(self, objs):
        """Refuse unless every one of ``objs`` is allowed (the globals an array needs)."""
        if not self.weights_only:
            return
        ids = {id(o) for o in self.allowed.values()}
        missing = [global_name(o) for o in objs if id(o) not in ids]
        if missing:
            raise self.refusal(missing)

    def refusal(self, names):
        """A WeightsOnlyError with PyTorch's advice, naming the globals not allowed."""
        from .serialization import WeightsOnlyError  # here: serialization imports this module
        listed = ", ".join(names)
        ser = f"{self.stage}.serialization"
        verdict = "is not an allowed global" if len(names) == 1 else "are not allowed globals"
        return WeightsOnlyError(
            "Weights only load failed. This file can still be loaded, to do so you have two options, "
            "do those steps only if you trust the source of the checkpoint.\n"
            "\t(1) Re-running `load` with `weights_only` set to `False` will likely succeed, but it can "
            "result in arbitrary code execution. Do it only if you got the file from a trusted source.\n"
            "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in "
            "the following error message.\n"
            f"\tUnsupported global: {listed} {verdict} "
            f"by default. Please use `{ser}.add_safe_globals([{listed}])` or the "
            f"`{ser}.safe_globals([{listed}])` context manager to allowlist "
            f"{'this global' if len(names) == 1 else 'these globals'} if you trust this class/function.")


def _import(module, qualname):
    """``module.qualname`` imported, or None where no such object exists."""
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


# ------------------------------------------------------------------ NumPy

def numpy_of(obj):
    """NumPy, where ``obj`` is one of its arrays or scalars (never imported here)."""
    np = sys.modules.get("numpy")
    return np if np is not None and isinstance(obj, (np.ndarray, np.generic)) else None


def encode_numpy(obj, np, where):
    """``(body, raw bytes)`` for an ndarray node; TypeError for arrays of other kinds."""
    dt = obj.dtype
    if dt.kind not in _NUMPY_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise TypeError(f"save: {where} is a NumPy {type(obj).__name__} of dtype {dt}; a checkpoint holds "
                        "NumPy arrays and scalars of numbers and bools")
    return ({"dtype": dt.str, "shape": list(np.shape(obj)), "scalar": isinstance(obj, np.generic)},
            obj.tobytes(order="C"))


def numpy_globals(np, dtype, scalar, nbytes):
    """The globals PyTorch's loader asks for to rebuild such an array (or scalar) from a pickle."""
    sample = np.zeros(1, dtype)
    if scalar:
        return [sample[0].__reduce__()[0], np.dtype, type(dtype)]
    # an empty array's bytes pickle as a call to bytes()
    return [sample.__reduce__()[0], np.ndarray, np.dtype, type(dtype)] + ([bytes] if nbytes == 0 else [])


def globals_in(root):
    """The dotted names of every global the header node ``root`` asks a load to build."""
    names, stack = set(), [root]
    while stack:  # a loop, not recursion: the header is not trusted yet to be shallow
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict) and len(node) == 1:
            (kind, body), = node.items()
            if kind in ("object", "global") and isinstance(body, list) and len(body) >= 2:
                names.add(f"{body[0]}.{body[1]}")
                stack.extend(body[2:])
            elif kind == "ndarray" and isinstance(body, dict):
                import numpy as np  # only a header with an array gets here
                needed = numpy_globals(np, np.dtype(body["dtype"]), body.get("scalar"), body.get("nbytes"))
                names.update(global_name(o) for o in needed)
            elif kind != "tensor":
                stack.append(body)
    return names


def unsafe_globals(root):
    """Those of ``globals_in(root)`` that no allowlisted global stands for, sorted."""
    return sorted(globals_in(root) - set(_allowed()))


def decode_numpy(body, raw, resolver):
    """The NumPy array or scalar an ndarray node stands for."""
    try:
        import numpy as np
    except ImportError:
        raise ModuleNotFoundError("load: the checkpoint holds a NumPy array, and reading one needs NumPy",
                                  name="numpy") from None
    dtype = np.dtype(body["dtype"])
    if dtype.kind not in _NUMPY_KINDS or dtype.fields is not None:
        raise ValueError(f"unknown NumPy dtype {body['dtype']!r}")
    shape = tuple(body["shape"])
    resolver.require(numpy_globals(np, dtype, body.get("scalar"), len(raw)))
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return arr[()] if body.get("scalar") else arr


# ------------------------------------------------------------------ objects and globals

_GLOBAL_KINDS = (type, types.FunctionType, types.BuiltinFunctionType)


def is_global(obj):
    """Whether ``obj`` is saved by its name: a function or class, or another object (NumPy's
    function dispatchers) found again under its ``__module__`` and ``__qualname__``."""
    if isinstance(obj, _GLOBAL_KINDS):
        return True
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return (isinstance(module, str) and isinstance(qualname, str) and module in sys.modules
            and _import(module, qualname) is obj)


def encode_global(obj, where):
    """The ``[module, qualname]`` of a function or class that loads back by its name."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
    if module is None or "<" in qualname or _import(module, qualname) is not obj:
        raise TypeError(f"save: {where} is {obj!r}, which cannot be found again by its name "
                        "(a lambda, or defined inside a function); a checkpoint saves functions "
                        "and classes by name")
    return [module, qualname]


def object_state(obj, where):
    """The state of ``obj`` that pickle's default protocol would save, or TypeError where
    its class reduces itself some other way."""
    try:
        rv = obj.__reduce_ex__(2)
    except Exception as e:  # noqa: BLE001  (the class refuses to be saved; say why)
        raise TypeError(f"save: {where} is a {global_name(type(obj))}, which cannot be saved: {e}") from None
    if (not isinstance(rv, tuple) or rv[0] is not copyreg.__newobj__ or tuple(rv[1]) != (type(obj),)
            or any(x is not None for x in rv[3:5])):
        raise TypeError(f"save: {where} is a {global_name(type(obj))}, whose class saves itself its own way "
                        "(__reduce__); a checkpoint holds objects as their class and attributes")
    encode_global(type(obj), where)
    return rv[2] if len(rv) > 2 else None


def restore_object(obj, state):
    """Give ``obj`` (made by ``cls.__new__``) its saved ``state``, as unpickling does."""
    if state is None:
        return
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        obj.__dict__.update(state)
    for k, v in (slots or {}).items():
        setattr(obj, k, v)
