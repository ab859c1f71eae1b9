"""``stagegrad devices``: what stage 4's ``webgpu`` device costs and where it pays off.

Stage 3 on the CPU is the baseline, PyTorch on the CPU the peer. One run measures:

- one operation's fixed cost: ``a + b`` on 4 float32 elements, on the device both queued
  (the host's cost of issuing it) and followed by ``sg.webgpu.synchronize()``;
- copies of a 16 MiB float32 tensor to the device and back, in GiB/s;
- a sweep of sizes (elementwise add, square matmul, a 784-256-10 MLP training step with
  SGD), each call ending with a synchronize so the device's work is counted, and for each
  workload the smallest size at which the device beats stage 3 (the crossover).

Times are medians of repeated calls. On Mesa's lavapipe the "device" is software Vulkan
running on this same CPU: the report says so, and such timings are never GPU speed. Without
a device the CPU side is measured and the report says why. Writes ``devices.json`` and
``devices.md`` to the output folder.
"""
import json
import statistics
import time
from pathlib import Path

TRANSFER_BYTES = 16 << 20
MLP = (784, 256, 10)
FULL = {"add": [10 ** k for k in range(2, 8)], "matmul": [64, 128, 256, 512, 1024],
        "MLP step": [16, 64, 256, 1024]}
QUICK = {"add": [10 ** k for k in range(2, 7)], "matmul": [64, 128, 256], "MLP step": [16, 64, 256]}


def _pair(sg, dev, *shape):
    return sg.randn(*shape, device=dev), sg.randn(*shape, device=dev)


def _add(sg, dev, n):
    a, b = _pair(sg, dev, n)
    return lambda: a + b


def _matmul(sg, dev, n):
    a, b = _pair(sg, dev, n, n)
    return lambda: a @ b


def _mlp_step(sg, dev, batch):
    sg.manual_seed(0)
    nn = sg.nn
    model = nn.Sequential(nn.Linear(MLP[0], MLP[1]), nn.ReLU(), nn.Linear(MLP[1], MLP[2])).to(dev)
    opt = sg.optim.SGD(model.parameters(), lr=0.01)
    x, y = sg.randn(batch, MLP[0], device=dev), sg.randint(0, MLP[2], (batch,), device=dev)

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def _synced(call, sync):
    """``call`` followed by ``sync``: the device's work counted, not only its queuing."""
    def run():
        call()
        sync()
    return run


def _upload(sg):
    x = sg.randn(TRANSFER_BYTES // 4)
    return _synced(lambda: x.to("webgpu"), sg.webgpu.synchronize)


def _download(sg):
    return sg.randn(TRANSFER_BYTES // 4, device="webgpu").cpu  # reading back waits for the device


SWEEPS = {  # workload: (what one call does, the size's label, build(sg, device, size) -> call)
    "add": ("`a + b` on float32 vectors", "{:,} elements", _add),
    "matmul": ("`a @ b` on square float32 matrices", "{0}x{0}", _matmul),
    "MLP step": ("a 784-256-10 MLP with ReLU: forward, cross-entropy, backward, SGD step", "batch {}",
                 _mlp_step),
}


def add_arguments(p):
    """The command's options: ``--quick`` and ``--out``."""
    p.add_argument("--quick", action="store_true",
                   help="fewer sizes and shorter timing (under a minute; what the docs build runs)")
    p.add_argument("--out", default="out/devices", help="output folder (default out/devices)")


def _median(fn, target, after=None):
    """Median seconds per call over 5 samples of about ``target / 5`` s each (3 samples of
    one call when one call alone takes longer). ``after`` runs between samples, untimed."""
    fn()  # warm-up: the device compiles a kernel's pipeline on its first launch
    if after:
        after()
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    number = max(1, int(target / 5 / max(one, 1e-9)))
    samples = []
    for _ in range(5 if number > 1 else 3):
        if after:
            after()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    if after:
        after()
    return statistics.median(samples)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def measure(quick=False, stream=None):
    """Time every workload on every device there is; the report as a JSON-ready dict."""
    from . import load_stage, machine
    from .progress import Progress
    s3, s4 = load_stage("3"), load_stage("4")
    gpu = s4.webgpu
    available = gpu.is_available()
    torch = _torch()
    sizes, target = (QUICK, 0.1) if quick else (FULL, 0.3)
    # (section, label, build() -> (call, after)): built one at a time, so that only the
    # tensors of the workload being timed are alive
    jobs = [("overhead", "stage 3", lambda: (_add(s3, "cpu", 4), None))]
    if available:
        sync = gpu.synchronize
        jobs += [("overhead", "webgpu, queued", lambda: (_add(s4, "webgpu", 4), sync)),
                 ("overhead", "webgpu, synchronized", lambda: (_synced(_add(s4, "webgpu", 4), sync), None)),
                 ("transfer", "host to device", lambda: (_upload(s4), None)),
                 ("transfer", "device to host", lambda: (_download(s4), None))]
    if torch is not None:
        jobs.append(("overhead", "PyTorch", lambda: (_add(torch, "cpu", 4), None)))
    for name, (_, _, build) in SWEEPS.items():
        for n in sizes[name]:
            jobs.append(("sweep", (name, n, "stage 3"), lambda b=build, n=n: (b(s3, "cpu", n), None)))
            if available:
                jobs.append(("sweep", (name, n, "webgpu"),
                             lambda b=build, n=n: (_synced(b(s4, "webgpu", n), sync), None)))
    bar = Progress(len(jobs), "devices", stream=stream)
    seconds = {}
    for done, (section, label, build) in enumerate(jobs, 1):
        call, after = build()
        seconds[(section, label)] = _median(call, target, after)
        bar.update(done, now=label if isinstance(label, str) else f"{label[0]} {label[1]:,} on {label[2]}")
    return _report(quick, s3, gpu, available, torch, sizes, seconds, machine.cpu_model())


def _report(quick, s3, gpu, available, torch, sizes, seconds, cpu):
    sweep = [{"workload": name, "size": n, "stage3_s": seconds[("sweep", (name, n, "stage 3"))],
              "webgpu_s": seconds.get(("sweep", (name, n, "webgpu")))}
             for name in SWEEPS for n in sizes[name]]
    crossover = {name: next((r["size"] for r in sweep if r["workload"] == name
                             and r["webgpu_s"] is not None and r["webgpu_s"] < r["stage3_s"]), None)
                 for name in SWEEPS} if available else {}
    return {
        "quick": quick, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu,
        "stage3_threads": s3.get_num_threads(),
        "webgpu": {"available": available, "reason": gpu.unavailable_reason(),
                   "name": gpu.device_name() if available else None,
                   "software": gpu.is_software() if available else None},
        "torch": torch.__version__ if torch is not None else None,
        "overhead": [{"device": label, "seconds": t} for (section, label), t in seconds.items()
                     if section == "overhead"],
        "transfer": [{"direction": label, "bytes": TRANSFER_BYTES, "seconds": t,
                      "gib_s": TRANSFER_BYTES / t / 2 ** 30}
                     for (section, label), t in seconds.items() if section == "transfer"],
        "sweep": sweep, "crossover": crossover,
    }


def _fmt(t):
    return f"{t * 1e6:.3g} µs" if t < 1e-3 else f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"


def _table(head, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    return ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
            "|" + "|".join("-" * (w + 2) for w in widths) + "|",
            *("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows)]


TIMED = {"stage 3": "`a + b`", "webgpu, queued": "`a + b`, not waited for",
         "webgpu, synchronized": "`a + b; sg.webgpu.synchronize()`", "PyTorch": "`a + b`",
         "host to device": "`x.to(\"webgpu\")`, synchronized", "device to host": "`y.cpu()`"}


def markdown(report):
    """The report's tables, as Markdown no wider than about 100 columns."""
    gpu = report["webgpu"]
    kind = "a quick run" if report["quick"] else "a full run"
    lines = [f"Stage 4's devices on {report['cpu']}, {kind} of `stagegrad devices` on {report['created']}: "
             f"stage 3 on the CPU ({report['stage3_threads']} threads) is the baseline"
             + (f", PyTorch {report['torch']} on the CPU the peer" if report["torch"] else "")
             + (f"; `webgpu` is the adapter **{gpu['name']}**." if gpu["available"] else "."), ""]
    if not gpu["available"]:
        lines += [f"**No webgpu rows or columns: the device is not available here** ({gpu['reason']}). "
                  "Only the CPU side was measured.", ""]
    elif gpu["software"]:
        lines += [f"**{gpu['name']} is a software Vulkan driver (Mesa's lavapipe) running on this "
                  "machine's CPU: the webgpu timings below are software-Vulkan timings on the CPU, "
                  "never GPU speed.**", ""]
    base = next(r["seconds"] for r in report["overhead"] if r["device"] == "stage 3")
    rows = [[r["device"], TIMED[r["device"]], _fmt(r["seconds"]), f"{r['seconds'] / base:.3g}x"]
            for r in report["overhead"]]
    lines += ["One operation's fixed cost: `a + b` on 4 float32 elements, median time per call and "
              "how many times stage 3's time that is.", ""]
    lines += _table(["device", "what is timed", "per call", "relative"], rows) + [""]
    if report["transfer"]:
        rows = [[r["direction"], TIMED[r["direction"]], _fmt(r["seconds"]), f"{r['gib_s']:.3g} GiB/s"]
                for r in report["transfer"]]
        lines += [f"Copies of {TRANSFER_BYTES >> 20} MiB of float32 between host and device.", ""]
        lines += _table(["direction", "what is timed", "per copy", "bandwidth"], rows) + [""]
    workloads = "; ".join(f"{name}, {what}" for name, (what, _, _) in SWEEPS.items())
    lines += [f"Where the device may overtake stage 3 ({workloads}): time per call on stage 3 and on "
              "webgpu, each call ending with `sg.webgpu.synchronize()` on the device so that its work "
              "is counted; speed-up = stage 3's time / the device's (above 1: the device is faster)."
              if gpu["available"] else f"Stage 3 over the sweep of sizes ({workloads}): time per call.", ""]
    rows = []
    for r in report["sweep"]:
        _, label, _ = SWEEPS[r["workload"]]
        row = [r["workload"], label.format(r["size"]), _fmt(r["stage3_s"])]
        if gpu["available"]:
            row += [_fmt(r["webgpu_s"]), f"{r['stage3_s'] / r['webgpu_s']:.2g}x"]
        rows.append(row)
    lines += _table(["workload", "size", "stage 3"] + (["webgpu", "speed-up"] if gpu["available"] else []),
                    rows)
    if gpu["available"]:
        rows = []
        for name, size in report["crossover"].items():
            label = SWEEPS[name][1]
            largest = max(r["size"] for r in report["sweep"] if r["workload"] == name)
            rows.append([name, label.format(size) if size is not None else
                         f"not within the sweep (up to {label.format(largest)})"])
        lines += ["", "The crossover: the smallest size at which webgpu is faster than stage 3.", ""]
        lines += _table(["workload", "crossover"], rows)
    return "\n".join(lines)


def write(report, out):
    """``devices.json`` and ``devices.md`` in the folder ``out``; their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = out / "devices.json", out / "devices.md"
    paths[0].write_text(json.dumps(report, indent=1) + "\n")
    paths[1].write_text(markdown(report) + "\n")
    return paths


def run(args):
    """Measure, write ``devices.json`` and ``devices.md`` to ``--out``, print the tables."""
    report = measure(quick=args.quick)
    paths = write(report, args.out)
    print()
    print(markdown(report))
    print(f"wrote {paths[0]}, {paths[1]}")
    return report
