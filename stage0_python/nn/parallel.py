"""``sg.nn.parallel.DistributedDataParallel``: one model replicated on every rank of an
MPI job, its gradients averaged across the ranks during backward.

Each rank runs forward and backward on its own part of the global batch. The parameters
are grouped into *buckets* (in reverse order of registration, the order in which backward
tends to produce their gradients, up to ``bucket_cap_mb`` each). A hook on every
parameter notes its gradient as backward produces it; when a bucket is complete, its
gradients are copied side by side into one flat tensor and a non-blocking all-reduce of
it starts, while backward goes on computing the next bucket's. When the last gradient
has arrived, every bucket's all-reduce is waited for and each parameter's ``.grad``
becomes its slice of the averaged bucket. Buckets start strictly in order, so every rank
issues the same collectives in the same order, as MPI requires.
"""
import contextlib

from .. import creation
from ..autograd import is_grad_enabled, no_grad
from ..distributed import collectives as C
from ..distributed import process_group as PG
from ..dtypes import int32
from ..nested import leaves
from ..tensor import Tensor
from .module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024


class _Bucket:
    __slots__ = ("indices", "grads", "pending", "flat", "work")

    def __init__(self, indices):
        self.indices = indices  # positions in DistributedDataParallel._params
        self.grads = None
        self.pending = 0
        self.flat = None
        self.work = None


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` on every rank of the MPI job; see
    torch.nn.parallel.DistributedDataParallel.

    At wrap time, rank 0's parameters and buffers are broadcast to every rank (so the
    replicas start equal) after checking that every rank wraps the same shapes. Calling
    the wrapper calls ``module`` (``broadcast_buffers``: rank 0's buffers are sent to the
    others first, as in PyTorch); the backward that follows leaves in every ``.grad`` the
    mean over the ranks of the local gradients, as described in this module's docstring,
    so an optimizer step then keeps the replicas equal. ``no_sync()`` accumulates local
    gradients without communicating.

    ``device_ids``, ``output_device`` and ``dim`` are accepted for PyTorch's programs and
    must name nothing but this process's device (``None``). ``bucket_cap_mb`` defaults to
    25 MiB, as PyTorch's. ``find_unused_parameters=True`` walks the autograd graph after
    every forward and counts the parameters it does not reach as ready (their gradient,
    if any, is still averaged; one that no rank has a gradient for keeps ``.grad``
    None). ``gradient_as_bucket_view=True`` leaves each ``.grad`` a slice of its bucket
    (a view, on a stage with views) instead of a copy of its own; ``static_graph`` is
    accepted and changes nothing. ``overlap=False`` (stagegrad only) starts the
    all-reduces after backward has produced every gradient, not as buckets fill: the
    baseline against which ``stagegrad distributed`` measures what overlapping bought.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False, *, overlap=True):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected an nn.Module, got {type(module).__name__}")
        if device_ids not in (None, []) or output_device is not None or dim != 0:
            raise ValueError("DistributedDataParallel: device_ids, output_device and dim must be left "
                             "as they are: each rank runs its whole model on its own device")
        PG._check_group(process_group, "DistributedDataParallel")
        comm = PG._require("DistributedDataParallel")
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if not cap > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got "
                             f"{bucket_cap_mb!r}")
        self.module = module
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        state = self.__dict__  # plain attributes: none of this is a parameter or a submodule
        state.update(broadcast_buffers=broadcast_buffers, find_unused_parameters=find_unused_parameters,
                     gradient_as_bucket_view=gradient_as_bucket_view, static_graph=static_graph,
                     bucket_cap_mb=cap, overlap=overlap, require_backward_grad_sync=True,
                     _comm=comm, _names=[n for n, _ in named], _params=[p for _, p in named])
        self._check_replicas(comm)
        self._sync_module_states()
        self.__dict__["_buckets"] = self._make_buckets(int(cap * _MB))
        where = {}
        for b, bucket in enumerate(self._buckets):
            for j, i in enumerate(bucket.indices):
                where[i] = (b, j)
        self.__dict__.update(_where=where, _reducing=False, _arrived=0, _ready=0, _next=0, _unused=())
        for i, p in enumerate(self._params):
            p.register_hook(self._make_hook(i))

    # ------------------------------------------------------------ wrap time

    def _check_replicas(self, comm):
        """Every rank must wrap the same parameters: otherwise the broadcast and the
        all-reduces would pair unrelated tensors, or wait forever."""
        mine = [(n, tuple(p.shape), p.dtype.name) for n, p in zip(self._names, self._params)]
        mine += [(n, tuple(b.shape), b.dtype.name) for n, b in self.module.named_buffers()]
        with PG._Waiting("DistributedDataParallel's comparison of the replicas"):
            everyone = comm.allgather(mine)
        for rank, theirs in enumerate(everyone):
            if theirs != everyone[0]:
                diff = next((a, b) for a, b in zip(everyone[0] + [None], theirs + [None]) if a != b)
                raise ValueError(f"DistributedDataParallel: rank {rank}'s model differs from rank 0's "
                                 f"(rank 0 has {diff[0]}, rank {rank} {diff[1]}); every rank must wrap "
                                 f"the same model")

    def _sync_module_states(self):
        with no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                C.broadcast(t, 0)

    def _make_buckets(self, cap_bytes):
        """Buckets of parameters in reverse order of registration, each of one dtype and
        device and at most ``cap_bytes`` (a larger parameter gets a bucket of its own)."""
        buckets, current, size, kind = [], [], 0, None
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            nbytes = p.numel() * p.element_size()
            if current and ((p.dtype, p.device) != kind or size + nbytes > cap_bytes):
                buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(i)
            size += nbytes
            kind = (p.dtype, p.device)
        if current:
            buckets.append(_Bucket(current))
        return buckets

    # ------------------------------------------------------------ forward

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module (after broadcasting rank 0's buffers); see
        torch.nn.parallel.DistributedDataParallel.forward."""
        self._check_previous_reduction()
        if self.broadcast_buffers and self._comm.Get_size() > 1:
            with no_grad():
                for b in self.module.buffers():
                    C.broadcast(b, 0)
        out = self.module(*inputs, **kwargs)
        reducing = self.require_backward_grad_sync and is_grad_enabled() and bool(self._params)
        self.__dict__.update(_reducing=reducing, _arrived=0, _ready=0, _next=0, _unused=())
        if reducing:
            for bucket in self._buckets:
                bucket.grads, bucket.pending = [None] * len(bucket.indices), len(bucket.indices)
                bucket.flat = bucket.work = None
            if self.find_unused_parameters:
                self._mark_unused(out)
        return out

    def _check_previous_reduction(self):
        if self._reducing and self._arrived:
            missing = [self._names[i] for b in self._buckets if b.grads is not None
                       for i, g in zip(b.indices, b.grads) if g is None]
            self.__dict__["_reducing"] = False
            raise RuntimeError(
                f"DistributedDataParallel: the previous iteration's gradient reduction did not finish: "
                f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''} received no gradient. If "
                f"some parameters take no part in the loss, wrap with find_unused_parameters=True")

    def _mark_unused(self, out):
        """Count the parameters the graph of ``out`` does not reach as ready now."""
        reached, stack, seen = set(), [t.grad_fn for t in leaves(out, Tensor) if t.grad_fn is not None], set()
        for t in leaves(out, Tensor):
            if t.requires_grad and t.grad_fn is None and t._accumulator is not None:
                stack.append(t._accumulator)  # the output is a leaf itself
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            reached.add(id(node))
            stack.extend(n for n, _ in node.next_functions if n is not None)
        unused = []
        for i, p in enumerate(self._params):
            acc = p._accumulator
            if acc is None or id(acc) not in reached:
                if p.grad is None:
                    unused.append(i)
                self._arrive(i, p.grad if p.grad is not None else creation.zeros_like(p))
        self.__dict__["_unused"] = tuple(unused)
        if self._ready == len(self._params):  # nothing left for backward to produce
            self._finish(None)

    # ------------------------------------------------------------ backward

    def _make_hook(self, i):
        def hook(grad):
            if not self._reducing:
                return None
            p = self._params[i]
            self.__dict__["_arrived"] += 1
            # what .grad will hold once this gradient is accumulated: the bucket reduces that
            self._arrive(i, grad if p.grad is None else p.grad + grad)
            if self._ready == len(self._params):
                return self._finish(i)
            return None
        return hook

    def _arrive(self, i, local):
        b, j = self._where[i]
        bucket = self._buckets[b]
        if bucket.grads[j] is not None:
            raise RuntimeError(f"DistributedDataParallel: parameter {self._names[i]} received a gradient "
                               f"twice in one iteration (a second backward through one forward); run "
                               f"forward again, or use no_sync() for all but the last backward")
        bucket.grads[j] = local
        bucket.pending -= 1
        self.__dict__["_ready"] += 1
        if self.overlap:
            self._launch_ready()
            for bucket in self._buckets[:self._next]:  # let MPI move the transfers on
                bucket.work._test()

    def _launch_ready(self):
        """Start the all-reduce of each complete bucket, in bucket order."""
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            bucket = self._buckets[self._next]
            bucket.flat = creation.cat([g.reshape(-1) for g in bucket.grads])
            bucket.grads = None
            bucket.work = C.all_reduce(bucket.flat, C.ReduceOp.AVG, async_op=True)
            self.__dict__["_next"] += 1

    def _finish(self, current):
        """Wait for every bucket and give each parameter its averaged gradient. The
        gradient of ``current`` (whose hook is running, so its own accumulation is still
        to come) is returned for the engine to store instead."""
        self._launch_ready()
        untouched = self._untouched_everywhere()
        result = None
        for bucket in self._buckets:
            bucket.work.wait()
            offset = 0
            for i in bucket.indices:
                p = self._params[i]
                n = p.numel()
                g = bucket.flat[offset:offset + n].reshape(p.shape)
                offset += n
                if i in untouched:
                    continue  # no rank has a gradient for it: .grad stays None, as in PyTorch
                if i == current:
                    p.grad, result = None, g  # the engine stores a copy
                else:
                    # a gradient of its own, as PyTorch's default: an optimizer's fused step
                    # refuses gradients that share one storage
                    p.grad = g if self.gradient_as_bucket_view else g.clone()
            bucket.flat = bucket.work = None
        self.__dict__["_reducing"] = False
        return result

    def _untouched_everywhere(self):
        """The parameters (positions) that no rank's graph reached and none had a gradient
        for: found with one small all-reduce of flags, only with find_unused_parameters."""
        if not self.find_unused_parameters:
            return frozenset()
        flags = creation.ones(len(self._params), dtype=int32, device="cpu")
        for i in self._unused:
            flags[i] = 0
        C.all_reduce(flags, C.ReduceOp.MAX)
        return frozenset(i for i, used in enumerate(flags.tolist()) if not used)

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward accumulates local gradients without averaging them across ranks
        (the forward inside decides); the first backward after it averages the sum; see
        torch.nn.parallel.DistributedDataParallel.no_sync."""
        previous = self.require_backward_grad_sync
        self.__dict__["require_backward_grad_sync"] = False
        try:
            yield
        finally:
            self.__dict__["require_backward_grad_sync"] = previous
