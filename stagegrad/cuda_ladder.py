"""``stagegrad cuda-ladder``: stage 4's SGEMM ladder and its float16/bfloat16 tensor-core
ladder on an NVIDIA GPU, next to cuBLAS and PyTorch CUDA.

Each tier is the one before plus one idea (``stage4_gpu/cuda/kernels/sgemm_ladder.cu``):
naive, coalesced, shared-memory tiling, 1-D and 2-D register blocking, float4 loads,
warp tiling, double buffering, a swizzled (bank-conflict-free) A tile, autotuned tile
sizes; then the tensor-core tiers (``hgemm.cu``, ``hgemm_ladder.cu``): mma.sync with
element loads, ldmatrix, a cp.async 3-stage pipeline, 64 x 64 warp tiles, each in float16
and bfloat16 against cuBLAS's float16. For every square size (1024 to 8192 by default) each tier's product is first
checked against cuBLAS's (CuPy's matmul, the same operands): a tier that disagrees is
reported as wrong and its time is not shown. Then each is timed with CUDA events on the
device's stream, best of up to five calls within the budget, as GFLOP/s and as a
fraction of cuBLAS's. PyTorch CUDA joins when it is installed and sees the GPU; with it,
the convolution kernels are checked and timed beside cuDNN (``cuda_conv_ladder.py``).

Without CuPy or a GPU nothing is measured: the report says why. Writes
``cuda_ladder.json`` and ``cuda_ladder.md`` to the output folder.
"""
from . import cuda_conv_ladder
from .cuda_report import gpu_named, open_report
from .formatting import markdown_table, publish
from .measure import cuda_event_clock, seconds_per_call

SIZES = (1024, 2048, 4096, 8192)
QUICK = (1024, 2048)
TOLERANCE = 1e-4  # max |C - C_cublas| / max |C_cublas|: rounding is far below, a wrong index far above
TOLERANCE_HALF = 1e-2  # the same for the 2-byte floats, whose result rounds at 2**-9 of |C| at most


def add_arguments(p):
    p.add_argument("--sizes", default=None, help="comma-separated square sizes (default 1024,2048,4096,8192)")
    p.add_argument("--quick", action="store_true", help="sizes 1024 and 2048 only (and --conv quick)")
    p.add_argument("--conv", choices=("full", "quick", "none"), default=None,
                   help="the convolutions: ResNet-18's seven shapes (full, the default), two (quick) or none")
    p.add_argument("--budget", type=float, default=3.0, help="seconds per measurement at most (default 3)")
    p.add_argument("--out", default="out/cuda-ladder", help="output folder (default out/cuda-ladder)")


def _torch_cuda():
    """PyTorch, when it is installed and sees a GPU; else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _best(call, stream, budget):
    """Best time in seconds of up to five calls, as many as fit in ``budget`` (at least one),
    with no warm-up: ``measure``'s best of samples, on another clock. Each call is timed by
    CUDA events on ``stream`` rather than by the wall clock, because a launch returns as soon
    as the kernel is queued: the wall clock would time the host, the events time the GPU."""
    return seconds_per_call(call, 5, "best", warmup=0, budget=budget, clock=cuda_event_clock(stream))


def _runnable(ladder):
    """The tensor-core tiers this GPU runs (wgmma: sm_90 only; see ``ladder.refusal``)."""
    return [tier for tier in ladder.TENSOR_TIERS if ladder.refusal(tier) is None]


def _two_byte_rows(ladder, rt, torch, a, b, n, budget):
    """float16 and bfloat16 at size ``n``: cuBLAS (float16 only: CuPy has no bfloat16), each
    of our tensor-core tiers and PyTorch CUDA, each checked against a float32 product of the
    rounded operands (the output's own rounding, 2**-9 of |C| at most, sits far below)."""
    import cupy

    from stage4_gpu.cuda.memory import bfloat16_bits
    out = []
    for dtype in ("float16", "bfloat16"):
        if dtype == "float16":
            a2, b2 = a.astype(cupy.float16), b.astype(cupy.float16)
            widen = lambda x: x.astype(cupy.float32)  # noqa: E731
        else:  # bfloat16 as its bits
            a2, b2 = bfloat16_bits(cupy, a).reshape(a.shape), bfloat16_bits(cupy, b).reshape(b.shape)
            widen = lambda x: (x.astype(cupy.uint32) << 16).view(cupy.float32)  # noqa: E731
        wide = (widen(a2), widen(b2))
        ref = ladder.cublas(*wide)
        scale = float(cupy.abs(ref).max())
        c2 = cupy.empty((1, n, n), dtype=a2.dtype)

        def row(label, call, result):  # result: the product as a float32 array
            call()
            error = float(cupy.abs(result().reshape(n, n) - ref).max()) / scale
            seconds = _best(call, rt.stream, budget) if error <= TOLERANCE_HALF else None
            return {"size": n, "label": label, "dtype": dtype, "error": error, "seconds": seconds,
                    "kind": "tier" if label.startswith("tensor cores") else "peer"}

        if dtype == "float16":
            out.append(row("cuBLAS (CuPy)", lambda: cupy.matmul(a2, b2, out=c2[0]), lambda: widen(c2)))
        ctype = "half_t" if dtype == "float16" else "bf16_t"
        for tier in _runnable(ladder):
            out.append(row(f"tensor cores: {tier}",
                           lambda t=tier: ladder.tensor_core(t, a2[None], b2[None], c2, ctype),
                           lambda: widen(c2)))
        if torch is not None:
            ta, tb = (torch.as_tensor(x, device="cuda").to(getattr(torch, dtype)) for x in wide)
            got = {}
            with torch.cuda.stream(torch.cuda.ExternalStream(rt.stream.ptr)):
                out.append(row("PyTorch CUDA", lambda: got.__setitem__("c", ta @ tb),
                               lambda: cupy.asarray(got["c"].float())))
    return out


def measure(sizes=SIZES, budget=3.0, stream=None, conv_shapes=cuda_conv_ladder.SHAPES):
    """Every tier at every size, cuBLAS and PyTorch CUDA, and the convolutions at
    ``conv_shapes``: a JSON-ready dict."""
    from .progress import Progress
    sg, report, rt = open_report(sizes=list(sizes))
    if rt is None:
        return report
    import cupy
    ladder = __import__(sg.__name__ + ".cuda.ladder", fromlist=["ladder"])
    torch = _torch_cuda()
    report["torch"] = torch.__version__ if torch is not None else None
    # the tiers this GPU cannot run, each with why
    report["skipped"] = {t: ladder.refusal(t) for t in ladder.TENSOR_TIERS if ladder.refusal(t) is not None}
    two_byte = 1 + 2 * len(_runnable(ladder)) + 2 * (torch is not None)  # the rows _two_byte_rows makes
    bar = Progress(len(sizes) * (len(ladder.TIERS) + 1 + (torch is not None) + two_byte), "cuda-ladder",
                   stream=stream)
    done = 0
    for n in sizes:
        rng = cupy.random.default_rng(n)
        a = rng.standard_normal((n, n), dtype=cupy.float32)
        b = rng.standard_normal((n, n), dtype=cupy.float32)
        flops = 2.0 * n ** 3
        ref = ladder.cublas(a, b)
        scale = float(cupy.abs(ref).max())
        out = cupy.empty_like(ref)
        rows = [{"size": n, "label": "cuBLAS (CuPy)", "dtype": "float32", "kind": "peer", "error": 0.0,
                 "seconds": _best(lambda: cupy.matmul(a, b, out=out), rt.stream, budget)}]
        done += 1
        bar.update(done, now=f"cuBLAS {n}")
        for tier in ladder.TIERS:
            row = {"size": n, "label": tier, "dtype": "float32", "kind": "tier", "error": None,
                   "seconds": None}
            if ladder.fits(tier, n, n, n, a, b, out):  # the float4 tiers need n a multiple of 4
                ladder.sgemm(tier, a, b, out)
                row["error"] = float(cupy.abs(out - ref).max()) / scale
                if row["error"] <= TOLERANCE:
                    row["seconds"] = _best(lambda t=tier: ladder.sgemm(t, a, b, out), rt.stream, budget)
                if tier == "autotuned":  # the configuration its first call chose for this size
                    c = ladder.chosen(n, n, n, lambda c: ladder.sgemm(tier, a, b, out, c))
                    row["label"] += f" {c.bm}x{c.bn}x{c.bk} warp {c.wm}x{c.wn} thread {c.tm}x{c.tn}"
            rows.append(row)
            done += 1
            bar.update(done, now=f"{tier} {n}")
        if torch is not None:
            ta = torch.as_tensor(a, device="cuda")
            tb = torch.as_tensor(b, device="cuda")
            ts = torch.cuda.ExternalStream(rt.stream.ptr)
            with torch.cuda.stream(ts):
                tref = torch.as_tensor(ref, device="cuda")
                error = float((ta @ tb - tref).abs().max()) / scale
                rows.append({"size": n, "label": "PyTorch CUDA", "dtype": "float32", "kind": "peer",
                             "error": error,
                             "seconds": _best(lambda: ta @ tb, rt.stream, budget)})
            done += 1
            bar.update(done, now=f"PyTorch {n}")
        rows += _two_byte_rows(ladder, rt, torch, a, b, n, budget)
        done += two_byte
        bar.update(done, now=f"tensor cores {n}")
        for dtype in ("float32", "float16"):  # each row against cuBLAS in its own dtype
            peer = next(r["seconds"] for r in rows if r["label"] == "cuBLAS (CuPy)" and r["dtype"] == dtype)
            for r in rows:
                if (r["dtype"] == "float32") == (dtype == "float32"):
                    r["gflops"] = flops / r["seconds"] / 1e9 if r["seconds"] else None
                    r["of_cublas"] = peer / r["seconds"] if r["seconds"] else None
        report["rows"] += rows
    if torch is None:
        report["conv_reason"] = "PyTorch CUDA is missing: the convolutions are checked and timed against it"
    elif conv_shapes:
        report["conv"] = cuda_conv_ladder.measure(sg, rt, torch, _best, budget, conv_shapes)
    return report


def markdown(report):
    if not report["available"]:
        return f"CUDA SGEMM ladder: not measured: {report['reason']}"
    lines = [f"CUDA GEMM ladder on {gpu_named(report)}, {report['created']}: the float32 tiers "
             f"checked against cuBLAS (max error / max |C|, at most {TOLERANCE:g}); the 2-byte floats "
             f"against a float32 product of the rounded operands (at most {TOLERANCE_HALF:g}), "
             f"their speed against cuBLAS's float16.", ""]
    head = ["size", "dtype", "kernel", "time", "GFLOP/s", "of cuBLAS", "error"]
    body = []
    for r in report["rows"]:
        ok = r["seconds"] is not None
        time_cell = f"{r['seconds'] * 1e3:.3g} ms" if ok else ("n/a" if r["error"] is None else "WRONG")
        body.append([str(r["size"]), r.get("dtype", "float32"), r["label"], time_cell,
                     f"{r['gflops']:.4g}" if ok else "—",
                     f"{r['of_cublas']:.0%}" if ok else "—",
                     "—" if r["error"] is None else f"{r['error']:.1e}"])
    lines += markdown_table(head, body)
    lines += [f"Not run: tensor cores: {tier}: {why}" for tier, why in report.get("skipped", {}).items()]
    if report.get("conv"):
        lines += ["", cuda_conv_ladder.markdown(report["conv"])]
    elif report.get("conv_reason"):
        lines += ["", f"Convolution: not measured: {report['conv_reason']}"]
    return "\n".join(lines)


def run(args):
    if args.budget <= 0:
        raise ValueError("--budget must be positive")
    sizes = QUICK if args.quick else SIZES
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
        if any(s < 1 for s in sizes):
            raise ValueError("--sizes must be positive")
    conv = args.conv or ("quick" if args.quick else "full")
    shapes = {"full": cuda_conv_ladder.SHAPES, "quick": cuda_conv_ladder.QUICK, "none": ()}[conv]
    report = measure(sizes, args.budget, conv_shapes=shapes)
    publish(args.out, "cuda_ladder", report, markdown(report))
    return report
