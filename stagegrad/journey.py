"""``stagegrad journey``: one fixed set of workloads on every installed stage, and on
NumPy and PyTorch as peers, in one run.

Each cell (a workload at a size, on an implementation) is first estimated; a cell whose
single call would exceed the per-cell budget is skipped and the table says so. Otherwise
one untimed warm-up call is followed by timed samples (each sample a loop long enough to
read a clock reliably) until about ``target`` seconds have been timed or five samples
taken, without exceeding the budget; the reported time is the median sample per call.
A whole run (the MNIST training run) starts from a fresh model each time and is timed
whole, up to three times within the same limits; the median run is reported.

A cell whose samples disagree wildly is measured again (``plausibility``), within the same
budget, and its time is the median of all its samples; one whose samples still disagree is
marked unsteady. Every cell records the cores it used: the process's CPU time over the
wall time of its timed calls. A cell faster than the FMA peak of the cores it used, and a
peer more than 1000x slower than a stage, are flagged rather than quoted.

The comparison (a row per workload and size, a column per implementation) is printed as
it is measured, each row as soon as its last cell is, within 100 columns. Writes
``journey.json`` (everything, raw), ``journey.md`` (the table) and the plots ``ladder.png``
and ``roofline.png`` to the output folder.
"""
import json
import os
import sys
import textwrap
import time
from pathlib import Path

from . import machine, plausibility, roofline
from .formatting import fit, fmt_seconds, write_tables
from .journey_report import TextTable, machine_summary, markdown, plot_roofline, plot_speedups
from .measure import cell_budget, library_threads, set_threads, show, steady, time_calls, time_runs
from .progress import Progress

DEFAULT_BUDGET = 10.0   # seconds per cell: the full report takes a few minutes on 2 cores
QUICK_BUDGET = 2.0


def add_arguments(p):
    p.add_argument("--out", default="out/journey", help="output folder (default out/journey)")
    p.add_argument("--budget", type=float, default=None,
                   help=f"seconds per cell; a cell estimated to need longer for one call is skipped "
                        f"(default {DEFAULT_BUDGET:g}, or {QUICK_BUDGET:g} with --quick)")
    p.add_argument("--quick", action="store_true", help="a tiny run: the smallest sizes, short timing")
    p.add_argument("--stages", default=None,
                   help="comma-separated stage numbers or packages (default: every installed stage)")
    p.add_argument("--threads", type=int, default=1,
                   help="thread count for every library (sets OMP/OpenBLAS/MKL variables and "
                        "PyTorch's). Default 1: the stages run on one core, so the peers do "
                        "too; 0 leaves each library its own default")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="the directory holding MNIST (DIR or DIR/mnist) for the training-run "
                        "row: an error if it lacks the files (default: the datasets' search path, "
                        "else a download into the user cache; offline, the bundled slice, as the "
                        "report says)")
    p.add_argument("--download", action="store_true",
                   help="fetch MNIST into --data (or the user cache) if it is not there")


def run(args):
    from . import load_stage
    if args.threads == 0:
        args.threads = None
    set_threads(args.threads)  # before NumPy is imported, so that its OpenBLAS reads the variables
    stages = None
    if args.stages:
        stages = [load_stage(s.strip()).__name__ for s in args.stages.split(",") if s.strip()]
    budget = cell_budget(args, DEFAULT_BUDGET, QUICK_BUDGET)
    mnist_source = _find_mnist(args.data, args.download)
    report = measure_all(stages=stages, budget=budget, quick=args.quick, threads=args.threads,
                         live=sys.stdout)
    report["mnist_source"] = mnist_source
    paths = write(report, Path(args.out), plots=not args.no_plots)
    print()
    print(machine_summary(report, width=100))
    if any(s.startswith("stage4_gpu") for s in report["stages"]):  # the devices' own chapter
        from . import devices
        print("journey: measuring stage 4's devices (stagegrad devices)", file=sys.stderr)
        measured = devices.measure(quick=args.quick)
        paths += list(devices.write(measured, args.out))
        print()
        print(fit(devices.markdown(measured)))
    written, failed = stage3_chapter(report, args)
    paths += written
    print(fit("wrote " + ", ".join(str(p) for p in paths)))
    failed = [f"{r['label']} {r['workload']}: {r['reason']}" for r in report["results"]
              if r["status"] == "error"] + failed
    if failed:
        raise RuntimeError(f"{len(failed)} cell(s) failed: " + "; ".join(failed))
    return report


def stage3_chapter(report, args):
    """Stage 3's own tables, when the journey measured stage 3: the zoo's real models on stages
    2 and 3 beside PyTorch (``stagegrad models``) and the convolution ladder (``stagegrad
    conv-ladder``), quick with ``--quick``, on the journey's thread count (every core with
    ``--threads 0``). Written beside the journey's report, where ``stagegrad docs --from``
    finds them; only their progress is shown (their tables are wider than the journey's 100
    columns). Returns the paths written and a line per failed cell."""
    from . import conv_ladder, models_bench
    packages = [s.partition("[")[0] for s in report["stages"]]
    if "stage3_simd" not in packages:
        return [], []
    threads = [args.threads or machine.cores()["usable"]]
    stages = [s for s in ("stage2_cython", "stage3_simd") if s in packages]
    print("journey: measuring the zoo's models (stagegrad models)", file=sys.stderr)
    budget = models_bench.QUICK_BUDGET if args.quick else models_bench.DEFAULT_BUDGET
    models = models_bench.measure(list(models_bench.MODELS), stages, threads, quick=args.quick, budget=budget)
    paths = list(write_tables(args.out, "models", models, models_bench.markdown(models)))
    print("journey: measuring stage 3's convolution ladder (stagegrad conv-ladder)", file=sys.stderr)
    budget = conv_ladder.QUICK_BUDGET if args.quick else conv_ladder.DEFAULT_BUDGET
    ladder = conv_ladder.measure(list(conv_ladder.LAYERS), threads, quick=args.quick, budget=budget)
    paths += write_tables(args.out, "conv_ladder", ladder, conv_ladder.markdown(ladder))
    failed = [f"{r['label']} {r.get('model') or r.get('layer')} {r['mode']}: {r['reason']}"
              for r in models["rows"] + ladder["rows"] if r["status"] != "ok"]
    return paths, failed


def _find_mnist(data, download):
    """Point the MNIST row at ``--data`` (authoritative: an error when the files are not
    there), at the search path's copy, or at a download; offline, at the bundled slice.
    Returns where the data came from, for the report to say."""
    from . import datafiles, load_stage, workloads
    say = lambda m: print("journey: " + m, file=sys.stderr)  # noqa: E731
    try:
        workloads.MNIST_ROOT = datafiles.mnist_dir(data, download, say=say)
        source = str(workloads.MNIST_ROOT)
    except datafiles.NotDownloaded as e:
        if data is not None:
            raise
        workloads.MNIST_ROOT = load_stage("0").datasets.SAMPLE_ROOT
        source = (f"the bundled slice of MNIST in {workloads.MNIST_ROOT} (the full set was found "
                  f"nowhere and could not be downloaded: {e.why})")
    say(f"MNIST from {source}")
    return source


def measure_all(stages=None, budget=DEFAULT_BUDGET, quick=False, threads=None, stream=None, live=None):
    """Run every cell; return the report (a JSON-ready dict). With ``live`` (a text
    stream), the comparison table is printed there a row at a time, as each row's last
    cell is measured. ``threads`` (None: each library's default) is given to every
    implementation before anything is measured."""
    from .workloads import WORKLOADS, Impl, implementations
    stream = stream or sys.stderr
    started = time.time()
    # NumPy's OpenBLAS reads the variable once, at import: imported before it held this count,
    # NumPy keeps its default
    numpy_first = (threads is not None and "numpy" in sys.modules
                   and os.environ.get("OPENBLAS_NUM_THREADS") != str(threads))
    set_threads(threads)
    if threads is not None:
        try:
            import torch
            torch.set_num_threads(threads)
        except ImportError:
            pass
    print(textwrap.fill(f"journey: {machine.banner()}", 100, subsequent_indent="  "), file=stream)
    print("journey: measuring the machine's roofline (FMA peak, BLAS GEMM, memory and cache bandwidth)",
          file=stream)
    facts = machine.describe()
    facts["peak"] = roofline.measure_peak_gflops(threads or machine.cores()["usable"])
    facts["gemm"] = roofline.measure_gemm_gflops()
    facts["bandwidth"] = roofline.measure_bandwidth_gbs()
    facts["cache_bandwidth"] = roofline.measure_cache_bandwidth_gbs()
    if numpy_first:
        facts["threads"]["note"] = ("NumPy was imported before the thread variables were set: its "
                                    "OpenBLAS runs on its own default")
    impls = [Impl(name) for name in implementations(stages)]
    set_threads(threads)  # the stages imported just now read the variables; this says it again
    facts["simd"] = {i.package: i.lib.simd_info() for i in impls if hasattr(i.lib, "simd_info")}
    target = 0.05 if quick else 0.5
    # a stage's second GEMM is measured only where a workload multiplies matrices
    cells = [(w, s, impl) for w in WORKLOADS for s in (w.quick_sizes if quick else w.sizes) for impl in impls
             if w.gemm or impl.first_gemm]
    head = {"implementations": [{"name": m.name, "label": m.label, "kind": m.kind, "package": m.package,
                                 "threads": library_threads(m)} for m in impls],
            "workloads": [{"key": w.key, "title": w.title, "metric": w.metric} for w in WORKLOADS]}
    table = TextTable(head, labels=[w.size_label(s) for w, s, _ in cells]) if live else None
    if table:
        show(live, stream, table.header())
    bar = Progress(len(cells), "journey", stream=stream)
    measured = {impl.name: {} for impl in impls}
    results = []
    for i, (w, size, impl) in enumerate(cells, 1):
        bar.update(i - 1, now=f"{impl.label}: {w.key} {w.size_label(size)}")
        row = measure_cell(w, size, impl, budget, target, measured[impl.name])
        if row["status"] == "ok":
            measured[impl.name][(w.key, size)] = row["time_s"]
        results.append(row)
        if table and (i == len(cells) or cells[i][:2] != (w, size)):  # the row is complete
            done = [r for r in results if (r["workload"], r["size"]) == (w.key, size)]
            plausibility.check({"machine": facts, "results": done})
            add_ratios(dict(head, results=done))
            show(live, stream, table.row(done))
    bar.update(len(cells), now="done")
    if table:
        show(live, stream, "\n" + table.footer())
    report = {
        "format": 2,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "wall_s": time.time() - started,
        "quick": quick,
        "budget_s": budget,
        "target_s": target,
        "machine": facts,
        "implementations": head["implementations"],
        "stages": [m.name for m in impls if m.kind == "stage"],
        "workloads": head["workloads"],
        "results": results,
    }
    plausibility.check(report)
    add_ratios(report)
    add_cores(report)
    return report


def add_cores(report):
    """Each implementation's ``cores``: the most any of its cells used (CPU time over wall
    time of the timed calls), beside the ``threads`` it was set to."""
    for impl in report["implementations"]:
        seen = [r["cores"] for r in report["results"] if r["impl"] == impl["name"] and r.get("cores")]
        impl["cores"] = max(seen) if seen else None


def measure_cell(w, size, impl, budget, target, measured):
    from .workloads import Unsupported, estimate_seconds
    row = {"workload": w.key, "size": size, "size_label": w.size_label(size), "impl": impl.name,
           "label": impl.label if w.gemm else impl.base_label, "kind": impl.kind, "package": impl.package,
           "metric": w.metric,
           "flops": w.flops(size) if w.flops else None, "bytes": w.nbytes(size) if w.nbytes else None,
           "status": "ok", "reason": None, "time_s": None, "rate": None, "extra": {}}
    try:
        est = estimate_seconds(w, size, impl, measured)
        row["estimate_s"] = est
        if est > budget:
            return dict(row, status="skipped", reason=f"est. {fmt_seconds(est)} > budget {budget:g} s")
        impl.activate()
        fn = w.build(impl, size)
        timing = steady(lambda left: time_runs(fn, left, target) if w.once else time_calls(fn, left, target),
                        budget)
    except Unsupported as e:
        return dict(row, status="unsupported", reason=str(e))
    except Exception as e:  # a failing cell is reported, and the run goes on
        return dict(row, status="error", reason=f"{type(e).__name__}: {e}")
    row.update(timing)
    row["rate"] = w.rate(size, row["time_s"]) if w.metric else None
    return row


def add_ratios(report):
    """Speed-up over the previous stage and speed relative to PyTorch, for every cell
    (both as ratios of times measured in this run; >1 means faster), each with the reason
    it is not a result (``*_doubt``; None for a result; see ``plausibility``)."""
    packages = list(dict.fromkeys(i["package"] for i in report["implementations"] if i["kind"] == "stage"))
    cells = {(r["workload"], str(r["size"]), r["impl"]): r for r in report["results"]}
    by_package = {}  # the previous stage's row: its first (or only) implementation measured
    for r in report["results"]:
        by_package.setdefault((r["workload"], str(r["size"]), r["package"]), r)
    for r in report["results"]:
        r["speedup_prev"] = r["vs_torch"] = r["speedup_prev_doubt"] = r["vs_torch_doubt"] = None
        if r["status"] != "ok":
            continue
        key = (r["workload"], str(r["size"]))
        if r["kind"] == "stage" and packages.index(r["package"]) > 0:
            prev = by_package.get(key + (packages[packages.index(r["package"]) - 1],))
            if prev and prev["status"] == "ok":
                r["speedup_prev"] = prev["time_s"] / r["time_s"]
                r["speedup_prev_doubt"] = plausibility.ratio_doubt(prev, r)
        torch = cells.get(key + ("torch",))
        if torch and torch["status"] == "ok":
            r["vs_torch"] = torch["time_s"] / r["time_s"]
            r["vs_torch_doubt"] = plausibility.ratio_doubt(torch, r)


def write(report, out, plots=True):
    """Write journey.json, journey.md and (unless ``plots`` is false) the figures."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "journey.json", out / "journey.md"]
    paths[0].write_text(json.dumps(report, indent=1, default=str) + "\n")
    paths[1].write_text(markdown(report) + "\n")
    if plots:
        paths.append(plot_speedups(report, out / "ladder.png"))
        paths.append(plot_roofline(report, out / "roofline.png"))
    return paths
