"""``stagegrad distributed``: what data-parallel training on MPI costs and buys on this
machine: the MNIST MLP's and CNN's training step (``stagegrad train``'s models, AdamW,
``--batch`` images per rank) on one rank and on ``--nproc`` ranks, each rank on one
thread, with stage 3.

For each model and rank count, one ``mpirun`` job times, per step (medians of
``--steps`` steps after a warm-up, on rank 0, the ranks being coupled by the all-reduce):

- *no communication*: the step of the model itself (on more than one rank, DDP inside
  ``no_sync()``: the work of one rank with nothing exchanged);
- *all-reduce after backward*: ``DistributedDataParallel(overlap=False)``, which starts
  reducing once backward has produced every gradient;
- *overlapped*: DDP as it trains, each bucket's all-reduce started as its gradients are
  ready (buckets of ``--bucket-cap-mb``: small, so that these small models have several);
- *all-reduce alone*: one blocking all-reduce of as many floats as the model has
  parameters.

The four take turns (three rounds), so that a change in the machine's load during the
run falls on all of them alike.

From these: the images per second of the whole job, the scaling over one rank's, and the
communication a step exposes (a DDP step minus the step without communication). The
input is random (the step's cost does not depend on the pixels). Writes
``distributed.json`` and ``distributed.md`` to ``--out``. Without MPI, the report says so.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import mpi
from .formatting import write_tables
from .measure import timed_samples

MODELS = ("mlp", "cnn")
MODES = ("plain", "after", "overlap")
TITLES = {"plain": "no communication", "after": "all-reduce after backward", "overlap": "overlapped"}


def add_arguments(p):
    p.add_argument("--nproc", type=int, default=2, help="ranks to compare with one (default 2)")
    p.add_argument("--steps", type=int, default=None,
                   help="timed steps per measurement (default 60, or 15 with --quick)")
    p.add_argument("--batch", type=int, default=64, help="images per rank per step (default 64)")
    p.add_argument("--bucket-cap-mb", type=float, default=0.25,
                   help="DDP's bucket size in MiB (default 0.25: PyTorch's 25 would put each of these "
                        "models in one bucket, and leave nothing to overlap)")
    p.add_argument("--stage", default="stage3_simd", help="the stage to measure (default stage3_simd)")
    p.add_argument("--quick", action="store_true", help="fewer steps (what the docs build runs)")
    p.add_argument("--out", default="out/distributed", help="output folder (default out/distributed)")


# ------------------------------------------------------------------ one rank's measurement

ROUNDS = 3  # the modes take turns, so that a change in the machine's load falls on all of them


def _medians(steps_by_mode, steps, barrier):
    """Median seconds per step of each ``{mode: step}``, the modes timed in turns."""
    for step in steps_by_mode.values():
        for _ in range(3):  # warm-up: the first steps allocate what the later ones reuse
            step()
    times = {mode: [] for mode in steps_by_mode}
    for _ in range(ROUNDS):
        for mode, step in steps_by_mode.items():
            barrier()
            times[mode] += timed_samples(step, max(1, steps // ROUNDS), warmup=0)
    return {mode: statistics.median(t) for mode, t in times.items()}


def _training_step(sg, net, model, x, y, quiet):
    opt = sg.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        if quiet is not None:  # no_sync(): the step without communication
            with quiet():
                loss = sg.nn.functional.cross_entropy(net(x), y)
                opt.zero_grad()
                loss.backward()
        else:
            loss = sg.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
        opt.step()
    return step


def _rank_measure(stage, steps, batch, bucket_cap_mb):
    """What one rank of the job measures (rank 0's is kept)."""
    import importlib

    from .training import build_model
    sg = importlib.import_module(stage)
    dist = sg.distributed
    dist.init_process_group()
    world = dist.get_world_size()
    DDP = sg.nn.parallel.DistributedDataParallel
    out = {"world": world, "threads": sg.get_num_threads(), "models": {}}
    for kind in MODELS:
        sg.manual_seed(0)
        x = sg.randn(batch, 1, 28, 28)
        y = sg.randint(0, 10, (batch,))
        steps_by_mode, buckets = {}, None
        for mode in MODES:
            sg.manual_seed(0)
            model = build_model(sg, kind)
            if mode == "plain" and world == 1:
                net, quiet = model, None
            else:
                net = DDP(model, bucket_cap_mb=bucket_cap_mb, overlap=(mode != "after"))
                quiet = net.no_sync if mode == "plain" else None
                buckets = len(net._buckets)
            steps_by_mode[mode] = _training_step(sg, net, model, x, y, quiet)
        n = sum(p.numel() for p in model.parameters())
        flat = sg.zeros(n)
        steps_by_mode["allreduce"] = lambda flat=flat: dist.all_reduce(flat)
        row = _medians(steps_by_mode, steps, dist.barrier)
        row.update(parameters=n, buckets=buckets)
        out["models"][kind] = row
    from mpi4py import MPI
    out["mpi"] = MPI.Get_library_version().split(",")[0].strip()  # the name and version
    dist.barrier()
    return out if dist.get_rank() == 0 else None


# ------------------------------------------------------------------ the command

def measure(nproc=2, steps=None, batch=64, bucket_cap_mb=0.25, stage="stage3_simd", quick=False):
    """One job per rank count (1 and ``nproc``); the report, a JSON-ready dict."""
    steps = steps or (15 if quick else 60)
    report = {"format": 1, "created": time.strftime("%Y-%m-%d %H:%M"), "stage": stage, "quick": quick,
              "steps": steps, "batch": batch, "bucket_cap_mb": bucket_cap_mb, "cpus": _usable_cores(),
              "cpu": _cpu_name(), "runs": {}}
    from stage0_python import distributed
    why = distributed.unavailable_reason() or (None if mpi.mpirun_path() else "mpirun is not on PATH")
    if why:
        report["unavailable"] = why
        return report
    for world in sorted({1, nproc}):
        with tempfile.TemporaryDirectory() as tmp:
            result = Path(tmp) / "rank0.json"
            program = [sys.executable, "-m", "stagegrad.distributed", stage, str(steps), str(batch),
                       str(bucket_cap_mb), str(result)]
            print(f"distributed: {world} rank{'s' if world > 1 else ''}, {steps} steps per measurement",
                  file=sys.stderr)
            root = str(Path(__file__).resolve().parents[1])
            env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
            proc = subprocess.run(mpi.mpirun_command(world, program, threads=1), capture_output=True,
                                  text=True, env=env, check=False, timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(f"the {world}-rank measurement failed:\n{proc.stdout}\n"
                                   f"{proc.stderr[-3000:]}")
            report["runs"][str(world)] = json.loads(result.read_text())
    _derive(report, nproc)
    return report


def _cpu_name():
    from .machine import cpu_model
    return cpu_model() or "this CPU"


def _usable_cores():
    from .machine import cores
    return cores()["usable"]


def _derive(report, nproc):
    """Images per second, scaling and exposed communication from the medians."""
    one = report["runs"]["1"]["models"]
    for world, run in report["runs"].items():
        w = int(world)
        for kind, row in run["models"].items():
            row["images_per_s"] = w * report["batch"] / row["overlap"]
            row["scaling"] = row["images_per_s"] / (report["batch"] / one[kind]["plain"])
            row["exposed_overlap"] = row["overlap"] - row["plain"]
            row["exposed_after"] = row["after"] - row["plain"]


def _ms(seconds):
    return f"{seconds * 1e3:.2f} ms"


def markdown(report):
    """The table, with a sentence on how it was measured."""
    if "unavailable" in report:
        return f"*Not measured: MPI is not available where this was built ({report['unavailable']}).*"
    first = report["runs"]["1"]
    lines = [f"`stagegrad distributed` on {report['cpu']} ({report['cpus']} cores), {report['created']}: "
             f"{report['stage']}, one thread per rank, {report['batch']} images per rank per step, AdamW, "
             f"DDP buckets of {report['bucket_cap_mb']:g} MiB, medians of {report['steps']} steps in "
             f"{ROUNDS} rounds"
             f"{' (a quick run)' if report['quick'] else ''}; {first['mpi']}, every rank on this one "
             f"machine.", "",
             "| model | ranks | step, no communication | step, all-reduce after backward | step, overlapped "
             "| all-reduce of the gradients alone | communication exposed (after / overlapped) "
             "| images/s | vs 1 rank |",
             "|---|---|---|---|---|---|---|---|---|"]
    for kind in MODELS:
        for world, run in sorted(report["runs"].items(), key=lambda kv: int(kv[0])):
            row = run["models"][kind]
            lines.append(f"| {kind} ({row['parameters']:,} parameters, {row['buckets']} buckets) | {world} "
                         f"| {_ms(row['plain'])} | {_ms(row['after'])} | {_ms(row['overlap'])} "
                         f"| {_ms(row['allreduce'])} "
                         f"| {_ms(row['exposed_after'])} / {_ms(row['exposed_overlap'])} "
                         f"| {row['images_per_s']:,.0f} | {row['scaling']:.2f}x |")
    return "\n".join(lines)


def write(report, out):
    """``distributed.json`` and ``distributed.md`` in the folder ``out``; their paths."""
    return write_tables(out, "distributed", report, markdown(report))


def run(args):
    """Measure, write ``distributed.json`` and ``distributed.md`` to ``--out``, print the table."""
    if args.nproc < 2:
        raise ValueError(f"--nproc must be at least 2 (one rank is always measured), got {args.nproc}")
    if args.batch < 1 or (args.steps is not None and args.steps < 1) or not args.bucket_cap_mb > 0:
        raise ValueError("--batch, --steps and --bucket-cap-mb must be positive")
    report = measure(args.nproc, args.steps, args.batch, args.bucket_cap_mb, args.stage, args.quick)
    paths = write(report, args.out)
    print(markdown(report))
    print(f"wrote {paths[0]}, {paths[1]}")
    return report


if __name__ == "__main__":  # a rank of the job ``measure`` starts
    stage, steps, batch, cap, result = sys.argv[1:6]
    measured = _rank_measure(stage, int(steps), int(batch), float(cap))
    if measured is not None:
        Path(result).write_text(json.dumps(measured))
