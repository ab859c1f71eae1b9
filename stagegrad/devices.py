"""``stagegrad devices``: what each of stage 4's devices (``webgpu``, ``cuda``) costs and
where it pays off.

Stage 3 on the CPU is the baseline, PyTorch the peer (on the CPU, and on CUDA where
PyTorch has a GPU). One run measures, on every device that is available:

- one operation's fixed cost: ``a + b`` on 4 float32 elements, on the device both queued
  (the host's cost of issuing it) and followed by the device's ``synchronize()``;
- copies of a 16 MiB float32 tensor to the device and back, in GiB/s: from and into
  ordinary (pageable) host memory, and on ``cuda`` also from and into page-locked memory
  (``pin_memory()``, ``non_blocking=True``), which the GPU reaches by DMA;
- a sweep of sizes (elementwise add, square matmul, a 784-256-10 MLP training step and a
  small CNN's, with SGD), each call ending with a synchronize so the device's work is counted, and for each
  device and workload the smallest size at which the device beats stage 3 (the crossover);
- on every machine, GPU or not: the cuda device's host cost, ``cuda (null launch)``: ``a +
  b`` and the MLP step with every launch counted and none run, on the host emulation
  (``null_launch.py``), with the launches each makes.

Times are medians of repeated calls. A software device (Mesa's lavapipe for webgpu: Vulkan
running on this same CPU) is named as such, and its timings are never GPU speed. A device
that is not available is reported with the reason. Writes ``devices.json`` and
``devices.md`` to the output folder.
"""
import time

from . import device_workloads as W
from .formatting import WIDTH, markdown_table, publish, write_tables
from .measure import calls_lasting, seconds_per_call

TRANSFER_BYTES = 16 << 20
FULL = {"add": [10 ** k for k in range(2, 8)], "matmul": [64, 128, 256, 512, 1024],
        "MLP step": [16, 64, 256, 1024], "CNN step": [16, 64, 256]}
# --quick: the sweep's shape, in seconds (a CNN step of 64 on a software adapter takes several)
QUICK = {"add": [10 ** k for k in range(2, 7)], "matmul": [64, 128, 256], "MLP step": [16, 64, 256],
         "CNN step": [4, 16]}


def _synced(call, sync):
    """``call`` followed by ``sync``: the device's work counted, not only its queuing."""
    def run():
        call()
        sync()
    return run


def _upload(sg, dev, sync, pinned=False):
    x = sg.randn(TRANSFER_BYTES // 4)
    if pinned:  # page-locked once, as a loader with pin_memory=True hands batches over
        x = x.pin_memory()
    return _synced(lambda: x.to(dev, non_blocking=pinned), sync)


def _download(sg, dev, sync, pinned=False):
    x = sg.randn(TRANSFER_BYTES // 4, device=dev)
    if pinned:  # into new page-locked memory, queued: the synchronize waits for it
        return _synced(lambda: x.to("cpu", non_blocking=True), sync)
    return x.cpu  # reading back waits for the device


# the rows of the transfer table: (direction, pinned); the pinned ones on cuda only
TRANSFERS = (("host-to-device", False), ("host-to-device", True), ("device-to-host", False),
             ("device-to-host", True))


def _transfer_label(direction, pinned):
    return f"{direction} {TRANSFER_BYTES >> 20} MiB, {'pinned' if pinned else 'pageable'}"


SWEEPS = {  # workload: (what one call does, the size's label, build(sg, device, size) -> call)
    "add": ("`a + b` on float32 vectors", "{:,} elements", W.add),
    "matmul": ("`a @ b` on square float32 matrices", "{0}x{0}", W.matmul),
    "MLP step": ("a 784-256-10 MLP with ReLU: forward, cross-entropy, backward, SGD step", "batch {}",
                 W.mlp_step),
    "CNN step": ("a 3x3 convolution to 8 channels, ReLU, 2x2 max pool and a linear layer on 28x28 "
                 "images: one SGD step", "batch {}", W.cnn_step),
}


def add_arguments(p):
    """The command's options: ``--quick`` and ``--out``."""
    p.add_argument("--quick", action="store_true",
                   help="fewer sizes and shorter timing (under a minute; what the docs build runs)")
    p.add_argument("--out", default="out/devices", help="output folder (default out/devices)")


def _median(fn, target, after=None):
    """Median seconds per call over 5 samples of about ``target / 5`` s each (3 samples of
    one call when one call alone takes longer). ``after`` runs between samples, untimed."""
    # the warm-up matters: the device compiles a kernel's pipeline on its first launch
    number = calls_lasting(fn, target / 5, between=after)
    return seconds_per_call(fn, 5 if number > 1 else 3, "median", number=number, warmup=0, between=after)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


DEVICES = ("webgpu", "cuda")
NULL_LAUNCH = "cuda (null launch)"  # the cuda device's host cost, on any machine (null_launch.py)


def _device_info(s4, name):
    """What the report says of device ``name``: available, why not, its adapter or GPU,
    and whether it is software running on this CPU."""
    mod = getattr(s4, name)
    info = {"available": mod.is_available(), "reason": mod.unavailable_reason(), "name": None,
            "software": None}
    if info["available"]:
        info["name"] = mod.device_name() if name == "webgpu" else mod.get_device_name()
        # webgpu knows its adapter's kind; a cuda device is software only when emulated
        info["software"] = mod.is_software() if name == "webgpu" else "emulation" in info["name"]
    return info


def measure(quick=False, stream=None):
    """Time every workload on every device there is; the report as a JSON-ready dict."""
    from . import load_stage, machine
    from .progress import Progress
    s3, s4 = load_stage("3"), load_stage("4")
    devices = {name: _device_info(s4, name) for name in DEVICES}
    on = [name for name in DEVICES if devices[name]["available"]]
    torch = _torch()
    torch_cuda = torch is not None and torch.cuda.is_available()
    sizes, target = (QUICK, 0.1) if quick else (FULL, 0.3)
    # (section, label, build() -> (call, after)): built one at a time, so that only the
    # tensors of the workload being timed are alive
    jobs = [("overhead", "stage 3", lambda: (W.add(s3, "cpu", 4), None))]
    for dev in on:
        sync = getattr(s4, dev).synchronize
        jobs += [("overhead", f"{dev}, queued", lambda d=dev, y=sync: (W.add(s4, d, 4), y)),
                 ("overhead", f"{dev}, synchronized", lambda d=dev, y=sync: (_synced(W.add(s4, d, 4), y), None)),
                 *(("transfer", (dev, _transfer_label(direction, pinned)),
                    lambda d=dev, y=sync, up=direction == "host-to-device", p=pinned: (
                        (_upload if up else _download)(s4, d, y, p), None))
                   for direction, pinned in TRANSFERS if dev == "cuda" or not pinned)]
    if torch is not None:
        jobs.append(("overhead", "PyTorch", lambda: (W.add(torch, "cpu", 4), None)))
    if torch_cuda:  # queued as ours are: the synchronize comes after the timed calls
        jobs += [("overhead", "PyTorch CUDA, queued", lambda: (W.add(torch, "cuda", 4), torch.cuda.synchronize)),
                 ("overhead", "PyTorch CUDA, synchronized",
                  lambda: (_synced(W.add(torch, "cuda", 4), torch.cuda.synchronize), None))]
    runs = [("stage 3", s3, "cpu", None)] + [(dev, s4, dev, getattr(s4, dev).synchronize) for dev in on]
    if torch_cuda:
        runs.append(("PyTorch CUDA", torch, "cuda", torch.cuda.synchronize))
    for name, (_, _, build) in SWEEPS.items():
        for n in sizes[name]:
            for label, lib, dev, sync in runs:
                jobs.append(("sweep", (name, n, label), lambda b=build, n=n, lib=lib, dev=dev, y=sync: (
                    b(lib, dev, n) if y is None else _synced(b(lib, dev, n), y), None)))
    bar = Progress(len(jobs) + 1, "devices", stream=stream)  # and the null-launch run
    seconds = {}
    for done, (section, label, build) in enumerate(jobs, 1):
        call, after = build()
        seconds[(section, label)] = _median(call, target, after)
        now = label if isinstance(label, str) else " ".join(f"{x:,}" if isinstance(x, int) else x for x in label)
        bar.update(done, now=now)
    columns = [label for label, *_ in runs[1:]]
    from . import null_launch
    null = null_launch.measure(quick)
    bar.update(len(jobs) + 1, now=NULL_LAUNCH)
    report = _report(quick, s3, devices, columns, torch, sizes, seconds, machine.cpu_model())
    report["null_launch"] = null
    if null["available"]:
        report["overhead"].append({"device": NULL_LAUNCH, "seconds": null["add_s"]})
    return report


def _report(quick, s3, devices, columns, torch, sizes, seconds, cpu):
    sweep = [{"workload": name, "size": n, "stage3_s": seconds[("sweep", (name, n, "stage 3"))],
              "seconds": {c: seconds[("sweep", (name, n, c))] for c in columns}}
             for name in SWEEPS for n in sizes[name]]
    crossover = {c: {name: next((r["size"] for r in sweep if r["workload"] == name
                                 and r["seconds"][c] < r["stage3_s"]), None) for name in SWEEPS}
                 for c in columns}
    return {
        "quick": quick, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu,
        "stage3_threads": s3.get_num_threads(), "devices": devices, "columns": columns,
        "torch": torch.__version__ if torch is not None else None,
        "overhead": [{"device": label, "seconds": t} for (section, label), t in seconds.items()
                     if section == "overhead"],
        "transfer": [{"device": label[0], "direction": label[1], "bytes": TRANSFER_BYTES, "seconds": t,
                      "gib_s": TRANSFER_BYTES / t / 2 ** 30}
                     for (section, label), t in seconds.items() if section == "transfer"],
        "sweep": sweep, "crossover": crossover,
    }


def _fmt(t):
    return f"{t * 1e6:.3g} µs" if t < 1e-3 else f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"



def _tables(head, rows, keep):
    """``_table``, split into several tables no wider than ``WIDTH`` when it is wider: each
    repeats the first ``keep`` columns and takes as many of the others as fit (at least one)."""
    groups = [[]]
    for i in range(keep, len(head)):
        cols = list(range(keep)) + groups[-1] + [i]
        wide = len(markdown_table([head[c] for c in cols], [[r[c] for c in cols] for r in rows])[0]) > WIDTH
        if groups[-1] and wide:
            groups.append([])
        groups[-1].append(i)
    out = []
    for group in groups:
        cols = list(range(keep)) + group
        out += ([""] if out else []) + markdown_table([head[c] for c in cols], [[r[c] for c in cols] for r in rows])
    return out


def _timed(label):
    """What one overhead or transfer row times."""
    dev, _, how = label.partition(", ")
    if label == NULL_LAUNCH:
        return "`a + b`, the host's part: launches counted, not run"
    if label in ("stage 3", "PyTorch"):
        return "`a + b`"
    if dev == "PyTorch CUDA":
        return "`a + b`, not waited for" if how == "queued" else "`a + b; torch.cuda.synchronize()`"
    return {"queued": "`a + b`, not waited for", "synchronized": f"`a + b; sg.{dev}.synchronize()`"}[how]


def markdown(report):
    """The report's tables, as Markdown no wider than ``WIDTH`` columns (a table with more
    devices than fit is split, each part repeating the workload and size)."""
    devices, columns = report["devices"], report["columns"]
    kind = "a quick run" if report["quick"] else "a full run"
    named = [f"`{d}` is **{i['name']}**" for d, i in devices.items() if i["available"]]
    lines = [f"Stage 4's devices on {report['cpu']}, {kind} of `stagegrad devices` on {report['created']}: "
             f"stage 3 on the CPU ({report['stage3_threads']} threads) is the baseline"
             + (f", PyTorch {report['torch']} the peer" if report["torch"] else "")
             + (f"; {'; '.join(named)}." if named else "."), ""]
    for d, info in devices.items():
        if not info["available"]:
            lines += [f"**No {d} rows or columns: the device is not available here** ({info['reason']}).", ""]
        elif info["software"]:
            what = "a software Vulkan driver (Mesa's lavapipe)" if d == "webgpu" else "an emulation"
            lines += [f"**{info['name']} is {what} running on this machine's CPU: the {d} timings below "
                      "are never GPU speed.**", ""]
    base = next(r["seconds"] for r in report["overhead"] if r["device"] == "stage 3")
    rows = [[r["device"], _timed(r["device"]), _fmt(r["seconds"]), f"{r['seconds'] / base:.3g}x"]
            for r in report["overhead"]]
    lines += ["One operation's fixed cost: `a + b` on 4 float32 elements, median time per call and "
              "how many times stage 3's time that is.", ""]
    lines += markdown_table(["device", "what is timed", "per call", "relative"], rows) + [""]
    lines += _null_launch(report.get("null_launch"))
    if report["transfer"]:
        rows = [[r["device"], r["direction"], _fmt(r["seconds"]), f"{r['gib_s']:.3g} GiB/s"]
                for r in report["transfer"]]
        lines += [f"Copies of {TRANSFER_BYTES >> 20} MiB of float32 between host and device. Pageable: "
                  "`x.to(device)` then a synchronize; `y.cpu()`, which waits for the device. Pinned "
                  "(cuda only): `x` made by `pin_memory()` once, then `x.to('cuda', non_blocking=True)` "
                  "and a synchronize; `y.to('cpu', non_blocking=True)`, into new page-locked memory, and "
                  "a synchronize. Page-locked memory is what the GPU's copy engine reads and writes "
                  "directly (DMA); pageable memory the driver stages through its own page-locked buffer."
                  + (" Under the emulation both are ordinary memory and every copy a `memmove`: "
                     "those rows mean nothing." if devices.get("cuda", {}).get("software") else ""), ""]
        lines += markdown_table(["device", "direction", "per copy", "bandwidth"], rows) + [""]
    workloads = "; ".join(f"{name}, {what}" for name, (what, _, _) in SWEEPS.items())
    lines += [f"Where a device may overtake stage 3 ({workloads}): time per call, each call on a device "
              "ending with its `synchronize()` so that its work is counted; under each device's time, "
              "stage 3's time over it (above 1: the device is faster)."
              if columns else f"Stage 3 over the sweep of sizes ({workloads}): time per call.", ""]
    rows = []
    for r in report["sweep"]:
        _, label, _ = SWEEPS[r["workload"]]
        rows.append([r["workload"], label.format(r["size"]), _fmt(r["stage3_s"])]
                    + [f"{_fmt(r['seconds'][c])} ({r['stage3_s'] / r['seconds'][c]:.2g}x)" for c in columns])
    lines += _tables(["workload", "size", "stage 3"] + columns, rows, keep=3)
    if columns:
        rows = []
        for name, (_, label, _) in SWEEPS.items():
            largest = max(r["size"] for r in report["sweep"] if r["workload"] == name)
            rows.append([name] + [label.format(report["crossover"][c][name])
                                  if report["crossover"][c][name] is not None else
                                  f"none up to {label.format(largest)}" for c in columns])
        lines += ["", "The crossover: the smallest size at which each is faster than stage 3.", ""]
        lines += _tables(["workload"] + columns, rows, keep=1)
    return "\n".join(lines)


def _null_launch(null):
    """The lines on the cuda device's host cost (``null_launch.py``), or why it is missing."""
    if null is None:
        return []
    if not null["available"]:
        return [f"**No {NULL_LAUNCH} rows** ({null['reason']}).", ""]
    rows = [["`a + b`, 4 elements", _fmt(null["add_s"]), str(null["add_launches"]), str(null["add_syncs"])]]
    rows += [[f"MLP step, batch {m['batch']}", _fmt(m["seconds"]), str(m["launches"]), str(m["syncs"])]
             for m in null["mlp"]]
    rows += [[f"{m['model']} step, batch {m['batch']}", _fmt(m["seconds"]), str(m["launches"]), str(m["syncs"])]
             for m in null["zoo"]]
    return ([f"The cuda device's host cost ({NULL_LAUNCH}): stage 4's cuda path on the host emulation "
             "with every launch counted and none run, so what is timed is the host's own work per call "
             "(frontend, device layer, launcher), on any machine; and the launches and host "
             "synchronizations each call makes (a training step: forward, cross-entropy, backward and "
             "the optimizer's step, with no synchronize of its own).", ""]
            + markdown_table(["call", "host time per call", "launches", "syncs"], rows) + [""])


def write(report, out):
    """``devices.json`` and ``devices.md`` in the folder ``out``; their paths."""
    return write_tables(out, "devices", report, markdown(report))


def run(args):
    """Measure, write ``devices.json`` and ``devices.md`` to ``--out``, print the tables."""
    report = measure(quick=args.quick)
    publish(args.out, "devices", report, markdown(report))
    return report
