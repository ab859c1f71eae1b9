"""The CUDA driver's convolution (``kernels/conv.cu``): groups 1 as implicit GEMM, one block
of GEMM_THREADS per 64 x 64 tile of the product (float32 and float64 on the CUDA cores,
float16 and bfloat16 on the tensor cores), depthwise (groups == C) as direct kernels. The
shared layer (``gpu/conv.py``) lays out the parameters ``p`` (conv.cu's: [N, C, H, W, O,
OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, has_bias]) and makes every operand contiguous.
``forward``, ``input_grad`` and ``weight_grad`` take device addresses or CuPy arrays, so
``stagegrad cuda-ladder`` times the same launches."""
from .runtime import BLOCK, runtime

GEMM_THREADS, TILE = 128, 64  # conv.cu's CV_THREADS and CV_TILE (DW_THREADS is BLOCK)
DTYPES = ("float32", "float64", "float16", "bfloat16")
_CTYPES = ("float", "double", "half_t", "bf16_t")
_KERNELS = ("conv2d_forward", "conv2d_input_grad", "conv2d_weight_grad",
            "depthwise_forward", "depthwise_input_grad", "depthwise_weight_grad")


def _tiles(rows, cols):
    return -(-rows // TILE) * -(-cols // TILE)


def forward(ctype, p, y, x, w, b, depthwise):
    """y = x * w (+ b, where p[15]): M = N OH OW rows by O columns, or one thread per output."""
    n, _, _, _, o, oh, ow = p[:7]
    args = [p, y, x, w, w if b is None else b]  # the bias pointer is read only where p[15]
    if depthwise:
        runtime().launch("depthwise_forward", f"depthwise_forward<{ctype}>", -(-n * o * oh * ow // BLOCK), BLOCK,
                         args)
    else:
        runtime().launch("conv2d_forward", f"conv2d_forward<{ctype}>", _tiles(n * oh * ow, o), GEMM_THREADS, args)


def input_grad(ctype, p, gx, g, w, depthwise):
    """The input's gradient: M = N H W rows by C columns, or one thread per input pixel."""
    n, c, h, wd = p[:4]
    if depthwise:
        runtime().launch("depthwise_input_grad", f"depthwise_input_grad<{ctype}>", -(-n * c * h * wd // BLOCK),
                         BLOCK, [p, gx, g, w])
    else:
        runtime().launch("conv2d_input_grad", f"conv2d_input_grad<{ctype}>", _tiles(n * h * wd, c), GEMM_THREADS,
                         [p, gx, g, w])


def weight_grad(ctype, p, gw, g, x, depthwise):
    """The filters' gradient: M = O rows by C KH KW columns, each tile's block reducing over
    the batch and the pixels; or one block per filter tap (depthwise)."""
    c, o, kh, kw = p[1], p[4], p[7], p[8]
    if depthwise:
        runtime().launch("depthwise_weight_grad", f"depthwise_weight_grad<{ctype}>", o * kh * kw, BLOCK,
                         [p, gw, g, x])
    else:
        runtime().launch("conv2d_weight_grad", f"conv2d_weight_grad<{ctype}>", _tiles(o, c * kh * kw), GEMM_THREADS,
                         [p, gw, g, x])


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
    """Every convolution kernel, in each float dtype."""
    return [(k, f"{k}<{t}>") for k in _KERNELS for t in _CTYPES]
