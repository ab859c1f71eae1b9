"""``sg.nn.summary(model, input_size=...)``: a table of a model's layers, the shape each
one returned and its parameter count, with the totals, laid out as torchinfo 1.8 lays
out its own (the same columns, headers and counting rules), so the two can be read side
by side.

How it works: a pre-hook on every module records a row when the module is called (in
call order, at its depth in the module tree), and a forward hook fills in the shapes;
one forward pass under ``no_grad`` in eval mode runs them, and the hooks are removed
afterwards. Containers that are never called themselves (a ``ModuleList``) get their row
where their first called child needs it.
"""
import math

from .. import autograd
from ..tensor import Tensor
from .summary_table import COLUMNS, format_table

__all__ = ["LayerInfo", "ModelStatistics", "summary"]

_NEEDS_INPUT = {"input_size", "output_size", "mult_adds"}


def summary(model, input_size=None, input_data=None, dtypes=None, depth=3,
            col_names=("output_size", "num_params"), batch_dim=None, verbose=1, col_width=25,
            row_settings=("depth",), mode="eval", **kwargs):
    """Summarize ``model``: print (with ``verbose`` 1 or 2; 0 prints nothing) and return a
    ``ModelStatistics`` whose ``str()`` is the table and whose attributes hold the numbers
    (``total_params``, ``trainable_params``, ``non_trainable_params``, ``total_mult_adds``,
    ``summary_list`` of ``LayerInfo`` rows...).

    Give ``input_size`` (one shape, or a list of shapes for several inputs; random inputs
    of ``dtypes``, float32 by default, are made) or ``input_data`` (a tensor, a list or
    tuple of positional inputs, or a dict of keyword inputs) to run one forward pass and
    see the shapes; without either, only the parameter counts are shown (the columns that
    need a forward pass are left out). ``batch_dim`` inserts a dimension of size 1 there
    into each ``input_size``. ``depth`` is the deepest level shown (deeper layers still
    count in the totals). ``col_names`` picks columns among ``input_size``,
    ``output_size``, ``num_params``, ``params_percent``, ``kernel_size``, ``mult_adds``
    and ``trainable``; ``row_settings`` among ``depth``, ``var_names``, ``ascii_only``
    and ``hide_recursive_layers``. ``mode`` is ``"eval"`` or ``"train"`` for the pass;
    further keyword arguments go to ``model``'s forward.

    Counting follows torchinfo: a module called a second time shows ``(recursive)`` and
    counts once, but a parameter shared by two different modules (tied weights) counts in
    each of them and so twice in the totals. Sizes are bytes / 1e6."""
    if verbose not in (0, 1, 2):
        raise ValueError("verbose must be 0 (quiet), 1 (default) or 2 (also each parameter)")
    if input_size is not None and input_data is not None:
        raise ValueError("give input_size or input_data, not both")
    if mode not in ("eval", "train"):
        raise ValueError(f"mode {mode!r}: expected 'eval' or 'train'")
    unknown = set(col_names) - set(COLUMNS)
    if unknown:
        raise ValueError(f"unknown columns {sorted(unknown)}: expected some of {list(COLUMNS)}")
    has_input = input_size is not None or input_data is not None
    columns = tuple(c for c in col_names if has_input or c not in _NEEDS_INPUT)
    args, kw = (_make_inputs(input_size, dtypes, batch_dim) if input_size is not None
                else _split_inputs(input_data))
    rows = _record(model, args, {**kw, **kwargs}, batch_dim, has_input, mode)
    stats = ModelStatistics(rows, has_input, _nbytes((args, kw)), depth, columns, col_width,
                            set(row_settings), verbose)
    if verbose:
        print(stats)
    return stats


class LayerInfo:
    """One row of the summary: one call of one module (or a container shown for its
    children). ``children`` are every row below it, at any depth, up to its next sibling."""

    def __init__(self, module, var_name, depth, parent=None):
        self.module = module
        self.class_name = type(module).__name__
        self.var_name = var_name
        self.depth = depth
        self.parent = parent
        self.depth_index = None
        self.children = []
        self.executed = False
        self.is_leaf_layer = not any(True for _ in module.children())
        self.is_recursive = False
        self.input_size, self.output_size = [], []
        self.output_bytes = 0
        self.macs = 0
        self.kernel_size = _kernel_size(module)
        self.params = []  # (name, shape, count) of each parameter, for verbose=2
        self.num_params = self.trainable_params = self.param_bytes = 0

    def __repr__(self):
        return f"{self.class_name}: {self.depth}"

    def count_params(self):
        """Count the module's parameters (its submodules' included)."""
        self.params = [(name, list(p.shape), p.numel()) for name, p in self.module.named_parameters()]
        ps = [p for _, p in self.module.named_parameters()]
        self.num_params = sum(p.numel() for p in ps)
        self.trainable_params = sum(p.numel() for p in ps if p.requires_grad)
        self.param_bytes = sum(p.numel() * p.element_size() for p in ps)

    def count_macs(self):
        """Multiply-adds, by torchinfo's rule: each weight or bias element once per output
        position (per output pixel in a convolution, per step in a recurrent layer)."""
        out = self.output_size
        for name, p in self.module.named_parameters():
            n = p.numel()
            if name in ("weight", "bias"):
                positions = out[:1] + out[2:] if "Conv" in self.class_name else out[:1]
                self.macs += n * math.prod(positions)
            elif "weight" in name or "bias" in name:  # weight_ih_l0 and the like
                self.macs += n * math.prod(out[:2])

    def leftover_params(self):
        """Parameters of this row not shown on any row below it (its own, for a container)."""
        return self.num_params - sum(c.num_params if c.is_leaf_layer else c.leftover_params()
                                     for c in self.children if not c.is_recursive)

    def leftover_trainable_params(self):
        """The trainable part of ``leftover_params``."""
        return self.trainable_params - sum(
            c.trainable_params if c.is_leaf_layer else c.leftover_trainable_params()
            for c in self.children if not c.is_recursive)

    @property
    def trainable(self):
        """``"True"``, ``"False"``, ``"Partial"``, or ``"--"`` without parameters."""
        if self.num_params == 0:
            return "--"
        if self.trainable_params == 0:
            return "False"
        return "True" if self.trainable_params == self.num_params else "Partial"


class ModelStatistics:
    """What ``summary`` found: the rows (``summary_list``), the totals
    (``total_params``, ``trainable_params``, ``non_trainable_params``,
    ``total_mult_adds``) and the byte counts (``total_input``, ``total_output_bytes``: the
    outputs of layers with parameters, twice, for their gradients; ``total_param_bytes``).
    ``str()`` gives the table."""

    def __init__(self, summary_list, has_input, total_input, depth, columns, col_width,
                 row_settings, verbose):
        self.summary_list = summary_list
        self.has_input = has_input
        self.total_input = total_input
        self.depth, self.columns, self.col_width = depth, columns, col_width
        self.row_settings, self.verbose = row_settings, verbose
        self.total_params = self.trainable_params = self.total_mult_adds = 0
        self.total_param_bytes = self.total_output_bytes = 0
        for row in summary_list:
            if row.is_leaf_layer:
                self.total_mult_adds += row.macs
                if row.num_params > 0:
                    self.total_output_bytes += 2 * row.output_bytes
                if not row.is_recursive:
                    self.total_params += row.num_params
                    self.trainable_params += row.trainable_params
                    self.total_param_bytes += row.param_bytes
            elif not row.is_recursive:  # a container's own parameters
                self.total_params += max(row.leftover_params(), 0)
                self.trainable_params += max(row.leftover_trainable_params(), 0)

    @property
    def non_trainable_params(self):
        """Parameters with ``requires_grad=False``."""
        return self.total_params - self.trainable_params

    @property
    def total_bytes(self):
        """Input, forward/backward and parameter bytes together."""
        return self.total_input + self.total_output_bytes + self.total_param_bytes

    def __str__(self):
        return format_table(self)

    __repr__ = __str__


# ------------------------------------------------------------------ the forward pass

def _record(model, args, kwargs, batch_dim, run, mode):
    """The rows, from hooks on every module during one forward pass (or, without input,
    one row per module in tree order)."""
    visits = []  # (module, name, depth, parent row), depth first, children in order
    stack = [(model, type(model).__name__, 0, None)]
    while stack:
        module, name, depth, parent = stack.pop()
        # a container's children point at a row made here, shown only if it is never called
        fallback = LayerInfo(module, name, depth, parent)
        visits.append((module, name, depth, parent))
        stack += [(m, n, depth + 1, fallback) for n, m in reversed(module._modules.items()) if m is not None]
    places = {id(v[0]): v for v in visits}  # a module in two places keeps its last one
    rows, seen, live = [], set(), {}

    def add_row(module, name, depth, parent):
        row = LayerInfo(module, name, depth, parent)
        row.count_params()
        row.is_recursive = id(module) in seen
        seen.add(id(module))
        rows.append(row)
        live[id(module)] = row

    def pre_hook(module, inputs):
        add_row(*places[id(module)])

    def hook(module, inputs, output):
        row = live[id(module)]
        row.input_size, _ = _size(inputs, batch_dim)
        row.output_size, elem = _size(output, batch_dim)
        row.output_bytes = elem * math.prod(row.output_size)
        row.executed = True
        row.count_macs()

    if not run:
        for visit in visits:
            add_row(*visit)
    else:
        handles = [h for module, *_ in places.values()
                   for h in (module.register_forward_pre_hook(pre_hook), module.register_forward_hook(hook))]
        training = model.training
        model.train(mode == "train")
        try:
            with autograd.no_grad():
                model(*args, **kwargs)
        finally:
            for h in handles:
                h.remove()
            model.train(training)
        rows = _add_containers(rows, seen)
    counters = {}
    for i, row in enumerate(rows):  # depth-idx numbers the rows of each depth across the table
        row.children = _descendants(rows, i)
        counters[row.depth] = row.depth_index = counters.get(row.depth, 0) + 1
    return rows


def _add_containers(rows, seen):
    """Insert the rows of containers that were not called but whose children were (a
    ``ModuleList``), before the first child that needs them."""
    out, current = [], {}  # current: depth -> module of the latest row at that depth
    for row in rows:
        chain, p = {}, row.parent
        while p is not None and p.depth > 0:
            chain[p.depth] = p
            p = p.parent
        for d in range(1, row.depth):
            if current.get(d) is not chain[d].module and (not out or out[-1] is not chain[d]):
                chain[d].count_params()
                chain[d].is_recursive = id(chain[d].module) in seen
                out.append(chain[d])
                seen.add(id(chain[d].module))
                current[d] = chain[d].module
        current[row.depth] = row.module
        for d in [d for d in current if d > row.depth]:
            del current[d]
        out.append(row)
    return out


def _descendants(rows, i):
    below = []
    for row in rows[i + 1:]:
        if row.depth <= rows[i].depth:
            break
        below.append(row)
    return below


def _size(value, batch_dim):
    """(shape, bytes per element) of the tensor a layer took or returned: the first one of
    a tuple or list (an LSTM's output, not its state), the last value of a dict."""
    nested = not isinstance(value, Tensor)
    while not isinstance(value, Tensor):
        if isinstance(value, dict) and value:
            value = list(value.values())[-1]
        elif isinstance(value, (list, tuple)) and value:
            value = value[0]
        else:
            return [], 0
    shape = list(value.shape)
    if nested and batch_dim is not None and batch_dim < len(shape):
        shape[batch_dim] = 1
    return shape, value.element_size()


def _kernel_size(module):
    k = getattr(module, "kernel_size", None)
    return list(k) if isinstance(k, (tuple, list)) else k


def _make_inputs(input_size, dtypes, batch_dim):
    """Random inputs of the given shapes: one shape (a tuple or list of ints) or several."""
    from .. import rand
    if not isinstance(input_size, (list, tuple)) or not input_size:
        raise TypeError(f"input_size {input_size!r}: expected a shape or a list of shapes")
    one = all(isinstance(n, int) for n in input_size)
    shapes = [tuple(input_size)] if one else [tuple(s) for s in input_size]
    if any(n <= 0 for s in shapes for n in s):
        raise ValueError(f"input_size {input_size!r}: every size must be positive")
    dtypes = list(dtypes) if dtypes is not None else [None] * len(shapes)
    xs = []
    for shape, dtype in zip(shapes, dtypes):
        x = rand(*shape)
        if batch_dim is not None:
            x = x.unsqueeze(batch_dim)
        xs.append(x if dtype is None else x.to(dtype))
    return xs, {}


def _split_inputs(data):
    if data is None:
        return [], {}
    if isinstance(data, dict):
        return [], dict(data)
    return (list(data) if isinstance(data, (list, tuple)) else [data]), {}


def _nbytes(value):
    if isinstance(value, Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0

