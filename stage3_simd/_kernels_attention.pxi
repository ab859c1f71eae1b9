# Scaled dot-product attention, forward and backward; included by _kernels.pyx (csrc/table.hpp's
# entries, through T).

def attention(Buffer q, Buffer k, Buffer v, Buffer mask, bint causal, double scale):
    """Scaled dot-product attention of contiguous q (n, l, e), k (n / group, s, e) and v
    (n / group, s, ev), with a mask (1 or n, l, s; bool or additive) or None: (out, each
    row's log-sum-exp)."""
    cdef sg3_attention a
    _attention_shape(&a, q, k, v, mask, causal, scale)
    cdef Buffer out = new_buffer((a.n, a.l, a.ev), q.dtype, q.code), lse = new_buffer((a.n, a.l), q.dtype, q.code)
    cdef const void* pm = _ptr(mask)
    cdef int rc, code = q.code
    with nogil:
        rc = T.attention(code, &a, data_of(out), data_of(lse), data_of(q), data_of(k), data_of(v), pm, NTHREADS)
    _check(rc, "scaled_dot_product_attention")
    return out, lse


def attention_backward(Buffer g, Buffer q, Buffer k, Buffer v, Buffer out, Buffer lse, Buffer mask, bint causal,
                       double scale):
    """(dq, dk, dv) of ``attention`` from the output's gradient g (n, l, ev)."""
    cdef sg3_attention a
    _attention_shape(&a, q, k, v, mask, causal, scale)
    cdef Buffer dq = new_buffer(q.shape, q.dtype, q.code), dk = new_buffer(k.shape, k.dtype, k.code)
    cdef Buffer dv = new_buffer(v.shape, v.dtype, v.code)
    cdef const void* pm = _ptr(mask)
    cdef int rc, code = q.code
    with nogil:
        rc = T.attention_backward(code, &a, data_of(dq), data_of(dk), data_of(dv), data_of(g), data_of(q),
                                  data_of(k), data_of(v), data_of(out), data_of(lse), pm, NTHREADS)
    _check(rc, "scaled_dot_product_attention")
    return dq, dk, dv
