"""``stagegrad models``: the zoo's real models on stages 2 and 3 next to PyTorch, in one run.

The models (``MODELS``), each built from one file on every framework (``zoo.models``; the
MNIST CNN is ``training.build_model``'s, the language models ``train_text.build_model``'s):

- ResNet-18 and MobileNetV2 with the small-image stem (``small_input=True``) on 3x32x32
  images and 10 classes, at batch 16 and 64; MobileNetV2 without its dropout, whose random
  masks would make the frameworks compute different steps;
- the MNIST CNN on 1x28x28 images of the bundled MNIST sample (real digits, as ``train``
  feeds it: PyTorch's step runs a quarter faster on them than on normal noise), batch 64;
- the character-level GPT (4 layers, 4 heads, width 128, context 64, 65 tokens), batch 16;
- the LSTM language model (2 layers of 256, width 128, 64 steps, 65 tokens), batch 16.

Each model has two cells per implementation and thread count: the training step (forward,
cross-entropy, backward and the optimizer's step: SGD with momentum 0.9 for the image
models, AdamW for the language models) and the eval forward (``model.eval()`` under
``no_grad``). The MNIST CNN has a third, the loop ``stagegrad train`` runs around its step
(``Loop``: batches from a ``DataLoader``, AdamW, the cosine schedule, the loss read each
step), so the table shows what a user of ``train`` gets as well as the step; the loop's
first loss is checked against PyTorch's. Every implementation starts from PyTorch's initial weights
(``load_state_dict``) on the same inputs, and its first eval forward and first training
step are checked against PyTorch's logits and loss, and that step's gradient of every
parameter and its update by the optimizer against PyTorch's same step in float64: an
answer further from PyTorch's than ``RTOL`` of its largest magnitude (a gradient or an
update: further from the float64 step than ``STEP_RTOL`` of its norm, or ``STEP_SLACK``
times PyTorch's own float32 error) fails the command, since the time of a wrong answer
means nothing. Without PyTorch the first stage's
weights and answers stand in, and the table says so.

Timing: the cell's first call (the one checked) is the first warm-up; the journey's
``steady``/``time_calls`` then time the call within the per-cell budget, and their own
first call is the second warm-up. The time is the median per step; a step longer than the
budget is timed once, the second warm-up itself, and marked.

FLOP per step: PyTorch's ``FlopCounterMode`` on one step of PyTorch's model, train and
eval separately (matrix products, convolutions and attention; elementwise work is not
counted), with a convolution's backward counted as two forwards (``_conv_backward_flop``).
A stage's GFLOP/s is that count over its time; its share of the machine's
float32 peak is that over the FMA peak on the same thread count
(``roofline.measure_peak_gflops``, stage 3's own multiply-add loop).

Threads: for each thread count (default one, then every usable core) every library is set
to it before its cells (``measure.set_threads``: the OpenMP, OpenBLAS and MKL variables,
each stage's ``set_num_threads`` and PyTorch's), and each cell records the count the
library reports. For each stage, the buffer pool's misses per step after the second step
(``sg.memory.stats()``; 0 is the steady state) are in the JSON.

Writes ``models.json`` (every cell) and ``models.md`` (the table) to ``--out``.
"""
import contextlib
import gc
import importlib.util
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import machine, roofline
from .cells import cell_marks, failure_notes, mark_notes, rates, threads_heading, unpinned_note, vs_torch
from .formatting import fit, fmt_seconds, write_tables
from .measure import cell_budget, library_threads, names, set_threads, show, steady, thread_counts, time_calls

DEFAULT_BUDGET = 6.0   # seconds per cell, warm-up included
QUICK_BUDGET = 0.3
RTOL, ATOL = 1e-3, 1e-4  # float32 through dozens of layers, summed in other orders: loose on purpose
# a gradient's or an update's error, in its norm, from PyTorch's float64 step: at most
# STEP_RTOL, or STEP_SLACK times PyTorch's own float32 error where that is larger (an
# ill-conditioned tensor: a batch-norm bias whose gradient is rounding noise, an AdamW update
# of a gradient near zero). STEP_RTOL is loose because PyTorch's CPU sums a batch norm's
# statistics and gradients in double and the stages in float32: ResNet-18's first layers'
# gradients at batch 16 land 2e-3 from float64 on stage 3, 5e-6 on PyTorch. A wrong index or
# a missing term lands far above it; the loss and logits are checked to RTOL besides.
STEP_RTOL, STEP_SLACK = 1e-2, 100.0
VOCAB, CONTEXT = 65, 64  # the Shakespeare corpus's characters, the language models' window
TEXT = {"gpt": {"context": CONTEXT, "n_layer": 4, "n_head": 4, "n_kv_head": None, "n_embd": 128,
                "dropout": 0.0, "positions": "learned"},
        "lstm": {"n_embd": 128, "hidden": 256, "n_layer": 2, "dropout": 0.0}}


@dataclass(frozen=True)
class Model:
    """One model of the table: how to build it on a framework, its input, its batches."""
    key: str
    title: str
    build: Callable          # build(sg) -> the module, on the stage or on PyTorch
    input: tuple             # one sample's shape: (C, H, W) for images, (T,) for token windows
    classes: int             # classes, or the vocabulary: the targets' range
    batches: tuple
    quick_batch: int         # --quick's: 4 or more (batch norm leaves a batch of 2's gradients ill-conditioned)
    optimizer: str           # "sgd" (momentum 0.9) or "adamw"
    about: str               # the table's description of it
    loop: bool = False       # also a "loop" row: the loop ``stagegrad train`` runs around the step
    mnist: bool = False      # real images (the bundled MNIST sample) rather than normal noise

    @property
    def text(self):
        """Whether the model reads token windows (a language model) rather than images."""
        return len(self.input) == 1


def _image(build):
    from . import zoo
    return lambda sg: build(zoo.models(sg))


def _cnn(sg):
    from .training import build_model
    return build_model(sg, "cnn")


def _language(kind):
    def build(sg):
        from .train_text import build_model
        return build_model(sg, kind, VOCAB, TEXT[kind])
    return build


MODELS = {m.key: m for m in (
    Model("resnet18", "ResNet-18", _image(lambda z: z.resnet.resnet18(10, in_channels=3, small_input=True)),
          (3, 32, 32), 10, (16, 64), 4, "sgd", "3x32x32 images, 10 classes, the small-image stem"),
    Model("mobilenetv2", "MobileNetV2",
          _image(lambda z: z.mobilenet.mobilenet_v2(10, in_channels=3, small_input=True, dropout=0.0)),
          (3, 32, 32), 10, (16, 64), 4, "sgd",
          "3x32x32 images, 10 classes, the small-image stem, no dropout"),
    Model("cnn", "MNIST CNN", _cnn, (1, 28, 28), 10, (64,), 16, "sgd",
          "1x28x28 images from the bundled MNIST sample, 10 classes (`stagegrad train --model cnn`)",
          loop=True, mnist=True),
    Model("gpt", "GPT 4x128", _language("gpt"), (CONTEXT,), VOCAB, (16,), 4, "adamw",
          f"4 layers, 4 heads, width 128, windows of {CONTEXT} tokens of {VOCAB}"),
    Model("lstm", "LSTM 2x256", _language("lstm"), (CONTEXT,), VOCAB, (16,), 4, "adamw",
          f"2 layers of 256, width 128, windows of {CONTEXT} tokens of {VOCAB}"),
)}
OPTIMIZERS = {"sgd": "SGD (lr 0.01, momentum 0.9)", "adamw": "AdamW (lr 0.001)"}


def add_arguments(p):
    """The command's options."""
    p.add_argument("--out", default="out/models", help="output folder (default out/models)")
    p.add_argument("--models", default=",".join(MODELS),
                   help=f"comma-separated models (default: all of {', '.join(MODELS)})")
    p.add_argument("--stages", default="2,3", help="comma-separated stages (default 2,3)")
    p.add_argument("--threads", default=None,
                   help="comma-separated thread counts, each given to every library in turn "
                        "(default: 1 and every usable core)")
    p.add_argument("--budget", type=float, default=None,
                   help=f"seconds per cell; a step longer than that is timed once (default "
                        f"{DEFAULT_BUDGET:g}, or {QUICK_BUDGET:g} with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="a tiny run: one small batch per model (4 to 16 samples), short timing")


def run(args):
    """Measure, print the table as it goes, write models.json and models.md; an error when a
    cell failed or computed a different answer from PyTorch's (after writing both)."""
    from . import load_stage
    models = names(args.models, MODELS, "models")
    stages = [load_stage(s.strip()).__name__ for s in args.stages.split(",") if s.strip()]
    threads = thread_counts(args.threads)
    budget = cell_budget(args, DEFAULT_BUDGET, QUICK_BUDGET)
    set_threads(threads[0])  # before PyTorch loads, so that its libraries read the count too
    report = measure(models, stages, threads, quick=args.quick, budget=budget, live=sys.stdout)
    written = write_tables(args.out, "models", report, markdown(report))
    print(fit("wrote " + ", ".join(str(p) for p in written)))
    failed = [r for r in report["rows"] if r["status"] != "ok"]
    if failed:
        raise RuntimeError(f"{len(failed)} cell(s) failed: " + "; ".join(
            f"{r['label']} {r['model']} batch {r['batch']} {r['mode']} on {r['threads']} thread(s): "
            f"{r['reason']}" for r in failed))
    return report


# ------------------------------------------------------------------ one model, one framework

def batch_data(model, batch, seed=0):
    """Fixed inputs and targets as NumPy arrays: token windows and their next tokens; for the
    MNIST CNN, images and labels of the bundled MNIST sample, in [0, 1] as ``train`` feeds
    them (most pixels exactly 0: PyTorch's step measured 25% faster on them than on normal
    noise, stage 3's the same on both); else normal images and class labels."""
    import numpy as np
    rng = np.random.default_rng(seed)
    if model.text:
        x = rng.integers(0, model.classes, (batch, *model.input)).astype(np.int64)
        return x, rng.integers(0, model.classes, (batch, *model.input)).astype(np.int64)
    if model.mnist:
        from stage0_python.datasets import MNIST, SAMPLE_ROOT
        images, labels = MNIST(SAMPLE_ROOT, train=True).raw_bytes()
        pick = rng.permutation(len(labels))[:batch]
        if len(pick) < batch:
            raise ValueError(f"the MNIST sample has {len(labels)} images, fewer than {batch}")
        x = np.frombuffer(images, np.uint8).reshape(-1, *model.input)[pick].astype(np.float32) / 255
        return x, np.frombuffer(labels, np.uint8)[pick].astype(np.int64)
    return (rng.standard_normal((batch, *model.input), dtype=np.float32),
            rng.integers(0, model.classes, batch).astype(np.int64))


def model_loss(lib, model, x, y):
    """Cross-entropy of the logits over every sample (and every position of a window)."""
    from .train_text import logits_of
    logits = logits_of(model, x)
    return lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def make_optimizer(lib, model, kind):
    """The optimizer ``kind`` names (``Model.optimizer``) over ``model``'s parameters, on ``lib``."""
    if kind == "sgd":
        return lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return lib.optim.AdamW(model.parameters(), lr=1e-3)


def _built(impl, model, state, double=False):
    """``model`` built on ``impl`` with the values of ``state`` (a state dict of NumPy arrays),
    in float64 parameters where ``double``."""
    net = model.build(impl.lib)
    if double:
        net = net.double()
    net.load_state_dict({k: impl.tensor(v) for k, v in state.items()})
    return net


class Session:
    """One model built on one implementation from a state dict (NumPy arrays), with its
    eval forward and its training step as zero-argument calls on fixed data; in float64
    where ``double``."""

    def __init__(self, impl, model, state, x, y, double=False):
        from .train_text import logits_of
        lib = impl.lib
        self.net = _built(impl, model, state, double)
        if double:  # the images too
            x = x.astype("float64") if x.dtype.kind == "f" else x
        self.x, self.y = impl.tensor(x), impl.tensor(y)
        self.opt = make_optimizer(lib, self.net, model.optimizer)

        def forward():
            with lib.no_grad():
                return logits_of(self.net, self.x)

        def step():
            loss = model_loss(lib, self.net, self.x, self.y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            return loss
        self.calls = {"eval": forward, "train": step}

    def mode(self, mode):
        """The call for ``mode`` (``"eval"`` or ``"train"``), the model switched to it."""
        self.net.train(mode == "train")
        return self.calls[mode]


LOOP_BATCHES = 8  # the loop's dataset, in batches: its loader starts over after them


class Loop:
    """The loop ``stagegrad train`` runs around the step, a step per call: the next batch from
    a ``DataLoader`` over a ``TensorDataset`` (in one fixed shuffled order, the same on every
    framework, so that the first batch's loss is comparable), forward and cross-entropy,
    AdamW's step at ``train``'s default rate, the cosine schedule's step, and the loss read
    as a number, as ``train`` reads it every step. ``train`` shuffles with each framework's
    generator, and a stage's MNIST hands over whole batches (``get_batch``) where this
    ``TensorDataset`` gathers its samples."""

    def __init__(self, impl, model, state, x, y, batch):
        import numpy as np
        lib = impl.lib
        data = lib.utils.data
        self.net = _built(impl, model, state)
        self.net.train()
        order = [int(i) for i in np.random.default_rng(1).permutation(len(x))]
        loader = data.DataLoader(data.TensorDataset(impl.tensor(x), impl.tensor(y)), batch_size=batch, sampler=order)
        opt = lib.optim.AdamW(self.net.parameters(), lr=2e-3)
        schedule = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10 ** 6)

        def batches():
            while True:
                yield from loader
        pending = batches()

        def step():
            bx, by = next(pending)
            loss = model_loss(lib, self.net, bx, by)
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
            return loss.item()
        self.call = step


def _numpy(t):
    return t.detach().numpy()


def _step_of(net, state):
    """Each parameter's gradient after a training step and its update by the optimizer (its
    value less its value in ``state``, the initial one), by name, as NumPy arrays."""
    return {name: (_numpy(p.grad).copy(), _numpy(p) - state[name]) for name, p in net.named_parameters()}


def reference(impl, model, batch):
    """What every implementation is checked against, from ``impl`` (PyTorch when it is
    installed): the initial state dict, the inputs, the eval logits and loss, the first
    training step's loss, gradients and updates, and (PyTorch only) the FLOP of each step by
    its ``FlopCounterMode``."""
    lib = impl.lib
    lib.manual_seed(0)
    net = model.build(lib)
    state = {k: _numpy(v).copy() for k, v in net.state_dict().items()}
    x, y = batch_data(model, batch)
    s = Session(impl, model, state, x, y)
    flops = {}
    for mode in ("eval", "train"):
        call = s.mode(mode)
        counter = _flop_counter() if impl.name == "torch" else None
        with counter or contextlib.nullcontext():
            out = call()
        flops[mode] = counter.get_total_flops() if counter else None
        if mode == "eval":
            logits = _numpy(out).copy()
            with lib.no_grad():
                eval_loss = float(model_loss(lib, s.net, s.x, s.y).item())
        else:
            train_loss = float(out.item())
    step = _step_of(s.net, state)
    exact = own = None
    if impl.name == "torch":  # the same step in float64, and how far float32's own is from it
        d = Session(impl, model, state, x, y, double=True)
        d.mode("train")()
        exact = _step_of(d.net, state)
        own = {name: [_error_in_norm(ours, theirs) for ours, theirs in zip(step[name], exact[name])]
               for name in step}
    loop = None
    if model.loop:  # its own data (LOOP_BATCHES batches) and first loss; a step's FLOP
        lx, ly = batch_data(model, batch * LOOP_BATCHES, seed=1)
        loop = {"x": lx, "y": ly, "loss": Loop(impl, model, state, lx, ly, batch).call()}
        flops["loop"] = flops["train"]
    return {"framework": impl.name, "state": state, "x": x, "y": y, "logits": logits, "eval_loss": eval_loss,
            "train_loss": train_loss, "step": step, "exact": exact, "own_error": own, "loop": loop,
            "flops": flops}


def _flop_counter():
    """PyTorch's FLOP counter, with a convolution's backward counted by ``_conv_backward_flop``."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    return FlopCounterMode(display=False,
                           custom_mapping={torch.ops.aten.convolution_backward: _conv_backward_flop})


def _conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                        _output_padding, _groups, output_mask, out_shape=None, **kwargs):
    """A convolution's backward: each gradient asked for (input, weight) takes as many
    multiply-adds as the forward. PyTorch's own formula agrees without groups, but counts a
    grouped convolution's weight gradient as if every input channel met every output channel:
    ``groups`` times too many (32 to 960 times in MobileNetV2's depthwise layers)."""
    from torch.utils.flop_counter import conv_flop_count
    forward = conv_flop_count(x_shape, w_shape, grad_out_shape, transposed)
    return forward * (bool(output_mask[0]) + bool(output_mask[1]))


def compare(ours, theirs, atol=ATOL):
    """The largest difference of two float arrays, and whether it is within ``RTOL`` of the
    reference's largest magnitude plus ``atol``."""
    import numpy as np
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if ours.shape != theirs.shape:
        return math.inf, False
    diff = float(np.abs(ours - theirs).max()) if ours.size else 0.0
    scale = float(np.abs(theirs).max()) if theirs.size else 0.0
    return diff, bool(np.isfinite(ours).all() and diff <= RTOL * scale + atol)


# ------------------------------------------------------------------ the run

def measure(models, stages, threads, quick=False, budget=DEFAULT_BUDGET, live=None, stream=None):
    """Every cell: ``models`` (keys of ``MODELS``) on ``stages`` (packages) and PyTorch
    when installed, on each of ``threads``. Returns the report (a JSON-ready dict); with
    ``live`` (a text stream) the table is printed there a row at a time."""
    from .progress import Progress
    from .workloads import Impl
    stream = stream or sys.stderr
    started = time.time()
    has_torch = importlib.util.find_spec("torch") is not None
    impls = [Impl(p) for p in stages] + ([Impl("torch")] if has_torch else [])
    if not impls:
        raise ValueError("nothing to measure: no stage given and PyTorch is not installed")
    target = budget / 3  # seconds of timed steps aimed for; the rest of the budget warms up
    jobs = [(m, b) for m in models for b in ((MODELS[m].quick_batch,) if quick else MODELS[m].batches)]
    ref_impl = impls[-1] if has_torch else impls[0]
    report = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)), "quick": quick,
              "budget_s": budget, "target_s": target, "threads": threads, "machine": machine.describe(),
              "torch": ref_impl.lib.__version__ if has_torch else None,
              "implementations": [{"name": i.name, "label": i.label, "kind": i.kind} for i in impls],
              "reference": ref_impl.name, "models": [_describe(MODELS[m]) for m in models],
              "batches": {m: [b for k, b in jobs if k == m] for m in models},
              "peak": {}, "flops": {}, "rows": []}
    print(f"models: {machine.banner()}", file=stream)
    if not has_torch:
        print("models: PyTorch is not installed: the stages are measured alone, against "
              f"{impls[0].label}'s weights and answers", file=stream)
    bar = Progress(len(threads) * sum(len(modes_of(MODELS[m])) for m, _ in jobs) * len(impls), "models",
                   stream=stream)
    done, refs = 0, {}
    for n in threads:
        set_threads(n)
        print(f"models: the FMA peak on {n} thread(s)", file=stream)
        report["peak"][str(n)] = roofline.measure_peak_gflops(n, seconds=0.05 if quick else 0.2)
        if live:
            intro = _intro(report) if n == threads[0] else []
            show(live, stream, fit("\n".join(intro + _section_head(report, n))))
        for key, batch in jobs:
            model = MODELS[key]
            if (key, batch) not in refs:
                bar.update(done, now=f"{model.title} batch {batch}: reference")
                refs[key, batch] = reference(ref_impl, model, batch)
                report["flops"][f"{key}/{batch}"] = refs[key, batch]["flops"]
            cells = {mode: [] for mode in modes_of(model)}
            for impl in impls:
                bar.update(done, now=f"{impl.label}: {model.title} batch {batch}, {n} thread(s)")
                for row in measure_cells(impl, model, batch, refs[key, batch], budget, target):
                    row.update(threads=n, library_threads=library_threads(impl))
                    rates(row, refs[key, batch]["flops"][row["mode"]], report["peak"][str(n)])
                    cells[row["mode"]].append(row)
                    done += 1
                bar.update(done, now=f"{impl.label}: {model.title} batch {batch}, {n} thread(s)")
            for mode in sorted(cells, key=MODES.index):
                vs_torch(cells[mode])
                report["rows"] += cells[mode]
                if live:
                    show(live, stream, _line(report, cells[mode]))
    bar.update(done, now="done")
    report["wall_s"] = time.time() - started
    if live:
        show(live, stream, fit("\n" + "\n".join(_notes(report))))
    return report


def _describe(model):
    return {"key": model.key, "title": model.title, "input": list(model.input), "classes": model.classes,
            "optimizer": OPTIMIZERS[model.optimizer], "about": model.about}


MODES = ("train", "loop", "eval")  # the table's order


def modes_of(model):
    """The rows of ``model``: the eval forward and the training step, and the training loop
    where ``model.loop``."""
    return ("eval", "train", "loop") if model.loop else ("eval", "train")


def measure_cells(impl, model, batch, ref, budget, target):
    """The eval cell, then the training cell (then the loop's), of ``model`` at ``batch`` on
    ``impl``: each checked against ``ref`` on its first call, then timed (see the module
    docstring)."""
    base = {"model": model.key, "batch": batch, "impl": impl.name, "label": impl.label, "kind": impl.kind,
            "package": impl.package, "status": "ok", "reason": None, "time_s": None}
    pool = getattr(impl.lib, "memory", None) if impl.kind == "stage" else None
    rows = []
    try:
        impl.activate()
        session = Session(impl, model, ref["state"], ref["x"], ref["y"])
    except Exception as e:  # a model a stage cannot build is reported, and the run goes on
        why = f"{type(e).__name__}: {e}"
        return [dict(base, mode=m, status="error", reason=why) for m in modes_of(model)]
    for mode in modes_of(model):
        row = dict(base, mode=mode)
        rows.append(row)
        try:
            if mode == "loop":  # from the initial weights again, as the reference's loop
                call = Loop(impl, model, ref["state"], ref["loop"]["x"], ref["loop"]["y"], batch).call
            else:
                call = session.mode(mode)
            first = call()
            row["check"] = check = _check(impl, mode, first, session, ref)
            if not check["ok"]:
                row.update(status="wrong", reason=f"computes a different answer from {ref['framework']}: "
                                                  f"{check['what']}")
                continue
            counted = _Counted(call, pool)
            row.update(steady(lambda left: time_calls(counted, left, target), budget))
            if pool is not None:
                if not counted.after:  # a step longer than the budget was timed alone: one more counts
                    counted()
                row["pool_misses_per_step"] = pool.stats()["misses"] / counted.after
        except Exception as e:  # a failing cell is reported, and the run goes on
            row.update(status="error", reason=f"{type(e).__name__}: {e}")
    del session
    gc.collect()
    if pool is not None:
        pool.empty_cache()  # the next model starts from an empty pool, as this one did
    return rows


def _check(impl, mode, first, session, ref):
    """The first call's answer beside the reference's: the eval logits and loss, the first
    training step's loss, gradients and updates, or the loop's first loss."""
    if mode == "loop":
        _, ok = compare(first, ref["loop"]["loss"])
        return {"loss": first, "reference_loss": ref["loop"]["loss"], "ok": ok,
                "what": f"the loop's first loss {first:.6g} against {ref['loop']['loss']:.6g}"}
    if mode == "eval":
        # relative alone: MobileNetV2's logits at its initial weights are of order 1e-9
        diff, ok = compare(_numpy(first), ref["logits"], atol=0.0)
        with impl.lib.no_grad():
            loss = float(model_loss(impl.lib, session.net, session.x, session.y).item())
        _, loss_ok = compare(loss, ref["eval_loss"])
        return {"logits_max_abs_diff": diff, "loss": loss, "reference_loss": ref["eval_loss"],
                "ok": ok and loss_ok, "what": f"logits differ by up to {diff:.3g}, loss {loss:.6g} against "
                                              f"{ref['eval_loss']:.6g}"}
    loss = float(first.item())
    _, ok = compare(loss, ref["train_loss"])
    what = [] if ok else [f"first step's loss {loss:.6g} against {ref['train_loss']:.6g}"]
    worst = {"gradient": 0.0, "update": 0.0}
    exact = ref["exact"] or ref["step"]
    for name, pair in _step_of(session.net, ref["state"]).items():
        for i, (kind, ours) in enumerate(zip(("gradient", "update"), pair)):
            diff = _error_in_norm(ours, exact[name][i])
            worst[kind] = max(worst[kind], diff)
            allowed = max(STEP_RTOL, STEP_SLACK * ref["own_error"][name][i]) if ref["own_error"] else STEP_RTOL
            if not diff <= allowed:
                what.append(f"the {kind} of {name} is off by {diff:.3g} of its norm (at most {allowed:.3g})")
    return {"loss": loss, "reference_loss": ref["train_loss"], "gradient_error": worst["gradient"],
            "update_error": worst["update"], "ok": not what, "what": "; ".join(what[:3])}


def _error_in_norm(ours, theirs):
    """|ours - theirs| / |theirs| in the 2-norm (inf where the shapes differ or ours is not
    finite)."""
    import numpy as np
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if ours.shape != theirs.shape or not np.isfinite(ours).all():
        return math.inf
    scale = float(np.linalg.norm(theirs))
    return float(np.linalg.norm(ours - theirs)) / scale if scale else float(np.linalg.norm(ours) > 0)


class _Counted:
    """``call`` with a count: after its first call (the second step overall, since the
    check made the first) the pool's statistics restart, so that ``after`` steps are what
    the misses are divided by."""

    def __init__(self, call, pool):
        self.call, self.pool, self.calls = call, pool, 0

    def __call__(self):
        out = self.call()
        self.calls += 1
        if self.calls == 1 and self.pool is not None:
            self.pool.reset_stats()
        return out

    @property
    def after(self):
        return max(self.calls - 1, 0)


# ------------------------------------------------------------------ the table

def _stages(report):
    return [i for i in report["implementations"] if i["kind"] == "stage"]


def _columns(report):
    stages = _stages(report)
    last = stages[-1]["label"] if stages else None
    head = ["model", "batch", "step", "GFLOP"] + (["PyTorch"] if report["torch"] else [])
    head += [s["label"] for s in stages]
    if last:
        head += [f"{last} GFLOP/s", "of peak"]
    return head


# the columns' widths, so that the terminal shows the rows aligned as they come
WIDTHS = {"model": 11, "batch": 5, "step": 5, "GFLOP": 6, "PyTorch": 9, "of peak": 7}
STAGE_WIDTH = 17  # "1.23 ms*~ (0.77x)"
SINGLE = "*: a single step, the second warm-up's (one step took the whole budget)."


def _widths(head):
    return [max(len(h), WIDTHS.get(h, STAGE_WIDTH if h.startswith("stage") else 8)) for h in head]


def _format(cells, head):
    """A row of the table, padded to the columns' widths."""
    return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, _widths(head))) + " |"


def _section_head(report, n):
    head = _columns(report)
    return ["", threads_heading(n, report["peak"][str(n)], report["torch"]), "",
            _format(head, head), "|" + "|".join("-" * (w + 2) for w in _widths(head)) + "|"]


def _time(r):
    if r["status"] != "ok":
        return r["status"]
    return fmt_seconds(r["time_s"]) + cell_marks(r)


def _title(report, row):
    return next(m["title"] for m in report["models"] if m["key"] == row["model"])


def _line(report, cells):
    """One row of the table: one model, batch and step on one thread count."""
    first = cells[0]
    by = {r["impl"]: r for r in cells}
    flops = first.get("flops")
    row = [_title(report, first), str(first["batch"]), first["mode"], f"{flops / 1e9:.3g}" if flops else "—"]
    if report["torch"]:
        row.append(_time(by["torch"]) if "torch" in by else "—")
    stages = _stages(report)
    for s in stages:
        r = by.get(s["name"])
        ratio = r.get("vs_torch") if r else None
        row.append((_time(r) if r else "—") + (f" ({ratio:.2g}x)" if ratio else ""))
    if stages:
        r = by.get(stages[-1]["name"]) or {}
        row.append(f"{r['gflops']:.3g}" if r.get("gflops") else "—")
        row.append(f"{r['of_peak']:.1%}" if r.get("of_peak") else "—")
    return _format(row, _columns(report))


def _intro(report):
    kind = "a quick run (one small batch per model, short timing)" if report["quick"] else "a full run"
    stages = _stages(report)
    last = stages[-1]["label"] if stages else "the last stage"
    text = (f"The zoo's models, {kind}, {report['created']}, on {report['machine']['cpu_model']}. Each cell: "
            "the median time of one step. Train: forward, cross-entropy, backward and the optimizer's "
            "step; loop: the loop `stagegrad train` runs around such a step (the next batch from a "
            "`DataLoader`, AdamW, the cosine schedule's step, the loss read as a number); eval: the "
            "forward under `no_grad` after `model.eval()`. ")
    if report["torch"]:
        text += (f"In brackets: PyTorch's time over the stage's (PyTorch {report['torch']}, in the same run; "
                 "above 1x the stage is faster). Every stage starts from PyTorch's weights "
                 "(`load_state_dict`) and matched its eval logits and its first training step's loss, "
                 "gradients and updates (those against PyTorch's float64 step, within 1% of each "
                 "tensor's norm). "
                 "GFLOP: PyTorch's `FlopCounterMode` on one step (matrix products, convolutions and "
                 f"attention); of peak: {last}'s GFLOP/s over the FMA peak on as many threads.")
    else:
        ref = next(i["label"] for i in report["implementations"] if i["name"] == report["reference"])
        text += (f"PyTorch is not installed: the stages are measured alone, from {ref}'s weights, "
                 "checked against its answers; without PyTorch's `FlopCounterMode` there are no "
                 "FLOP counts.")
    lines = [text, ""] + [f"- {m['title']}: {m['about']}; {m['optimizer']}." for m in report["models"]]
    m = report["machine"]
    if m.get("openblas_unpinned"):
        lines.append(f"- {unpinned_note(m)}.")
    if m.get("openblas_coretype"):
        lines.append(f"- OPENBLAS_CORETYPE={m['openblas_coretype']}: stage 3's OpenBLAS runs that core's "
                     "kernels, which may be narrower than this CPU's.")
    return lines


def _notes(report):
    rows = report["rows"]
    notes = mark_notes(rows, single=SINGLE)
    for s in _stages(report):
        counted = [r for r in rows if r["impl"] == s["name"] and r.get("pool_misses_per_step") is not None]
        worst = max(counted, key=lambda r: r["pool_misses_per_step"], default=None)
        if worst is None:
            continue
        if worst["pool_misses_per_step"] == 0:
            notes.append(f"{s['label']}'s buffer pool: no misses after the second step in any cell (every "
                         "block reused).")
        else:
            notes.append(f"{s['label']}'s buffer pool: up to {worst['pool_misses_per_step']:g} misses per "
                         f"step after the second step ({_title(report, worst)} batch {worst['batch']} "
                         f"{worst['mode']}, {worst['threads']} thread(s); 0 is the steady state: every block "
                         "reused).")
    return notes + failure_notes(rows, lambda r: f"{_title(report, r)} batch {r['batch']} {r['mode']}")


def markdown(report):
    """The table: a section per thread count, a row per model, batch and step."""
    lines = _intro(report)
    for n in report["threads"]:
        lines += _section_head(report, n)
        for key in dict.fromkeys(r["model"] for r in report["rows"]):
            for batch in report["batches"][key]:
                for mode in MODES:
                    cells = [r for r in report["rows"] if (r["threads"], r["model"], r["batch"], r["mode"])
                             == (n, key, batch, mode)]
                    if cells:
                        lines.append(_line(report, cells))
    notes = _notes(report)
    return "\n".join(lines + ([""] + notes if notes else []))
