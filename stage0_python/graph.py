"""The autograd graph: grad mode, ``Function.apply`` recording ``Node``s, and the engine
that walks them back. This is the part of autograd every operation runs (a stage may
compile it); ``autograd.py`` builds the public API on it.

``Function.apply`` runs a forward with grad mode off and, when any input needs a
gradient, records a ``Node``: the function, its context, and one *edge* per input
(the node that produced the input, or the leaf's ``AccumulateGrad``). Edges are fixed
when the node is made, so rebinding a tensor later (an in-place op) never rewires an
old graph. ``_run`` orders the graph by counting dependencies and walks it with an
explicit queue: depth is bounded by memory, not by Python's recursion limit.
"""
import threading
from collections import defaultdict

from . import backend as _backend
# Tensor's base, as in graph.pyx: this module loads before Tensor exists (the methods Tensor
# inherits from sorting.py, scans.py and scatter.py define Functions)
from .tensor_core import TensorCore

_state = threading.local()  # grad mode is per thread, as in PyTorch


def is_grad_enabled():
    """Whether operations are being recorded for backward (per thread; on by default)."""
    return getattr(_state, "enabled", True)


def _set_grad_enabled(mode):
    """Set this thread's grad mode; return the previous one."""
    prev = getattr(_state, "enabled", True)
    _state.enabled = mode
    return prev


class HookTypeError(RuntimeError, TypeError):
    """A tensor hook returned a gradient of another dtype (PyTorch: ``RuntimeError``)."""


class HookSizeError(RuntimeError, ValueError):
    """A tensor hook returned a gradient of another shape (PyTorch: ``RuntimeError``)."""


class Context:
    """What a forward leaves for its backward."""

    def __init__(self):
        self._saved = ()
        self._versions = ()
        self._freed = False
        self.needs_input_grad = ()
        self.non_differentiable = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` for ``backward``; see torch.autograd.function.FunctionCtx.save_for_backward."""
        self._saved = tensors
        self._versions = tuple(None if t is None else t._version for t in tensors)

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that get no gradient; see
        torch.autograd.function.FunctionCtx.mark_non_differentiable."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        """Whether ``backward`` receives zeros (True, the default) or None for outputs without a gradient;
        see torch.autograd.function.FunctionCtx.set_materialize_grads."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``; an error once the graph is freed, or when one of
        them was modified in place since."""
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward(); specify retain_graph=True to keep them.")
        for i, (t, v) in enumerate(zip(self._saved, self._versions)):
            if t is not None and t._version != v:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: saved tensor {i} of shape {list(t.shape)} and dtype "
                    f"{t.dtype.name} is at version {t._version}; expected version {v} instead.")
        return self._saved

    def release(self):
        """Free the saved tensors: the engine calls it after a backward without ``retain_graph``."""
        self._saved = ()
        self._freed = True


class Node:
    """A recorded op: ``grad_fn`` of the tensors it produced."""

    __slots__ = ("fn", "ctx", "next_edges", "n_outputs", "input_meta", "hooks", "retained",
                 "__weakref__")

    def __init__(self, fn, ctx, next_edges, n_outputs, input_meta):
        self.fn = fn
        self.ctx = ctx
        self.next_edges = next_edges
        self.n_outputs = n_outputs
        self.input_meta = input_meta  # (shape, dtype) per edge, for checking backward
        self.hooks = None
        self.retained = None

    def name(self):
        """The node's name: the Function's name and ``Backward``, as PyTorch names its nodes."""
        return self.fn.__name__ + "Backward"

    def __repr__(self):
        return f"<{self.name()}>"

    @property
    def next_functions(self):
        """``(node, output index)`` for each input, ``(None, 0)`` where it needs no gradient; see
        ``grad_fn.next_functions`` in PyTorch."""
        return tuple(e if e is not None else (None, 0) for e in self.next_edges)

    def run(self, grads, retain_graph):
        """Run the backward on ``grads``, the gradients of the outputs (the engine's call)."""
        if self.ctx._freed:
            self.ctx.saved_tensors  # raises the clear error
        if self.ctx.materialize_grads and any(g is None for g in grads):
            grads = [g if g is not None else _zeros(meta) for g, meta in
                     zip(grads, self.ctx.output_meta)]
        out = self.fn.backward(self.ctx, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        n = len(self.next_edges)
        if len(out) < n or any(g is not None for g in out[n:]):
            raise RuntimeError(f"function {self.name()} returned {len(out)} gradients; "
                               f"expected {n} (one per forward input)")
        out = out[:n]
        checked = []
        for i, (g, edge, meta) in enumerate(zip(out, self.next_edges, self.input_meta)):
            if g is None or edge is None:
                checked.append(None)
                continue
            shape, dtype = meta
            if tuple(g.shape) != shape:
                raise RuntimeError(f"function {self.name()} returned an invalid gradient at index "
                                   f"{i}: got shape {list(g.shape)} but expected {list(shape)}")
            checked.append(g if g.dtype is dtype else g.to(dtype))
        if not retain_graph:
            self.ctx.release()
        return checked


class AccumulateGrad:
    """The sink of a leaf: adds the incoming gradient to ``tensor.grad``."""

    __slots__ = ("tensor", "next_edges", "hooks", "retained", "__weakref__")
    n_outputs = 1

    def __init__(self, tensor):
        self.tensor = tensor
        self.next_edges = ()
        self.hooks = None
        self.retained = None

    def name(self):
        """``"AccumulateGrad"``, as PyTorch names the node that ends at a leaf."""
        return "AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad>"

    @property
    def next_functions(self):
        """Empty: the graph ends at a leaf."""
        return ()

    def run(self, grads, retain_graph):
        """Add the gradient into the leaf's ``.grad`` (the engine's call)."""
        g = grads[0]
        t = self.tensor
        if g is None:
            return []
        if t.grad is None:
            # a copy: one upstream gradient may reach several leaves, and .grad is
            # later updated in place (clip_grad_norm_, user code)
            t.grad = g.detach().clone()
        else:
            t.grad = (t.grad + g).detach()
        return []


def _zeros(meta):
    shape, dtype = meta
    return TensorCore._make(_backend.full(shape, 0, dtype))


def _edge(t):
    """Where a gradient for ``t`` must go: (node, output index) or None."""
    if not t.requires_grad:
        return None
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    acc = t._accumulator
    if acc is None:
        acc = t._accumulator = AccumulateGrad(t)
    return (acc, 0)


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` and
    call ``YourFunction.apply(*args)``. ``backward`` returns one gradient per forward
    argument (``None`` for non-tensors or inputs that need none)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """The computation, which subclasses define as a static method taking ``ctx``; see
        torch.autograd.Function.forward."""
        raise NotImplementedError(f"{type(ctx).__name__}.forward is not implemented")

    @staticmethod
    def backward(ctx, *grads):
        """The gradients of the inputs from those of the outputs, which subclasses define as a static
        method taking ``ctx``; see torch.autograd.Function.backward."""
        raise NotImplementedError("backward is not implemented for this Function")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and, when grad mode is on and an input requires grad, record the node whose
        backward is ``backward``; see torch.autograd.Function.apply."""
        ctx = Context()
        if is_grad_enabled():
            _sync_views(args)
        needs = tuple(isinstance(a, TensorCore) and a.requires_grad for a in args)
        track = any(needs) and is_grad_enabled()
        ctx.needs_input_grad = needs
        prev = is_grad_enabled()
        _state.enabled = False
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.enabled = prev
        if not track:
            return out
        outputs = out if isinstance(out, tuple) else (out,)
        if any(o is a for o in outputs for a in args):
            # an input handed back unchanged gets a new Tensor: the input keeps its own
            # place in the graph (a leaf stays a leaf)
            outputs = tuple(_returned_input(o) if any(o is a for a in args) else o
                            for o in outputs)
            out = outputs if isinstance(out, tuple) else outputs[0]
        edges = tuple(_edge(a) if n else None for a, n in zip(args, needs))
        meta = tuple((tuple(a.shape), a.dtype) if n else None for a, n in zip(args, needs))
        node = Node(cls, ctx, edges, len(outputs), meta)
        ctx.output_meta = tuple((tuple(o.shape), o.dtype) for o in outputs)
        non_diff = {id(t) for t in ctx.non_differentiable}
        for i, o in enumerate(outputs):
            if id(o) in non_diff or not o.dtype.is_floating_point:
                continue
            o.requires_grad = True
            o.grad_fn = node
            o._output_nr = i
        return out


def _run(roots, retain_graph, capture=None):
    """Propagate ``roots`` [(node, output index, grad)] through the graph.
    With ``capture`` {(node, index): slot}, return those gradients instead of
    accumulating into leaves."""
    deps = defaultdict(int)
    stack = list({id(n): n for n, _, _ in roots}.values())
    seen = {id(n) for n in stack}
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            nxt = edge[0]
            deps[id(nxt)] += 1
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    buffers = {}
    nodes = {}

    def add(node, i, g):
        buf = buffers.get(id(node))
        if buf is None:
            buf = buffers[id(node)] = [None] * node.n_outputs
            nodes[id(node)] = node
        buf[i] = g if buf[i] is None else buf[i] + g

    for node, i, g in roots:
        add(node, i, g)
    ready = [n for n in {id(n): n for n, _, _ in roots}.values() if deps[id(n)] == 0]
    captured = {}
    while ready:
        node = ready.pop()
        grads = buffers.pop(id(node), None)
        if grads is not None:
            if node.hooks:
                _run_hooks(node.hooks, grads)
            if node.retained:
                for i, ref in node.retained.items():
                    t = ref()
                    if t is not None and grads[i] is not None:
                        t.grad = grads[i].detach() if t.grad is None else (t.grad + grads[i]).detach()
        if capture is not None and grads is not None:
            for i, g in enumerate(grads):
                slot = capture.get((id(node), i))
                if slot is not None:
                    captured[slot] = g
            if isinstance(node, AccumulateGrad):
                grads = None
        outs = node.run(grads, retain_graph) if grads is not None and any(
            g is not None for g in grads) else [None] * len(node.next_edges)
        for edge, g in zip(node.next_edges, outs):
            if edge is None:
                continue
            nxt, i = edge
            if g is not None:
                add(nxt, i, g)
            deps[id(nxt)] -= 1
            if deps[id(nxt)] == 0:
                ready.append(nxt)
    return captured


def _run_hooks(hooks, grads):
    """Apply tensor hooks {output index: [hook]} to ``grads`` in place. A hook may return a
    replacement, which PyTorch only accepts as a tensor of the same dtype and shape."""
    for i, registered in hooks.items():
        for hook in registered:
            if grads[i] is None:
                continue
            result = hook(grads[i])
            if result is not None:
                _check_hook_result(hook, grads[i], result)
                grads[i] = result


def _check_hook_result(hook, grad, result):
    # PyTorch's checks and messages (python_hook.cpp); the type comes before the size
    name = getattr(hook, "__name__", repr(hook))
    if not isinstance(result, TensorCore):
        raise TypeError(f"expected Tensor, but hook returned '{type(result).__name__}'")
    if result.dtype is not grad.dtype:
        raise HookTypeError(f"hook '{name}' has changed the type of value (was {grad.dtype.name} "
                            f"got {result.dtype.name})")
    if tuple(result.shape) != tuple(grad.shape):
        raise HookSizeError(f"hook '{name}' has changed the size of value (was {list(grad.shape)} "
                            f"got {list(result.shape)})")


def _returned_input(x):
    """A new Tensor on the storage of an input that a Function handed back. It aliases the
    input, and an in-place change of it would bypass the Function's backward: it is
    marked as a view that cannot be replayed, which views.inplace refuses to modify."""
    from .views import ViewRecord  # here: views builds on the autograd this module is part of
    t = TensorCore._make(x._data)
    t._view = ViewRecord.returned(x)
    return t


def _sync_views(tensors):
    """A view whose storage or base changed in place since it was made gets its place in
    the graph re-derived from its base (views.sync)."""
    for t in tensors:
        if isinstance(t, TensorCore) and t._view is not None:
            t._sync_view()
