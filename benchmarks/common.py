"""What every benchmark shares: the implementations, the data, and the time budget.

Parameters range over every installed stage (found at import, so a new stage is
benchmarked with no edit here) and the peers ``numpy`` and ``torch``. Inputs are NumPy
arrays drawn with fixed seeds and converted in ``setup``, memoised per process so that
asv's re-running of ``setup`` between samples costs nothing.

The budget: before building its data, a benchmark estimates one call from the work it
does (FLOPs or elements) and a throughput figure of the implementation, measured once
per process by a probe (a 4,096-element add and a 64x64 matmul; see
``stagegrad.workloads.probe``). A call estimated to take more than ``BUDGET_S`` seconds
is skipped the asv way, by raising ``NotImplementedError`` in ``setup`` (shown as n/a),
so the whole suite finishes in minutes even with the pure-Python stages.

Stage 4's devices are benchmarked where they work: ``device_stage`` skips the asv way where a
device is not available, and ``DeviceTransfer`` is the copies benchmark each device's module
subclasses.
"""
import abc
import os

from stagegrad import load_stage, workloads

BUDGET_S = float(os.environ.get("STAGEGRAD_BENCH_BUDGET", "1.0"))
IMPLS = workloads.implementations()

_impls = {}
_memo = {}


def impl(name):
    if name not in _impls:
        _impls[name] = workloads.Impl(name)
    return _impls[name]


def memo(key, build):
    """``build()`` once per process for each ``key``."""
    if key not in _memo:
        _memo[key] = build()
    return _memo[key]


def array(seed, *shape):
    import numpy as np
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def tensor(name, seed, *shape, requires_grad=False):
    """The implementation's tensor of ``array(seed, *shape)`` (memoised)."""
    m = impl(name)
    return memo((name, seed, shape, requires_grad),
                lambda: m.tensor(array(seed, *shape), requires_grad=requires_grad))


def skip_if_slow(name, elements=0, flops=0):
    """Raise ``NotImplementedError`` when one call is estimated to exceed the budget."""
    figures = workloads.probe(impl(name))
    est = elements / figures["elementwise"] + flops / figures["matmul"]
    if est > BUDGET_S:
        raise NotImplementedError(f"{name}: one call estimated at {est:.2g} s > budget {BUDGET_S} s")


def need_autograd(name):
    if name == "numpy":
        raise NotImplementedError("NumPy has no autograd")


def lib(name):
    """The module whose functions a benchmark calls: the stage, ``numpy`` or ``torch``."""
    return impl(name).lib


def dim(name, d):
    """The reduction keyword: NumPy says ``axis``, everyone else ``dim``."""
    return {"axis": d} if name == "numpy" else {"dim": d}


class Benchmark:
    """Base of every benchmark class: one round, bounded sampling, a generous timeout."""
    rounds = 1
    repeat = (1, 10, 1.0)   # at least 1 sample, at most 10, stop after about 1 s
    timeout = 300
    param_names = ["impl", "size"]



def stage(number):
    """Stage ``number``, or asv's skip when it does not import here."""
    try:
        return load_stage(number)
    except RuntimeError as e:
        raise NotImplementedError(str(e)) from None


def device_stage(device):
    """Stage 4 with a working ``device`` (``"cuda"``, ``"webgpu"``), or asv's skip saying why not."""
    sg = stage("4")
    module = getattr(sg, device)
    if not module.is_available():
        raise NotImplementedError(module.unavailable_reason())
    return sg


class DeviceTransfer(Benchmark, abc.ABC):
    """A float32 tensor of ``mib`` MiB to the device (waited for) and back. Each device's module
    subclasses it, naming ``device``; asv times no abstract class, so not this one."""
    params = [[16]]
    param_names = ["mib"]

    @property
    @abc.abstractmethod
    def device(self):
        """The name of stage 4's device the copies go to and come from."""

    def setup(self, mib):
        """The tensor on the host and on the device."""
        sg = device_stage(self.device)
        n = mib * 2 ** 20 // 4
        self.host = memo(("host", n), lambda: sg.from_numpy(array(1, n)))
        self.resident = memo((self.device, 1, n), lambda: self.host.to(self.device))
        self.sync = getattr(sg, self.device).synchronize

    def time_upload(self, mib):
        """Host to device, then wait until the copy is done."""
        self.host.to(self.device)
        self.sync()

    def time_download(self, mib):
        """Device to host (reading back waits for the device)."""
        self.resident.cpu()
