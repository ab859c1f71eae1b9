"""The measuring library every command times with.

- Threads: ``set_threads`` gives every library the same count; ``library_threads`` reads it back.
- The timer: ``seconds_per_call``, the best or the median of ``timed_samples``, each sample a
  run of calls timed together by a clock (``wall_clock``, or ``cuda_event_clock`` for the GPU's
  own time); ``calls_lasting``, how many calls make a sample; ``time_calls``, the journey's
  median within a cell's budget; ``time_runs``, whole runs from a fresh start; ``steady``,
  measuring again while the samples disagree; ``on_threads``, the summed throughput of several
  threads at once.
- What the commands share besides: the live table's printer (``show``) and the options
  (``names``, ``thread_counts``, ``cell_budget``).

How a measured cell is shown (its marks, rates and notes) is ``cells``'s. See ``journey``'s
docstring for how a cell is timed."""
import math
import os
import statistics
import sys
import threading
import time

from . import machine, plausibility

STATISTICS = {"best": min, "median": statistics.median}  # what ``seconds_per_call`` makes of its samples


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


def wall_clock(fn, number):
    """Wall seconds of ``number`` calls of ``fn``: the clock ``timed_samples`` reads by default."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - t0


def cuda_event_clock(stream):
    """A clock for ``timed_samples`` that reads the GPU's own time: the ``number`` calls queued on
    ``stream`` (a CuPy stream) between two CUDA events, waited for. A kernel launch returns
    before the GPU has run it, so the wall clock would time the host's queuing."""
    import cupy

    def clock(fn, number):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        for _ in range(number):
            fn()
        end.record(stream)
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1e3
    return clock


def timed_samples(fn, repeats, number=1, warmup=1, budget=None, between=None, clock=wall_clock):
    """Seconds per call of up to ``repeats`` samples, each ``number`` calls of ``fn`` timed
    together by ``clock``, after ``warmup`` untimed calls. With ``budget``, sampling stops
    once one more sample as long as the last would take the samples past it (one is always
    taken). ``between``, if given, runs untimed before each sample and after the last."""
    for _ in range(warmup):
        fn()
    out, spent = [], 0.0
    for _ in range(repeats):
        if between:
            between()
        t = clock(fn, number)
        out.append(t / number)
        spent += t
        if budget is not None and spent + t > budget:
            break
    if between:
        between()
    return out


def seconds_per_call(fn, repeats, statistic="best", **how):
    """Seconds per call of ``fn``: the ``statistic`` (``"best"``, the fastest, or
    ``"median"``) of ``timed_samples(fn, repeats, **how)``; by default the best of ``repeats``
    single calls after one untimed call."""
    return STATISTICS[statistic](timed_samples(fn, repeats, **how))


def calls_lasting(fn, target, warmup=1, between=None, clock=wall_clock, most=10 ** 6):
    """How many calls of ``fn`` last about ``target`` seconds (at least one, at most
    ``most``), from one call timed by ``clock`` after ``warmup`` untimed calls and
    ``between`` (untimed): the ``number`` of a sample."""
    for _ in range(warmup):
        fn()
    if between:
        between()
    one = clock(fn, 1)
    return max(1, min(most, int(target / max(one, 1e-9))))


def on_threads(rate, n):
    """The sum of ``rate(i)`` over ``n`` Python threads that start together, thread ``i``
    computing ``rate(i)``: the throughput of ``n`` workers at once (each must release the
    GIL, as the kernels do, for them to run in parallel)."""
    rates = [0.0] * n
    start = threading.Barrier(n)

    def one(i):
        start.wait()
        rates[i] = rate(i)
    workers = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(rates)


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


def cell_budget(args, default, quick):
    """The seconds per cell of a command's ``--budget`` (``args.budget``; when not given,
    ``default``, or ``quick`` under ``--quick``), which must be positive."""
    budget = args.budget if args.budget is not None else (quick if args.quick else default)
    if budget <= 0:
        raise ValueError("--budget must be positive")
    return budget


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
