"""The CPU's own counters (instructions, cycles, cache misses, branches) through Linux's
``perf_event_open``, and the package's energy through RAPL, each refused with the reason
where the kernel or a virtual machine exposes none."""
import ctypes
import errno
import fcntl
import os
import platform
import sys
import time
from pathlib import Path

from .common import Unavailable, has, stage3, titled

POWERCAP = Path("/sys/class/powercap/intel-rapl:0")  # the package domain (AMD's too, on Linux)


PERF_SYSCALL = {"x86_64": 298, "aarch64": 241}
HARDWARE = {"cycles": 0, "instructions": 1, "cache misses": 3, "branches": 4, "branch misses": 5}


class _PerfAttr(ctypes.Structure):
    """The head of ``struct perf_event_attr`` (linux/perf_event.h), padded to its 128 bytes."""
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64),
                ("wakeup_events", ctypes.c_uint32), ("bp_type", ctypes.c_uint32),
                ("config1", ctypes.c_uint64), ("config2", ctypes.c_uint64), ("rest", ctypes.c_uint8 * 56)]


_DISABLED, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
_ENABLE, _DISABLE, _RESET = 0x2400, 0x2401, 0x2403  # PERF_EVENT_IOC_*


def _paranoid():
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "unknown"


def open_counter(kind, config, machine_name=None):
    """A file descriptor counting one event of this thread in user space (``kind`` 0 is
    PERF_TYPE_HARDWARE), or Unavailable with the kernel's reason."""
    number = PERF_SYSCALL.get(machine_name or platform.machine())
    if number is None or not sys.platform.startswith("linux"):
        raise Unavailable(f"perf_event_open is Linux's, and its system call number on "
                          f"{machine_name or platform.machine()} is not known here")
    attr = _PerfAttr(type=kind, size=ctypes.sizeof(_PerfAttr), config=config,
                     flags=_DISABLED | _EXCLUDE_KERNEL | _EXCLUDE_HV)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(number, ctypes.byref(attr), 0, -1, -1, 0)
    if fd >= 0:
        return fd
    code = ctypes.get_errno()
    if code in (errno.EACCES, errno.EPERM):
        raise Unavailable(f"the kernel refuses counters to this user ({errno.errorcode[code]}; "
                          f"perf_event_paranoid is {_paranoid()})")
    if code in (errno.ENOENT, errno.EOPNOTSUPP, errno.EINVAL, errno.ENODEV):
        raise Unavailable(f"the kernel exposes no such hardware counter ({errno.errorcode[code]}): "
                          f"a virtual machine often passes none of the CPU's counters through")
    raise Unavailable(f"perf_event_open failed: {os.strerror(code)}")


def read_counters(fn, events=HARDWARE):
    """Counts of ``events`` (name -> PERF_COUNT_HW_* config) over one call of ``fn``, on this
    thread in user space: a dict, or Unavailable (the first event the kernel refuses says why)."""
    fds = {}
    try:
        for name, config in events.items():
            fds[name] = open_counter(0, config)
        for fd in fds.values():
            fcntl.ioctl(fd, _RESET, 0)
            fcntl.ioctl(fd, _ENABLE, 0)
        fn()
        for fd in fds.values():
            fcntl.ioctl(fd, _DISABLE, 0)
        return {name: int.from_bytes(os.read(fd, 8), sys.byteorder) for name, fd in fds.items()}
    finally:
        for fd in fds.values():
            os.close(fd)


def copy_counts(sg, side):
    """The counters of copying a ``side`` x ``side`` float32 matrix of stage ``sg`` on this
    thread, along its rows (``clone``) and down its columns (``t().contiguous()``): label ->
    counts, or Unavailable."""
    x = sg.ones(side, side)
    out = {}
    for label, fn in (("rows (clone)", lambda: x.clone()),
                      ("columns (t().contiguous())", lambda: x.t().contiguous())):
        fn()  # warm: the pages of the result are the allocator's already
        counts = out[label] = read_counters(fn)
        if not counts["cycles"]:
            raise Unavailable("the counters opened but count nothing: this virtual machine passes "
                              "none through")
    return out


@titled("Hardware counters: a copy read along rows and down columns")
def counters(quick, out=None):
    """Stage 3 copies a square float32 matrix twice on one thread: row by row
    (``x.clone()``, every cache line used whole) and down the columns of its transpose
    (``x.t().contiguous()``, each read a new cache line until the tile is reused). The CPU's
    own counters, read through Linux's ``perf_event_open``, count what each did: instructions,
    cycles, last-level cache misses, branches and branch misses. Where the kernel or a virtual
    machine exposes no counters, the reason is shown instead of a number."""
    side = 1024 if quick else 4096
    rows = [[label] + [f"{counts[k]:,}" for k in HARDWARE] +
            [f"{counts['instructions'] / counts['cycles']:.2f}"]
            for label, counts in copy_counts(stage3(), side).items()]
    return {"head": ["copy of a %dx%d matrix" % (side, side)] + list(HARDWARE) + ["instructions per cycle"],
            "rows": rows}



def read_energy_uj(domain=POWERCAP):
    """The RAPL domain's energy counter in microjoules and its wrap-around range, or
    Unavailable with the reason."""
    path = Path(domain) / "energy_uj"
    if not Path(domain).exists():
        raise Unavailable(f"no {domain}: the kernel exposes no RAPL energy counter here (virtual "
                          f"machines usually hide it; on bare metal it needs the intel_rapl_common module)")
    try:
        value = int(path.read_text())
        wrap = int((Path(domain) / "max_energy_range_uj").read_text())
    except PermissionError:
        raise Unavailable(f"{path} is readable by root only (Linux restricts it since 5.10)") from None
    except (OSError, ValueError) as e:
        raise Unavailable(f"{path} cannot be read: {e}") from None
    return value, wrap


def joules_between(start, end, wrap):
    """Energy between two readings of a counter that wraps at ``wrap`` microjoules."""
    return ((end - start) % (wrap + 1)) / 1e6


@titled("Energy of a training run, from RAPL")
def energy(quick, out=None):
    """The CPU package's energy counter (Intel's and AMD's RAPL, read from Linux's powercap
    files) read before and after the MLP training step runs for a while on stage 3 and on
    PyTorch, one thread each: joules per step and the average power. The counter covers the
    whole package, so an idle machine is the fair setting."""
    read_energy_uj()
    from .. import workloads
    rows = []
    peers = ["stage3_simd"] + (["torch"] if has("torch") else [])
    for name in peers:
        step = workloads.build_mlp_step(workloads.Impl(name), workloads.MLP_BATCH)
        step()
        steps = 50 if quick else 500
        (e0, wrap), t0 = read_energy_uj(), time.perf_counter()
        for _ in range(steps):
            step()
        seconds, (e1, _) = time.perf_counter() - t0, read_energy_uj()
        joules = joules_between(e0, e1, wrap)
        rows.append([name, f"{steps}", f"{joules / steps * 1e3:.2f}", f"{joules / seconds:.1f}"])
    return {"head": ["library", "steps", "mJ / step", "average W"], "rows": rows}
