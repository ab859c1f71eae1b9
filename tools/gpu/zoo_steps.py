"""The zoo's training steps on stage 4's ``cuda`` device next to PyTorch CUDA, in one run.

Each model of ``stagegrad models`` (``models_bench.MODELS``) is built on both from PyTorch's
initial weights and fed the same batch; stage 4's first training step is checked against
PyTorch CUDA's loss (``models_bench.RTOL``), then each side's step (forward, cross-entropy,
backward, the optimizer's step, then a device synchronize) is timed: the median of the calls
that fit in ``--budget`` seconds, after two warm-ups. A model stage 4 cannot build or run is
reported with the error, and the run goes on. Each side's step is also counted, once, with no
synchronize after it: stage 4's launches and host synchronizations (the runtime counts both),
PyTorch's CUDA activities (kernels, copies and memsets, as ``torch.profiler`` records them)
and its synchronizations (the warnings of ``torch.cuda.set_sync_debug_mode("warn")``).
Writes ``zoo_steps.json`` and ``zoo_steps.md``.

Run by ``tools/gpu/check.sh`` on a machine with an NVIDIA GPU; not part of the CPU suite.
"""
import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stagegrad import models_bench as mb  # noqa: E402

BATCHES = {"resnet18": 64, "mobilenetv2": 64, "cnn": 256, "gpt": 16, "lstm": 16}


def _session(lib, model, state, x, y, to_device, sync):
    """The model on the GPU from ``state``, and its training step as a zero-argument call."""
    net = model.build(lib)
    net.load_state_dict({k: lib.tensor(v) if lib.__name__ != "torch" else lib.from_numpy(v.copy())
                         for k, v in state.items()})
    net.to("cuda")
    net.train()
    xs, ys = to_device(x), to_device(y)
    opt = mb.make_optimizer(lib, net, model.optimizer)

    def step(synchronize=True):
        loss = mb.model_loss(lib, net, xs, ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if synchronize:
            sync()
        return loss
    return step


def _torch_counts(torch, step):
    """(CUDA activities, synchronizations) of one unsynchronized PyTorch step."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step(False)
        torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            step(False)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    return kernels, sum("synchroniz" in str(w.message) for w in caught)


def _stage4_counts(sg, step):
    """(launches, host synchronizations) of one unsynchronized stage 4 step."""
    launches, syncs = sg.cuda._launch_count(), sg.cuda._sync_count()
    step(False)
    launches, syncs = sg.cuda._launch_count() - launches, sg.cuda._sync_count() - syncs
    sg.cuda.synchronize()
    return launches, syncs


def _time(step, budget):
    """Median seconds per call after two warm-ups, within ``budget`` seconds."""
    step(), step()
    times, start = [], time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget and len(times) < 50):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times), len(times)


def measure(keys, budget, batch_size=None):
    import torch

    import stage4_gpu as sg
    rows = []
    for key in keys:
        model, batch = mb.MODELS[key], batch_size or BATCHES[key]
        row = {"model": model.title, "batch": batch}
        rows.append(row)
        torch.manual_seed(0)
        state = {k: v.detach().numpy().copy() for k, v in model.build(torch).state_dict().items()}
        x, y = mb.batch_data(model, batch)
        try:
            ref = _session(torch, model, state, x, y, lambda a: torch.from_numpy(a.copy()).cuda(),
                           torch.cuda.synchronize)
            row["torch_loss"] = float(ref().item())
            row["torch_s"], row["torch_calls"] = _time(ref, budget)
            row["torch_kernels"], row["torch_syncs"] = _torch_counts(torch, ref)
        except Exception as e:
            row["torch_error"] = f"{type(e).__name__}: {e}"
        try:
            ours = _session(sg, model, state, x, y, lambda a: sg.tensor(a, device="cuda"),
                            sg.cuda.synchronize)
            row["loss"] = float(ours().item())
            if "torch_loss" in row:
                _, row["loss_ok"] = mb.compare(row["loss"], row["torch_loss"])
            row["stage4_s"], row["stage4_calls"] = _time(ours, budget)
            row["launches"], row["syncs"] = _stage4_counts(sg, ours)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(row), flush=True)
    return rows


def markdown(rows, gpu):
    lines = [f"Training steps on {gpu}: stage 4's cuda device against PyTorch CUDA "
             "(median ms per step, synchronized; speed = PyTorch's time over stage 4's). Per step, "
             "counted once: stage 4's kernel launches and PyTorch's CUDA activities (kernels, copies, "
             "memsets: torch.profiler), and each side's host synchronizations.", "",
             "| model | batch | PyTorch CUDA ms | stage 4 ms | speed | launches (stage 4 / PyTorch) "
             "| syncs (stage 4 / PyTorch) | first loss (stage 4 / PyTorch) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ours = f"{r['stage4_s'] * 1e3:.2f}" if "stage4_s" in r else r.get("error", "")[:80]
        theirs = f"{r['torch_s'] * 1e3:.2f}" if "torch_s" in r else r.get("torch_error", "")[:80]
        speed = f"{r['torch_s'] / r['stage4_s']:.2f}x" if "stage4_s" in r and "torch_s" in r else "-"
        loss = (f"{r['loss']:.5f} / {r.get('torch_loss', float('nan')):.5f}"
                + ("" if r.get("loss_ok", True) else " WRONG")) if "loss" in r else "-"
        launches = f"{r.get('launches', '-')} / {r.get('torch_kernels', '-')}"
        syncs = f"{r.get('syncs', '-')} / {r.get('torch_syncs', '-')}"
        lines.append(f"| {r['model']} | {r['batch']} | {theirs} | {ours} | {speed} | {launches} | {syncs} "
                     f"| {loss} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(BATCHES))
    p.add_argument("--batch", type=int, default=None, help="one batch for every model (default: BATCHES)")
    p.add_argument("--budget", type=float, default=3.0, help="seconds of timed calls per side and model")
    p.add_argument("--out", default="out/gpu-check/zoo")
    args = p.parse_args(argv)
    import torch
    rows = measure(args.models.split(","), args.budget, args.batch)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "zoo_steps.json").write_text(json.dumps(rows, indent=1))
    text = markdown(rows, torch.cuda.get_device_name(0))
    (out / "zoo_steps.md").write_text(text)
    print(text)
    return 1 if any("error" in r or not r.get("loss_ok", True) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
