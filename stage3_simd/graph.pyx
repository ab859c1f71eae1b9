# cython: language_level=3
"""The autograd graph, compiled: stage 3's rewrite of ``stage0_python/graph.py``.

Design: stage 0's graph is the reference for every rule here (read its docstrings for
the semantics); this file changes only where the time goes. Per operation, the Python
version builds a Context and a Node as Python objects, reads grad mode from a
``threading.local``, and walks tuples with generator expressions; here Context, Node and
AccumulateGrad are extension types with typed fields, grad mode is a C thread-local int,
``Function.apply`` is a C function that ``TensorCore``'s operators call without a Python
call in between, and the engine's loop runs over typed nodes. What stays Python is what
the user writes: each Function's ``forward`` and ``backward``, and hooks.
"""
from stage2_cython._types cimport is_float_code

from .tensor_core cimport TensorCore, make

from . import backend as _backend

cdef extern from *:
    """
    static __thread int sg3_grad_off = 0;  /* per thread, as PyTorch's grad mode; 0: on */
    """
    int sg3_grad_off


cdef bint grad_enabled() noexcept:
    return not sg3_grad_off


def is_grad_enabled():
    """Whether operations are being recorded for backward (per thread; on by default)."""
    return not sg3_grad_off


def _set_grad_enabled(mode):
    """Set this thread's grad mode; return the previous one."""
    global sg3_grad_off
    prev = not sg3_grad_off
    sg3_grad_off = not mode
    return prev


class HookTypeError(RuntimeError, TypeError):
    """A tensor hook returned a gradient of another dtype (PyTorch: ``RuntimeError``)."""


class HookSizeError(RuntimeError, ValueError):
    """A tensor hook returned a gradient of another shape (PyTorch: ``RuntimeError``)."""


cdef class Context:
    """What a forward leaves for its backward (any attribute may be set on it)."""

    def __cinit__(self):
        self._saved = ()
        self._versions = ()
        self.needs_input_grad = ()
        self.non_differentiable = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` (or None) for the backward, which gets them back from
        ``saved_tensors`` only if none was changed in place since."""
        self._saved = tensors
        self._versions = tuple([None if t is None else (<TensorCore>t)._data.storage.version for t in tensors])

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient (indices, masks)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        """Whether the backward gets zeros (True, the default) or None for outputs that
        received no gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        """What ``save_for_backward`` kept, after checking none changed since."""
        cdef Py_ssize_t i
        cdef TensorCore t
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward(); specify retain_graph=True to keep them.")
        for i in range(len(self._saved)):
            if self._saved[i] is None:
                continue
            t = self._saved[i]
            if t._data.storage.version != self._versions[i]:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: saved tensor {i} of shape {list(t._data.shape)} and dtype "
                    f"{t._data.dtype.name} is at version {t._data.storage.version}; expected version "
                    f"{self._versions[i]} instead.")
        return self._saved

    def release(self):
        """Drop the saved tensors (after a backward without ``retain_graph``)."""
        self._saved = ()
        self._freed = True


cdef class Node:
    """A recorded op: ``grad_fn`` of the tensors it produced."""

    def __init__(self, fn, Context ctx, tuple next_edges, Py_ssize_t n_outputs, tuple input_meta):
        self.fn = fn
        self.ctx = ctx
        self.next_edges = next_edges
        self.n_outputs = n_outputs
        self.input_meta = input_meta  # (shape, dtype) per edge, for checking backward

    def name(self):
        """The op's name with ``Backward`` appended, as PyTorch names its nodes."""
        return self.fn.__name__ + "Backward"

    def __repr__(self):
        return f"<{self.name()}>"

    @property
    def next_functions(self):
        """(node, output index) per input, (None, 0) where no gradient flows."""
        return tuple([e if e is not None else (None, 0) for e in self.next_edges])

    cpdef list run(self, list grads, bint retain_graph):
        """The inputs' gradients from the outputs' (checked against the inputs' shapes
        and cast to their dtypes)."""
        cdef Context ctx = self.ctx
        cdef Py_ssize_t i, n = len(self.next_edges)
        cdef TensorCore g
        if ctx._freed:
            _ = ctx.saved_tensors  # raises the clear error
        if ctx.materialize_grads and None in grads:
            grads = [grads[i] if grads[i] is not None else _zeros(ctx.output_meta[i]) for i in range(len(grads))]
        out = self.fn.backward(ctx, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        if len(out) < n or any([x is not None for x in out[n:]]):
            raise RuntimeError(f"function {self.name()} returned {len(out)} gradients; "
                               f"expected {n} (one per forward input)")
        cdef list checked = [None] * n
        for i in range(n):
            if out[i] is None or self.next_edges[i] is None:
                continue
            g = out[i]
            shape, dtype = self.input_meta[i]
            if g._data.shape != shape:
                raise RuntimeError(f"function {self.name()} returned an invalid gradient at index "
                                   f"{i}: got shape {list(g._data.shape)} but expected {list(shape)}")
            checked[i] = g if g._data.dtype is dtype else g.to(dtype)
        if not retain_graph:
            ctx.release()
        return checked


cdef class AccumulateGrad(Node):
    """The sink of a leaf: adds the incoming gradient to ``tensor.grad``."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.next_edges = ()
        self.n_outputs = 1

    def name(self):
        return "AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad>"

    @property
    def next_functions(self):
        return ()

    cpdef list run(self, list grads, bint retain_graph):
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


cdef object _zeros(tuple meta):
    shape, dtype = meta
    return make(_backend.full(shape, 0, dtype))


cdef object _edge_of(TensorCore t):
    if not t.requires_grad:
        return None
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    acc = t._accumulator
    if acc is None:
        acc = t._accumulator = AccumulateGrad(t)
    return (acc, 0)


def _edge(t):
    """Where a gradient for ``t`` must go: (node, output index) or None."""
    return _edge_of(t)


cdef class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` and
    call ``YourFunction.apply(*args)``. ``backward`` returns one gradient per forward
    argument (``None`` for non-tensors or inputs that need none)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """The result from the inputs; runs with grad mode off."""
        raise NotImplementedError(f"{type(ctx).__name__}.forward is not implemented")

    @staticmethod
    def backward(ctx, *grads):
        """The inputs' gradients from the outputs'."""
        raise NotImplementedError("backward is not implemented for this Function")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and, when an input needs a gradient, record the node."""
        return apply_function(cls, args, kwargs)


cdef object apply_function(object cls, tuple args, dict kwargs):
    global sg3_grad_off
    cdef Context ctx = Context.__new__(Context)
    cdef bint enabled = not sg3_grad_off, track = False, n
    cdef Py_ssize_t i, count = len(args)
    cdef TensorCore t
    cdef list needs = [False] * count
    for i in range(count):
        a = args[i]
        if isinstance(a, TensorCore):
            t = a
            if enabled and t._view is not None:
                t._sync_view()  # a view changed in place since it was made: re-derive it
            if t.requires_grad:
                needs[i] = True
                track = True
    track = track and enabled
    ctx.needs_input_grad = tuple(needs)
    sg3_grad_off = 1
    try:
        out = cls.forward(ctx, *args, **kwargs) if kwargs else cls.forward(ctx, *args)
    finally:
        sg3_grad_off = not enabled
    if not track:
        return out
    cdef tuple outputs = out if isinstance(out, tuple) else (out,)
    if any([o is a for o in outputs for a in args]):
        # an input handed back unchanged gets a new Tensor: the input keeps its own
        # place in the graph (a leaf stays a leaf)
        outputs = tuple([_returned_input(o) if any([o is a for a in args]) else o for o in outputs])
        out = outputs if isinstance(out, tuple) else outputs[0]
    cdef list edges = [None] * count, meta = [None] * count
    for i in range(count):
        if needs[i]:
            t = args[i]
            edges[i] = _edge_of(t)
            meta[i] = (t._data.shape, t._data.dtype)
    cdef Node node = Node.__new__(Node)
    node.fn, node.ctx, node.next_edges, node.n_outputs, node.input_meta = \
        cls, ctx, tuple(edges), len(outputs), tuple(meta)
    ctx.output_meta = tuple([((<TensorCore>o)._data.shape, (<TensorCore>o)._data.dtype) for o in outputs])
    non_diff = ctx.non_differentiable
    for i in range(len(outputs)):
        t = outputs[i]
        if not is_float_code(t._data.code) or any([t is x for x in non_diff]):  # bool and integers: not differentiable
            continue
        t.requires_grad = True
        t.grad_fn = node
        t._output_nr = i
    return out


def _run(roots, bint retain_graph, capture=None):
    """Propagate ``roots`` [(node, output index, grad)] through the graph.
    With ``capture`` {(id(node), index): slot}, return those gradients instead of
    accumulating into leaves."""
    cdef dict deps = {}  # node -> edges into it not yet walked
    cdef list stack = list({id(r[0]): r[0] for r in roots}.values())
    cdef set seen = set(stack)
    cdef Node node, nxt
    cdef Py_ssize_t i
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
    cdef dict buffers = {}  # node -> its outputs' gradients so far
    for node, i, g in roots:
        _add(buffers, node, i, g)
    cdef list ready = [n for n in {id(r[0]): r[0] for r in roots}.values() if deps.get(n, 0) == 0]
    cdef dict captured = {}
    cdef list grads, outs
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


cdef void _add(dict buffers, Node node, Py_ssize_t i, object g) except *:
    cdef list buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node.n_outputs
    buf[i] = g if buf[i] is None else buf[i] + g


def _run_hooks(dict hooks, list grads):
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


cdef object _returned_input(TensorCore x):
    """A new Tensor on the storage of an input that a Function handed back. It aliases the
    input, and an in-place change of it would bypass the Function's backward: it is
    marked as a view that cannot be replayed, which views.inplace refuses to modify."""
    from .views import ViewRecord  # here: views builds on the autograd this module is part of
    t = make(x._data)
    t._view = ViewRecord.returned(x)
    return t


def _sync_views(tensors):
    """A view whose storage or base changed in place since it was made gets its place in
    the graph re-derived from its base (views.sync)."""
    for t in tensors:
        if isinstance(t, TensorCore) and (<TensorCore>t)._view is not None:
            t._sync_view()
