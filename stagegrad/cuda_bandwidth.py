"""``stagegrad cuda-bandwidth``: stage 4's bandwidth-bound kernels on an NVIDIA GPU against
the memory's roof.

A kernel that does a few operations per element it moves (an addition, a sum, a softmax,
a layer norm, an optimizer step) is as fast as the memory lets it move its bytes. The roof
is measured first: the driver's own device-to-device copy (cudaMemcpy), read plus write.
Then each kernel, one row per version where a kernel has two (the one-run branch against
the general strided loop of the same kernel, a split reduction against one block per
output), is checked against stage 3 on the host (the CPU device) and timed with CUDA
events: ``repeats`` calls queued between two events, so that the host's cost of a launch
hides behind the GPU's work, best of three. Each row reports the bytes the operation must
move at least (every input read once, every output written once), GB/s from them, and the
share of the roof; a row that disagrees with the CPU is reported as wrong and not timed.

Without CuPy or a GPU nothing is measured: the report says why. Writes
``cuda_bandwidth.json`` and ``cuda_bandwidth.md`` to the output folder.
"""
import math

from .cuda_report import gpu_named, open_report
from .formatting import markdown_table, publish
from .measure import calls_lasting, cuda_event_clock, seconds_per_call

SIZE = 1 << 24  # 16M elements: the size the memory-roof target is stated at
TOLERANCE = 1e-5  # max |got - want| / max(max |want|, 1): rounding sits far below, a wrong index far above
ROW = 4096  # the row kernels' row length (softmax, layer norm, cross-entropy)


def add_arguments(p):
    p.add_argument("--size", type=int, default=SIZE, help=f"elements per tensor (default {SIZE}, 16M)")
    p.add_argument("--out", default="out/cuda-bandwidth", help="output folder (default out/cuda-bandwidth)")


def _timed(call, stream, target=2e-3):
    """Seconds per call: ``call`` repeated between two CUDA events on ``stream`` (enough
    times for about ``target`` seconds of GPU work, at most 200), best of three."""
    clock = cuda_event_clock(stream)
    repeats = calls_lasting(call, target, warmup=0, clock=clock, most=200)
    return seconds_per_call(call, 3, "best", number=repeats, warmup=0, clock=clock)


def _error(got, want):
    """max |got - want| relative to the larger of max |want| and 1."""
    import numpy as np
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1.0)) if want.size else 0.0


def _cases(sg, n):
    """(kernel, version, bytes moved at least, the call on the device, a function giving the
    device's result and the CPU's) for each row."""
    import numpy as np

    from stage4_gpu.cuda import reduce as cuda_reduce
    from stage4_gpu.cuda.runtime import BLOCK, runtime
    from stage4_gpu.gpu import fused
    rt = runtime()
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(4)]
    a, b, m, v = (sg.from_numpy(h) for h in host)
    da, db, dm, dv = (t.to("cuda") for t in (a, b, m, v))
    raw = [t._data for t in (da, db, dm, dv)]
    out = sg.empty(n, device="cuda")
    rows, cols = max(n // ROW, 1), min(n, ROW)
    f4 = 4  # bytes per float32
    cases = []
    # elementwise: the one-run branch (what a + b takes), then the same kernel's general loop,
    # made to take it by a two-dimensional layout of the same contiguous operands
    cases.append(("add", "one run, 16-byte packs", 3 * n * f4, lambda: da + db,
                  lambda: ((da + db).cpu().numpy(), (a + b).numpy())))
    inner = math.gcd(n, ROW)  # rows of it: the same elements in two dimensions
    general = [n, 2, n // inner, inner] + [0, inner, 1] * 3
    ptrs = [out._data.storage.ptr, raw[0].storage.ptr, raw[1].storage.ptr]
    grid = rt.grid(n)

    def add_general():
        rt.launch("binary", "binary<float, float, Add>", grid, BLOCK, [general] + ptrs)
    cases.append(("add", "general strided loop", 3 * n * f4, add_general,
                  lambda: (add_general(), (out.cpu().numpy(), (a + b).numpy()))[1]))
    cases.append(("mul by a scalar", "one run, 16-byte packs", 2 * n * f4, lambda: da * 0.5,
                  lambda: ((da * 0.5).cpu().numpy(), (a * 0.5).numpy())))
    cases.append(("copy", "one run, 16-byte packs", 2 * n * f4, lambda: da.clone(),
                  lambda: (da.clone().cpu().numpy(), a.numpy())))
    # a whole tensor's sum: split over the SMs, then one block for the whole run
    cases.append(("sum", "split over the SMs", n * f4, lambda: da.sum(),
                  lambda: (da.sum().cpu().numpy(), a.double().sum().numpy())))
    one = sg.empty((), device="cuda")

    def sum_one_block():
        rt.launch("reduce", "reduce<float, double, float, Sum>", 1, cuda_reduce._THREADS,
                  [[1, n, 0, 1, 0, n, 1, 1], one._data.storage.ptr, raw[0].storage.ptr])
    cases.append(("sum", "one block per output", n * f4, sum_one_block,
                  lambda: (sum_one_block(), (one.cpu().numpy(), a.double().sum().numpy()))[1]))
    # the row kernels over (rows, ROW): n's first rows * ROW elements
    x2, dx2 = a[:rows * cols].reshape(rows, cols), da[:rows * cols].reshape(rows, cols)
    n2 = rows * cols
    cases.append(("softmax", f"rows of {cols}", 2 * n2 * f4, lambda: fused.softmax(dx2._data, 1),
                  lambda: (sg.Tensor._make(fused.softmax(dx2._data, 1)).cpu().numpy(),
                           sg.softmax(x2, 1).numpy())))
    w, bias = sg.ones(cols), sg.zeros(cols)
    dw, dbias = w.to("cuda"), bias.to("cuda")
    cases.append(("layer norm", f"rows of {cols}", 2 * n2 * f4,
                  lambda: fused.layer_norm(dx2._data, cols, dw._data, dbias._data, 1e-5),
                  lambda: (sg.Tensor._make(fused.layer_norm(dx2._data, cols, dw._data, dbias._data,
                                                            1e-5)[0]).cpu().numpy(),
                           sg.nn.functional.layer_norm(x2, (cols,), w, bias, 1e-5).numpy())))
    target = sg.from_numpy(rng.integers(0, cols, rows))
    dtarget = target.to("cuda")
    cases.append(("cross-entropy", f"rows of {cols}", 2 * n2 * f4,
                  lambda: fused.cross_entropy(dx2._data, dtarget._data, None, -100, 0.0),
                  lambda: (sg.Tensor._make(fused.cross_entropy(dx2._data, dtarget._data, None, -100,
                                                               0.0)[0]).cpu().numpy(),
                           sg.nn.functional.cross_entropy(x2, target, reduction="none").numpy())))
    # AdamW's first step: parameter, gradient and both moments read, the three written (on
    # copies, so that the check starts from the operands the NumPy formula is given)
    lr, (beta1, beta2), eps, decay = 1e-3, (0.9, 0.999), 1e-8, 0.01

    def adam(bufs):
        fused.adam_step(*([t._data] for t in bufs), None, [1], lr, (beta1, beta2), eps, decay, True, False)

    def adam_check():
        bufs = [t.clone() for t in (da, db, dm, dv.abs())]
        adam(bufs)
        p, g, m1, v1 = (h.astype(np.float64) for h in (host[0], host[1], host[2], np.abs(host[3])))
        m1 = beta1 * m1 + (1 - beta1) * g
        v1 = beta2 * v1 + (1 - beta2) * g * g
        want = p * (1 - lr * decay) - lr / (1 - beta1) * m1 / (np.sqrt(v1) / math.sqrt(1 - beta2) + eps)
        return bufs[0].cpu().numpy(), want
    state = [t.clone() for t in (da, db, dm, dv.abs())]
    cases.append(("Adam step", "one launch for the group", 7 * n * f4, lambda: adam(state), adam_check))
    return cases


def measure(n=SIZE, stream=None):
    """The roof, then every case: a JSON-ready dict."""
    from .progress import Progress
    sg, report, rt = open_report(size=n)
    if rt is None:
        return report
    import cupy
    src = cupy.empty(n, dtype=cupy.float32)
    dst = cupy.empty(n, dtype=cupy.float32)
    roof_seconds = _timed(lambda: dst.data.copy_from_device_async(src.data, 4 * n, rt.stream), rt.stream)
    roof = 2 * 4 * n / roof_seconds / 1e9
    report["roof_gbs"] = roof
    report["rows"].append({"kernel": "device copy (cudaMemcpy)", "version": "the roof", "bytes": 8 * n,
                           "error": 0.0, "seconds": roof_seconds, "gbs": roof, "of_roof": 1.0})
    cases = _cases(sg, n)
    bar = Progress(len(cases), "cuda-bandwidth", stream=stream)
    for k, (kernel, version, nbytes, call, check) in enumerate(cases):
        error = _error(*check())
        row = {"kernel": kernel, "version": version, "bytes": nbytes, "error": error, "seconds": None,
               "gbs": None, "of_roof": None}
        if error <= TOLERANCE:
            row["seconds"] = _timed(call, rt.stream)
            row["gbs"] = nbytes / row["seconds"] / 1e9
            row["of_roof"] = row["gbs"] / roof
        report["rows"].append(row)
        bar.update(k + 1, now=f"{kernel} ({version})")
    return report


def markdown(report):
    if not report["available"]:
        return f"CUDA bandwidth-bound kernels: not measured: {report['reason']}"
    lines = [f"Stage 4's bandwidth-bound kernels on {gpu_named(report)}, {report['created']}, "
             f"{report['size']:,} float32 elements per tensor: GB/s from the bytes each must move at least, "
             f"and the share of the device copy's {report['roof_gbs']:.0f} GB/s (the roof). Each checked "
             f"against stage 3 on the host first (max error / max |want|, at most {TOLERANCE:g}).", ""]
    head = ["kernel", "version", "MB moved", "time", "GB/s", "of the roof", "error"]
    body = []
    for r in report["rows"]:
        ok = r["seconds"] is not None
        body.append([r["kernel"], r["version"], f"{r['bytes'] / 1e6:.3g}",
                     f"{r['seconds'] * 1e6:.4g} µs" if ok else "WRONG", f"{r['gbs']:.0f}" if ok else "—",
                     f"{r['of_roof']:.0%}" if ok else "—", f"{r['error']:.1e}"])
    lines += markdown_table(head, body)
    return "\n".join(lines)


def run(args):
    if args.size < 1:
        raise ValueError("--size must be positive")
    report = measure(args.size)
    publish(args.out, "cuda_bandwidth", report, markdown(report))
    return report
