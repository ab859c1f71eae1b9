"""The cuda device's host cost, measurable on any machine: stage 4's cuda path with every
launch counted and none run (the runtime's null launch mode), on the host emulation
(``tools/cuda_on_host``, which stands in for CuPy). What is timed is everything the host
does for an operation, from the Tensor frontend to the compiled launcher, except the
driver's own launch call and the GPU's work: the per-operation cost that decides how
small a workload a GPU can speed up.

Each call's launches and host synchronizations are counted too (the runtime counts both),
for ``a + b``, the MLP step and one training step of every model of the zoo
(``models_bench.MODELS``, at its quick batch): the counts a GPU would see, on any machine.

``measure(quick)`` runs the timing in a subprocess (the emulation must be imported in
place of CuPy, and the mode set before the device opens); ``stagegrad devices`` reports
it as the ``cuda (null launch)`` rows. Run as ``python -m stagegrad.null_launch`` it
times in this process and prints the JSON.
"""
import json
import os
import subprocess
import sys
import time

from . import models_bench as mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMULATION = os.path.join(ROOT, "tools", "cuda_on_host")
BATCHES = (16, 64)  # the MLP step's batch sizes


def measure(quick=False, timeout=300):
    """``{"available": True, "add_s", "add_launches", "add_syncs", "mlp": [{"batch",
    "seconds", "launches", "syncs"}], "zoo": [{"model", "batch", "seconds", "launches",
    "syncs"}]}``, each a median of the host's seconds (and the launches and synchronizations)
    per call, or ``{"available": False, "reason": ...}``."""
    if not os.path.isdir(EMULATION):
        return {"available": False, "reason": "the host emulation (tools/cuda_on_host) is not here: "
                                              "it ships with the checkout, not with the package"}
    env = dict(os.environ, STAGEGRAD_CUDA_LAUNCH="null",
               PYTHONPATH=os.pathsep.join(p for p in (EMULATION, ROOT, os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-m", "stagegrad.null_launch"] + (["--quick"] if quick else [])
    try:
        r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"available": False, "reason": f"the null-launch run took over {timeout} s"}
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return {"available": False, "reason": f"the null-launch run failed: {last}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _here(quick):
    """The timings, in this process (the emulation and the null mode already in place)."""
    import stage4_gpu as sg

    from .device_workloads import add, mlp_step
    from .measure import time_calls
    if not sg.cuda.is_available():
        raise RuntimeError(f"no cuda device: {sg.cuda.unavailable_reason()}")
    sg.cuda._set_launch_mode("null")
    target = 0.1 if quick else 0.3

    def median(call):
        """Median seconds per call (measure.time_calls, within ten targets)."""
        return time_calls(call, 10 * target, target)["time_s"]

    def per_call(call):
        """(launches, synchronizations) of one call."""
        launches, syncs = sg.cuda._launch_count(), sg.cuda._sync_count()
        call()
        return sg.cuda._launch_count() - launches, sg.cuda._sync_count() - syncs

    call = add(sg, "cuda", 4)
    out = {"available": True, "add_s": median(call), "mlp": [], "zoo": []}
    out["add_launches"], out["add_syncs"] = per_call(call)
    for batch in BATCHES:
        step = mlp_step(sg, "cuda", batch)
        launches, syncs = per_call(step)
        out["mlp"].append({"batch": batch, "seconds": median(step), "launches": launches,
                           "syncs": syncs})
    for model in mb.MODELS.values():
        step = _zoo_step(sg, model)
        step()  # the first step makes the optimizer's state
        t0 = time.perf_counter()
        launches, syncs = per_call(step)
        once = time.perf_counter() - t0  # --quick: this one step's time
        out["zoo"].append({"model": model.title, "batch": model.quick_batch, "launches": launches,
                           "syncs": syncs, "seconds": once if quick else median(step)})
    return out


def _zoo_step(sg, model):
    """One training step of a zoo model on cuda at its quick batch, as ``stagegrad models``
    makes it (forward, cross-entropy, backward, the optimizer's step), with no synchronize."""
    sg.manual_seed(0)
    net = model.build(sg).to("cuda")
    net.train()
    x, y = (sg.tensor(a, device="cuda") for a in mb.batch_data(model, model.quick_batch))
    opt = mb.make_optimizer(sg, net, model.optimizer)

    def step():
        loss = mb.model_loss(sg, net, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


if __name__ == "__main__":
    print(json.dumps(_here("--quick" in sys.argv[1:])))
