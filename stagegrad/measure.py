"""The measuring library every command times with: thread settings given to every library at
once, the timer (``time_calls``: the median of samples of many calls; ``time_runs``: whole runs
from a fresh start), steady-state detection (``steady``: measure again while the samples
disagree), the live table's printer, and the options the commands share (``names``,
``thread_counts``). See ``journey``'s docstring for how a cell is timed."""
import math
import os
import statistics
import sys
import time

from . import machine, plausibility

# the tables' note on a cell marked ~ (steady's ``unsteady``)
UNSTEADY_NOTE = (f"~: unsteady: the samples disagreed by more than {plausibility.SPREAD_LIMIT:g}x even when "
                 "measured again; the median of them all is shown.")


def set_threads(threads):
    """Give every library ``threads`` threads (None: leave each its own default): the
    variables that OpenMP, OpenBLAS and MKL read when they load, and the count of each
    library already loaded (a stage reads ``OMP_NUM_THREADS`` once, at import, and the
    command line imports every stage before it parses ``--threads``)."""
    if threads is None:
        return
    for name in machine.THREAD_VARIABLES:
        os.environ[name] = str(threads)
    from . import STAGES
    for pkg in STAGES.values():
        lib = sys.modules.get(pkg)
        if hasattr(lib, "set_num_threads"):
            lib.set_num_threads(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def library_threads(impl):
    """The threads ``impl`` is set to use, as the library itself reports them (NumPy: the
    OpenBLAS variable, which it read when it was imported); None if unknown."""
    if impl.name == "numpy":
        value = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
        return int(value) if value and value.isdigit() else None
    get = getattr(impl.lib, "get_num_threads", None)
    return get() if get else None


def show(out, bar_stream, text):
    """Print part of the live table; on a terminal, first erase the progress bar's line
    (it is redrawn below at its next update)."""
    if bar_stream.isatty():
        bar_stream.write("\r\033[K")
        bar_stream.flush()
    print(text, file=out, flush=True)


def _timed(fn, number):
    """Wall seconds of ``number`` calls, and the process's CPU seconds (every thread's) in them."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - t0, time.process_time() - c0


def _cores(cpu, wall):
    """The cores busy on average: CPU seconds (all threads) over wall seconds."""
    return cpu / wall if wall > 0 else None


def time_calls(fn, budget, target):
    """Median seconds per call, after one warm-up; see the module docstring. Also the
    wall and CPU seconds of the timed calls (``timed_s``, ``cpu_s``) and ``spent_s``,
    every second spent, warm-up included."""
    first, first_cpu = _timed(fn, 1)
    spent, per_call, number = first, first, 1
    while True:  # calls per sample: enough for a sample to last about target / 5
        want = max(1, min(10 ** 6, int(target / 5 / max(per_call, 1e-9))))
        if want <= number:
            break
        number = want
        t, _ = _timed(fn, number)
        spent += t
        per_call = min(per_call, t / number)
    samples, wall, cpu = [], 0.0, 0.0
    while len(samples) < 5 and sum(s * number for s in samples) < target:
        if spent + number * per_call > budget and samples:
            break
        if spent + number * per_call > budget:  # not even one timed sample fits: keep the warm-up
            return {"time_s": first, "min_s": first, "samples": [first], "calls_per_sample": 1,
                    "note": "single call, warm-up included", "timed_s": first, "cpu_s": first_cpu,
                    "spent_s": spent}
        t, c = _timed(fn, number)
        spent, wall, cpu = spent + t, wall + t, cpu + c
        samples.append(t / number)
    return {"time_s": statistics.median(samples), "min_s": min(samples), "samples": samples,
            "calls_per_sample": number, "note": None, "timed_s": wall, "cpu_s": cpu, "spent_s": spent}


def steady(measure, budget, limit=plausibility.SPREAD_LIMIT, rounds=3):
    """``measure(seconds left) -> timing``, repeated while its samples disagree beyond
    ``limit`` (slowest over fastest), up to ``rounds`` times and while the budget left
    holds another round as long as the average one so far. The result has the median and
    minimum of every round's samples, the cores of all their timed calls, ``rounds``,
    ``spread`` (the last round's) and ``unsteady``: whether the last round still disagreed."""
    taken, spent = [], 0.0
    while not taken or (len(taken) < rounds and plausibility.disagrees(taken[-1]["samples"], limit)
                        and budget - spent >= spent / len(taken)):
        taken.append(measure(budget - spent))
        spent += taken[-1].pop("spent_s", 0.0)
    samples = [x for t in taken for x in t["samples"]]
    timed, cpu = sum(t.get("timed_s", 0.0) for t in taken), sum(t.get("cpu_s", 0.0) for t in taken)
    return dict(taken[-1], time_s=statistics.median(samples), min_s=min(samples), samples=samples,
                cores=_cores(cpu, timed), rounds=len(taken), spread=plausibility.spread(taken[-1]["samples"]),
                unsteady=plausibility.disagrees(taken[-1]["samples"], limit))


def time_runs(fn, budget, target, runs=3):
    """Median seconds of up to ``runs`` whole runs, each from a fresh start
    (``fn.prepare()``, untimed), while the timed total stays under ``target`` and the cell
    under ``budget``. Runs from the same start must reach the same loss (to rounding: a
    threaded reduction may add in a different order)."""
    samples, extra, spent, cpu = [], None, 0.0, 0.0
    while len(samples) < runs and (not samples or sum(samples) < target and spent + samples[0] <= budget):
        t0 = time.perf_counter()
        fn.prepare()
        t1, c1 = time.perf_counter(), time.process_time()
        result = fn() or {}
        t2, c2 = time.perf_counter(), time.process_time()
        spent += t2 - t0
        cpu += c2 - c1
        samples.append(t2 - t1)
        if extra is not None and not math.isclose(result["loss"], extra["loss"], rel_tol=1e-4):
            raise RuntimeError(f"two runs from the same start differ: {extra} then {result}")
        extra = extra or result
    return {"time_s": statistics.median(samples), "min_s": min(samples), "samples": samples,
            "calls_per_sample": 1, "note": None, "extra": extra, "timed_s": sum(samples), "cpu_s": cpu,
            "spent_s": spent}


def names(text, allowed, what):
    """The comma-separated names of ``text``, each one of ``allowed`` (the option ``--what``), in order, once."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise ValueError(f"--{what}: unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
                         f"expected some of {', '.join(allowed)}")
    return list(dict.fromkeys(names))


def thread_counts(text):
    """The thread counts of a ``--threads`` option (None: 1 and every usable core)."""
    cores = machine.cores()["usable"]
    if text is None:
        return sorted({1, cores})
    try:
        counts = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--threads: expected comma-separated counts, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise ValueError(f"--threads: expected positive counts, got {text!r}")
    return list(dict.fromkeys(counts))
