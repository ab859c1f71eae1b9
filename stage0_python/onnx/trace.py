"""Recording a model's forward: which operations ran, on which values, with which
arguments.

Design: every stage's frontend reaches memory only through its backend's primitives
(``backend.py`` lists them), so a forward is fully described by the primitives it calls.
While tracing, each primitive of the backend module is replaced by a wrapper that runs it
and appends a record ``(kind, args, outputs)``, with every buffer among the arguments
replaced by the ``Val`` naming it. A few ``nn.functional`` functions (convolution,
pooling, normalisation, softmax, embedding) and the recurrent layers' forward are wrapped
the same way one level up (``functions.FUNCTIONS``), so that they become one ONNX operator
each instead of im2col and window primitives ONNX has no operator for, or a loop unrolled
over time; the primitives they call inside are then not recorded (``depth``).

A buffer the trace has not produced is a constant: a parameter (named from the model's
state_dict), a registered buffer, or a tensor the forward made from Python values. Its
values are taken before the forward runs (the model's state) or when the trace first
meets it. The wrappers are installed for one trace and removed after it, so tracing costs
nothing when not in use.

Three things cannot be recorded and raise ``ExportError`` instead of exporting a graph
that would silently compute something else: a backend function with no ONNX mapping
producing data from traced values, a forward that reads the value of a tensor computed
from the inputs (``item``, ``tolist``, ``bool``: its control flow would be frozen), and
random numbers (dropout in training mode).
"""
import contextlib
import importlib
import inspect
import sys

from ..nested import leaves
from .errors import ExportError
from .functions import APPLIES, EXTRA, FUNCTIONS

# the primitives with an ONNX mapping (primitives.py), and those that only answer questions
# about layout: anything else that makes a buffer from a traced one is refused
RECORDED = frozenset({
    "from_list", "full", "arange", "cast", "unary", "binary", "where", "reduce", "arg_reduce",
    "sort", "scan", "reshape", "permute", "expand", "slice", "contiguous", "alias", "copy",
    "cat", "take", "gather", "scatter_add", "matmul",
})
RANDOM = frozenset({"uniform", "normal", "randint"})
INPLACE = frozenset({"assign", "put"})  # they write into their first argument
NO_MAPPING = frozenset({"diagonal", "windows", "unfold", "fold"})

PREFIX = "sg/"  # internal value names: a state_dict or input name never has a slash
_READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "numpy", "nonzero")


class Val:
    """One value of the traced graph: its ONNX name, shape and dtype, and whether it
    depends on the graph's inputs (``dynamic``) or is a constant of the model."""

    __slots__ = ("name", "shape", "dtype", "dynamic")

    def __init__(self, name, shape, dtype, dynamic):
        self.name, self.shape, self.dtype, self.dynamic = name, tuple(shape), dtype, dynamic

    def __repr__(self):
        return f"Val({self.name}, {self.shape}, {self.dtype.name})"


class Trace:
    """What one run of the forward did: ``records`` in order, ``constants`` (name ->
    values, in the order met), ``inputs`` and ``outputs`` (Vals)."""

    def __init__(self, sg, snapshot):
        self.sg = sg
        self.snapshot = snapshot  # a buffer's values as the graph will hold them
        self.B = importlib.import_module(sg.__name__ + ".backend")
        self.buffer_type = type(self.B.full((), 0, sg.float32))
        self.vals = {}  # id(buffer) -> Val
        self.made = []  # every Val, including those an in-place write has replaced
        self.keep = []  # every buffer seen, alive until the trace ends, so ids stay unique
        self.records = []
        self.constants = {}
        self.stale = set()  # ids of buffers changed through a view (see _overwrite)
        self.depth = 0
        self.inputs, self.outputs = [], []
        self._counter = 0

    # ------------------------------------------------------------ values

    def bind(self, buf, name, dynamic):
        val = Val(name, buf.shape, buf.dtype, dynamic)
        self.vals[id(buf)] = val
        self.made.append(val)
        self.keep.append(buf)
        return val

    def val(self, buf):
        """The Val of ``buf``; a buffer not produced by the trace becomes a constant, its
        values taken now (the forward may write into it later)."""
        val = self.vals.get(id(buf))
        if val is None:
            name = f"{PREFIX}const_{len(self.constants)}"
            self.constants[name] = self.snapshot(buf)
            val = self.bind(buf, name, False)
        return val

    def ref(self, obj):
        """``obj`` with every buffer and tensor in it replaced by its Val."""
        if isinstance(obj, self.sg.Tensor):
            obj = obj._data
        if isinstance(obj, self.buffer_type):
            if id(obj) in self.stale:
                raise ExportError("the forward writes in place into a view and then reads another view "
                                  "of the same memory; export cannot follow the aliasing")
            return self.val(obj)
        if isinstance(obj, (tuple, list)):
            return type(obj)(self.ref(o) for o in obj)
        if isinstance(obj, dict):
            return {k: self.ref(v) for k, v in obj.items()}
        return obj

    def _traced(self, obj):
        """Whether ``obj`` holds a buffer or tensor that the trace already knows."""
        if isinstance(obj, self.buffer_type):
            return id(obj) in self.vals
        if isinstance(obj, self.sg.Tensor):
            return id(obj._data) in self.vals
        if isinstance(obj, (tuple, list)):
            return any(self._traced(o) for o in obj)
        if isinstance(obj, dict):
            return any(self._traced(o) for o in obj.values())
        return False

    def _outputs(self, result, dynamic):
        """Bind each buffer of ``result`` (a buffer, tensor, or tuple of them) to a new Val."""
        if isinstance(result, self.sg.Tensor):
            result = result._data
        if isinstance(result, self.buffer_type):
            self._counter += 1
            return self.bind(result, f"{PREFIX}v{self._counter}", dynamic)
        if isinstance(result, (tuple, list)):
            return tuple(self._outputs(r, dynamic) for r in result)
        return None

    def _overwrite(self, dst, val):
        """An in-place write: ``dst`` now holds ``val``. Where views alias their base,
        another buffer sharing ``dst``'s memory changed too, which no record says: those
        become unusable (``stale``)."""
        if self.B.VIEWS:
            for other in self.keep:
                if other is not dst and self.B.shares_storage(other, dst):
                    self.stale.add(id(other))
        self.val(dst)  # keeps it alive, so its id stays its own
        self.vals[id(dst)] = val
        self.stale.discard(id(dst))

    def record(self, kind, args, result):
        args = self.ref(args)
        dynamic = any(v.dynamic for v in leaves(args, Val))
        self.records.append((kind, args, self._outputs(result, dynamic)))

    # ------------------------------------------------------------ wrappers

    def _primitive(self, name, fn):
        def traced(*args):
            if self.depth:
                return fn(*args)
            if name in RANDOM:
                raise ExportError(f"the forward draws random numbers ({name}); export runs the model in "
                                  f"eval mode, so this comes from the model's own code")
            self.depth += 1
            try:
                result = fn(*args)
            finally:
                self.depth -= 1
            if name == "set_data":
                self._overwrite(args[0], self.val(args[1]))
            elif name in INPLACE:
                refs = self.ref(args)
                self._counter += 1
                new = Val(f"{PREFIX}v{self._counter}", args[0].shape, args[0].dtype,
                          any(v.dynamic for v in leaves(refs, Val)))
                self.records.append((name, refs, new))
                self.made.append(new)
                self._overwrite(args[0], new)
            elif name in RECORDED:
                self.record(name, args, result)
            elif _holds(result, self.buffer_type) and self._traced(args):
                what = "has no ONNX operator" if name in NO_MAPPING else "is not mapped to ONNX"
                raise ExportError(f"the forward uses the backend operation {name!r}, which {what}")
            return result
        return traced

    def _function(self, kind, fn):
        signature = inspect.signature(fn)
        applies = APPLIES.get(kind, lambda a: True)

        def traced(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            if not applies(bound.arguments):
                return fn(*args, **kwargs)
            self.depth += 1
            try:
                result = fn(*args, **kwargs)
            finally:
                self.depth -= 1
            recorded = dict(bound.arguments)
            recorded.update(EXTRA.get(kind, lambda a: {})(recorded))
            self.record(kind, recorded, result)
            return result
        traced.__wrapped__ = fn
        return traced

    def _read(self, name, fn):
        def traced(tensor, *args, **kwargs):
            val = self.vals.get(id(tensor._data))
            if not self.depth and val is not None and val.dynamic:
                raise ExportError(f"the forward reads the value of a tensor computed from its inputs "
                                  f"(Tensor.{name}); the exported graph cannot branch on values")
            return fn(tensor, *args, **kwargs)
        return traced

    def _check(self, fn):
        """The frontend's checks of index values: run on the example, as reads the model
        does not make (the graph leaves the bounds to the runtime)."""
        def traced(*args):
            self.depth += 1
            try:
                return fn(*args)
            finally:
                self.depth -= 1
        return traced

    def _install(self, remember):
        """Swap in every wrapper, handing ``remember`` each (owner, name, old value)."""
        sg, B = self.sg, self.B

        def swap(owner, attr, new):
            remember((owner, attr, vars(owner)[attr]))  # a class's staticmethod, not its function
            setattr(owner, attr, new)

        for name, fn in list(vars(B).items()):
            if callable(fn) and not isinstance(fn, type) and not name.startswith("_") \
                    and not inspect.ismodule(fn):
                swap(B, name, self._primitive(name, fn))
        swap(B, "FUSED", frozenset())  # trace the composites: fused kernels are one backend call
        holders = _holders(sg.__name__)  # one scan of the stage's modules, not one per function

        def swap_everywhere(fn, new):
            for owner, attr, static in holders.get(id(fn), ()):
                held = vars(owner)[attr]
                if (getattr(held, "__func__", None) if static else held) is fn:  # still there
                    swap(owner, attr, staticmethod(new) if static else new)

        for kind in FUNCTIONS:
            module_name, _, path = kind.partition(":")
            fn = importlib.import_module(f"{sg.__name__}.{module_name}")
            for name in path.split("."):
                fn = vars(fn)[name]
            swap_everywhere(fn, self._function(kind, fn))
        checks = importlib.import_module(sg.__name__ + ".shapes").out_of_range
        swap_everywhere(checks, self._check(checks))
        for name in _READS:  # on the class that defines each: Tensor or one of its method mixins
            owner = next((cls for cls in sg.Tensor.__mro__ if name in vars(cls)), None)
            if owner is not None:
                swap(owner, name, self._read(name, vars(owner)[name]))

    @contextlib.contextmanager
    def installed(self):
        """Wrap the backend's functions, the exported nn.functional entry points and the
        Tensor's value reads; restore them all on exit."""
        sg = self.sg
        undo = []
        core = importlib.import_module(sg.__name__ + ".tensor_core")
        ops = importlib.import_module(sg.__name__ + ".ops")
        try:
            self._install(undo.append)
            core.bind(sg.Tensor, ops)  # a compiled core keeps its own references to primitives
            yield self
        finally:
            for owner, attr, old in reversed(undo):
                setattr(owner, attr, old)
            core.bind(sg.Tensor, ops)


def _holders(prefix):
    """Where the stage holds each object: ``id(obj)`` -> ``(owner, name, static)`` for each
    module attribute, class attribute and static method (``_conv = staticmethod(F.conv2d)``,
    ``static`` true) of the modules under ``prefix``."""
    held = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == prefix or module_name.startswith(prefix + ".")):
            continue
        for name, value in list(vars(module).items()):
            held.setdefault(id(value), []).append((module, name, False))
            if isinstance(value, type) and value.__module__ == module_name:
                for attr, member in list(vars(value).items()):
                    static = isinstance(member, staticmethod)
                    held.setdefault(id(member.__func__ if static else member), []).append((value, attr, static))
    return held


def _holds(obj, buffer_type):
    if isinstance(obj, buffer_type):
        return True
    return isinstance(obj, (tuple, list)) and any(_holds(o, buffer_type) for o in obj)


def run(sg, model, inputs, input_names, params, snapshot):
    """Trace ``model(*inputs)``: a Trace whose inputs are named ``input_names`` and whose
    parameters and registered buffers keep their state_dict names. ``params`` pairs each
    name with its tensor and the values it had before any trace."""
    trace = Trace(sg, snapshot)
    for name, t, values in params:
        if id(t._data) not in trace.vals:  # a tied parameter keeps its first name
            trace.constants[name] = values
            trace.bind(t._data, name, False)
    # one tensor passed twice (attention's (x, x, x)) is two inputs of the graph
    seen = set()
    inputs = [t.clone() if id(t._data) in seen or seen.add(id(t._data)) else t for t in inputs]
    # an input that is also a parameter's tensor still enters the graph as an input
    trace.inputs = [trace.bind(t._data, name, True) for name, t in zip(input_names, inputs)]
    with sg.no_grad(), trace.installed():
        out = model(*inputs)
    trace.outputs = [trace.val(t._data) for t in flatten_outputs(sg, out)]
    return trace


def flatten_outputs(sg, out):
    """The tensors of a forward's result (a tensor, or tuples/lists/dicts of them), in order."""
    if isinstance(out, sg.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten_outputs(sg, o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in flatten_outputs(sg, o)]
    if out is None:
        return []
    raise ExportError(f"the forward returned a {type(out).__name__}; export needs tensors "
                      f"(or tuples, lists or dicts of them)")
