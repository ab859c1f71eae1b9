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
"""
import os

from stagegrad import workloads

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

