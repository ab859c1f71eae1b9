"""``stagegrad profile``: where each microsecond of a training step goes, and what each of
stage 3's rewrites bought.

The step is the journey's: an MLP 784-128-10 on a batch of 64, cross-entropy, backward,
AdamW. Each row runs in a process of its own, one thread:

- every stage asked for, as shipped; stage 3 as three rows, each adding one rewrite:
  its kernels under stage 0's Python frontend (``STAGEGRAD_FRONTEND=python``) with
  the fused kernels off (``FUSED`` emptied), then with the fused kernels, then with the
  compiled frontend (stage 0's ``tensor_core.py`` and ``graph.py``, compiled): stage 3 as shipped;
- PyTorch, timed only (its work is C++ that a Python profiler does not see).

For each row: the step's wall time (median, unprofiled), ``a + b`` on 4 elements without
and with grad, the Python function calls per step, and the pool's misses per step after
the warm-up (0 is the steady state: every allocation is a pooled block). Then the step
runs under ``cProfile`` and each function's own time goes into one bucket by where it
lives:

- kernels: compiled kernels (a stage's ``_*`` extension modules, OpenBLAS calls);
- backend: the Python routing in a stage's ``backend.py``;
- autograd: ``Function.apply``, the backward engine, nodes and contexts;
- ops: the Functions' forward and backward bodies (``ops.py``, functional forms);
- tensor: Tensor construction, metadata, promotion and the methods of ``tensor.py`` and its
  mixins' modules;
- optimizer: the optimizer's update (``optim/``);
- nn: modules and ``nn.functional``;
- other: the rest (the interpreter's own builtins, the loop).

The profiler's overhead inflates the Python buckets, so the tables show each bucket's
share of the profiled time applied to the unprofiled wall time: microseconds per step that
add up to what the step really costs. A compiled class's operators (``TensorCore.__add__``)
are C slots the profiler does not see: their time counts in their caller's bucket. Writes
``profile.json`` and ``profile.md``.
"""
import cProfile
import importlib.util
import json
import os
import pstats
import subprocess
import sys
from pathlib import Path

from .formatting import write_tables
from .machine import THREAD_VARIABLES

BUCKETS = ("kernels", "backend", "autograd", "ops", "tensor", "optimizer", "nn", "other")
# the step's phases: the cumulative time of the call that is each one
PHASES = {"forward (model)": ("nn/module.py", "__call__"), "loss": ("functional.py", "cross_entropy"),
          "backward": ("tensor.py", "backward"), "optimizer step": ("optim/optimizer.py", "step"),
          "zero_grad": ("optim/optimizer.py", "zero_grad")}
# stage 3's rows, each adding one rewrite: (label, environment, fused kernels on)
STAGE3_REWRITES = (("stage 3: kernels, Python frontend", {"STAGEGRAD_FRONTEND": "python"}, False),
                   ("+ fused kernels", {"STAGEGRAD_FRONTEND": "python"}, True),
                   ("+ compiled frontend (stage 3)", {"STAGEGRAD_FRONTEND": "compiled"}, True))


def add_arguments(p):
    p.add_argument("--stages", default="2,3", help="comma-separated stages (default 2,3)")
    p.add_argument("--steps", type=int, default=200, help="profiled steps per row (default 200)")
    p.add_argument("--out", default="out/profile", help="output folder (default out/profile)")


# the modules of Tensor's method families (its mixins), stage 0's files inherited by every stage
_TENSOR_MIXINS = frozenset(f"{m}.py" for m in (
    "elementwise", "math_ops", "movement", "reductions", "selecting", "scatter", "inplace", "contractions",
    "rearranging", "scans", "sorting", "sampling", "arguments"))


def bucket(filename, name):
    """The bucket of one profiled function (``pstats`` key parts)."""
    path = filename.replace("\\", "/")
    if filename == "~":  # a builtin: a compiled function, or one of the interpreter's
        if ".graph." in name or name == "<built-in method apply>":  # Function.apply is a classmethod
            return "autograd"
        if "tensor_core" in name:
            return "tensor"
        compiled = ("stage2_cython", "stage3_simd", "_kernels", "scipy_openblas")
        return "kernels" if any(c in name for c in compiled) else "other"
    if "/stage" in path and "/_" in path.rsplit("/", 1)[-1][:2]:  # a stage's compiled module in source
        return "kernels"
    if path.rsplit("/", 2)[-2:-1] == ["stage0_python"] and path.rsplit("/", 1)[-1] in _TENSOR_MIXINS:
        return "tensor"
    for suffix, b in (("backend.py", "backend"), ("autograd.py", "autograd"), ("graph.py", "autograd"),
                      ("ops.py", "ops"), ("/functional.py", "ops"), ("tensor.py", "tensor"),
                      ("tensor_core.py", "tensor"), ("indexing.py", "tensor"), ("dtypes.py", "tensor"),
                      ("creation.py", "tensor"), ("method_forms.py", "tensor")):
        if path.endswith(suffix):
            return b
    if "/optim/" in path:
        return "optimizer"
    if "/nn/" in path:
        return "nn"
    return "other"


def rows(stages):
    """The rows to measure: ``(label, package, environment, fused)``, PyTorch last."""
    from . import STAGES, load_stage
    number = {pkg: n for n, pkg in STAGES.items()}
    out = []
    for stage in stages:
        pkg = load_stage(stage).__name__
        if pkg == "stage3_simd":
            out += [(label, pkg, env, fused) for label, env, fused in STAGE3_REWRITES]
        else:
            out.append((f"stage {number[pkg]}", pkg, {}, True))
    return out + [("PyTorch", "torch", {}, True)]


def measure(package, steps=200, fused=True, batch=64):
    """One row, in this process: wall time, per-op cost, memory and (a stage) the profile."""
    from .measure import time_calls
    from .workloads import Impl, build_mlp_step, build_overhead
    impl = Impl(package)
    if not fused:
        impl.lib.backend.FUSED = frozenset()
    step = build_mlp_step(impl, batch)
    for _ in range(20):  # warm-up: the pool fills, the caches settle
        step()
    out = {"package": package, "steps": steps, "batch": batch}
    if impl.kind == "stage":
        impl.lib.memory.reset_stats()
        for _ in range(10):
            step()
        s = impl.lib.memory.stats()
        out["memory_per_step"] = {"allocations": s["allocations"] / 10, "misses": s["misses"] / 10}
    out["wall_s_per_step"] = wall = time_calls(step, budget=5.0, target=0.5)["time_s"]
    if impl.kind == "stage":
        out.update(_profile(step, steps, wall))
    out["per_op_us"] = {g: time_calls(build_overhead(impl, g), budget=2.0, target=0.2)["time_s"] * 1e6
                        for g in ("no grad", "grad")}
    return out


def _profile(step, steps, wall):
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    own = dict.fromkeys(BUCKETS, 0.0)
    phases = dict.fromkeys(PHASES, 0.0)
    functions = []
    for (filename, line, name), (cc, nc, tt, ct, callers) in pstats.Stats(prof).stats.items():
        b = bucket(filename, name)
        own[b] += tt
        for phase, (suffix, function) in PHASES.items():
            if filename.replace("\\", "/").endswith(suffix) and name == function:
                phases[phase] += ct
        functions.append({"function": f"{Path(filename).name}:{line}({name})" if filename != "~" else name,
                          "bucket": b, "calls_per_step": nc / steps, "own_s": tt})
    profiled = sum(own.values()) / steps
    scale = wall / profiled / steps * 1e6 if profiled else 0.0  # seconds profiled -> µs of wall per step
    functions.sort(key=lambda r: -r["own_s"])
    return {"profiled_s_per_step": profiled,
            "buckets_us_per_step": {b: own[b] * scale for b in BUCKETS},
            "phases_us_per_step": {p: phases[p] * scale for p in PHASES},
            "calls_per_step": sum(r["calls_per_step"] for r in functions),
            "top": [dict(r, us_per_step=r["own_s"] * scale) for r in functions[:15]]}


def measure_in_subprocess(label, package, env, fused, steps):
    """One row in a fresh process, so that each imports its own frontend."""
    code = (f"import json; from stagegrad.profile import measure; "
            f"print(json.dumps(measure({package!r}, {steps}, {fused})))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, **env), cwd=Path(__file__).resolve().parent.parent)
    if r.returncode != 0:
        raise RuntimeError(f"profiling {label} failed:\n{r.stderr[-3000:]}")
    return dict(json.loads(r.stdout.strip().splitlines()[-1]), label=label, env=env, fused=fused)


def markdown(reports):
    torch = next((r for r in reports if r["package"] == "torch"), None)
    stages = [r for r in reports if r["package"] != "torch"]

    def table(head, lines):
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
               ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]

    def ratio(r):
        return f"{r['wall_s_per_step'] / torch['wall_s_per_step']:.2f}x" if torch else "-"

    def memory(r, key):
        m = r.get("memory_per_step")
        return "-" if m is None else f"{m[key]:g}"

    out = ["An MLP training step (784-128-10, batch 64, AdamW), one thread, each row in a process "
           "of its own. Pool misses are allocations per step the pool could not serve, after a "
           "warm-up of 20 steps.", ""]
    out += table(["", "step (µs)", "vs PyTorch", "`a + b` (µs)", "`a + b`, grad (µs)",
                  "Python calls/step", "allocations/step", "pool misses/step"],
                 [[f"**{r['label']}**", f"{r['wall_s_per_step'] * 1e6:.0f}", ratio(r),
                   f"{r['per_op_us']['no grad']:.2f}", f"{r['per_op_us']['grad']:.2f}",
                   f"{r['calls_per_step']:.0f}" if "calls_per_step" in r else "-",
                   memory(r, "allocations"), memory(r, "misses")] for r in reports])
    out += ["", "Where the step's time goes (µs per step: each phase's and each bucket's share of the "
            "profiled time, applied to the unprofiled wall time):", ""]
    head = ["", *(r["label"] for r in stages)]
    out += table(head, [[p, *(f"{r['phases_us_per_step'][p]:.0f}" for r in stages)] for p in PHASES]
                 + [[f"*{b}*", *(f"{r['buckets_us_per_step'][b]:.0f}" for r in stages)] for b in BUCKETS])
    for r in (stages[0], stages[-1]) if len(stages) > 1 else stages:
        out += ["", f"The 15 costliest functions on {r['label']} (own time, µs per step):", ""]
        out += table(["function", "bucket", "calls/step", "µs/step"],
                     [[f"`{t['function']}`", t["bucket"], f"{t['calls_per_step']:.0f}", f"{t['us_per_step']:.1f}"]
                      for t in r["top"]])
    return "\n".join(out)


def run(args):
    if args.steps < 1:
        raise ValueError("--steps must be positive")
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")  # one core, like the journey
    reports = []
    for label, package, row_env, fused in rows([s.strip() for s in args.stages.split(",") if s.strip()]):
        if package == "torch" and importlib.util.find_spec("torch") is None:
            print("PyTorch is not installed: no row for it", file=sys.stderr)
            continue
        print(f"profiling {label} ...", file=sys.stderr)
        reports.append(measure_in_subprocess(label, package, row_env, fused, args.steps))
    text = markdown(reports)
    written = list(write_tables(args.out, "profile", reports, text))
    print(text)
    print("wrote " + ", ".join(str(p) for p in written))
    return reports
