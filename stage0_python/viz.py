"""Pictures of the autograd graph: ``sg.viz.graph(loss)`` writes the graph that
``loss.backward()`` would walk as Graphviz DOT text, and renders it with Graphviz's
``dot`` program when that is installed.

The walk reads only what every stage's graph exposes (stage 0's ``graph.py``, run as
Python or compiled, alike): a node's ``name()``, ``next_edges`` (one (node, output
index) per forward input, or None), ``input_meta`` (the (shape, dtype) each input had),
its context's ``_saved`` tuple, and an ``AccumulateGrad``'s ``tensor``. The picture runs
in the forward direction: leaves at the top, the output at the bottom, each edge labelled
with the shape and dtype of the tensor that flowed along it.
"""
import re
import shutil
import subprocess
from collections import deque

from .graph import AccumulateGrad
from .tensor import Tensor

__all__ = ["Graph", "GraphvizNotFoundError", "graph"]

_INSTALL_HINT = ("install Graphviz, which provides it: `apt install graphviz` (Debian, Ubuntu), "
                 "`brew install graphviz` (macOS) or `conda install graphviz`; the DOT text "
                 "itself (str(g)) needs nothing")
_STYLE = {  # fill colours, as torchviz's pictures use them, so the picture reads familiar
    "function": "lightgrey", "accumulate": "lightgrey", "leaf": "lightblue",
    "output": "darkolivegreen1", "saved": "orange",
}


class GraphvizNotFoundError(RuntimeError):
    """Rendering needs Graphviz's ``dot`` program and it is not on ``PATH``."""


class Graph:
    """An autograd graph as DOT text: ``str(g)`` and ``g.source`` give the text,
    ``g.render(path)`` writes a picture, and notebooks show it through ``_repr_svg_``."""

    def __init__(self, source):
        self.source = source

    def __str__(self):
        return self.source

    def __repr__(self):
        return f"<sg.viz.Graph: {self.source.count(' -> ')} edges>"

    def pipe(self, format="svg"):
        """The picture as bytes in ``format`` (any output format ``dot -T`` knows)."""
        if not re.fullmatch(r"[A-Za-z0-9_:]+", format):
            raise ValueError(f"format {format!r}: expected a Graphviz output format such as 'svg' or 'png'")
        dot = shutil.which("dot")
        if dot is None:
            raise GraphvizNotFoundError(f"rendering the graph needs the Graphviz `dot` program, "
                                        f"which is not on PATH: {_INSTALL_HINT}")
        done = subprocess.run([dot, f"-T{format}"], input=self.source.encode("utf-8"),
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"dot -T{format} failed: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def render(self, path, format="svg"):
        """Write the picture to ``path`` (exactly that name) in ``format``, ``"svg"`` or
        ``"png"`` (or another ``dot -T`` format); return ``path``. Raises
        ``GraphvizNotFoundError`` when Graphviz is not installed."""
        data = self.pipe(format)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def to_graphviz(self):
        """The graph as a ``graphviz.Source``, for that package's tools (viewing, layouts,
        other engines); needs the ``graphviz`` extra."""
        try:
            import graphviz
        except ImportError:
            raise ImportError("to_graphviz needs the graphviz package: pip install 'stagegrad[graphviz]' "
                              "(it draws through Graphviz's dot program: " + _INSTALL_HINT + ")") from None
        return graphviz.Source(self.source)

    def _repr_svg_(self):
        # notebooks: the picture where Graphviz is installed, else (None) the plain repr
        try:
            return self.pipe("svg").decode("utf-8")
        except GraphvizNotFoundError:
            return None


def graph(output, params=None, show_saved=True):
    """The autograd graph that produced ``output`` (a tensor, or a tuple or list of them),
    as a ``Graph``.

    One node per Function application, named as its ``grad_fn`` is; edges carry the shape
    and dtype of the tensor that flowed along them (``3x4 float32``); leaves that require
    a gradient appear with their ``AccumulateGrad`` node, named from ``params`` (a mapping
    of name to tensor such as ``dict(model.named_parameters())``) or else by shape; with
    ``show_saved``, the tensors each Function saved for its backward hang off it as small
    nodes (after a backward without ``retain_graph`` they are freed and not shown). The
    text is deterministic: the same graph gives the same DOT."""
    outputs = list(output) if isinstance(output, (tuple, list)) else [output]
    if not outputs or not all(isinstance(t, Tensor) for t in outputs):
        raise TypeError("sg.viz.graph expects a tensor or a tuple or list of tensors")
    if not any(t.requires_grad for t in outputs):
        raise ValueError("the output does not require grad: no autograd graph was recorded "
                         "(was it computed under no_grad, or from tensors without requires_grad?)")
    names = {}
    for name, t in (params or {}).items():
        names.setdefault(id(t), []).append(str(name))
    return Graph(_Writer(names, show_saved).write(outputs))


class _Writer:
    """Walks the graph breadth first from the outputs and emits one DOT statement per
    node and edge, in the order met: the order, hence the text, is deterministic."""

    def __init__(self, names, show_saved):
        self.names = names
        self.show_saved = show_saved
        self.ids = {}  # id(graph node) -> DOT id; the nodes are kept alive by the outputs
        self.lines = []

    def write(self, outputs):
        queue = deque()
        for k, t in enumerate(outputs):
            out_id = f"out{k}"
            self._node(out_id, ["output", _meta(t.shape, t.dtype)], "output", shape="ellipse")
            source = t.grad_fn if t.grad_fn is not None else (t if t.requires_grad else None)
            if source is None:
                continue
            src_id, new = self._id(source)
            if new:
                queue.append(source)
            index = t._output_nr if t.grad_fn is not None else 0
            self._edge(src_id, out_id, _meta(t.shape, t.dtype), index, source)
        while queue:
            self._visit(queue.popleft(), queue)
        return "\n".join(["digraph autograd {",
                          '  graph [rankdir=TB, fontname="Helvetica"];',
                          '  node [shape=box, style="filled,rounded", fontname="Helvetica", fontsize=11];',
                          '  edge [fontname="Helvetica", fontsize=9];',
                          *self.lines, "}", ""])

    def _visit(self, node, queue):
        my_id = self.ids[id(node)]
        if isinstance(node, Tensor):  # an output that is itself a leaf
            self._leaf(my_id, node)
            return
        if isinstance(node, AccumulateGrad):
            self._node(my_id, ["AccumulateGrad"], "accumulate")
            leaf_id = my_id + "_leaf"
            self._leaf(leaf_id, node.tensor)
            self.lines.append(f"  {leaf_id} -> {my_id};")
            return
        self._node(my_id, [_function_name(node)], "function")
        for i, (edge, meta) in enumerate(zip(node.next_edges, node.input_meta)):
            if edge is None:
                continue
            child, index = edge
            child_id, new = self._id(child)
            if new:
                queue.append(child)
            self._edge(child_id, my_id, _meta(*meta), index, child)
        if self.show_saved:
            self._saved(my_id, node.ctx)

    def _leaf(self, dot_id, t):
        label = self.names.get(id(t)) or ["leaf"]
        self._node(dot_id, [", ".join(label), _meta(t.shape, t.dtype)], "leaf")

    def _saved(self, owner, ctx):
        saved = [(f"saved {i}", t) for i, t in enumerate(getattr(ctx, "_saved", ()) or ())]
        # tensors a forward kept as context attributes are saved for the backward as well
        attrs = getattr(ctx, "__dict__", {})
        saved += [(k, attrs[k]) for k in sorted(attrs) if not k.startswith("_")]
        k = 0
        for label, t in saved:
            if isinstance(t, Tensor):
                sid = f"{owner}_s{k}"
                k += 1
                self._node(sid, [label, _meta(t.shape, t.dtype)], "saved", fontsize=9, height=0.2)
                self.lines.append(f"  {sid} -> {owner} [style=dashed, arrowhead=none];")

    def _id(self, node):
        key = id(node)
        if key in self.ids:
            return self.ids[key], False
        self.ids[key] = f"n{len(self.ids)}"
        return self.ids[key], True

    def _node(self, dot_id, lines, kind, **attrs):
        label = "\\n".join(_escape(s) for s in lines)
        extra = "".join(f", {k}={v}" for k, v in attrs.items())
        self.lines.append(f'  {dot_id} [label="{label}", fillcolor={_STYLE[kind]}{extra}];')

    def _edge(self, src, dst, label, index, src_node):
        # a node with several outputs: say which one flowed
        if getattr(src_node, "n_outputs", 1) > 1:
            label = f"[{index}] {label}"
        self.lines.append(f'  {src} -> {dst} [label=" {_escape(label)}"];')


def _function_name(node):
    name = node.name()
    op = getattr(node.ctx, "op", None)  # one Function class for many ops (Unary): say which
    return f"{name} ({op})" if isinstance(op, str) else name


def _meta(shape, dtype):
    """``3x4 float32``; ``scalar float32`` for a zero-dimensional tensor."""
    dims = "x".join(str(int(n)) for n in shape) if len(shape) else "scalar"
    return f"{dims} {getattr(dtype, 'name', dtype)}"


def _escape(text):
    """``text`` for a double-quoted DOT string: backslashes and quotes escaped, line breaks
    as DOT's ``\\n``."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
