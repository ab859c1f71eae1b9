# Fused kernels: linear's epilogue and activations, softmax, cross-entropy, layer norm, optimizer
# steps; included by _kernels.pyx (csrc/table.hpp's entries, through T).

# ---------------------------------------------------------------- fused kernels
#
# Each takes contiguous float buffers laid out as rows (the backend makes them so) and
# returns new buffers from the pool; see csrc/fused.hpp.

ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3}


cdef char* _ptr(Buffer b) noexcept:
    return NULL if b is None else data_of(b)


cdef void _check(int rc, str op) except *:
    if rc != SG3_OK:
        raise TypeError(f"{op}: no fused stage 3 kernel for this dtype")


def bias_act(Buffer y, Buffer bias, str act, bint save_pre):
    """``y = act(y + bias)`` in place over (rows, cols) ``y``; returns the values before
    the activation when asked (gelu's backward needs them), else None."""
    cdef int64_t cols = y.shape[y.ndim - 1] if y.ndim else 1, rows = y.numel // cols if cols else 0
    cdef Buffer pre = new_buffer(y.shape, y.dtype, y.code) if save_pre else None
    cdef int rc, code = y.code, a = ACTIVATIONS[act]
    cdef char* py = data_of(y)
    cdef char* pb = _ptr(bias)
    cdef char* pp = _ptr(pre)
    with nogil:
        rc = T.bias_act(code, py, py, pb, pp, rows, cols, a, NTHREADS)
    _check(rc, "linear")
    return pre


def activation(Buffer x, str act):
    """``act(x)`` of a contiguous buffer, into a new one (an activation ``bias_act`` knows)."""
    cdef Buffer y = new_buffer(x.shape, x.dtype, x.code)
    cdef int64_t cols = x.shape[x.ndim - 1] if x.ndim else 1, rows = x.numel // cols if cols else 0
    cdef int rc, code = x.code, a = ACTIVATIONS[act]
    with nogil:
        rc = T.bias_act(code, data_of(y), data_of(x), NULL, NULL, rows, cols, a, NTHREADS)
    _check(rc, act)
    return y


def act_backward(Buffer g, Buffer saved, str act, bint bias=False):
    """``g * act'(saved)`` of contiguous buffers; with ``bias``, ``(that, its sums down the
    last dim)``: the gradients of a linear layer's pre-activation and bias in one pass."""
    cdef Buffer gx = new_buffer(g.shape, g.dtype, g.code)
    cdef int64_t cols = g.shape[g.ndim - 1] if g.ndim else 1, rows = g.numel // cols if cols else 0
    cdef Buffer gb = new_buffer((cols,), g.dtype, g.code) if bias else None
    cdef char* pb = _ptr(gb)
    cdef int rc, code = g.code, a = ACTIVATIONS[act]
    with nogil:
        rc = T.act_backward(code, data_of(gx), pb, data_of(g), data_of(saved), rows, cols, a, NTHREADS)
    _check(rc, act)
    return (gx, gb) if bias else gx


def softmax(Buffer x, bint log):
    """Softmax (log_softmax) along the last dim of a contiguous buffer."""
    cdef Buffer y = new_buffer(x.shape, x.dtype, x.code)
    cdef int64_t cols = x.shape[x.ndim - 1] if x.ndim else 1
    cdef int64_t rows = x.numel // cols if cols else 0
    cdef int rc, code = x.code
    with nogil:
        rc = T.softmax(code, data_of(y), data_of(x), rows, cols, log, NTHREADS)
    _check(rc, "softmax")
    return y


def softmax_backward(Buffer g, Buffer y, bint log):
    cdef Buffer gx = new_buffer(y.shape, y.dtype, y.code)
    cdef int64_t cols = y.shape[y.ndim - 1] if y.ndim else 1
    cdef int64_t rows = y.numel // cols if cols else 0
    cdef int rc, code = y.code
    with nogil:
        rc = T.softmax_backward(code, data_of(gx), data_of(g), data_of(y), rows, cols, log, NTHREADS)
    _check(rc, "softmax")
    return gx


def cross_entropy(Buffer x, Buffer target, Buffer weight, int64_t ignore, double smoothing):
    """Rows of logits (N, C) and class indices (N,, int64): each row's loss, its weight in
    a mean and the probabilities; IndexError for the first target out of range."""
    cdef int64_t rows = x.shape[0], cols = x.shape[1], bad
    cdef Buffer loss = new_buffer((rows,), x.dtype, x.code)
    cdef Buffer wrow = new_buffer((rows,), x.dtype, x.code)
    cdef Buffer probs = new_buffer(x.shape, x.dtype, x.code)
    cdef int code = x.code
    cdef char* pw = _ptr(weight)
    with nogil:
        bad = T.cross_entropy(code, data_of(loss), data_of(wrow), data_of(probs), data_of(x),
                              <int64_t*>data_of(target), pw, ignore, smoothing, rows, cols, NTHREADS)
    if bad != -1:
        raise IndexError(f"cross_entropy: target {(<int64_t*>data_of(target))[bad]} is out of bounds "
                         f"for {cols} classes")
    return loss, wrow, probs


def cross_entropy_backward(Buffer probs, Buffer target, Buffer weight, Buffer scale, int64_t ignore,
                           double smoothing):
    cdef int64_t rows = probs.shape[0], cols = probs.shape[1]
    cdef Buffer gx = new_buffer(probs.shape, probs.dtype, probs.code)
    cdef int rc, code = probs.code
    cdef char* pw = _ptr(weight)
    with nogil:
        rc = T.cross_entropy_backward(code, data_of(gx), data_of(probs), <int64_t*>data_of(target), pw,
                                      data_of(scale), ignore, smoothing, rows, cols, NTHREADS)
    _check(rc, "cross_entropy")
    return gx


def layer_norm(Buffer x, int64_t cols, Buffer weight, Buffer bias, double eps):
    """Normalise each row of ``cols`` trailing elements: (y, mean, rstd)."""
    cdef int64_t rows = x.numel // cols if cols else 0
    cdef Buffer y = new_buffer(x.shape, x.dtype, x.code)
    cdef Buffer mean = new_buffer((rows,), x.dtype, x.code)
    cdef Buffer rstd = new_buffer((rows,), x.dtype, x.code)
    cdef int rc, code = x.code
    cdef char* pw = _ptr(weight)
    cdef char* pb = _ptr(bias)
    with nogil:
        rc = T.layer_norm(code, data_of(y), data_of(mean), data_of(rstd), data_of(x), pw, pb, rows, cols,
                          eps, NTHREADS)
    _check(rc, "layer_norm")
    return y, mean, rstd


def layer_norm_backward(Buffer g, Buffer x, Buffer mean, Buffer rstd, Buffer weight, int64_t cols,
                        bint need_x, bint need_w, bint need_b):
    """(gx, gw, gb): gw and gb as float64 buffers of ``cols`` (the caller casts)."""
    cdef int64_t rows = x.numel // cols if cols else 0
    cdef Buffer gx = new_buffer(x.shape, x.dtype, x.code) if need_x else None
    cdef Buffer gw = new_buffer((cols,), None, FLOAT64) if need_w else None
    cdef Buffer gb = new_buffer((cols,), None, FLOAT64) if need_b else None
    if gw is not None:
        memset(data_of(gw), 0, cols * 8)
    if gb is not None:
        memset(data_of(gb), 0, cols * 8)
    cdef int rc, code = x.code
    cdef char* px = _ptr(gx)
    cdef double* pgw = <double*>_ptr(gw)
    cdef double* pgb = <double*>_ptr(gb)
    cdef char* pw = _ptr(weight)
    with nogil:
        rc = T.layer_norm_backward(code, px, pgw, pgb, data_of(g), data_of(x), data_of(mean), data_of(rstd),
                                   pw, rows, cols, NTHREADS)
    _check(rc, "layer_norm")
    return gx, gw, gb


cdef class _Pointers:
    """Data pointers (and element counts) of a list of buffers, for the multi-tensor steps."""
    cdef char** p
    cdef int64_t* n
    cdef int count

    def __cinit__(self, list bufs):
        cdef int i
        cdef Buffer b
        self.count = len(bufs)
        self.p = <char**>PyMem_Malloc(max(self.count, 1) * sizeof(char*))
        self.n = <int64_t*>PyMem_Malloc(max(self.count, 1) * sizeof(int64_t))
        if self.p == NULL or self.n == NULL:
            raise MemoryError()
        for i in range(self.count):
            b = bufs[i]
            self.p[i] = data_of(b)
            self.n[i] = b.numel

    def __dealloc__(self):
        PyMem_Free(self.p)
        PyMem_Free(self.n)


cdef char** _ptrs(_Pointers p) noexcept:
    return NULL if p is None else p.p


def adam_step(int code, list params, list grads, list exp_avgs, list exp_avg_sqs, list max_sqs,
              list step_sizes, list bias_corrections2_sqrt, double lr, double weight_decay, double lerp_w,
              double lerp_w1, double beta2, double eps, bint decoupled, bint maximize):
    """One Adam (AdamW) step of every tensor of a group, in one call."""
    cdef sg3_adam h
    h.lr, h.weight_decay, h.lerp_w, h.lerp_w1, h.beta2, h.eps = lr, weight_decay, lerp_w, lerp_w1, beta2, eps
    h.decoupled, h.maximize = decoupled, maximize
    cdef _Pointers p = _Pointers(params), g = _Pointers(grads), m = _Pointers(exp_avgs)
    cdef _Pointers v = _Pointers(exp_avg_sqs)
    cdef _Pointers vmax = _Pointers(max_sqs) if max_sqs is not None else None
    cdef double[::1] ss = _doubles(step_sizes)
    cdef double[::1] bc = _doubles(bias_corrections2_sqrt)
    cdef char** pmax = _ptrs(vmax)
    cdef int rc
    with nogil:
        rc = T.adam(code, p.count, p.p, g.p, m.p, v.p, pmax, p.n, &ss[0], &bc[0], &h, NTHREADS)
    _check(rc, "adam")


def sgd_step(int code, list params, list grads, list bufs, bytes first, double lr, double weight_decay,
             double momentum, double dampening, bint nesterov, bint maximize):
    cdef sg3_sgd h
    h.lr, h.weight_decay, h.momentum, h.dampening = lr, weight_decay, momentum, dampening
    h.nesterov, h.maximize = nesterov, maximize
    cdef _Pointers p = _Pointers(params), g = _Pointers(grads)
    cdef _Pointers b = _Pointers(bufs) if bufs is not None else None
    cdef const unsigned char* f = first
    cdef char** pb = _ptrs(b)
    cdef int rc
    with nogil:
        rc = T.sgd(code, p.count, p.p, g.p, pb, p.n, f, &h, NTHREADS)
    _check(rc, "sgd")


def rmsprop_step(int code, list params, list grads, list square_avgs, list grad_avgs, list bufs, double lr,
                 double weight_decay, double alpha, double eps, double momentum, double lerp_w, double lerp_w1,
                 bint maximize):
    cdef sg3_rmsprop h
    h.lr, h.weight_decay, h.alpha, h.eps, h.momentum = lr, weight_decay, alpha, eps, momentum
    h.lerp_w, h.lerp_w1, h.maximize = lerp_w, lerp_w1, maximize
    cdef _Pointers p = _Pointers(params), g = _Pointers(grads), sq = _Pointers(square_avgs)
    cdef _Pointers ga = _Pointers(grad_avgs) if grad_avgs is not None else None
    cdef _Pointers b = _Pointers(bufs) if bufs is not None else None
    cdef char** pga = _ptrs(ga)
    cdef char** pb = _ptrs(b)
    cdef int rc
    with nogil:
        rc = T.rmsprop(code, p.count, p.p, g.p, sq.p, pga, pb, p.n, &h, NTHREADS)
    _check(rc, "rmsprop")


def _doubles(values):
    from array import array
    return array("d", values) if values else array("d", [0.0])
