"""The cuda device's host cost, measurable on any machine: stage 4's cuda path with every
launch counted and none run (the runtime's null launch mode), on the host emulation
(``tools/cuda_on_host``, which stands in for CuPy). What is timed is everything the host
does for an operation, from the Tensor frontend to the compiled launcher, except the
driver's own launch call and the GPU's work: the per-operation cost that decides how
small a workload a GPU can speed up.

``measure(quick)`` runs the timing in a subprocess (the emulation must be imported in
place of CuPy, and the mode set before the device opens); ``stagegrad devices`` reports
it as the ``cuda (null launch)`` rows. Run as ``python -m stagegrad.null_launch`` it
times in this process and prints the JSON.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMULATION = os.path.join(ROOT, "tools", "cuda_on_host")
BATCHES = (16, 64)  # the MLP step's batch sizes


def measure(quick=False, timeout=300):
    """``{"available": True, "add_s", "add_launches", "mlp": [{"batch", "seconds",
    "launches"}]}``, each a median of the host's seconds (and launches) per call, or
    ``{"available": False, "reason": ...}``."""
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

    from .devices import _add, _median, _mlp_step
    if not sg.cuda.is_available():
        raise RuntimeError(f"no cuda device: {sg.cuda.unavailable_reason()}")
    sg.cuda._set_launch_mode("null")
    target = 0.1 if quick else 0.3

    def per_call(call):
        before = sg.cuda._launch_count()
        call()
        return sg.cuda._launch_count() - before

    add = _add(sg, "cuda", 4)
    out = {"available": True, "add_s": _median(add, target), "add_launches": per_call(add), "mlp": []}
    for batch in BATCHES:
        step = _mlp_step(sg, "cuda", batch)
        out["mlp"].append({"batch": batch, "seconds": _median(step, target), "launches": per_call(step)})
    return out


if __name__ == "__main__":
    print(json.dumps(_here("--quick" in sys.argv[1:])))
