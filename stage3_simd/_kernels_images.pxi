# Bindings of the image kernels (csrc/conv.hpp, pool.hpp, batch_norm.hpp), included by
# _kernels.pyx. Every operand is a contiguous NCHW buffer of one float dtype (the backend
# makes them so); the frontend has checked the geometry, so nothing here can index outside
# a buffer. A window is (kh, kw, sh, sw, ph, pw, dh, dw); an output size (oh, ow).


# the convolution algorithm (sg3_conv_algorithm): 0 the per-shape rule, 1 the implicit GEMM,
# 2 Winograd, 3 the direct convolution, 4 channels last by taps, each where it applies
cdef int CONV_ALGORITHM = 0


def set_conv_algorithm(int algo):
    """Run every convolution on algorithm ``algo`` (0: the per-shape rule, 1: the implicit
    GEMM, 2: Winograd F(2x2, 3x3) where it applies, 3: the direct convolution where it
    applies, else the implicit GEMM; 4: channels last, a tap at a time, where it applies)."""
    global CONV_ALGORITHM
    if algo not in (0, 1, 2, 3, 4):
        raise ValueError(f"set_conv_algorithm: expected 0 to 4, got {algo}")
    CONV_ALGORITHM = algo


def get_conv_algorithm():
    """The algorithm ``set_conv_algorithm`` last chose (0 by default)."""
    return CONV_ALGORITHM


cdef void _conv_shape(sg3_conv* q, Buffer x, Buffer w, tuple window, tuple out) except *:
    q.n, q.c, q.h, q.w = x.shape
    q.o, _, q.kh, q.kw = w.shape
    _, _, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw = window
    q.oh, q.ow = out
    q.algo = CONV_ALGORITHM


def conv2d(Buffer x, Buffer w, Buffer bias, tuple window, tuple out):
    """The convolution (groups 1) of x (n, c, h, w) by filters w (o, c, kh, kw), plus bias
    (o,) when given: (n, o, oh, ow)."""
    cdef sg3_conv q
    _conv_shape(&q, x, w, window, out)
    cdef Buffer y = new_buffer((q.n, q.o, q.oh, q.ow), x.dtype, x.code)
    cdef int rc, code = x.code
    cdef char* pb = _ptr(bias)
    with nogil:
        rc = T.conv2d(code, &q, data_of(y), data_of(x), data_of(w), pb, NTHREADS)
    _check(rc, "conv2d")
    return y


def conv2d_backward(Buffer g, Buffer x, Buffer w, tuple window, bint need_x, bint need_w):
    """(grad x, grad w) of ``conv2d`` from the output's gradient g, each None unless asked for."""
    cdef sg3_conv q
    _conv_shape(&q, x, w, window, tuple(g.shape[2:]))
    cdef Buffer gx = new_buffer(x.shape, x.dtype, x.code) if need_x else None
    cdef Buffer gw = new_buffer(w.shape, w.dtype, w.code) if need_w else None
    cdef int rc = SG3_OK, code = x.code
    if gx is not None:
        with nogil:
            rc = T.conv2d_backward_input(code, &q, data_of(gx), data_of(g), data_of(w), NTHREADS)
        _check(rc, "conv2d")
    if gw is not None:
        with nogil:
            rc = T.conv2d_backward_weight(code, &q, data_of(gw), data_of(g), data_of(x), NTHREADS)
        _check(rc, "conv2d")
    return gx, gw


cdef void _window(sg3_pool* q, tuple x_shape, tuple window, tuple out) except *:
    cdef Py_ssize_t nd = len(x_shape), d
    q.h, q.w = x_shape[nd - 2], x_shape[nd - 1]
    q.kh, q.kw, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw = window
    q.oh, q.ow = out
    q.planes = 1
    for d in range(nd - 2):
        q.planes *= x_shape[d]
    q.out_channels = 0


def max_pool2d(Buffer x, tuple window, tuple out, index_dtype):
    """(the maximum of each window, its flat position h * W + w in the plane, of
    ``index_dtype``: int64)."""
    cdef sg3_pool q
    _window(&q, x.shape, window, out)
    cdef tuple shape = (*x.shape[:x.ndim - 2], q.oh, q.ow)
    cdef Buffer y = new_buffer(shape, x.dtype, x.code), index = new_buffer(shape, index_dtype, INT64)
    cdef int rc, code = x.code
    with nogil:
        rc = T.max_pool2d(code, &q, data_of(y), <int64_t*>data_of(index), data_of(x), NTHREADS)
    _check(rc, "max_pool2d")
    return y, index


def max_pool2d_backward(Buffer g, Buffer index, tuple x_shape, tuple window):
    cdef sg3_pool q
    _window(&q, x_shape, window, tuple(g.shape[g.ndim - 2:]))
    cdef Buffer gx = new_buffer(x_shape, g.dtype, g.code)
    cdef int rc, code = g.code
    with nogil:
        rc = T.max_pool2d_backward(code, &q, data_of(gx), data_of(g), <int64_t*>data_of(index), NTHREADS)
    _check(rc, "max_pool2d")
    return gx


def avg_pool2d(Buffer x, tuple window, tuple out, bint include_pad, double divisor):
    """The average of each window (dilation 1); ``divisor`` (not 0) replaces the window counts."""
    cdef sg3_pool q
    _window(&q, x.shape, window, out)
    cdef Buffer y = new_buffer((*x.shape[:x.ndim - 2], q.oh, q.ow), x.dtype, x.code)
    cdef int rc, code = x.code
    with nogil:
        rc = T.avg_pool2d(code, &q, data_of(y), data_of(x), include_pad, divisor, NTHREADS)
    _check(rc, "avg_pool2d")
    return y


def avg_pool2d_backward(Buffer g, tuple x_shape, tuple window, bint include_pad, double divisor):
    cdef sg3_pool q
    _window(&q, x_shape, window, tuple(g.shape[g.ndim - 2:]))
    cdef Buffer gx = new_buffer(x_shape, g.dtype, g.code)
    cdef int rc, code = g.code
    with nogil:
        rc = T.avg_pool2d_backward(code, &q, data_of(gx), data_of(g), include_pad, divisor, NTHREADS)
    _check(rc, "avg_pool2d")
    return gx


cdef void _depthwise_shape(sg3_pool* q, Buffer x, Buffer w, tuple window, tuple out) except *:
    _window(q, x.shape, window, out)
    q.out_channels = w.shape[0]
    q.planes = x.shape[0] * q.out_channels


def depthwise(Buffer x, Buffer w, Buffer bias, tuple window, tuple out):
    """The convolution with groups == channels of x (n, c, h, w) by w (c * mult, 1, kh, kw)."""
    cdef sg3_pool q
    _depthwise_shape(&q, x, w, window, out)
    cdef int64_t mult = q.out_channels // x.shape[1]
    cdef Buffer y = new_buffer((x.shape[0], q.out_channels, q.oh, q.ow), x.dtype, x.code)
    cdef int rc, code = x.code
    cdef char* pb = _ptr(bias)
    with nogil:
        rc = T.depthwise(code, &q, mult, data_of(y), data_of(x), data_of(w), pb, NTHREADS)
    _check(rc, "conv2d")
    return y


def depthwise_backward(Buffer g, Buffer x, Buffer w, tuple window, bint need_x, bint need_w):
    """(grad x, grad w) of ``depthwise``, each None unless asked for."""
    cdef sg3_pool q
    _depthwise_shape(&q, x, w, window, tuple(g.shape[2:]))
    cdef int64_t mult = q.out_channels // x.shape[1]
    cdef Buffer gx = new_buffer(x.shape, x.dtype, x.code) if need_x else None
    cdef Buffer gw = new_buffer(w.shape, w.dtype, w.code) if need_w else None
    cdef int rc = SG3_OK, code = x.code
    if gx is not None:
        with nogil:
            rc = T.depthwise_backward_input(code, &q, mult, data_of(gx), data_of(g), data_of(w), NTHREADS)
        _check(rc, "conv2d")
    if gw is not None:
        with nogil:
            rc = T.depthwise_backward_weight(code, &q, mult, data_of(gw), data_of(g), data_of(x), NTHREADS)
        _check(rc, "conv2d")
    return gx, gw


BN_ACTIVATIONS = {None: 0, "relu": 1, "relu6": 2}


cdef void _bn_shape(sg3_batch_norm* q, Buffer x, bint training, double momentum, double eps,
                    str act) except *:
    q.n, q.c = x.shape[0], x.shape[1]
    q.s = 1
    cdef Py_ssize_t d
    for d in range(2, x.ndim):
        q.s *= x.shape[d]
    q.momentum, q.eps, q.training, q.act = momentum, eps, training, BN_ACTIVATIONS[act]


def batch_norm(Buffer x, Buffer w, Buffer b, Buffer running_mean, Buffer running_var, bint training,
               double momentum, double eps, str act):
    """(y, mean, 1/std per channel), y through ``act`` (None, "relu" or "relu6"); in training
    the running statistics (when given) are updated in place."""
    cdef sg3_batch_norm q
    _bn_shape(&q, x, training, momentum, eps, act)
    cdef Buffer y = new_buffer(x.shape, x.dtype, x.code)
    cdef Buffer mean = new_buffer((q.c,), x.dtype, x.code), rstd = new_buffer((q.c,), x.dtype, x.code)
    cdef int rc, code = x.code
    cdef char* pw = _ptr(w)
    cdef char* pb = _ptr(b)
    cdef char* prm = _ptr(running_mean)
    cdef char* prv = _ptr(running_var)
    with nogil:
        rc = T.batch_norm(code, &q, data_of(y), data_of(mean), data_of(rstd), data_of(x), pw, pb, prm, prv,
                          NTHREADS)
    _check(rc, "batch_norm")
    return y, mean, rstd


def batch_norm_backward(Buffer g, Buffer x, Buffer y, Buffer mean, Buffer rstd, Buffer w, bint training,
                        str act, bint need_x, bint need_w, bint need_b):
    """(grad x, grad weight, grad bias) of ``batch_norm``, each None unless asked for (y, the
    output, is read only through an activation)."""
    cdef sg3_batch_norm q
    _bn_shape(&q, x, training, 0.0, 0.0, act)
    cdef Buffer gx = new_buffer(x.shape, x.dtype, x.code) if need_x else None
    cdef Buffer gw = new_buffer((q.c,), x.dtype, x.code) if need_w else None
    cdef Buffer gb = new_buffer((q.c,), x.dtype, x.code) if need_b else None
    cdef int rc, code = x.code
    cdef char* pgx = _ptr(gx)
    cdef char* pgw = _ptr(gw)
    cdef char* pgb = _ptr(gb)
    cdef char* py = _ptr(y)
    cdef char* pw = _ptr(w)
    with nogil:
        rc = T.batch_norm_backward(code, &q, pgx, pgw, pgb, data_of(g), data_of(x), py, data_of(mean),
                                   data_of(rstd), pw, NTHREADS)
    _check(rc, "batch_norm")
    return gx, gw, gb
