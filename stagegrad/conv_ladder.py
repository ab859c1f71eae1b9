"""``stagegrad conv-ladder``: stage 3's convolution one idea at a time, next to PyTorch.

The layers (``LAYERS``): the 3x3 stride-1 convolutions of ResNet-18's four stages with the
small-image stem on 3x32x32 images at batch 16 (64 channels at 32x32, 128 at 16x16, 256 at
8x8, 512 at 4x4, padding 1), and the MNIST CNN's two 5x5 convolutions at batch 64 (1 to 16
channels at 28x28 with padding 2, 16 to 32 at 14x14 without), all float32 and without a
bias (the CNN's own layers have one: a small add that is left out).

The rungs (``RUNGS``), each on stage 3:

1. unfold + GEMM: the backend's fused kernels switched off (``FUSED`` emptied for the
   call), so the frontend's composite runs: ``unfold`` copies every patch into a column of
   the im2col matrix, one batched product on stage 3's GEMM makes the output; the backward
   is two more batched products and ``fold``;
2. implicit GEMM: stage 3's convolution kernel (``csrc/conv.hpp``, ``sg.backends.conv =
   "implicit"``), whose GEMM packs its panels straight from the image, so the im2col matrix
   is never made;
3. direct (``csrc/direct.hpp``, ``sg.backends.conv = "direct"``): no GEMM and no packing;
   register blocks of 8 output channels by 32 pixels, each tap one vector load of a
   zero-bordered copy of the image, computed on the padded width;
4. Winograd F(2x2,3x3) (``csrc/winograd.hpp``, ``sg.backends.conv = "winograd"``) on the 3x3
   layers: every pass by Winograd, 2.25x fewer multiply-adds, on 16 GEMMs between
   transforms;
5. channels last (``csrc/taps.hpp``, ``sg.backends.conv = "taps"``): every pass a filter tap at a
   time over a channels-last copy of the image, read in place, so no patch is gathered: the
   weight gradient a GEMM over the pixels, the forward (and the stride-1 input gradient, its
   adjoint) a GEMM of the pixels' rows by the filters packed tap-major;
6. stage 3's default (``"auto"``): per pass, the algorithm a fixed rule (``use_direct`` and
   ``use_winograd`` in ``csrc/conv.hpp``, set from this table) expects to be fastest.

PyTorch is the peer.

Each layer has two passes: the forward alone (under ``no_grad``), and forward plus backward
(``autograd.grad`` of the output, with a fixed random gradient, to the input and the
weights; to the weights alone for the CNN's first layer, whose input is the image).
Before it is timed, every rung's answer (the output, or each gradient) is checked against
PyTorch's: one further from it than ``RTOL`` of its largest magnitude is not timed, the
table marks it and the command fails after writing its report. Without PyTorch the stage
rungs are measured alone, the implicit GEMM checked against the unfold + GEMM rung.

FLOP: the forward is 2*N*O*C*kh*kw*OH*OW; each gradient costs as many, so forward plus
backward is 3x the forward, 2x on the CNN's first layer. GFLOP/s is that over the time, and
its share of the peak that over the FMA peak on the same thread count
(``roofline.measure_peak_gflops``).

Timing: the check's call is the first warm-up; the journey's ``steady``/``time_calls`` then
time the call within the per-cell budget, after their own warm-up: the median time per call.
Every library gets the same thread count (``measure.set_threads``; default one), each cell
records the count its library reports.

Writes ``conv_ladder.json`` (every cell) and ``conv_ladder.md`` (the table) to ``--out``.
"""
import contextlib
import gc
import importlib.util
import sys
import time
from dataclasses import dataclass

from . import machine, roofline
from .cells import cell_marks, failure_notes, mark_notes, rates, threads_heading, unpinned_note, vs_torch
from .formatting import fmt_seconds, markdown_table, publish
from .measure import cell_budget, library_threads, names, set_threads, steady, thread_counts, time_calls

DEFAULT_BUDGET = 2.0   # seconds per cell, warm-up included
QUICK_BUDGET = 0.25
RTOL = 1e-4  # of the reference's largest magnitude: one layer's float32 sums differ by ~1e-6 of it
RUNGS = {"unfold": "unfold + GEMM", "implicit": "implicit GEMM", "direct": "direct",
         "winograd": "Winograd F(2x2,3x3)", "taps": "channels last, by taps", "auto": "stage 3's default"}
WINOGRAD_ONLY = ("winograd",)  # rungs shown only where Winograd applies (else: the implicit GEMM)
PEER = {"torch": "PyTorch"}
PASSES = {"forward": "forward", "train": "forward+backward"}
SHOWN = (*RUNGS, *PEER)  # the table's order: the ladder, then the peer


@dataclass(frozen=True)
class Layer:
    """One convolution of the table: batch, channels in and out, square image and kernel
    sizes, padding (stride 1, no bias), and whether its input takes a gradient."""
    key: str
    title: str
    batch: int
    cin: int
    cout: int
    size: int
    kernel: int
    padding: int
    input_grad: bool = True

    @property
    def winograd(self):
        """Whether Winograd F(2x2, 3x3) applies (3x3, stride 1, padding at most 2)."""
        return self.kernel == 3 and self.padding <= 2

    @property
    def out(self):
        """The output's height and width."""
        return self.size + 2 * self.padding - self.kernel + 1

    def flops(self, mode):
        """Floating-point operations of a pass: the forward's 2*N*O*C*kh*kw*OH*OW, and one
        forward's worth more for each gradient computed."""
        forward = 2 * self.batch * self.cout * self.cin * self.kernel ** 2 * self.out ** 2
        return forward * (1 if mode == "forward" else 2 + self.input_grad)

    def describe(self):
        """The layer for the report: its geometry and FLOP per pass."""
        return {"key": self.key, "title": self.title, "batch": self.batch, "cin": self.cin, "cout": self.cout,
                "size": self.size, "kernel": self.kernel, "padding": self.padding, "out": self.out,
                "input_grad": self.input_grad, "flops": {m: self.flops(m) for m in PASSES}}


LAYERS = {layer.key: layer for layer in (
    Layer("resnet18.1", "ResNet-18 stage 1", 16, 64, 64, 32, 3, 1),
    Layer("resnet18.2", "ResNet-18 stage 2", 16, 128, 128, 16, 3, 1),
    Layer("resnet18.3", "ResNet-18 stage 3", 16, 256, 256, 8, 3, 1),
    Layer("resnet18.4", "ResNet-18 stage 4", 16, 512, 512, 4, 3, 1),
    Layer("cnn.conv1", "MNIST CNN conv1", 64, 1, 16, 28, 5, 2, input_grad=False),
    Layer("cnn.conv2", "MNIST CNN conv2", 64, 16, 32, 14, 5, 0),
)}


def add_arguments(p):
    """The command's options."""
    p.add_argument("--out", default="out/conv-ladder", help="output folder (default out/conv-ladder)")
    p.add_argument("--layers", default=",".join(LAYERS),
                   help=f"comma-separated layers (default: all of {', '.join(LAYERS)})")
    p.add_argument("--threads", default="1",
                   help="comma-separated thread counts, each given to every library in turn (default 1)")
    p.add_argument("--budget", type=float, default=None,
                   help=f"seconds per cell (default {DEFAULT_BUDGET:g}, or {QUICK_BUDGET:g} with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="short timing: a small budget per cell (for tests and the docs build)")


def run(args):
    """Measure, print the table, write conv_ladder.json and conv_ladder.md; an error when a
    cell failed or computed a different answer from the reference's (after writing both)."""
    layers = names(args.layers, LAYERS, "layers")
    threads = thread_counts(args.threads)
    budget = cell_budget(args, DEFAULT_BUDGET, QUICK_BUDGET)
    set_threads(threads[0])  # before PyTorch loads, so that its libraries read the count too
    report = measure(layers, threads, quick=args.quick, budget=budget)
    publish(args.out, "conv_ladder", report, markdown(report), wrap=True)
    failed = [r for r in report["rows"] if r["status"] != "ok"]
    if failed:
        raise RuntimeError(f"{len(failed)} cell(s) failed: " + "; ".join(
            f"{r['label']} {r['layer']} {PASSES[r['mode']]} on {r['threads']} thread(s): {r['reason']}"
            for r in failed))
    return report


# ------------------------------------------------------------------ one layer, one implementation

def _data(layer, seed=0):
    """Fixed NumPy inputs: the image, the filters (scaled so that the output is of order 1)
    and the output's gradient."""
    import numpy as np
    rng = np.random.default_rng(seed)
    k, o = layer.kernel, layer.out
    x = rng.standard_normal((layer.batch, layer.cin, layer.size, layer.size), dtype=np.float32)
    w = rng.standard_normal((layer.cout, layer.cin, k, k), dtype=np.float32) / (layer.cin * k * k) ** 0.5
    g = rng.standard_normal((layer.batch, layer.cout, o, o), dtype=np.float32)
    return x, w, g


@contextlib.contextmanager
def algorithm(lib, rung):
    """``lib``'s convolution as ``rung``: the composite (no fused kernel offered), or the
    kernel's algorithm of that name (``backends.conv``)."""
    if rung == "unfold":
        with composite(lib):
            yield
        return
    before = lib.backends.conv
    lib.backends.conv = rung
    try:
        yield
    finally:
        lib.backends.conv = before


@contextlib.contextmanager
def composite(lib):
    """The frontend's composites on ``lib`` (``unfold`` and the GEMM): no fused kernel offered."""
    fused = lib.backend.FUSED
    lib.backend.FUSED = frozenset()
    try:
        yield
    finally:
        lib.backend.FUSED = fused


def calls(impl, rung, layer, data):
    """The zero-argument calls of ``layer`` on ``impl`` (its ``rung``, or the peer), by pass:
    each returns its answers (the output, or the gradients) as a tuple of tensors."""
    lib = impl.lib
    conv = lib.nn.functional.conv2d
    x_np, w_np, g_np = data
    x, w = impl.tensor(x_np), impl.tensor(w_np)
    xg, wg = impl.tensor(x_np, requires_grad=layer.input_grad), impl.tensor(w_np, requires_grad=True)
    g = impl.tensor(g_np)
    wrt = (xg, wg) if layer.input_grad else (wg,)
    scope = (lambda: algorithm(lib, rung)) if rung in RUNGS else contextlib.nullcontext

    def forward():
        with scope(), lib.no_grad():
            return (conv(x, w, padding=layer.padding),)

    def train():
        with scope():
            return tuple(lib.autograd.grad(conv(xg, wg, padding=layer.padding), wrt, g))
    return {"forward": forward, "train": train}


def _numpy(answers):
    return [a.detach().numpy().copy() for a in answers]


def check(answers, reference):
    """``answers`` beside ``reference`` (NumPy arrays, one per output): the largest
    difference of each over the reference's largest magnitude, and whether every one is
    within ``RTOL``."""
    import numpy as np
    worst, ok = 0.0, len(answers) == len(reference)
    for ours, theirs in zip(answers, reference):
        if ours.shape != theirs.shape:
            return {"max_rel_diff": float("inf"), "ok": False}
        scale = float(np.abs(theirs).max()) or 1.0
        diff = float(np.abs(ours.astype(np.float64) - theirs).max()) / scale
        worst = max(worst, diff)
        ok = ok and bool(np.isfinite(ours).all()) and diff <= RTOL
    return {"max_rel_diff": worst, "ok": ok}


def measure_cell(impl, rung, layer, mode, call, reference, budget, target):
    """One cell: ``call`` checked against ``reference`` (None: it is the reference), then timed."""
    label = RUNGS.get(rung) or PEER[rung]
    row = {"layer": layer.key, "mode": mode, "rung": rung, "label": label, "impl": impl.name,
           "status": "ok", "reason": None, "time_s": None}
    try:
        answers = _numpy(call())
        if reference is not None:
            row["check"] = checked = check(answers, reference["answers"])
            if not checked["ok"]:
                why = (f"computes a different answer from {reference['label']}: differs by up to "
                       f"{checked['max_rel_diff']:.3g} of its largest magnitude")
                return dict(row, status="wrong", reason=why)
        row.update(steady(lambda left: time_calls(call, left, target), budget))
    except Exception as e:  # a failing cell is reported, and the run goes on
        return dict(row, status="error", reason=f"{type(e).__name__}: {e}")
    row["answers"] = answers  # the reference for the cells after it; dropped before the report
    return row


# ------------------------------------------------------------------ the run

def measure(layers, threads, quick=False, budget=DEFAULT_BUDGET, stream=None):
    """Every cell: ``layers`` (keys of ``LAYERS``), each pass, each rung and PyTorch when
    installed, on each of ``threads``. Returns the report (a JSON-ready dict)."""
    from . import load_stage
    from .progress import Progress
    from .workloads import Impl
    stream = stream or sys.stderr
    started = time.time()
    sg = load_stage("3")
    stage = Impl(sg.__name__)
    has_torch = importlib.util.find_spec("torch") is not None
    peer = Impl("torch") if has_torch else None
    # the reference is measured first, so that every cell after it is checked against it
    order = ([("torch", peer)] if peer else []) + [(rung, stage) for rung in RUNGS]
    target = budget / 3  # seconds of timed calls aimed for; the rest of the budget warms up
    report = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)), "quick": quick,
              "budget_s": budget, "target_s": target, "threads": threads, "machine": machine.describe(),
              "torch": peer.lib.__version__ if peer else None, "stage": sg.__name__,
              "gemm": sg.backends.gemm, "path": sg.backend.K.isa(), "rtol": RTOL,
              "reference": "torch" if peer else "unfold",
              "layers": [LAYERS[k].describe() for k in layers], "peak": {}, "rows": []}
    print(f"conv-ladder: {machine.banner()}", file=stream)
    if not peer:
        print("conv-ladder: PyTorch is not installed: the stage's rungs are measured alone, the "
              f"implicit GEMM checked against {RUNGS['unfold']}", file=stream)
    bar = Progress(len(threads) * len(layers) * len(PASSES) * len(order), "conv-ladder", stream=stream)
    done = 0
    for n in threads:
        set_threads(n)
        print(f"conv-ladder: the FMA peak on {n} thread(s)", file=stream)
        report["peak"][str(n)] = peak = roofline.measure_peak_gflops(n, seconds=0.05 if quick else 0.2)
        for key in layers:
            layer = LAYERS[key]
            data = _data(layer)
            for mode in PASSES:
                reference, cells = None, []
                for rung, impl in order:
                    if rung in WINOGRAD_ONLY and not layer.winograd:
                        done += 1
                        continue
                    bar.update(done, now=f"{layer.title} {PASSES[mode]}: {RUNGS.get(rung) or PEER[rung]}, "
                                         f"{n} thread(s)")
                    impl.activate()
                    call = calls(impl, rung, layer, data)[mode]
                    row = measure_cell(impl, rung, layer, mode, call, reference, budget, target)
                    if reference is None and row["status"] == "ok":
                        reference = {"label": row["label"], "answers": row["answers"]}
                    row.update(threads=n, library_threads=library_threads(impl))
                    rates(row, layer.flops(mode), peak)
                    cells.append(row)
                    done += 1
                vs_torch(cells)
                for row in cells:
                    row.pop("answers", None)
                report["rows"] += cells
            gc.collect()
            sg.memory.empty_cache()  # the next layer starts from an empty pool, as this one did
    bar.update(done, now="done")
    report["wall_s"] = time.time() - started
    return report


# ------------------------------------------------------------------ the table

def _intro(report):
    kind = "a quick run (short timing)" if report["quick"] else "a full run"
    m = report["machine"]
    text = (f"Stage 3's convolution one rung at a time, float32, {kind}, {report['created']}, on "
            f"{m['cpu_model']} (SIMD path {report['path']}).")
    rungs = ("Unfold + GEMM: the composite, with the backend's fused kernels switched off: `unfold` "
             "copies every patch into a column of the im2col matrix, and one batched product on stage 3's "
             f"GEMM (`sg.backends.gemm` = `{report['gemm']}`) makes the output; the backward is two more "
             "products and `fold`. Implicit GEMM: stage 3's convolution kernel, whose GEMM packs its panels "
             "straight from the image, so the im2col matrix is never made. Direct: no GEMM and no packing, "
             "register blocks of 8 output channels by 32 pixels over a zero-bordered copy of the image. "
             "Winograd F(2x2,3x3), on the 3x3 layers: each 2x2 output tile from 16 products instead of 36, "
             "as 16 GEMMs over every tile between transforms; its GFLOP/s count the direct convolution's "
             "FLOP, so they can pass the peak. Channels last, by taps: every pass a filter tap at a time over a "
             "channels-last copy of the image, read in place, so no patch is gathered (the stride-1 input "
             "gradient as the forward's adjoint). Stage 3's default (`sg.backends.conv` = \"auto\"): per "
             "pass, the algorithm a fixed rule expects to be fastest.")
    cells = ("Each cell: the median time of one call; forward alone under `no_grad`, or forward+backward: "
             "`autograd.grad` of the output, with a fixed random gradient, to the input and the weights. ")
    if report["torch"]:
        cells += (f"Every rung matched PyTorch's answers (the output, or each gradient) within "
                  f"{report['rtol']:g} of their largest magnitude before it was timed. vs PyTorch: PyTorch's "
                  f"time ({report['torch']}, in the same run) over the rung's; above 1x the rung is faster.")
    else:
        cells += ("PyTorch is not installed: the stage's rungs are measured alone, the implicit GEMM "
                  f"checked against the unfold + GEMM rung's answers within {report['rtol']:g} of their "
                  "largest magnitude.")
    flops = ("FLOP: the forward is 2·N·O·C·kh·kw·OH·OW; each gradient costs as many, so forward+backward "
             "counts 3x the forward, and 2x on the CNN's first layer, whose input (the image) takes no "
             "gradient. Of peak: GFLOP/s over the FMA peak on as many threads.")
    lines = [text, "", rungs, "", cells, "", flops, ""]
    for d in report["layers"]:
        lines.append(f"- {d['title']}: batch {d['batch']}, {d['cin']} to {d['cout']} channels, "
                     f"{d['size']}x{d['size']}, {d['kernel']}x{d['kernel']}, padding {d['padding']}, "
                     f"no bias; {d['flops']['forward'] / 1e9:.3g} GFLOP forward, "
                     f"{d['flops']['train'] / 1e9:.3g} forward+backward"
                     + ("" if d["input_grad"] else " (the weights' gradient alone)") + ".")
    if m.get("openblas_unpinned"):
        lines.append(f"- {unpinned_note(m)}.")
    return lines


def _head(report):
    head = ["layer", "pass", "rung", "time", "GFLOP/s", "of peak"]
    return head + (["vs PyTorch"] if report["torch"] else [])


def _section(report, n):
    head = _head(report)
    body = []
    for d in report["layers"]:
        for mode in PASSES:
            cells = sorted((r for r in report["rows"]
                            if (r["threads"], r["layer"], r["mode"]) == (n, d["key"], mode)),
                           key=lambda r: SHOWN.index(r["rung"]))
            for i, r in enumerate(cells):
                ok = r["status"] == "ok"
                row = [d["title"] if i == 0 else "", PASSES[mode] if i == 0 else "", r["label"],
                       fmt_seconds(r["time_s"]) + cell_marks(r) if ok else r["status"],
                       f"{r['gflops']:.3g}" if ok else "—",
                       f"{r['of_peak']:.0%}" if r.get("of_peak") else "—"]
                if report["torch"]:
                    row.append(f"{r['vs_torch']:.2f}x" if r.get("vs_torch") and r["rung"] != "torch" else "—")
                body.append(row)
    return ["", threads_heading(n, report["peak"][str(n)], report["torch"]), ""] + markdown_table(head, body)


def _notes(report):
    titles = {d["key"]: d["title"] for d in report["layers"]}

    def where(r):
        return f"{titles[r['layer']]} {PASSES[r['mode']]}"
    return mark_notes(report["rows"]) + failure_notes(report["rows"], where)


def markdown(report):
    """The table: a section per thread count, a row per layer, pass and rung."""
    lines = _intro(report)
    for n in report["threads"]:
        lines += _section(report, n)
    notes = _notes(report)
    return "\n".join(lines + ([""] + notes if notes else []))
