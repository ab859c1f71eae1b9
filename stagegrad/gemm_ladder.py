"""``stagegrad gemm-ladder``: stage 3's GEMM built up one idea at a time, measured here.

Each rung is the one before plus one idea (``stage3_simd/csrc/gemm_ladder.hpp``):

1. naive i-j-k loops;
2. loop order i-k-j: the inner loop runs along rows, and the compiler vectorises it;
3. packing A and B into contiguous panels;
4. the register-blocked micro-kernel (xsimd) on the panels;
5. cache blocking, MC/KC/NC sized from the caches: this is the real GEMM on one thread;
6. threads.

Then the blocked GEMM on each SIMD path the CPU runs (the same source compiled for SSE2,
AVX2 and AVX-512: what the register width buys), and OpenBLAS on one and on every thread.
Each step's product is checked against OpenBLAS's before it is timed (the command stops,
naming the step, when one differs). Every figure is GFLOP/s and its fraction of one core's
measured FMA peak (the best of many runs of independent multiply-add chains in registers on
the widest path, as the journey measures it: the arithmetic ceiling, with no memory traffic
at all), all from this one run.

Writes ``gemm_ladder.json``, ``gemm_ladder.md`` and ``gemm_ladder.png`` to the output folder.
``--sizes`` climbs the ladder at each size too, from matrices that fit in L1 to matrices that
spill L3, into ``gemm_sweep.json``, ``gemm_sweep.md`` and ``gemm_sweep.png`` (GFLOP/s against
n, a line per step): where each idea pays depends on where the operands live. A step whose
time at the size before, scaled by n³, says one call would outlast the budget is not run
at the larger size, and the table says so.
"""
import time
from pathlib import Path

from .conv_ladder import RTOL, check
from .formatting import markdown_table, pyplot, write_tables
from .measure import seconds_per_call
from .roofline import measure_peak_gflops

RUNGS = {1: "naive i-j-k loops", 2: "loop order i-k-j", 3: "+ packing", 4: "+ register micro-kernel",
         5: "+ cache blocking (one thread)", 6: "+ threads"}


def add_arguments(p):
    p.add_argument("--size", type=int, default=1024, help="the square matrices' size (default 1024)")
    p.add_argument("--budget", type=float, default=4.0, help="seconds per rung at most (default 4)")
    p.add_argument("--out", default="out/gemm-ladder", help="output folder (default out/gemm-ladder)")
    p.add_argument("--sizes", default=None,
                   help="comma-separated sizes to sweep as well, e.g. 32,64,...,3072 (default: none)")
    p.add_argument("--sweep-budget", type=float, default=2.0,
                   help="seconds per step at each size of the sweep (default 2)")
    p.add_argument("--no-plot", action="store_true", help="skip the figures")


def _best(fn, budget):
    """Best of up to five calls, as many as fit in ``budget`` seconds (at least one)."""
    return seconds_per_call(fn, 5, "best", warmup=0, budget=budget)


def measure(size=1024, budget=4.0, stream=None, before=None):
    """Every rung, each SIMD path and OpenBLAS: a JSON-ready dict. ``before``, the report at
    a smaller size, skips a step whose time there, scaled by n³, exceeds ``budget``."""
    from . import load_stage, machine
    from .progress import Progress
    sg = load_stage("3")
    K = sg.backend.K
    cores = machine.cores()["usable"]
    # the journey's and the conv ladder's measure (the best of many runs): one run of the loop
    # on a shared machine can read a third low, and every "of peak" below would read high
    roof = measure_peak_gflops(1)
    peak = {"gflops": roof["gflops"], "by": f"{roof['by']}: {roof['method']}"}
    a = sg.randn(size, size)._data
    b = sg.randn(size, size)._data
    flops = 2.0 * size ** 3
    paths = K.supported_paths()
    steps = len(RUNGS) + len(paths) + 2
    bar = Progress(steps, "gemm-ladder", stream=stream)
    rows, done = [], 0

    # each step's predicted time for one call: its time at the size before, scaled by n³
    predicted = {r["label"]: r["seconds"] and r["seconds"] * (size / before["size"]) ** 3
                 for r in before["rows"]} if before else {}

    import numpy as np  # the check's oracle arithmetic, outside the timed calls
    reference = [np.asarray(K.matmul(a, b, "blas"))]

    def record(kind, label, call, threads, **extra):
        nonlocal done
        guess = predicted.get(label, 0.0)
        seconds = None
        if guess is not None and guess <= budget:
            # against OpenBLAS's product as the conv ladder checks its rungs: max |C - C_blas| /
            # max |C_blas| within RTOL (a wrong element is off by about the whole scale), and finite
            checked = check([np.asarray(call())], reference)
            if not checked["ok"]:
                raise SystemExit(f"gemm-ladder: {label} at n = {size} differs from OpenBLAS's product "
                                 f"(max error / max |C| = {checked['max_rel_diff']:.2g}, over {RTOL:g}); "
                                 "a wrong answer is not timed")
            seconds = _best(call, budget)
        gflops = flops / seconds / 1e9 if seconds else None
        rows.append(dict(kind=kind, label=label, seconds=seconds, gflops=gflops, threads=threads,
                         of_peak=gflops / peak["gflops"] if gflops and peak["gflops"] else None, **extra))
        done += 1
        bar.update(done, now=label)

    previous = K.get_num_threads()
    try:
        for rung, label in RUNGS.items():
            threads = cores if rung == 6 else 1
            record("rung", f"{rung}. {label}", lambda: K.gemm_rung(rung, a, b, threads), threads, rung=rung)
        best_path = K.isa()
        for path in paths:
            K.set_path(path)
            record("isa", f"blocked GEMM, {path}", lambda: K.gemm_rung(5, a, b, 1), 1, isa=path)
        K.set_path(best_path)
        for threads in (1, cores):
            K.set_num_threads(threads)
            record("blas", f"OpenBLAS, {threads} thread{'s' * (threads > 1)}",
                   lambda: K.matmul(a, b, "blas"), threads)
    finally:
        K.set_num_threads(previous)
    blas1 = next(r["gflops"] for r in rows if r["kind"] == "blas" and r["threads"] == 1)
    for r in rows:
        r["of_blas"] = r["gflops"] / blas1 if r["gflops"] else None
    return {"size": size, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "peak": peak, "cores": cores,
            "path": K.isa(), "blocking": K.gemm_blocking(), "simd": sg.simd_info(), "rows": rows}


def markdown(report):
    lines = [f"GEMM ladder, float32 {report['size']}x{report['size']}, {report['created']}; "
             f"SIMD path {report['path']}; blocking "
             + ", ".join(f"{k}={v}" for k, v in report["blocking"].items() if not k.endswith("bytes"))
             + "; caches " + ", ".join(f"{k[:-6]} {v // 1024} KiB" for k, v in report["blocking"].items()
                                      if k.endswith("bytes")) + ".",
             ""]
    peak = report["peak"]["gflops"]
    head = ["step", "threads", "time", "GFLOP/s", "of peak", "of OpenBLAS (1 thread)"]
    body = [[r["label"], str(r["threads"]), f"{r['seconds'] * 1e3:.3g} ms", f"{r['gflops']:.3g}",
             f"{r['of_peak']:.0%}" if r["of_peak"] else "—", f"{r['of_blas']:.0%}"] for r in report["rows"]
            if r["seconds"]]
    lines += markdown_table(head, body)
    if peak:
        lines += ["", f"Peak: {peak:.1f} GFLOP/s ({report['peak']['by']})."]
    return "\n".join(lines)


def plot(report, path):
    plt = pyplot()
    rows = report["rows"]
    fig, ax = plt.subplots(figsize=(10, 4.8))
    colors = {"rung": "tab:blue", "isa": "tab:green", "blas": "tab:grey"}
    ax.barh(range(len(rows)), [r["gflops"] for r in rows], color=[colors[r["kind"]] for r in rows])
    ax.set_yticks(range(len(rows)), [r["label"] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    if report["peak"]["gflops"]:
        ax.axvline(report["peak"]["gflops"], color="black", linestyle="--", linewidth=1,
                   label=f"measured FMA peak, one thread ({report['peak']['gflops']:.0f} GFLOP/s)")
        ax.legend(loc="lower right", fontsize=8)
    for i, r in enumerate(rows):
        ax.text(r["gflops"] * 1.05, i, f"{r['gflops']:.3g}", va="center", fontsize=8)
    ax.set_xlabel("GFLOP/s (log scale)")
    ax.set_title(f"The GEMM ladder: float32 {report['size']}x{report['size']} on {report['simd']['cpu']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sweep(sizes, budget, stream=None):
    """The ladder at each of ``sizes`` (ascending), each step skipped once the size before
    says it would outlast ``budget``: a JSON-ready dict."""
    reports = []
    for size in sorted(sizes):
        reports.append(measure(size, budget, stream=stream, before=reports[-1] if reports else None))
    return {"sizes": sorted(sizes), "budget_s": budget, "ladders": reports}


def _home(blocking, size):
    """The smallest cache that A, B and C (float32, n x n each) fit in together, or memory."""
    need = 3 * 4 * size * size
    return next((level for level in ("L1d", "L2", "L3") if need <= blocking[f"{level}_bytes"]), "memory")


def sweep_markdown(report):
    """GFLOP/s per step (rows) and size (columns), with where the operands spill each cache."""
    ladders = report["ladders"]
    first = ladders[0]
    head = ["step"] + [str(r["size"]) for r in ladders]
    body = [[row["label"]] + [f"{lad['rows'][k]['gflops']:.3g}" if lad["rows"][k]["gflops"] else "—"
                              for lad in ladders] for k, row in enumerate(first["rows"])]
    homes = [f"{r['size']} in {_home(r['blocking'], r['size'])}" for r in ladders]
    return "\n".join([f"GEMM ladder, float32 n x n, GFLOP/s at each n ({first['created']}; SIMD path "
                      f"{first['path']}). — : not run, its time at the size before, scaled by n³, "
                      f"exceeds {report['budget_s']:g} s.", "", *markdown_table(head, body), "",
                      "Where A, B and C fit together: " + ", ".join(homes) + "."])


def sweep_plot(report, path):
    """GFLOP/s against n, one line per step, log-log, with the sizes where A, B and C overflow
    each cache marked."""
    plt = pyplot()
    ladders = report["ladders"]
    fig, ax = plt.subplots(figsize=(10, 5.2))
    for k, row in enumerate(ladders[0]["rows"]):
        points = [(lad["size"], lad["rows"][k]["gflops"]) for lad in ladders if lad["rows"][k]["gflops"]]
        style = {"rung": "-o", "isa": ":s", "blas": "--^"}[row["kind"]]
        ax.plot(*zip(*points), style, markersize=4, label=row["label"])
    blocking = ladders[0]["blocking"]
    for level in ("L1d", "L2", "L3"):
        n = (blocking[f"{level}_bytes"] / 12) ** 0.5  # 3 n² floats of 4 bytes fill the level
        if ladders[0]["size"] <= n <= ladders[-1]["size"]:
            ax.axvline(n, color="grey", linewidth=0.8)
            ax.text(n, ax.get_ylim()[1], f" A+B+C > {level}", rotation=90, va="top", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (float32 n x n matrices)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"The GEMM ladder against n on {ladders[0]['simd']['cpu']}")
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run(args):
    if args.size < 1 or args.budget <= 0:
        raise ValueError("--size and --budget must be positive")
    report = measure(args.size, args.budget)
    text = markdown(report)
    written = list(write_tables(args.out, "gemm_ladder", report, text))
    print()
    print(text)
    if not args.no_plot:
        written.append(plot(report, Path(args.out) / "gemm_ladder.png"))
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        if min(sizes) < 1 or args.sweep_budget <= 0:
            raise ValueError("--sizes and --sweep-budget must be positive")
        swept = sweep(sizes, args.sweep_budget)
        text = sweep_markdown(swept)
        written += write_tables(args.out, "gemm_sweep", swept, text)
        print()
        print(text)
        if not args.no_plot:
            written.append(sweep_plot(swept, Path(args.out) / "gemm_sweep.png"))
    print("wrote " + ", ".join(map(str, written)))
    return report
