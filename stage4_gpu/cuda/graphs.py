"""CUDA graphs, as ``torch.cuda`` spells them: ``CUDAGraph``, ``with sg.cuda.graph(g):``,
``graph_pool_handle()``, ``is_current_stream_capturing()`` and
``make_graphed_callables``.

A graph is a recording of the device work a piece of the program queues: captured once,
replayed with one call. What a replay saves is the host's work per launch (the frontend,
the autograd engine, the launcher: tens of microseconds an operation), not the device's.
Capture is the driver's stream capture on the runtime's one stream (``runtime.py``):
every launch and library call (cuBLAS) queued between ``capture_begin`` and
``capture_end`` is recorded with its arguments by value, so a replay runs the same kernels
on the same addresses. Under the host emulation (``tools/cuda_on_host``) the emulated
stream records the launches the same way and its graph runs the records in order; in the
null launch mode a graph holds only the count of its launches, and a replay counts them.

Memory allocated during a capture comes from the graph's private pool (a caching
allocator of its own over a CuPy ``MemoryPool``): it stays the graph's while the graph or a
tensor of the pool lives, and is never handed to an allocation outside a capture, so the
addresses a replay writes are not another tensor's. Inputs and outputs are ordinary
tensors: copy new data into the inputs the capture read (``static.copy_(x)``) and read the
outputs it wrote after a replay.

What a capture cannot record is refused, naming it, and ends the capture (its graph is
discarded, the runtime stays usable): a host synchronization (``.item()``, ``.tolist()``,
``synchronize()``), a read of device memory. Values the host computes are frozen into what
is recorded: a scalar argument of a launch, a tensor the frontend makes on the host and
copies over (``ones``, ``arange``: the copy is recorded from a snapshot of its bytes that
the graph keeps; a copy from page-locked memory reads that memory at every replay, as
CUDA's), and equally an optimizer's bias correction from its step count, a learning rate
schedule's next rate or a dropout mask, which would be replayed unchanged; so capture only
steps whose host-side values stay constant. Index and cross-entropy target checks run in
the kernels (``runtime.py``), so a replay checks them too.
"""
import contextlib
import gc

from .runtime import OPENING, runtime

CAPTURE_ERROR_MODES = ("global", "thread_local", "relaxed")


def _gpu(op):
    """The runtime, or CudaUnavailableError naming ``op`` (``__init__._gpu``)."""
    from . import _gpu
    return _gpu(op)


class _GraphPool:
    """A graphs' private memory pool: the opaque token ``graph_pool_handle()`` and
    ``CUDAGraph.pool()`` return, which another capture may share (``pool=``). ``memory``
    is its CuPy ``MemoryPool``, ``allocator`` the caching allocator tensors get their memory
    from while it captures (drawing on ``memory``: the runtime allocates under CuPy's
    ``using_allocator`` while capturing)."""
    __slots__ = ("allocator", "memory")

    def __init__(self):
        from .._device_memory import CachingAllocator
        rt = runtime()
        self.memory = rt.cp.cuda.MemoryPool()
        self.allocator = CachingAllocator(rt.raw_memory)

    def __repr__(self):
        return f"<cuda graph pool at {id(self):#x}: {self.allocator.allocated_bytes} bytes in use>"


def graph_pool_handle():
    """A new private memory pool's token, for captures that are to share it (``pool=``):
    graphs sharing a pool must be replayed in the order they were captured, since a later
    capture may reuse memory an earlier one freed."""
    _gpu("graph_pool_handle")
    return _GraphPool()


def is_current_stream_capturing():
    """Whether a CUDA graph is being captured on the device's stream; False, without
    opening the device, where it has not been opened."""
    return OPENING.opened and runtime().capture is not None


class CUDAGraph:
    """A CUDA graph: ``capture_begin()`` ... ``capture_end()`` (or ``with sg.cuda.graph(g):``)
    records the device work queued in between, ``replay()`` runs it again."""

    def __init__(self, keep_graph=False):
        _gpu("CUDAGraph")
        self._capture = None  # the runtime's capture while this graph is captured
        self._graph = None  # the driver's graph (None for a null mode's)
        self._held = []  # the page-locked host memory its recorded copies read
        self._recorded = 0  # the launches it holds
        self._captured = False
        self._null = False
        self._pool = None

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Start capturing the work queued on the device's stream into this graph, its
        memory from ``pool`` (a token from ``graph_pool_handle()`` or another graph's
        ``pool()``; a new private pool by default). ``capture_error_mode`` is accepted as
        PyTorch's, and the driver captures in relaxed mode whatever it says: CuPy's pool may
        call cudaMalloc during a capture, which the other modes forbid; the host waits the
        stricter modes guard against are refused by the runtime itself."""
        if capture_error_mode not in CAPTURE_ERROR_MODES:
            raise ValueError(f"CUDAGraph.capture_begin: capture_error_mode is one of {CAPTURE_ERROR_MODES}, "
                             f"not {capture_error_mode!r}")
        if self._captured or self._capture is not None:
            raise RuntimeError("CUDAGraph.capture_begin: this graph already holds a capture; reset() it, or "
                               "capture into a new CUDAGraph")
        if pool is not None and not isinstance(pool, _GraphPool):
            raise TypeError(f"CUDAGraph.capture_begin: pool is a token from graph_pool_handle() or another "
                            f"graph's pool(), not {type(pool).__name__}")
        self._pool = pool if pool is not None else _GraphPool()
        self._capture = runtime().capture_begin(self._pool)

    def capture_end(self):
        """End the capture: the graph holds the work queued since ``capture_begin``."""
        capture, self._capture = self._capture, None
        if capture is None:
            raise RuntimeError("CUDAGraph.capture_end: no capture under way (call capture_begin first)")
        if capture.failed is not None:
            raise RuntimeError(f"CUDAGraph.capture_end: the capture was ended early, and its graph "
                               f"discarded, by: {capture.failed}")
        self._graph, self._recorded = runtime().capture_end()
        self._null, self._captured, self._held = capture.null, True, capture.held

    def replay(self):
        """Queue the captured work again (the host does not wait for it)."""
        if not self._captured:
            raise RuntimeError("CUDAGraph.replay: no graph has been captured (capture_begin and capture_end, "
                               "or `with sg.cuda.graph(g):`, first)")
        rt = runtime()
        if self._null and rt.launcher.mode != "null":
            raise RuntimeError("CUDAGraph.replay: the graph was captured in the null launch mode, which "
                               "records no launch; capture it again to run it")
        rt.replay(self._graph, self._recorded)

    def reset(self):
        """Drop the captured graph and this graph's hold on its pool: the pool's memory goes
        when no graph and no tensor holds it. The graph may then capture again."""
        if self._capture is not None:
            raise RuntimeError("CUDAGraph.reset: the graph is being captured (capture_end it first)")
        self._release()
        self._graph, self._recorded, self._captured, self._null, self._pool = None, 0, False, False, None

    def _release(self):
        """Let the page-locked memory the recorded copies read go once the stream has passed
        every replay queued so far (a replay returns before its copies have run)."""
        if self._held:
            rt = runtime()
            if rt.capture is not None:  # no event may be queued on a capturing stream: the new graph keeps it
                rt.capture.held.extend(self._held)
            else:
                rt._hold(self._held)
        self._held = []

    def __del__(self):
        if getattr(self, "_held", None) and OPENING.opened:
            self._release()

    def pool(self):
        """The token of this graph's memory pool, which another capture may share."""
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool: the graph has no pool before capture_begin")
        return self._pool

    def _abandon(self):
        """An error inside ``with graph(...)``: end this graph's capture if the runtime has
        not, and discard it."""
        capture, self._capture = self._capture, None
        rt = runtime()
        if capture is not None and rt.capture is capture:
            with contextlib.suppress(Exception):  # the driver may refuse to end an invalidated capture
                rt.capture_end()
        self.reset()


class graph:
    """``with sg.cuda.graph(g):`` captures the block's device work into the CUDAGraph ``g``,
    after waiting for the device and collecting garbage (as PyTorch does: the capture starts
    from finished work). ``pool`` as ``capture_begin``'s. ``stream`` must be None: the device
    has one stream, which the capture records. An error inside ends the capture and
    discards it."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        _gpu("graph")
        if stream is not None:
            raise ValueError("graph: the cuda device has one stream, which the capture records: stream must "
                             "be None")
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph: expected a CUDAGraph, got {type(cuda_graph).__name__}")
        self.cuda_graph, self.pool, self.capture_error_mode = cuda_graph, pool, capture_error_mode

    def __enter__(self):
        rt = runtime()
        if rt.capture is not None:  # before the synchronize, which would end that capture
            raise RuntimeError("graph: a CUDA graph is already being captured (captures do not nest)")
        rt.synchronize()
        gc.collect()
        self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, kind, error, traceback):
        if kind is None:
            self.cuda_graph.capture_end()
        else:
            self.cuda_graph._abandon()
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """Graphed versions of ``callables`` (a module or function, or a tuple of them, in the
    order they run), each run by ``sample_args`` (a tuple of tensors; a tuple of such
    tuples for a tuple of callables): its forward captured into one graph and its backward
    into another, both replayed inside one autograd node, so that the result is a drop-in
    replacement in a training loop. Each is run ``num_warmup_iters`` times first (compiling
    its kernels and building any lazy state outside the capture); the captures share one
    pool (``pool``, or a new one). A module's ``forward`` is replaced and the module
    returned; in the other training mode it runs its own forward. Each call copies its
    arguments into the static inputs the capture read (unless they are those tensors) and
    returns tensors over the static outputs, which the next call overwrites."""
    _gpu("make_graphed_callables")
    from .. import autograd, empty_like, ones_like
    from ..nn import Module
    from ..tensor import Tensor
    one = not isinstance(callables, tuple)
    if one:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError(f"make_graphed_callables: {len(callables)} callables and {len(sample_args)} tuples "
                         f"of sample arguments")
    surfaces = []
    for c, args in zip(callables, sample_args):
        if not isinstance(args, tuple) or not all(isinstance(a, Tensor) for a in args):
            raise TypeError("make_graphed_callables: sample arguments are a tuple of tensors per callable")
        if isinstance(c, Module) and any(m._forward_hooks or m._forward_pre_hooks for m in c.modules()):
            raise RuntimeError("make_graphed_callables: modules must have no hooks registered: a replay "
                               "would not run them")
        params = tuple(c.parameters()) if isinstance(c, Module) else ()
        surfaces.append(args + params)

    def needing(tensors):
        return tuple(t for t in tensors if t.requires_grad)

    # warm-up: eager forwards and backwards, so nothing is compiled or built for the first
    # time inside a capture
    for c, args, surface in zip(callables, sample_args, surfaces):
        for _ in range(num_warmup_iters):
            outs = needing(_flat(c(*args)))
            if outs and needing(surface):
                autograd.grad(outs, needing(surface), [ones_like(o) for o in outs],
                              allow_unused=allow_unused_input)
    pool = pool if pool is not None else graph_pool_handle()
    forward_graphs = [CUDAGraph() for _ in callables]
    backward_graphs = [CUDAGraph() for _ in callables]
    outputs, shapes = [], []
    for c, args, g in zip(callables, sample_args, forward_graphs):
        with graph(g, pool=pool):
            out = c(*args)
        outputs.append(_flat(out))
        shapes.append(not isinstance(out, (tuple, list)))
    # the backwards in reverse order, as they run
    grad_outputs, grad_inputs = [None] * len(callables), [None] * len(callables)
    for k in reversed(range(len(callables))):
        static_grads = tuple(empty_like(o) if o.requires_grad else None for o in outputs[k])
        wanted = needing(surfaces[k])
        got = ()
        with graph(backward_graphs[k], pool=pool):
            if wanted and needing(outputs[k]):
                got = autograd.grad(needing(outputs[k]), wanted, [g for g in static_grads if g is not None],
                                    allow_unused=allow_unused_input)
        got = iter(got)
        grad_inputs[k] = tuple(next(got, None) if t.requires_grad else None for t in surfaces[k])
        grad_outputs[k] = static_grads

    graphed = []
    for k, c in enumerate(callables):
        run = _graphed(autograd.Function, surfaces[k], forward_graphs[k], backward_graphs[k], outputs[k],
                       grad_outputs[k], grad_inputs[k], shapes[k], len(sample_args[k]))
        if isinstance(c, Module):
            c.forward = _forward_by_mode(c, run, c.training, c.forward)
            graphed.append(c)
        else:
            graphed.append(run)
    return graphed[0] if one else tuple(graphed)


def _flat(out):
    """A callable's result as a tuple of tensors."""
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _graphed(Function, surface, forward_graph, backward_graph, outputs, grad_outputs, grad_inputs, single,
             nargs):
    """The function that replays one callable's graphs inside one autograd node."""

    class Graphed(Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, x in zip(surface, inputs):
                if static.data_ptr() != x.data_ptr():
                    static.copy_(x)
            forward_graph.replay()
            return tuple(o.detach() for o in outputs)

        @staticmethod
        def backward(ctx, *grads):
            for static, g in zip(grad_outputs, grads):
                if static is None:
                    continue
                if g is None:
                    static.zero_()
                elif static.data_ptr() != g.data_ptr():
                    static.copy_(g)
            backward_graph.replay()
            return tuple(None if g is None else g.detach() for g in grad_inputs)

    params = surface[nargs:]

    def run(*args):
        if len(args) != nargs:
            raise TypeError(f"graphed callable: takes {nargs} tensors (as its sample arguments), got "
                            f"{len(args)}")
        out = Graphed.apply(*args, *params)
        return out[0] if single else out
    return run


def _forward_by_mode(module, graphed, training, eager):
    """A module's forward: the graphed one in the training mode it was captured in, its own
    in the other."""
    def forward(*args):
        return graphed(*args) if module.training == training else eager(*args)
    return forward
