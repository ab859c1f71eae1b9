"""Typed conversions: ``cast`` between every pair of dtypes, filling, ``arange``, and
packing a Python array into a new Buffer.

Float to int conversion truncates toward zero and wraps modulo 2**bits (as stage 0 does
by packing Python ints), where a bare C cast of an out-of-range float would be undefined;
NaN and inf cannot be converted and raise ValueError. Int to float rounds through double,
as stage 0's ``array`` conversion does.
"""
from libc.math cimport fmod, isfinite, trunc
from libc.string cimport memcpy

from stage2_cython._buffer cimport (Buffer, code_of, data_of, new_buffer, read_ints)
from stage2_cython._iter cimport NdIter, iter_next, iter_prepare
from stage2_cython._types cimport (BOOL, FLOAT32, FLOAT64, INT32, INT64, any2_t, any_t, bool_t,
                                   float32_t, float64_t, int32_t, int64_t, itemsize_of)

cdef double TWO63 = 9223372036854775808.0
cdef double TWO64 = 18446744073709551616.0


cdef inline int64_t _to_int(double v, bint* bad) noexcept nogil:
    cdef double t
    if not isfinite(v):
        bad[0] = True
        return 0
    t = trunc(v)
    if -TWO63 <= t < TWO63:
        return <int64_t>t
    t = fmod(t, TWO64)  # exact: such a double is a multiple of 2**11
    if t < 0:
        t += TWO64
    if t >= TWO63:
        t -= TWO64
    return <int64_t>t


cdef inline any2_t _convert(any_t x, any2_t* kind, bint* bad) noexcept nogil:
    # ``kind`` only selects the target type
    if any2_t is bool_t:
        return x != 0
    elif any_t is float32_t or any_t is float64_t:
        if any2_t is int32_t or any2_t is int64_t:
            return <any2_t>_to_int(x, bad)  # int32 keeps the low 32 bits: wraps
        else:
            return <any2_t>x
    elif any2_t is float32_t or any2_t is float64_t:
        return <any2_t><double>x
    else:
        return <any2_t>x


cdef void _cast_loop(any2_t* o, any_t* x, NdIter* it, bint* bad) noexcept nogil:
    cdef Py_ssize_t r, i, n = it.inner, so = it.ist[0], sx = it.ist[1]
    cdef any2_t* po
    cdef any_t* px
    for r in range(it.rows):
        po = o + it.off[0]
        px = x + it.off[1]
        if so == 1 and sx == 1:
            for i in range(n):
                po[i] = _convert(px[i], po, bad)
        else:
            for i in range(n):
                po[i * so] = _convert(px[i * sx], po, bad)
        iter_next(it)


cdef void _cast_to(any2_t* o, int code, char* x, NdIter* it, bint* bad) noexcept nogil:
    if code == BOOL:
        _cast_loop(o, <bool_t*>x, it, bad)
    elif code == INT32:
        _cast_loop(o, <int32_t*>x, it, bad)
    elif code == INT64:
        _cast_loop(o, <int64_t*>x, it, bad)
    elif code == FLOAT32:
        _cast_loop(o, <float32_t*>x, it, bad)
    else:
        _cast_loop(o, <float64_t*>x, it, bad)


cdef int cast_into(Buffer out, Buffer x) except -1:
    """Write ``x`` converted to ``out``'s dtype into ``out`` (same shape, contiguous)."""
    cdef NdIter it
    cdef bint bad = False
    it.nops = 2
    it.off[0] = it.off[1] = 0
    read_ints(x.shape, it.size)
    read_ints(out.strides, it.st[0])
    read_ints(x.strides, it.st[1])
    iter_prepare(&it, x.ndim)
    cdef char* po = data_of(out)
    cdef char* px = data_of(x)
    cdef int code = x.code, to = out.code
    with nogil:
        if to == BOOL:
            _cast_to(<bool_t*>po, code, px, &it, &bad)
        elif to == INT32:
            _cast_to(<int32_t*>po, code, px, &it, &bad)
        elif to == INT64:
            _cast_to(<int64_t*>po, code, px, &it, &bad)
        elif to == FLOAT32:
            _cast_to(<float32_t*>po, code, px, &it, &bad)
        else:
            _cast_to(<float64_t*>po, code, px, &it, &bad)
    if bad:
        raise ValueError(f"cast: cannot convert nan or inf to an integer dtype ({x.dtype} to {out.dtype})")
    return 0


def cast(Buffer x, dtype):
    cdef Buffer out = new_buffer(x.shape, dtype, code_of(dtype))
    if x.numel:
        cast_into(out, x)
    return out


# ---------------------------------------------------------------- filling

cdef void _fill(any_t* o, Py_ssize_t n, any_t v) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        o[i] = v


def full(tuple shape, value, dtype):
    """``value`` is already a Python number that fits ``dtype`` (the caller wraps ints)."""
    cdef int code = code_of(dtype)
    cdef Buffer out = new_buffer(shape, dtype, code)
    cdef Py_ssize_t n = out.numel
    cdef char* p = data_of(out)
    if code == BOOL:
        _fill(<bool_t*>p, n, <bool_t>(1 if value else 0))
    elif code == INT32:
        _fill(<int32_t*>p, n, <int32_t>value)
    elif code == INT64:
        _fill(<int64_t*>p, n, <int64_t>value)
    elif code == FLOAT32:
        _fill(<float32_t*>p, n, <float32_t>value)
    else:
        _fill(<float64_t*>p, n, <float64_t>value)
    return out


def arange(start, step, Py_ssize_t n, dtype):
    """``start + i * step`` for i < n: in int64 when both are ints, else in double (the
    values stage 0 computes with Python numbers), converted to ``dtype``."""
    cdef Py_ssize_t i
    cdef Buffer tmp
    cdef int64_t* pi
    cdef float64_t* pf
    cdef int64_t istart, istep
    cdef double fstart, fstep
    if isinstance(start, int) and isinstance(step, int):
        tmp = new_buffer((n,), None, INT64)
        pi = <int64_t*>data_of(tmp)
        istart, istep = start, step
        for i in range(n):
            pi[i] = istart + i * istep
    else:
        tmp = new_buffer((n,), None, FLOAT64)
        pf = <float64_t*>data_of(tmp)
        fstart, fstep = start, step
        for i in range(n):
            pf[i] = fstart + i * fstep
    return cast(tmp, dtype)


def from_array(arr, tuple shape, dtype):
    """A new Buffer holding the elements of ``arr`` (an ``array.array`` of ``dtype``'s
    typecode, row-major): one memcpy."""
    cdef int code = code_of(dtype)
    cdef Buffer out = new_buffer(shape, dtype, code)
    cdef const unsigned char[::1] src
    cdef Py_ssize_t nbytes = out.numel * itemsize_of(code)
    if nbytes:
        src = memoryview(arr).cast("B")
        if src.shape[0] != nbytes:
            raise ValueError(f"from_list: {len(arr)} values do not fill shape {list(shape)}")
        memcpy(data_of(out), &src[0], nbytes)
    return out
