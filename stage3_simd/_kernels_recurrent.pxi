# Recurrent layers: the LSTM cell, and whole RNN/LSTM/GRU layers in one call; included by
# _kernels.pyx (csrc/table.hpp's entries, through T).

def lstm_cell(Buffer pre, Buffer c):
    """The LSTM cell after its GEMM: (h', c', the activated gates, tanh(c')) from the gates
    before activation (rows, 4H) and c (rows, H)."""
    cdef int64_t hidden = c.shape[c.ndim - 1], rows = c.numel // hidden if hidden else 0
    cdef Buffer h = new_buffer(c.shape, c.dtype, c.code), cn = new_buffer(c.shape, c.dtype, c.code)
    cdef Buffer act = new_buffer(pre.shape, pre.dtype, pre.code), tc = new_buffer(c.shape, c.dtype, c.code)
    cdef int rc, code = c.code
    with nogil:
        rc = T.lstm_cell(code, data_of(h), data_of(cn), data_of(act), data_of(tc), data_of(pre), data_of(c), rows,
                         hidden, NTHREADS)
    _check(rc, "lstm")
    return h, cn, act, tc


def lstm_cell_backward(Buffer gh, Buffer gc_next, Buffer act, Buffer tc, Buffer c):
    """(grad of the gates before activation, grad of c) of ``lstm_cell``."""
    cdef int64_t hidden = c.shape[c.ndim - 1], rows = c.numel // hidden if hidden else 0
    cdef Buffer gpre = new_buffer(act.shape, act.dtype, act.code), gc = new_buffer(c.shape, c.dtype, c.code)
    cdef int rc, code = c.code
    with nogil:
        rc = T.lstm_cell_backward(code, data_of(gpre), data_of(gc), data_of(gh), data_of(gc_next), data_of(act),
                                  data_of(tc), data_of(c), rows, hidden, NTHREADS)
    _check(rc, "lstm")
    return gpre, gc


RECURRENT_MODES = {"RNN_TANH": 0, "RNN_RELU": 1, "LSTM": 2, "GRU": 3}
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


cdef class _Steps:
    """A sequence's geometry as the kernel reads it (sg3_recurrent), owning its batch sizes."""
    cdef sg3_recurrent q
    cdef int64_t* sizes
    cdef int64_t rows, width, saved

    def __cinit__(self, str mode, bint reverse, list batch_sizes, Buffer w, Buffer w_hr):
        self.sizes = <int64_t*>PyMem_Malloc(max(len(batch_sizes), 1) * sizeof(int64_t))
        if self.sizes == NULL:
            raise MemoryError()
        self.rows = 0
        for t, n in enumerate(batch_sizes):
            self.sizes[t] = n
            self.rows += n
        self.q.mode, self.q.reverse = RECURRENT_MODES[mode], reverse
        self.q.steps, self.q.batch, self.q.hidden = len(batch_sizes), batch_sizes[0], w.shape[0] // _GATES[mode]
        self.q.proj = w_hr.shape[0] if w_hr is not None else 0
        self.q.batch_sizes = self.sizes
        self.width = self.q.proj or self.q.hidden  # h's
        # what the backward keeps per row: see recurrent_saved in csrc/recurrent.hpp
        self.saved = {"LSTM": 7 if self.q.proj else 6, "GRU": 4}.get(mode, 1) * self.q.hidden

    def __dealloc__(self):
        PyMem_Free(self.sizes)


def recurrent(str mode, bint reverse, list batch_sizes, Buffer gi, Buffer h0, Buffer c0, Buffer w, Buffer b,
              Buffer w_hr):
    """One layer and direction of ``mode`` (a key of RECURRENT_MODES) over packed rows: gi the
    input projection of every row (rows, gates * H), h0 and c0 (LSTM only, else None) the
    initial state, w and b the hidden weights and bias (None without), w_hr the LSTM's
    projection or None. Returns (output rows, final h, final c or None, and what
    ``recurrent_backward`` needs)."""
    cdef _Steps s = _Steps(mode, reverse, batch_sizes, w, w_hr)
    cdef Buffer out = new_buffer((s.rows, s.width), gi.dtype, gi.code)
    cdef Buffer hprev = new_buffer((s.rows, s.width), gi.dtype, gi.code)
    cdef Buffer saved = new_buffer((s.rows, s.saved), gi.dtype, gi.code)
    cdef Buffer h = copy(h0), c = copy(c0) if c0 is not None else None
    cdef char* pc = _ptr(c)
    cdef char* pb = _ptr(b)
    cdef char* pr = _ptr(w_hr)
    cdef int rc, code = gi.code
    with nogil:
        rc = T.recurrent(code, &s.q, data_of(out), data_of(h), pc, data_of(saved), data_of(hprev), data_of(gi),
                         data_of(w), pb, pr, NTHREADS)
    _check(rc, "recurrent")
    return out, h, c, (saved, hprev)


def recurrent_backward(str mode, bint reverse, list batch_sizes, Buffer gout, Buffer gh, Buffer gc, tuple saved,
                       Buffer w, bint bias, Buffer w_hr):
    """(grad of gi, of h0, of c0 or None, of w, of b or None, of w_hr or None) of
    ``recurrent`` from the gradients of its output rows and final state (gc None but for the
    LSTM)."""
    cdef Buffer sv = saved[0], hprev = saved[1]
    cdef _Steps s = _Steps(mode, reverse, batch_sizes, w, w_hr)
    cdef Buffer ggi = new_buffer((s.rows, w.shape[0]), w.dtype, w.code), gw = new_buffer(w.shape, w.dtype, w.code)
    cdef Buffer gb = new_buffer((w.shape[0],), w.dtype, w.code) if bias else None
    cdef Buffer gp = new_buffer((s.rows, w.shape[0]), w.dtype, w.code) if mode == "GRU" else None
    cdef Buffer gw_hr = new_buffer(w_hr.shape, w.dtype, w.code) if w_hr is not None else None
    cdef Buffer gproj = new_buffer((s.rows, s.width), w.dtype, w.code) if w_hr is not None else None
    cdef Buffer gh0 = copy(gh), gc0 = copy(gc) if gc is not None else None
    cdef char* pc = _ptr(gc0)
    cdef char* pb = _ptr(gb)
    cdef char* pp = _ptr(gp)
    cdef char* pwr = _ptr(gw_hr)
    cdef char* pgp = _ptr(gproj)
    cdef char* pr = _ptr(w_hr)
    cdef int rc, code = w.code
    with nogil:
        rc = T.recurrent_backward(code, &s.q, data_of(ggi), data_of(gh0), pc, data_of(gw), pb, pwr, pp, pgp,
                                  data_of(gout), data_of(sv), data_of(hprev), data_of(w), pr, NTHREADS)
    _check(rc, "recurrent")
    return ggi, gh0, gc0, gw, gb, gw_hr


cdef void _attention_shape(sg3_attention* a, Buffer q, Buffer k, Buffer v, Buffer mask, bint causal,
                           double scale) except *:
    # q (n, l, e), k (n / group, s, e), v (n / group, s, ev); mask (1 or n, l, s) or None
    a.n, a.l, a.e = q.shape
    _, a.s, a.ev = v.shape
    a.group = a.n // k.shape[0] if k.shape[0] else 1
    a.scale, a.causal = scale, causal
    a.mask_kind = 0 if mask is None else 1 if mask.code == BOOL else 2
    a.mask_shared = mask is not None and mask.shape[0] == 1
