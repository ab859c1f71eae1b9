"""``stagegrad profile``: where each microsecond of a training step goes, per stage.

The step is the journey's: an MLP 784-128-10 on a batch of 64, cross-entropy, backward,
AdamW. It runs untimed to warm up, then timed without a profiler (the wall time per step),
then under ``cProfile``. Each function's own time is put in one bucket by where it lives:

- kernels: compiled kernels (a stage's ``_*`` extension modules, OpenBLAS calls);
- backend: the Python routing in a stage's ``backend.py``;
- autograd: ``Function.apply``, the backward engine, nodes and contexts;
- ops: the Functions' forward and backward bodies (``ops.py``, functional forms);
- tensor: Tensor construction, metadata, promotion and the methods of ``tensor.py``;
- optimizer: the optimizer's update (``optim/``);
- nn: modules and ``nn.functional``;
- other: the rest (the interpreter's own builtins, the loop).

The profiler's overhead inflates the Python buckets, so the table shows each bucket's
share of the profiled time applied to the unprofiled wall time: microseconds per step
that add up to what the step really costs. Writes ``profile.json`` and ``profile.md``.
"""
import cProfile
import json
import os
import pstats
import time
from pathlib import Path

BUCKETS = ("kernels", "backend", "autograd", "ops", "tensor", "optimizer", "nn", "other")
# the step's phases: the cumulative time of the call that is each one
PHASES = {"forward (model)": ("nn/module.py", "__call__"), "loss": ("functional.py", "cross_entropy"),
          "backward": ("tensor.py", "backward"), "optimizer step": ("optim/optimizer.py", "step"),
          "zero_grad": ("optim/optimizer.py", "zero_grad")}


def add_arguments(p):
    p.add_argument("--stages", default="2,3", help="comma-separated stages (default 2,3)")
    p.add_argument("--steps", type=int, default=200, help="profiled steps per stage (default 200)")
    p.add_argument("--out", default="out/profile", help="output folder (default out/profile)")


def bucket(filename, name):
    """The bucket of one profiled function (``pstats`` key parts)."""
    path = filename.replace("\\", "/")
    if filename == "~":  # a builtin: a compiled function, or one of the interpreter's
        compiled = ("stage2_cython", "stage3_simd", "_kernels", "scipy_openblas")
        return "kernels" if any(c in name for c in compiled) else "other"
    if "/stage" in path and "/_" in path.rsplit("/", 1)[-1][:2]:  # a stage's compiled module in source
        return "kernels"
    for suffix, b in (("backend.py", "backend"), ("autograd.py", "autograd"), ("autograd.pyx", "autograd"),
                      ("ops.py", "ops"), ("/functional.py", "ops"), ("tensor.py", "tensor"),
                      ("_tensor_base", "tensor"), ("indexing.py", "tensor"), ("dtypes.py", "tensor"),
                      ("creation.py", "tensor")):
        if path.endswith(suffix) or suffix in path:
            if suffix == "/functional.py" and "/nn/" in path:
                return "nn"
            return b
    if "/optim/" in path:
        return "optimizer"
    if "/nn/" in path:
        return "nn"
    return "other"


def measure(stage, steps=200, batch=64):
    """One stage's profile: wall time per step and microseconds per bucket per step."""
    import numpy as np

    from . import load_stage
    from .workloads import MLP_SHAPE, Impl, build_mlp_step
    sg = load_stage(stage)
    impl = Impl(sg.__name__)
    step = build_mlp_step(impl, batch)
    for _ in range(20):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    wall = (time.perf_counter() - t0) / steps
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    stats = pstats.Stats(prof)
    own = dict.fromkeys(BUCKETS, 0.0)
    phases = dict.fromkeys(PHASES, 0.0)
    rows = []
    for (filename, line, name), (cc, nc, tt, ct, callers) in stats.stats.items():
        b = bucket(filename, name)
        own[b] += tt
        for phase, (suffix, function) in PHASES.items():
            if filename.replace("\\", "/").endswith(suffix) and name == function:
                phases[phase] += ct
        rows.append({"function": f"{Path(filename).name}:{line}({name})" if filename != "~" else name,
                     "bucket": b, "calls_per_step": nc / steps, "own_s": tt})
    profiled = sum(own.values()) / steps
    scale = wall / profiled if profiled else 0.0
    rows.sort(key=lambda r: -r["own_s"])
    return {"stage": sg.__name__, "steps": steps, "batch": batch, "shape": list(MLP_SHAPE),
            "wall_s_per_step": wall, "profiled_s_per_step": profiled,
            "buckets_us_per_step": {b: own[b] * scale / steps * 1e6 for b in BUCKETS},
            "phases_us_per_step": {p: phases[p] * scale / steps * 1e6 for p in PHASES},
            "calls_per_step": sum(r["calls_per_step"] for r in rows),
            "top": [dict(r, us_per_step=r["own_s"] * scale / steps * 1e6) for r in rows[:15]],
            "numpy": np.__version__}


def markdown(reports):
    head = ["bucket"] + [f"{r['stage']} (µs/step)" for r in reports]
    lines = ["Where an MLP training step's time goes (784-128-10, batch 64, AdamW): each phase's and "
             "each bucket's share of the profiled time, applied to the step's unprofiled wall time.", "",
             "| phase | " + " | ".join(head[1:]) + " |", "|" + "---|" * len(head)]
    for p in PHASES:
        lines.append(f"| {p} | " + " | ".join(f"{r['phases_us_per_step'][p]:.0f}" for r in reports) + " |")
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for b in BUCKETS:
        lines.append(f"| {b} | " + " | ".join(f"{r['buckets_us_per_step'][b]:.0f}" for r in reports) + " |")
    lines.append("| **step (wall)** | " + " | ".join(f"**{r['wall_s_per_step'] * 1e6:.0f}**" for r in reports)
                 + " |")
    lines.append("| function calls per step | " + " | ".join(f"{r['calls_per_step']:.0f}" for r in reports)
                 + " |")
    for r in reports:
        lines += ["", f"The 15 costliest functions on {r['stage']} (own time, µs per step):", "",
                  "| function | bucket | calls/step | µs/step |", "|---|---|---|---|"]
        lines += [f"| `{t['function']}` | {t['bucket']} | {t['calls_per_step']:.0f} | {t['us_per_step']:.1f} |"
                  for t in r["top"]]
    return "\n".join(lines)


def run(args):
    if args.steps < 1:
        raise ValueError("--steps must be positive")
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")  # one core, like the journey
    reports = [measure(stage.strip(), args.steps) for stage in args.stages.split(",") if stage.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile.json").write_text(json.dumps(reports, indent=1) + "\n")
    text = markdown(reports)
    (out / "profile.md").write_text(text + "\n")
    print(text)
    print(f"wrote {out / 'profile.json'}, {out / 'profile.md'}")
    return reports
