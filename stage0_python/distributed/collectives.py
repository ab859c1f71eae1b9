"""The collectives on tensors: ``all_reduce``, ``broadcast``, ``all_gather``,
``reduce_scatter`` (and their one-tensor forms), ``barrier``.

MPI reads and writes memory. Where the stage exports a tensor's memory (the buffer
protocol: stages 2 to 4 on the CPU) and the tensor is contiguous, MPI works on it in
place, with no copy. Otherwise (stages 0 and 1, which export nothing; a non-contiguous
view; a tensor on a GPU; float16 and bfloat16, which MPI cannot add) the values go
through a contiguous host copy, and the result is written back with ``copy_``, which
reaches every element of a view. Either way the tensor's version counter moves, as an
in-place operation's does, so autograd notices a saved tensor that changed.
"""
from array import array

from .. import creation, dtypes
from ..autograd import no_grad
from ..tensor import Tensor
from .process_group import _check_group, _load_mpi, _require, _Waiting


class ReduceOp:
    """How ``all_reduce`` and ``reduce_scatter`` combine the ranks' values; see
    torch.distributed.ReduceOp. ``AVG`` (the mean; floating-point tensors only) is the sum
    divided by the world size."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


_OPS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX)
_MPI_TYPES = {"float32": "FLOAT", "float64": "DOUBLE", "int64": "INT64_T", "int32": "INT32_T",
              "int16": "INT16_T", "int8": "INT8_T", "uint8": "UINT8_T", "bool": "C_BOOL"}
_ARRAY_CODES = {"float32": "f", "float64": "d", "int64": "q", "int32": "i", "int16": "h", "int8": "b",
                "uint8": "B", "bool": "B"}
_WIDENED = {"float16": "float32", "bfloat16": "float32"}  # MPI has no arithmetic on these


class Work:
    """A collective started with ``async_op=True``; see torch.distributed.Work.
    ``wait()`` blocks until it has completed and its result is in the tensors."""

    def __init__(self, what, request, finish, buffers):
        self._what, self._request, self._finish = what, request, finish
        self._buffers = buffers  # the memory MPI reads and writes, alive until it is done
        self._done = False

    def wait(self, timeout=None):
        """Block until the collective has completed (bounded by the group's timeout) and its
        result is written; return True. ``timeout`` is not supported (the group's applies)."""
        if timeout is not None:
            raise ValueError("Work.wait: a per-call timeout is not supported; init_process_group's "
                             "timeout bounds every wait")
        if not self._done:
            with _Waiting(self._what):
                self._request.Wait()
            self._complete()
        return True

    def is_completed(self):
        """Whether the collective has completed (without blocking); its result is then
        written."""
        if not self._done and self._request.Test():
            self._complete()
        return self._done

    def _complete(self):
        self._done = True
        self._buffers = None
        if self._finish is not None:
            self._finish()

    def _test(self):
        """Let MPI progress the transfer (Open MPI moves a non-blocking collective only
        inside MPI calls)."""
        if not self._done:
            self._request.Test()


def _mpi():
    return _load_mpi()


def _type_name(t):
    name = t.dtype.name
    return _WIDENED.get(name, name)


def _datatype(name):
    return getattr(_mpi(), _MPI_TYPES[name])


def _exported(t):
    """A flat byte view of ``t``'s own memory, or None where MPI cannot use it in place."""
    if t.device.type != "cpu" or t.dtype.name in _WIDENED or not t.is_contiguous():
        return None
    try:
        view = memoryview(t._data)
    except (TypeError, BufferError):  # a stage that exports no memory
        return None
    return view.cast("B") if view.c_contiguous else None


def _host_copy(t, name):
    """``t``'s values, row-major, in fresh contiguous host memory of dtype ``name``."""
    src = t.detach()
    if src.dtype.name != name:
        src = src.to(dtype=_dtype(name))
    src = src.to("cpu") if src.device.type != "cpu" else src
    copy = src.contiguous() if not src.is_contiguous() else src.clone()
    view = _exported(copy)
    if view is not None:
        return copy, view
    values = copy.reshape(-1).tolist()
    buf = array(_ARRAY_CODES[name], values if name != "bool" else [int(v) for v in values])
    return buf, buf


def _dtype(name):
    return getattr(dtypes, "bool_" if name == "bool" else name)


def _empty_host(n, name):
    """Contiguous host memory for ``n`` values of dtype ``name``: (holder, buffer)."""
    t = creation.empty((n,), dtype=_dtype(name), device="cpu")
    view = _exported(t)
    if view is not None:
        return t, view
    buf = array(_ARRAY_CODES[name], [0]) * n
    return buf, buf


def _as_tensor(holder, name, shape):
    """The values in ``holder`` (from ``_empty_host`` or ``_host_copy``) as a tensor of ``shape``."""
    if isinstance(holder, Tensor):
        return holder.reshape(shape)
    values = holder.tolist()
    return creation.tensor(values if name != "bool" else [bool(v) for v in values],
                           dtype=_dtype(name)).reshape(shape)


def _writable(t):
    """(buffer, finish): memory MPI may write ``t``'s result into, and what makes it
    ``t``'s afterwards (the version bump in place, the copy back otherwise)."""
    view = _exported(t)
    if view is not None:
        def bump():
            t._data.version += 1
        return view, bump
    name = _type_name(t)
    holder, buf = _host_copy(t, name)
    shape = tuple(t.shape)

    def write_back():
        with no_grad():
            t.copy_(_as_tensor(holder, name, shape))
    return buf, write_back


def _readable(t):
    """Memory holding ``t``'s values for MPI to read: its own where exported, else a copy."""
    view = _exported(t)
    if view is not None:
        return view
    return _host_copy(t, _type_name(t))[1]


def _mpi_op(op, t, caller):
    if op not in _OPS:
        raise ValueError(f"{caller}: unknown reduction {op!r}; use sg.distributed.ReduceOp "
                         f"(SUM, AVG, PRODUCT, MIN, MAX)")
    MPI = _mpi()
    if t.dtype.name == "bool":  # MPI reduces C booleans only logically
        if op == ReduceOp.AVG:
            raise TypeError(f"{caller}: ReduceOp.AVG needs a floating-point tensor, got bool")
        return MPI.LOR if op in (ReduceOp.SUM, ReduceOp.MAX) else MPI.LAND
    if op == ReduceOp.AVG and not t.dtype.is_floating_point:
        raise TypeError(f"{caller}: ReduceOp.AVG needs a floating-point tensor, got {t.dtype.name}")
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX}[op]


def _check_tensor(t, caller, what="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{caller}: {what} must be a Tensor of this stage, got {type(t).__name__}")


def _launch(what, async_op, blocking, nonblocking, finish, buffers=()):
    """Run a collective: blocking under the watchdog, or started and handed back as Work
    (which keeps ``buffers``, the memory MPI uses, alive until it completes)."""
    if async_op:
        return Work(what, nonblocking(), finish, buffers)
    with _Waiting(what):
        blocking()
    if finish is not None:
        finish()
    return None


def _averaging(op, tensor, comm):
    """For ``ReduceOp.AVG``, what turns the sum in ``tensor`` into the mean; else None."""
    if op != ReduceOp.AVG:
        return None
    size = comm.Get_size()

    def average():
        with no_grad():
            tensor.div_(size)
    return average


def _then(*steps):
    steps = [s for s in steps if s is not None]
    return (lambda: [s() for s in steps]) if steps else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine ``tensor`` across every rank with ``op`` and leave the result in it, on
    every rank; see torch.distributed.all_reduce. With ``async_op=True``, returns a
    ``Work`` whose ``wait()`` completes it."""
    _check_group(group, "all_reduce")
    comm = _require("all_reduce")
    _check_tensor(tensor, "all_reduce")
    mpi_op = _mpi_op(op, tensor, "all_reduce")
    buf, finish = _writable(tensor)
    spec = [buf, _datatype(_type_name(tensor))]
    MPI = _mpi()
    return _launch("all_reduce", async_op, lambda: comm.Allreduce(MPI.IN_PLACE, spec, op=mpi_op),
                   lambda: comm.Iallreduce(MPI.IN_PLACE, spec, op=mpi_op),
                   _then(finish, _averaging(op, tensor, comm)), (spec,))


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every other rank; see
    torch.distributed.broadcast."""
    _check_group(group, "broadcast")
    comm = _require("broadcast")
    _check_tensor(tensor, "broadcast")
    _check_rank(src, comm, "broadcast", "src")
    if comm.Get_rank() == src:
        buf, finish = _readable(tensor), None
    else:
        buf, finish = _writable(tensor)
    spec = [buf, _datatype(_type_name(tensor))]
    return _launch("broadcast", async_op, lambda: comm.Bcast(spec, root=src),
                   lambda: comm.Ibcast(spec, root=src), finish, (spec,))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor``, concatenated along dim 0 in rank order, into
    ``output_tensor`` (or stacked, when ``output_tensor`` has one more dim of the world
    size); see torch.distributed.all_gather_into_tensor."""
    comm = _one_per_rank("all_gather_into_tensor", group, (output_tensor, "output_tensor"),
                         (input_tensor, "input_tensor"), whole="output")
    name = _type_name(input_tensor)
    send = [_readable(input_tensor), _datatype(name)]
    out, finish = _writable(output_tensor)
    recv = [out, _datatype(name)]
    return _launch("all_gather", async_op, lambda: comm.Allgather(send, recv),
                   lambda: comm.Iallgather(send, recv), finish, (send, recv))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list`` (one tensor per rank, each of ``tensor``'s shape) with every
    rank's ``tensor``; see torch.distributed.all_gather."""
    _check_group(group, "all_gather")
    comm = _require("all_gather")
    _check_tensor(tensor, "all_gather")
    size = comm.Get_size()
    _check_rank_list("all_gather", tensor_list, "tensor_list", (tensor, "tensor"), size)
    name = _type_name(tensor)
    n = tensor.numel()
    holder, out = _empty_host(size * n, name)
    send = [_readable(tensor), _datatype(name)]
    recv = [out, _datatype(name)]
    shape = tuple(tensor.shape)

    def scatter_back():
        gathered = _as_tensor(holder, name, (size,) + shape)
        with no_grad():
            for i, t in enumerate(tensor_list):
                t.copy_(gathered[i])
    return _launch("all_gather", async_op, lambda: comm.Allgather(send, recv),
                   lambda: comm.Iallgather(send, recv), scatter_back, (send, recv))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine ``input`` across the ranks with ``op`` and leave in each rank's ``output``
    its block of the result: rank ``r`` gets block ``r`` of dim 0 (``input`` holds world
    size x ``output``'s elements); see torch.distributed.reduce_scatter_tensor."""
    comm = _one_per_rank("reduce_scatter_tensor", group, (output, "output"), (input, "input"), whole="input")
    return _reduce_scatter(comm, output, _readable(input), op, async_op, "reduce_scatter_tensor")


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine the ranks' ``input_list`` entrywise with ``op``; rank ``r``'s ``output``
    gets the result for entry ``r``; see torch.distributed.reduce_scatter."""
    _check_group(group, "reduce_scatter")
    comm = _require("reduce_scatter")
    _check_tensor(output, "reduce_scatter", "output")
    _check_rank_list("reduce_scatter", input_list, "input_list", (output, "output"), comm.Get_size())
    # the entries side by side in one contiguous block: MPI scatters blocks of it
    with no_grad():
        joined = creation.stack([t.detach() for t in input_list])
    return _reduce_scatter(comm, output, _readable(joined), op, async_op, "reduce_scatter")


def _one_per_rank(caller, group, output, input, whole):
    """The communicator for ``caller``, whose ``output`` and ``input`` (each ``(tensor, name)``)
    have one dtype and of which one, ``whole`` ("output" or "input"), holds world size x the
    other's elements."""
    (out, out_name), (inp, inp_name) = output, input
    _check_group(group, caller)
    comm = _require(caller)
    _check_tensor(out, caller, out_name)
    _check_tensor(inp, caller, inp_name)
    _same_dtype(caller, out, inp)
    size = comm.Get_size()
    (big, big_name), (block, block_name) = (output, input) if whole == "output" else (input, output)
    if big.numel() != size * block.numel():
        raise ValueError(f"{caller}: {big_name} of shape {list(big.shape)} must hold world size ({size}) x "
                         f"{block_name}'s {block.numel()} elements")
    return comm


def _check_rank_list(caller, tensors, what, like, size):
    """``tensors`` (named ``what``) must be a list of one tensor per rank, each of the dtype
    and shape of ``like`` (``(tensor, name)``)."""
    like, like_name = like
    if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
        raise ValueError(f"{caller}: {what} must be a list of world size ({size}) tensors")
    for i, t in enumerate(tensors):
        _check_tensor(t, caller, f"{what}[{i}]")
        _same_dtype(caller, t, like)
        if tuple(t.shape) != tuple(like.shape):
            raise ValueError(f"{caller}: {what}[{i}] has shape {list(t.shape)}, but {like_name} has "
                             f"{list(like.shape)}")


def _reduce_scatter(comm, output, send_buf, op, async_op, caller):
    mpi_op = _mpi_op(op, output, caller)
    name = _type_name(output)
    out, finish = _writable(output)
    send = [send_buf, _datatype(name)]
    recv = [out, _datatype(name)]
    return _launch(caller, async_op, lambda: comm.Reduce_scatter_block(send, recv, op=mpi_op),
                   lambda: comm.Ireduce_scatter_block(send, recv, op=mpi_op),
                   _then(finish, _averaging(op, output, comm)), (send, recv))


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank has reached the barrier; see torch.distributed.barrier."""
    _check_group(group, "barrier")
    comm = _require("barrier")
    return _launch("barrier", async_op, comm.Barrier, comm.Ibarrier, None)


def _check_rank(rank, comm, caller, what):
    size = comm.Get_size()
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < size:
        raise ValueError(f"{caller}: {what}={rank!r} is not a rank of this job (0 to {size - 1})")


def _same_dtype(caller, a, b):
    if a.dtype is not b.dtype:
        raise TypeError(f"{caller}: the tensors' dtypes differ ({a.dtype.name} and {b.dtype.name})")
