"""``export``: trace, merge the traces into one graph with symbolic sizes, write ONNX."""
import inspect
import os
import sys
import threading

from . import trace as _trace
from .errors import ExportError
from .functions import FUNCTIONS
from .graph import NP_DTYPES, ONNX_DTYPES, Graph
from .primitives import PRIMITIVES
from .sizes import Sym, fit

OPSETS = range(17, 22)
DEFAULT_OPSET = 18
# tracing swaps functions of the stage's modules for the duration of one export
_TRACING = threading.Lock()


def export(model, args, f=None, *, input_names=None, output_names=None, opset_version=None,
           dynamic_axes=None, check=True):
    """Export ``model`` (a Module, or any callable on tensors) to ONNX by tracing
    ``model(*args)``: see torch.onnx.export. Returns the ``onnx.ModelProto``, and writes it
    to ``f`` (a path or a binary file) when given.

    ``dynamic_axes`` maps an input or output name to the axes whose size may change, as
    ``{"x": {0: "batch"}}`` or ``{"x": [0]}``; an axis named on two inputs is one size.
    The model runs in eval mode while it is traced (its mode is restored after), with
    this stage's fused kernels off, so that every operation it runs is recorded.
    ``check`` runs ``onnx.checker`` on the result. While it traces, the stage's functions
    are wrapped process-wide: other threads should not run the stage meanwhile."""
    import onnx
    from onnx import helper

    opset = DEFAULT_OPSET if opset_version is None else opset_version
    if opset not in OPSETS:
        raise ValueError(f"export: opset_version {opset} is not supported; choose one of "
                         f"{OPSETS.start}..{OPSETS.stop - 1}")
    inputs = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    sg = _stage_of(model, inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, sg.Tensor):
            raise ExportError(f"export: example input {i} is a {type(t).__name__}; inputs must be tensors "
                              f"(fix other arguments with a lambda or functools.partial)")
    input_names = list(input_names or _default_input_names(model, len(inputs)))
    if len(input_names) != len(inputs):
        raise ValueError(f"export: {len(input_names)} input_names for {len(inputs)} inputs")
    axes, places = _parse_dynamic_axes(dynamic_axes or {}, input_names, inputs)
    state = list(model.state_dict(keep_vars=True).items()) if hasattr(model, "state_dict") else []
    clash = set(input_names) & {name for name, _ in state}
    if clash:
        raise ValueError(f"export: input names {sorted(clash)} are also names of the model's state")
    snapshot = lambda buf: _array(sg, buf)  # noqa: E731
    modes = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") else []
    # a model on a device is traced on the CPU: the graph is the same, and tracing reads
    # values back at every step; its tensors (non-persistent buffers too) go back to their
    # device afterwards
    held = [t for _, t in state] + (list(model.buffers()) if hasattr(model, "buffers") else [])
    moved = [(t, t.device) for t in {id(t): t for t in held}.values() if not t.is_cpu]
    inputs = tuple(t.cpu() for t in inputs)
    default = sg.get_default_device()
    try:
        sg.set_default_device(None)  # what the forward creates, on the CPU too
        for t, _ in moved:
            t.data = t.data.cpu()
        # the state as it was: every trace starts from it, and the graph holds it
        params = [(name, t, snapshot(t._data)) for name, t in state]
        for m, _ in modes:
            m.training = False
        with _TRACING:
            traces, sizes = _traces(sg, model, inputs, input_names, params, axes, places, snapshot)
    finally:
        for m, mode in modes:  # each module's own, as a frozen submodule may be in eval
            m.training = mode
        for t, device in moved:
            t.data = t.data.to(device)
        sg.set_default_device(default)
    records, shapes = _merge(traces, sizes, [a[0] for a in axes])
    base = traces[0]
    if output_names is None:
        n = len(base.outputs)
        output_names = ["output"] if n == 1 else [f"output_{i}" for i in range(n)]
    if len(output_names) != len(base.outputs):
        raise ValueError(f"export: {len(output_names)} output_names for {len(base.outputs)} outputs")
    unknown = set(dynamic_axes or {}) - set(input_names) - set(output_names)
    if unknown:
        raise ValueError(f"export: dynamic_axes names {sorted(unknown)}, which are neither inputs "
                         f"{input_names} nor outputs {output_names}")

    g = Graph(opset, [(input_names[i], d) for i, d in (p[0] for p in places)])
    g.shapes = shapes
    for kind, args_, out in records:
        emit = PRIMITIVES.get(kind) or FUNCTIONS[kind]
        emit(g, args_, out)
    for name, val in zip(output_names, base.outputs):
        g.node("Identity", [val.name], [name])
    used = {i for n in g.nodes for i in n.input}
    for name, values in base.constants.items():
        if name in used:
            g.initializer(name, values)
    dims = [name for name, _ in axes]
    graph = helper.make_graph(
        g.nodes, type(model).__name__,
        [_value_info(n, v.dtype, shapes[v.name], dims) for n, v in zip(input_names, base.inputs)],
        [_value_info(n, v.dtype, shapes[v.name], dims, out_axes=(dynamic_axes or {}).get(n))
         for n, v in zip(output_names, base.outputs)],
        g.initializers)
    opsets = [helper.make_opsetid("", opset)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="stagegrad",
                              ir_version=helper.find_min_ir_version_for(opsets))
    if check:
        onnx.checker.check_model(proto)
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            onnx.save(proto, os.fspath(f))
        else:
            f.write(proto.SerializeToString())
    return proto


def _stage_of(model, inputs):
    """The stage whose tensors the inputs (or else the model's parameters) are."""
    params = model.parameters() if hasattr(model, "parameters") else ()
    for obj in (*inputs, *params):
        stage = sys.modules.get(type(obj).__module__.partition(".")[0])
        if isinstance(obj, getattr(stage, "Tensor", ())):
            return stage
    raise ExportError("export: found no stagegrad tensor among the example inputs or the model's parameters")


def _default_input_names(model, n):
    try:
        params = [p.name for p in inspect.signature(model.forward if hasattr(model, "forward") else model)
                  .parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[:n] if len(params) >= n else [f"input_{i}" for i in range(n)]


def _parse_dynamic_axes(spec, input_names, inputs):
    """``(axes, places)``: each dynamic axis's name and example size, and for each the
    (input index, dim) pairs that carry it."""
    for key, dims in spec.items():
        if not isinstance(dims, (dict, list, tuple)):
            raise TypeError(f"export: dynamic_axes[{key!r}] must be a dict or a list of axes, got {dims!r}")
    axes, places = [], []
    for key, dims in spec.items():
        if key not in input_names:
            continue  # an output's axes only name its dims
        i = input_names.index(key)
        named = dims.items() if isinstance(dims, dict) else ((d, f"{key}_dim_{d}") for d in dims)
        for dim, axis_name in named:
            rank = inputs[i].ndim
            if not -rank <= dim < rank:
                raise ValueError(f"export: dynamic axis {dim} of input {key!r} is out of range for its "
                                 f"{rank} dims")
            dim %= rank
            size = inputs[i].shape[dim]
            names = [a[0] for a in axes]
            if axis_name in names:
                k = names.index(axis_name)
                if axes[k][1] != size:
                    raise ValueError(f"export: dynamic axis {axis_name!r} has size {axes[k][1]} in one input "
                                     f"and {size} in {key!r}")
                places[k].append((i, dim))
            else:
                axes.append((axis_name, size))
                places.append([(i, dim)])
    return axes, places


def _alternatives(size):
    """Two other sizes for an axis of ``size``, both larger (never 1, whose broadcasting
    is special): the second well above, so that a slice the stage clamps to the axis
    (``x[:, :5]`` traced at 3) shows its constant end instead of passing for the size."""
    return size + 1, 2 * size + 3


def _resized(sg, inputs, places, new_sizes):
    out = list(inputs)
    for where, n in zip(places, new_sizes):
        for i, dim in where:
            src = out[i]
            index = sg.tensor([j % src.shape[dim] for j in range(n)], dtype=sg.int64)
            out[i] = src.index_select(dim, index)
    return out


def _traces(sg, model, inputs, names, params, axes, places, snapshot):
    """The base trace, one per dynamic axis moved alone, and one with all moved; each
    starts from the model's state as it was."""
    base = [size for _, size in axes]
    plans = [base]
    for k, (_, size) in enumerate(axes):
        plans.append(base[:k] + [_alternatives(size)[0]] + base[k + 1:])
    if axes:
        plans.append([_alternatives(size)[1] for _, size in axes])
    traces = []
    for plan in plans:
        args = inputs if plan is base else _resized(sg, inputs, places, plan)
        try:
            traces.append(_trace.run(sg, model, args, names, params, snapshot))
        except ExportError:
            raise
        except Exception as e:
            if plan is base:
                raise
            sizes = ", ".join(f"{a}={n}" for (a, _), n in zip(axes, plan))
            raise ExportError(f"export traces the model again with its dynamic axes at other sizes, and "
                              f"the forward failed at {sizes}: {type(e).__name__}: {e}. Give an example "
                              f"well inside the sizes the model accepts, or fix that axis") from e
        finally:
            _restore(sg, params)
    return traces, [tuple(p) for p in plans]


def _restore(sg, params):
    """Put back any state the forward wrote into, so every trace sees the same model."""
    import numpy as np
    with sg.no_grad():
        for _, t, values in params:
            now = _array(sg, t._data)
            if not np.array_equal(now, values, equal_nan=now.dtype.kind == "f"):
                t.copy_(sg.tensor(values.tolist(), dtype=t.dtype).reshape(t.shape))


def _merge(traces, sizes, axis_names):
    """One list of records from all traces, with each int that differs between them
    replaced by the ``Sym`` that fits it, and every value's shape in the same terms."""
    base = traces[0]
    for t in traces[1:]:
        if len(t.records) != len(base.records) or [r[0] for r in t.records] != [r[0] for r in base.records]:
            raise ExportError(f"the forward runs other operations when a dynamic axis "
                              f"({', '.join(axis_names)}) changes size; export it with fixed sizes")

    def where(kind):
        return f"in {kind} (dynamic axes: {', '.join(axis_names)})"

    def merge(objs, kind):
        first = objs[0]
        if isinstance(first, _trace.Val):
            if any(o.name != first.name for o in objs):
                raise ExportError(f"the graph's structure changes with a dynamic axis {where(kind)}")
            return first
        if isinstance(first, bool) or first is None or isinstance(first, str):
            if any(o != first for o in objs):
                raise ExportError(f"an argument of {kind} changes with a dynamic axis: {objs}")
            return first
        if isinstance(first, (int, float)):
            if all(o == first or (o != o and first != first) for o in objs):  # nan is itself here
                return first
            if isinstance(first, float) and all(float(o).is_integer() for o in objs):
                objs = [int(o) for o in objs]
            if not all(isinstance(o, int) for o in objs):
                raise ExportError(f"the number {first} {where(kind)} changes with the axes' sizes in a way "
                                  f"ONNX shapes cannot express ({objs})")
            s = fit(objs, sizes)
            if s is None:
                raise ExportError(f"the size {first} {where(kind)} does not follow the dynamic axes "
                                  f"as a x d + b or c x d1 x d2 (values {objs} at sizes {sizes})")
            return s
        if isinstance(first, (tuple, list)):
            if any(len(o) != len(first) for o in objs):
                raise ExportError(f"the number of arguments of {kind} changes with a dynamic axis")
            return type(first)(merge(parts, kind) for parts in zip(*objs))
        if isinstance(first, dict):
            return {k: merge([o[k] for o in objs], kind) for k in first}
        if any(o is not first and o != first for o in objs):
            raise ExportError(f"an argument of {kind} changes with a dynamic axis")
        return first

    records = []
    for parts in zip(*(t.records for t in traces)):
        kind = parts[0][0]
        if kind == "from_list" and any(p[1][0] != parts[0][1][0] for p in parts):
            raise ExportError(f"a constant the forward builds from Python numbers changes with a dynamic "
                              f"axis ({', '.join(axis_names)}); export it with fixed sizes")
        records.append((kind, merge([p[1] for p in parts], kind), merge([p[2] for p in parts], kind)))
    per_trace = [{v.name: v.shape for v in t.made} for t in traces]
    shapes = {name: tuple(merge(list(dims), name) for dims in zip(*(p[name] for p in per_trace)))
              for name in per_trace[0] if all(name in p for p in per_trace)}
    return records, shapes


def _array(sg, buf):
    """A constant's values as a NumPy array: through DLPack where the stage shares its
    memory (a copy, since the buffer is the model's), else element by element (a device
    tensor's: a download)."""
    import numpy as np
    t = sg.Tensor._make(buf)
    if "dlpack" not in sg.LACKS and t.is_cpu:
        return np.from_dlpack(t).copy()
    return np.array(buf.tolist(), dtype=NP_DTYPES[buf.dtype.name]).reshape(buf.shape)


def _value_info(name, dtype, shape, axis_names, out_axes=None):
    from onnx import helper
    dims = []
    for d, s in enumerate(shape):
        if isinstance(s, Sym):
            named = isinstance(out_axes, dict) and d in out_axes
            dims.append(out_axes[d] if named else _label(s, axis_names))
        else:
            dims.append(s)
    return helper.make_tensor_value_info(name, ONNX_DTYPES[dtype.name], dims)


def _label(s, axis_names):
    """A size's name in the model's signature: ``batch``, ``batch*seq``, ``2*seq+1``."""
    parts = []
    for monomial, coeff in sorted(s.terms.items(), key=lambda mc: -len(mc[0])):
        names = [axis_names[a] for a in monomial]
        if coeff != 1 or not names:
            names.insert(0, str(coeff))
        parts.append("*".join(names))
    return "+".join(parts).replace("+-", "-")
