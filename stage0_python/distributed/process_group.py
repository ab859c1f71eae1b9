"""The process group: MPI started (or found started), the rank and the world size, and the
watchdog that turns a collective which never completes into a job that ends.

There is one group, every process of the MPI job (``MPI.COMM_WORLD``): the collectives
take ``group=None`` only. MPI comes from Open MPI (or any MPI) through ``mpi4py``, imported
here on first use, so that ``import stage0_python`` never loads it.
"""
import datetime
import os
import sys
import threading
import time
import traceback
import types

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # torch.distributed's default


def _shared():
    """The group's state, one per process: every stage has its own copy of this module,
    but a process belongs to one MPI job whichever stages it imports."""
    holder = sys.modules.get("_stagegrad_process_group")
    if holder is None:
        holder = types.ModuleType("_stagegrad_process_group", "sg.distributed's state, shared by every stage")
        holder.state = {"comm": None, "watchdog": None, "excepthook": None}
        holder.mpi = {}  # the mpi4py.MPI module once loaded, or why it cannot be
        sys.modules[holder.__name__] = holder
    return holder


_state, _mpi = _shared().state, _shared().mpi


def _load_mpi():
    """``mpi4py.MPI`` loaded without starting MPI, or None (the reason in ``_mpi``)."""
    if "module" in _mpi or "reason" in _mpi:
        return _mpi.get("module")
    try:
        import mpi4py
        if "mpi4py.MPI" not in sys.modules:
            # started by init_process_group, not at import: a program that only asks
            # is_available() must not become an MPI process
            mpi4py.rc.initialize = False
            mpi4py.rc.finalize = True
        from mpi4py import MPI
    except ImportError as e:
        _mpi["reason"] = (f"mpi4py is not installed or finds no MPI library ({e}); install Open MPI "
                          f"(Debian: openmpi-bin libopenmpi-dev) and `pip install mpi4py` (the "
                          f"'distributed' extra)")
        return None
    except Exception as e:  # a broken MPI installation fails in many ways at load time
        _mpi["reason"] = f"the MPI library did not load: {type(e).__name__}: {e}"
        return None
    _mpi["module"] = MPI
    return MPI


def is_available():
    """Whether distributed training can run here: mpi4py and an MPI library load; see
    torch.distributed.is_available. ``unavailable_reason()`` says why not."""
    return _load_mpi() is not None


def unavailable_reason():
    """Why ``is_available()`` is False (None when it is True). No counterpart in PyTorch."""
    return None if _load_mpi() is not None else _mpi["reason"]


def is_initialized():
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` has not); see
    torch.distributed.is_initialized."""
    return _state["comm"] is not None


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the job's processes into the default group; see torch.distributed.init_process_group.

    Only ``backend="mpi"``: the processes are the ones ``mpirun`` started, which also
    decides the ranks, so ``world_size`` and ``rank``, when given, must agree with MPI's,
    and ``init_method`` and ``store`` are refused. A process started without ``mpirun``
    is a job of one. ``timeout`` (a ``datetime.timedelta`` or seconds, default 30 minutes)
    bounds every collective: one that has not completed by then prints which rank waited
    on what and aborts the whole job (``MPI_Abort``), instead of hanging. An exception
    that escapes on any rank of a job of several also aborts the job, after printing the
    rank's traceback, so the other ranks do not wait for it forever.
    """
    if backend not in ("mpi", None):
        raise ValueError(f"init_process_group: backend {backend!r} is not available; only 'mpi' is "
                         f"(Open MPI through mpi4py)")
    if init_method is not None or store is not None:
        raise ValueError("init_process_group: init_method and store are not used: mpirun starts the "
                         "processes and tells each its rank")
    if is_initialized():
        raise RuntimeError("init_process_group: trying to initialize the default process group twice")
    seconds = _seconds(timeout)
    MPI = _load_mpi()
    if MPI is None:
        raise RuntimeError(f"init_process_group: MPI is not available: {_mpi['reason']}")
    if not MPI.Is_initialized():
        # MULTIPLE: the watchdog thread may call MPI_Abort while the main thread waits in MPI
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
    comm = MPI.COMM_WORLD
    for name, given, actual in (("world_size", world_size, comm.Get_size()), ("rank", rank, comm.Get_rank())):
        if given not in (-1, None) and given != actual:
            raise ValueError(f"init_process_group: {name}={given}, but MPI started this process with "
                             f"{name} {actual} (mpirun decides both)")
    _state["comm"] = comm
    _state["watchdog"] = _Watchdog(comm, seconds)
    if comm.Get_size() > 1 and _state["excepthook"] is None:
        _state["excepthook"] = sys.excepthook
        sys.excepthook = _abort_on_exception


def destroy_process_group(group=None):
    """Leave the default group; see torch.distributed.destroy_process_group. MPI itself is
    finalized when the process exits (mpi4py does it), so the group can be made again."""
    _check_group(group, "destroy_process_group")
    comm = _require("destroy_process_group")
    with _Waiting("destroy_process_group"):
        comm.Barrier()  # as the ranks leave together, none is left waiting in a collective
    _state["watchdog"].stop()
    _state["comm"] = _state["watchdog"] = None
    if _state["excepthook"] is not None:
        sys.excepthook, _state["excepthook"] = _state["excepthook"], None


def get_rank(group=None):
    """This process's rank, from 0; see torch.distributed.get_rank."""
    _check_group(group, "get_rank")
    return _require("get_rank").Get_rank()


def get_world_size(group=None):
    """The number of processes in the job; see torch.distributed.get_world_size."""
    _check_group(group, "get_world_size")
    return _require("get_world_size").Get_size()


def get_backend(group=None):
    """``"mpi"``, the only backend; see torch.distributed.get_backend."""
    _check_group(group, "get_backend")
    _require("get_backend")
    return "mpi"


def _require(op):
    comm = _state["comm"]
    if comm is None:
        raise RuntimeError(f"{op}: the default process group has not been initialized; call "
                           f"sg.distributed.init_process_group() first (in a program mpirun starts)")
    return comm


def _check_group(group, op):
    if group is not None:
        raise ValueError(f"{op}: only the default group (group=None, every process of the job) exists here")


def _seconds(timeout):
    if timeout is None:
        return DEFAULT_TIMEOUT.total_seconds()
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if not seconds > 0:
        raise ValueError(f"init_process_group: timeout must be positive, got {timeout!r}")
    return seconds


def _abort(comm, message):
    """Print ``message`` and end every process of the job."""
    sys.stdout.flush()
    sys.stderr.write(message if message.endswith("\n") else message + "\n")
    sys.stderr.flush()
    try:
        comm.Abort(1)
    finally:  # an MPI that returns from Abort: this process at least ends
        os._exit(1)


def _abort_on_exception(kind, value, tb):
    comm = _state["comm"]
    text = "".join(traceback.format_exception(kind, value, tb))
    if comm is None:
        sys.__excepthook__(kind, value, tb)
        return
    rank = comm.Get_rank()
    _abort(comm, f"{text}sg.distributed: rank {rank} of {comm.Get_size()} failed with "
                 f"{kind.__name__}: {value}; aborting the job (the other ranks would wait for it forever)")


class _Watchdog:
    """A thread that aborts the job when one collective has waited longer than the
    timeout. The main thread only notes a wait's start and end (one assignment each: a
    lock or a wake-up per collective would hand the interpreter to this thread and back,
    which costs a small model's step more than its all-reduce); the thread looks every
    ``min(1 s, timeout / 4)``."""

    def __init__(self, comm, seconds):
        self.comm, self.seconds = comm, seconds
        self.poll = min(1.0, seconds / 4)
        self.current = None  # (what is awaited, when the wait started)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="sg.distributed watchdog", daemon=True)
        self.thread.start()

    def begin(self, what):
        self.current = (what, time.monotonic())

    def end(self):
        self.current = None

    def stop(self):
        self.stopped.set()
        self.thread.join()

    def _watch(self):
        while not self.stopped.wait(self.poll):
            watched = self.current
            late = watched is not None and time.monotonic() - watched[1] > self.seconds
            if late and self.current is watched:
                rank, size = self.comm.Get_rank(), self.comm.Get_size()
                _abort(self.comm, f"sg.distributed: rank {rank} of {size}: {watched[0]} did not complete "
                                  f"within the timeout of {self.seconds:g} s (another rank failed, hangs, or "
                                  f"never called it); aborting the job")


class _Waiting:
    """``with _Waiting("all_reduce"):`` around a blocking MPI call: the watchdog's span."""
    __slots__ = ("what",)

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        _state["watchdog"].begin(self.what)

    def __exit__(self, *exc):
        _state["watchdog"].end()
