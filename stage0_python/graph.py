"""The autograd graph: grad mode, ``Function.apply`` recording ``Node``s, and the engine
that walks them back. This is the part of autograd every operation runs; ``autograd.py``
builds the public API on it.

``Function.apply`` runs a forward with grad mode off and, when any input needs a
gradient, records a ``Node``: the function, its context, and one *edge* per input
(the node that produced the input, or the leaf's ``AccumulateGrad``). Edges are fixed
when the node is made, so rebinding a tensor later (an in-place op) never rewires an
old graph. ``_run`` orders the graph by counting dependencies and walks it with an
explicit queue: depth is bounded by memory, not by Python's recursion limit.

Design: this file is the one source of the graph for every stage. Stages 0 to 2 run it as
Python; stages 3 and 4 compile it with Cython's pure-Python mode, their ``graph.pxd``
making Context, Node and AccumulateGrad extension types with typed fields and
``apply_function`` and the engine's helpers C functions over typed tensors. The only
place the two differ is grad mode: a C thread-local int when compiled (``COMPILED``), a
``threading.local`` in Python; both are per thread, as in PyTorch. What stays Python in
every stage is what the user writes: each Function's ``forward`` and ``backward``, and hooks.
"""
import threading

from . import backend as _backend

try:  # compiled by Cython, ``cython.compiled`` is True; stage 0 needs no Cython to run
    import cython
    COMPILED = cython.compiled
except ImportError:
    COMPILED = False

_state = threading.local()  # grad mode per thread, when run as Python
grad_off = 0  # compiled: the C thread-local that graph.pxd declares (0: grad mode on)


def is_grad_enabled():
    """Whether operations are being recorded for backward (per thread; on by default)."""
    if COMPILED:
        return not grad_off
    return getattr(_state, "enabled", True)


def _set_grad_enabled(mode):
    """Set this thread's grad mode; return the previous one."""
    global grad_off
    prev = is_grad_enabled()
    if COMPILED:
        grad_off = not mode
    else:
        _state.enabled = bool(mode)
    return prev


class HookTypeError(RuntimeError, TypeError):
    """A tensor hook returned a gradient of another dtype (PyTorch: ``RuntimeError``)."""


class HookSizeError(RuntimeError, ValueError):
    """A tensor hook returned a gradient of another shape (PyTorch: ``RuntimeError``)."""


class Context:
    """What a forward leaves for its backward (any attribute may be set on it)."""

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
        self._versions = tuple([None if t is None else t._data.version for t in tensors])

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
        for i in range(len(self._saved)):
            t = self._saved[i]
            if t is not None and t._data.version != self._versions[i]:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: saved tensor {i} of shape {list(t._data.shape)} and dtype "
                    f"{t._data.dtype.name} is at version {t._data.version}; expected version "
                    f"{self._versions[i]} instead.")
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
        return tuple([e if e is not None else (None, 0) for e in self.next_edges])

    def run(self, grads, retain_graph):
        """Run the backward on ``grads``, the gradients of the outputs (the engine's call)."""
        ctx = self.ctx
        if ctx._freed:
            ctx.saved_tensors  # raises the clear error
        if ctx.materialize_grads and None in grads:
            grads = [grads[i] if grads[i] is not None else _zeros(ctx.output_meta[i])
                     for i in range(len(grads))]
        out = self.fn.backward(ctx, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        n = len(self.next_edges)
        if len(out) < n or any([g is not None for g in out[n:]]):
            raise RuntimeError(f"function {self.name()} returned {len(out)} gradients; "
                               f"expected {n} (one per forward input)")
        checked = [None] * n
        for i in range(n):
            g = out[i]
            if g is None or self.next_edges[i] is None:
                continue
            shape, dtype = self.input_meta[i]
            if g._data.shape != shape:
                raise RuntimeError(f"function {self.name()} returned an invalid gradient at index "
                                   f"{i}: got shape {list(g._data.shape)} but expected {list(shape)}")
            checked[i] = g if g._data.dtype is dtype else g.to(dtype)
        if not retain_graph:
            ctx.release()
        return checked


class AccumulateGrad(Node):
    """The sink of a leaf: adds the incoming gradient to ``tensor.grad``."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor
        self.next_edges = ()
        self.n_outputs = 1
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
        return apply_function(cls, args, kwargs)


def apply_function(cls, args, kwargs):
    """``cls.apply(*args, **kwargs)`` (see ``Function.apply``)."""
    ctx = Context()
    enabled = is_grad_enabled()
    count = len(args)
    needs = [False] * count
    track = False
    for i in range(count):
        if isinstance(args[i], TensorCore):
            t = args[i]
            if enabled and t._view is not None:
                t._sync_view()  # a view changed in place since it was made: re-derive it
            if t.requires_grad:
                needs[i] = True
                track = True
    track = track and enabled
    ctx.needs_input_grad = tuple(needs)
    _set_grad_enabled(False)
    try:
        out = cls.forward(ctx, *args, **kwargs) if kwargs else cls.forward(ctx, *args)
    finally:
        _set_grad_enabled(enabled)
    if not track:
        return out
    outputs = out if isinstance(out, tuple) else (out,)
    if any([o is a for o in outputs for a in args]):
        # an input handed back unchanged gets a new Tensor: the input keeps its own
        # place in the graph (a leaf stays a leaf)
        outputs = tuple([_returned_input(o) if any([o is a for a in args]) else o for o in outputs])
        out = outputs if isinstance(out, tuple) else outputs[0]
    edges = [None] * count
    meta = [None] * count
    for i in range(count):
        if needs[i]:
            t = args[i]
            edges[i] = _edge(t)
            meta[i] = (t._data.shape, t._data.dtype)
    node = Node(cls, ctx, tuple(edges), len(outputs), tuple(meta))
    ctx.output_meta = tuple([(o._data.shape, o._data.dtype) for o in outputs])
    non_diff = ctx.non_differentiable
    for i in range(len(outputs)):
        o = outputs[i]
        if not o._data.dtype.is_floating_point or any([o is x for x in non_diff]):
            continue  # bool and integers, and what the forward marked: not differentiable
        o.requires_grad = True
        o.grad_fn = node
        o._output_nr = i
    return out


def _run(roots, retain_graph, capture=None):
    """Propagate ``roots`` [(node, output index, grad)] through the graph.
    With ``capture`` {(id(node), index): slot}, return those gradients instead of
    accumulating into leaves."""
    deps = {}  # node -> edges into it not yet walked
    stack = list({id(r[0]): r[0] for r in roots}.values())
    seen = set(stack)
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            nxt = edge[0]
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    buffers = {}  # node -> its outputs' gradients so far
    for node, i, g in roots:
        _add(buffers, node, i, g)
    ready = [n for n in {id(r[0]): r[0] for r in roots}.values() if deps.get(n, 0) == 0]
    captured = {}
    while ready:
        node = ready.pop()
        grads = buffers.pop(node, None)
        if grads is not None:
            if node.hooks:
                _run_hooks(node.hooks, grads)
            if node.retained:
                for i, ref in node.retained.items():
                    t = ref()
                    if t is not None and grads[i] is not None:
                        t.grad = grads[i].detach() if t.grad is None else (t.grad + grads[i]).detach()
        if capture is not None and grads is not None:
            for i in range(len(grads)):
                slot = capture.get((id(node), i))
                if slot is not None:
                    captured[slot] = grads[i]
            if isinstance(node, AccumulateGrad):
                grads = None
        if grads is not None and any([g is not None for g in grads]):
            outs = node.run(grads, retain_graph)
        else:
            outs = [None] * len(node.next_edges)
        for i in range(len(node.next_edges)):
            edge = node.next_edges[i]
            if edge is None:
                continue
            nxt = edge[0]
            if outs[i] is not None:
                _add(buffers, nxt, edge[1], outs[i])
            deps[nxt] -= 1
            if deps[nxt] == 0:
                ready.append(nxt)
    return captured


def _add(buffers, node, i, g):
    """Add ``g`` to the gradient of output ``i`` of ``node`` gathered so far."""
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node.n_outputs
    buf[i] = g if buf[i] is None else buf[i] + g


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


# Tensor's base, imported last: tensor_core's operators reach this module's Functions
# through ``ops``, and either module may be imported first
from .tensor_core import TensorCore  # noqa: E402
