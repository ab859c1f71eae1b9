"""2-D convolution on a device, with the signatures of stage 3's (``stage3_simd/backend.py``):
NCHW, groups 1 or depthwise (groups == C), a window (kh, kw, sh, sw, ph, pw, dh, dw) and an
output size (oh, ow). Offered where the driver names ``conv2d`` in its ``fused_dtypes``
(``fused.takes``): the cuda driver's implicit-GEMM kernels (``cuda/kernels/conv.cu``). The
operands are made whole (contiguous, ``fused.whole``); the bias's gradient is a sum of the
output's over the batch and the pixels."""
from .fused import whole
from .reduce import reduce


def _params(x_shape, o, window, out, has_bias):
    """conv.cu's parameters: [N, C, H, W, O, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, has_bias]."""
    return [*x_shape, o, *out, *window, int(has_bias)]


def conv2d(x, w, b, window, out, groups):
    """The convolution of x (N, C, H, W) by w (O, C/groups, kh, kw) (+ b)."""
    x, w = whole(x), whole(w)
    b = None if b is None else whole(b)
    o = w.shape[0]
    y = type(x).empty((x.shape[0], o, *out), x.dtype)
    if y.numel:
        x.driver.conv2d(y, x, w, b, _params(x.shape, o, window, out, b is not None), groups)
    return y


def conv2d_backward(g, x, w, window, groups, need_x, need_w, need_b):
    """(grad x, grad w, grad b) of ``conv2d``, each None unless asked for."""
    g, x, w = whole(g), whole(x), whole(w)
    params = _params(x.shape, w.shape[0], window, g.shape[2:], False)
    gx = gw = gb = None
    if need_x:
        gx = type(x).empty(x.shape, x.dtype)
        if gx.numel:
            x.driver.conv2d_input_grad(gx, g, w, params, groups)
    if need_w:
        gw = type(w).empty(w.shape, w.dtype)
        if gw.numel:  # an empty batch still writes the zeros of an empty sum
            x.driver.conv2d_weight_grad(gw, g, x, params, groups)
    if need_b:
        gb = reduce("sum", g, {0, 2, 3}, False)
    return gx, gw, gb
