"""The convolution rows of ``stagegrad cuda-ladder``: each rung of stage 4's implicit-GEMM
ladder (``stage4_gpu/cuda/kernels/conv.cu``, ``conv.RUNGS``) beside PyTorch's cuDNN on
ResNet-18's layer shapes, in float32 (CUDA cores) and float16 (tensor cores), each pass
(forward, input gradient, weight gradient) timed on the same operands.

Every pass is first checked against PyTorch's float32 result on the same (rounded)
operands: max |ours - theirs| / max |theirs| at most TOLERANCE for its dtype, else the row
says WRONG and is not timed. TF32 is switched off in cuDNN while this runs, so that its
float32 is float32 (PyTorch's default lets cuDNN's convolutions round to TF32).
"""
import importlib

from .formatting import markdown_table

# (N, C, H, W, O, kernel, stride, padding): ResNet-18's convolutions at batch 32
SHAPES = (
    (32, 3, 224, 224, 64, 7, 2, 3),
    (32, 64, 56, 56, 64, 3, 1, 1),
    (32, 64, 56, 56, 128, 3, 2, 1),
    (32, 64, 56, 56, 128, 1, 2, 0),
    (32, 128, 28, 28, 128, 3, 1, 1),
    (32, 256, 14, 14, 256, 3, 1, 1),
    (32, 512, 7, 7, 512, 3, 1, 1),
)
QUICK = SHAPES[1:3]
TOLERANCE = {"float32": 1e-4, "float16": 1e-2}  # rounding far below, a wrong index far above
_CTYPE = {"float32": "float", "float16": "half_t"}


def shape_label(shape):
    """``N x C x H x W -> O, k x k /s pad p``."""
    n, c, h, w, o, k, s, p = shape
    return f"{n}x{c}x{h}x{w} -> {o}, {k}x{k} /{s} pad {p}"


def _passes(conv, torch, shape, dtype, cupy):
    """(pass, our call of a rung, our result, PyTorch's call, PyTorch's float32 reference)
    for each pass."""
    n, c, h, w, o, k, s, p = shape
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    params = [n, c, h, w, o, oh, ow, k, k, s, s, p, p, 1, 1, 1]
    rng = cupy.random.default_rng(0)
    x, wt, b, g = (rng.standard_normal(size, dtype=cupy.float32).astype(dtype)
                   for size in ((n, c, h, w), (o, c, k, k), (o,), (n, o, oh, ow)))
    tx, tw, tb, tg = (torch.as_tensor(a, device="cuda") for a in (x, wt, b, g))
    fx, fw, fb, fg = (t.float() for t in (tx, tw, tb, tg))
    F, grad = torch.nn.functional, torch.nn.grad
    y, gx, gw = cupy.empty((n, o, oh, ow), dtype), cupy.empty_like(x), cupy.empty_like(wt)
    ctype = _CTYPE[dtype]
    return [
        ("forward", lambda rung: conv.forward(ctype, params, y, x, wt, b, False, rung), y,
         lambda: F.conv2d(tx, tw, tb, s, p), lambda: F.conv2d(fx, fw, fb, s, p)),
        ("input grad", lambda rung: conv.input_grad(ctype, params, gx, g, wt, False, rung), gx,
         lambda: grad.conv2d_input(tx.shape, tw, tg, s, p), lambda: grad.conv2d_input(fx.shape, fw, fg, s, p)),
        ("weight grad", lambda rung: conv.weight_grad(ctype, params, gw, g, x, False, rung), gw,
         lambda: grad.conv2d_weight(tx, tw.shape, tg, s, p), lambda: grad.conv2d_weight(fx, fw.shape, fg, s, p)),
    ]


def measure(sg, rt, torch, best, budget, shapes=SHAPES):
    """Every shape, dtype and pass: a row for each rung and one for cuDNN, as dicts.
    ``best(call, stream, budget)`` times a call (cuda_ladder's CUDA events)."""
    import cupy
    conv = importlib.import_module(sg.__name__ + ".cuda.conv")
    rows = []
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.cuda.stream(torch.cuda.ExternalStream(rt.stream.ptr)):
            for shape in shapes:
                n, c, h, w, o, k, s, p = shape
                oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
                flops = 2.0 * n * o * oh * ow * c * k * k  # each pass makes as many products
                for dtype in ("float32", "float16"):
                    for name, ours, result, theirs, reference in _passes(conv, torch, shape, dtype, cupy):
                        ref = cupy.asarray(reference().contiguous())
                        scale = float(cupy.abs(ref).max()) or 1.0
                        cudnn = {}
                        kernels = [(rung, lambda rung=rung: ours(rung), lambda: result) for rung in conv.RUNGS]
                        kernels.append(("cuDNN (PyTorch)", lambda: cudnn.__setitem__("r", theirs()),
                                        lambda: cupy.asarray(cudnn["r"].contiguous())))
                        cell = []
                        for label, call, got in kernels:
                            result.fill(float("nan"))  # a rung that writes nothing is WRONG, not the last one's
                            call()
                            error = float(cupy.abs(got().astype(cupy.float32) - ref).max()) / scale
                            seconds = best(call, rt.stream, budget) if error <= TOLERANCE[dtype] else None
                            cell.append({"shape": shape_label(shape), "dtype": dtype, "pass": name, "label": label,
                                         "error": error, "seconds": seconds,
                                         "gflops": flops / seconds / 1e9 if seconds else None})
                        peer = cell[-1]
                        for r in cell:
                            r["of_cudnn"] = (peer["seconds"] / r["seconds"]
                                             if r["seconds"] and peer["seconds"] else None)
                        rows += cell
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    return rows


def markdown(rows):
    """The convolution table."""
    lines = ["Convolution, each rung of the implicit-GEMM ladder (`conv.cu`) beside cuDNN: each pass checked "
             "against PyTorch's "
             f"float32 result first (max error / max |result|, at most {TOLERANCE['float32']:g} in float32, "
             f"{TOLERANCE['float16']:g} in float16), TF32 off.", ""]
    head = ["shape", "dtype", "pass", "rung", "time", "GFLOP/s", "of cuDNN", "error"]
    body = []
    for r in rows:
        ok = r["seconds"] is not None
        body.append([r["shape"], r["dtype"], r["pass"], r["label"],
                     f"{r['seconds'] * 1e3:.3g} ms" if ok else "WRONG",
                     f"{r['gflops']:.4g}" if ok else "—",
                     f"{r['of_cudnn']:.0%}" if r.get("of_cudnn") else "—", f"{r['error']:.1e}"])
    lines += markdown_table(head, body)
    return "\n".join(lines)
