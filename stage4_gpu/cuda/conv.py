"""The CUDA driver's convolution (``kernels/conv.cu``): groups 1 as implicit GEMM, a ladder
of rungs (``RUNGS``), float32 and float64 on the CUDA cores, float16 and bfloat16 on the
tensor cores; depthwise (groups == C) as direct kernels. The shared layer
(``gpu/conv.py``) lays out the parameters ``p`` (conv.cu's first 16: [N, C, H, W, O, OH,
OW, KH, KW, SH, SW, PH, PW, DH, DW, has_bias]) and makes every operand contiguous; the
split of the depth (conv.cu's last three words) is chosen here.

The device runs ``RUNG``: ``STAGEGRAD_CUDA_CONV`` names another for a whole program.
``forward``, ``input_grad`` and ``weight_grad`` take device addresses or CuPy arrays and a
rung, so ``stagegrad cuda-ladder`` times each rung on the same operands."""
import os

from .reduce import splits
from .runtime import BLOCK, runtime

# conv.cu's Rung, in order: each adds one idea to the one before (see conv.cu's Design)
RUNGS = ("direct", "implicit", "offsets", "pipelined", "split_k")
RUNG = os.environ.get("STAGEGRAD_CUDA_CONV", "split_k")
GEMM_THREADS, TILE, DEPTH = 128, 64, 16  # conv.cu's CV_THREADS, CV_TILE, CV_K (DW_THREADS is BLOCK)
SPLIT_DEPTH = 256  # the least depth one part of a split K takes: 16 k-tiles
DTYPES = ("float32", "float64", "float16", "bfloat16")
_CTYPES = ("float", "double", "half_t", "bf16_t")
_ACC = {"float": "float32", "double": "float64", "half_t": "float32", "bf16_t": "float32"}  # conv.cu's acc_t
_KERNELS = ("conv2d_forward", "conv2d_input_grad", "conv2d_weight_grad")
_DEPTHWISE = ("depthwise_forward", "depthwise_input_grad", "depthwise_weight_grad")


def _checked(rung):
    if rung not in RUNGS:
        raise ValueError(f"cuda: the convolution rung (STAGEGRAD_CUDA_CONV) is one of {RUNGS}, not {rung!r}")
    return rung


def _product(kernel, ctype, rung, p, rows, cols, depth, args):
    """One pass as the product of ``rows`` by ``cols`` over ``depth``, on ``rung``: a thread
    per output (direct), a block per 64 x 64 tile, or, where split_k finds too few tiles to
    fill the GPU, a launch of the depth's parts into a workspace and one folding them."""
    rt = runtime()
    instance = f"{kernel}<{ctype}, {RUNGS.index(_checked(rung))}>"
    tiles = -(-rows // TILE) * -(-cols // TILE)
    parts = splits(tiles, depth, rt.resident_blocks, SPLIT_DEPTH) if rung == "split_k" else 1
    steps = -(-depth // DEPTH)
    part_depth = -(-steps // parts) * DEPTH
    parts = -(-depth // part_depth) if depth else 1  # none empty
    if rung == "direct":
        rt.launch(kernel, instance, rt.grid(rows * cols, GEMM_THREADS), GEMM_THREADS, [[*p, 1, depth, 0], *args, 0])
    elif parts == 1:
        rt.launch(kernel, instance, tiles, GEMM_THREADS, [[*p, 1, part_depth, 0], *args, 0])
    else:
        work = rt.allocator().allocate(parts * rows * cols, rt.np.dtype(_ACC[ctype]))
        rt.launch(kernel, instance, tiles * parts, GEMM_THREADS, [[*p, parts, part_depth, 0], *args, work.ptr])
        rt.launch(kernel, instance, rt.grid(rows * cols, GEMM_THREADS), GEMM_THREADS,
                  [[*p, parts, part_depth, 1], *args, work.ptr])


def forward(ctype, p, y, x, w, b, depthwise, rung=None):
    """y = x * w (+ b, where p[15]): M = N OH OW rows by O columns over C KH KW, or one
    thread per output (depthwise)."""
    n, c, _, _, o, oh, ow, kh, kw = p[:9]
    args = [y, x, w, w if b is None else b]  # the bias pointer is read only where p[15]
    if depthwise:
        runtime().launch("depthwise_forward", f"depthwise_forward<{ctype}>", -(-n * o * oh * ow // BLOCK), BLOCK,
                         [p, *args])
    else:
        _product("conv2d_forward", ctype, rung or RUNG, p, n * oh * ow, o, c * kh * kw, args)


def input_grad(ctype, p, gx, g, w, depthwise, rung=None):
    """The input's gradient: M = N H W rows by C columns over O KH KW, or one thread per
    input pixel (depthwise)."""
    n, c, h, wd, o, _, _, kh, kw = p[:9]
    if depthwise:
        runtime().launch("depthwise_input_grad", f"depthwise_input_grad<{ctype}>", -(-n * c * h * wd // BLOCK),
                         BLOCK, [p, gx, g, w])
    else:
        _product("conv2d_input_grad", ctype, rung or RUNG, p, n * h * wd, c, o * kh * kw, [gx, g, w])


def weight_grad(ctype, p, gw, g, x, depthwise, rung=None):
    """The filters' gradient: M = O rows by C KH KW columns over N OH OW; or one block per
    filter tap (depthwise)."""
    n, c, o, oh, ow, kh, kw = p[0], p[1], p[4], p[5], p[6], p[7], p[8]
    if depthwise:
        runtime().launch("depthwise_weight_grad", f"depthwise_weight_grad<{ctype}>", o * kh * kw, BLOCK,
                         [p, gw, g, x])
    else:
        _product("conv2d_weight_grad", ctype, rung or RUNG, p, o, c * kh * kw, n * oh * ow, [gw, g, x])


class ConvKernels:
    """The CUDA driver's convolution hooks (see ``gpu.driver.Driver``)."""

    def conv2d(self, y, x, w, b, p, groups):
        """conv.cu's forward."""
        forward(x.ctype, p, y.address, x.address, w.address, None if b is None else b.address, groups != 1)

    def conv2d_input_grad(self, gx, g, w, p, groups):
        """conv.cu's input gradient."""
        input_grad(g.ctype, p, gx.address, g.address, w.address, groups != 1)

    def conv2d_weight_grad(self, gw, g, x, p, groups):
        """conv.cu's weight gradient."""
        weight_grad(x.ctype, p, gw.address, g.address, x.address, groups != 1)


def instances():
    """Every convolution kernel, in each float dtype (and each rung)."""
    return ([(k, f"{k}<{t}, {r}>") for k in _KERNELS for t in _CTYPES for r in range(len(RUNGS))]
            + [(k, f"{k}<{t}>") for k in _DEPTHWISE for t in _CTYPES])
