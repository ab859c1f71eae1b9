"""Reductions over any set of axes, and argmax/argmin along one.

``reduce`` walks the input once, in the order its memory is laid out (dims sorted by
stride, largest outside), adding each element into an accumulator that has stride 0
along the reduced dims. So reducing the last axis of a contiguous tensor is a loop over
a row, and reducing the first is ``acc[j] += x[i, j]`` over rows: both stream memory.

Sound accumulation: float32 sums and products accumulate in float64; a row that is
reduced whole (the common case: a contiguous tensor reduced entirely, or along its last
axis) is summed pairwise, as NumPy does, so the rounding error grows with log(n), not n.
Integer sums and products accumulate in int64 and wrap. max/min propagate NaN; argmax
and argmin return the first extreme, or the first NaN.
"""
from libc.math cimport INFINITY
from libc.stdint cimport INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

from stage2_cython._buffer cimport (Buffer, c_strides, code_of, data_of, make_view, new_buffer,
                                    read_ints)
from stage2_cython._convert cimport cast_into
from stage2_cython._iter cimport NdIter, iter_next, iter_prepare
from stage2_cython._types cimport (BOOL, FLOAT32, FLOAT64, INT32, INT64, MAXDIM, any_t, bool_t,
                                   float32_t, float64_t, float_t, int32_t, int64_t, intlike_t, is_nan)

cdef enum Op:
    SUM, PROD, MAX, MIN, ANY, ALL

cdef dict _OPS = {"sum": SUM, "prod": PROD, "max": MAX, "min": MIN, "any": ANY, "all": ALL}


cdef double _pairwise(float_t* x, Py_ssize_t n, Py_ssize_t s) noexcept nogil:
    """Sum of n elements ``s`` apart: eight running sums in blocks of up to 128, halves
    added recursively above that."""
    cdef double r[8]
    cdef double res = 0.0
    cdef Py_ssize_t i, j, n2
    if n < 8:
        for i in range(n):
            res += x[i * s]
        return res
    if n <= 128:
        for j in range(8):
            r[j] = x[j * s]
        for i in range(8, n - n % 8, 8):
            for j in range(8):
                r[j] += x[(i + j) * s]
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(n - n % 8, n):
            res += x[i * s]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(x, n2, s) + _pairwise(x + n2 * s, n - n2, s)


cdef void _sum_float(double* acc, float_t* x, NdIter* it) noexcept nogil:
    cdef Py_ssize_t r, i, n = it.inner, sa = it.ist[0], sx = it.ist[1]
    cdef double* pa
    cdef float_t* px
    for r in range(it.rows):
        pa = acc + it.off[0]
        px = x + it.off[1]
        if sa == 0:
            pa[0] += _pairwise(px, n, sx)
        elif sa == 1 and sx == 1:
            for i in range(n):
                pa[i] += px[i]
        else:
            for i in range(n):
                pa[i * sa] += px[i * sx]
        iter_next(it)


cdef void _sum_int(int64_t* acc, intlike_t* x, NdIter* it) noexcept nogil:
    cdef Py_ssize_t r, i, n = it.inner, sa = it.ist[0], sx = it.ist[1]
    cdef int64_t s
    cdef int64_t* pa
    cdef intlike_t* px
    for r in range(it.rows):
        pa = acc + it.off[0]
        px = x + it.off[1]
        if sa == 0:
            s = 0
            for i in range(n):
                s += px[i * sx]
            pa[0] += s
        else:
            for i in range(n):
                pa[i * sa] += px[i * sx]
        iter_next(it)


cdef void _prod_float(double* acc, float_t* x, NdIter* it) noexcept nogil:
    cdef Py_ssize_t r, i, n = it.inner, sa = it.ist[0], sx = it.ist[1]
    cdef double* pa
    cdef float_t* px
    for r in range(it.rows):
        pa = acc + it.off[0]
        px = x + it.off[1]
        for i in range(n):
            pa[i * sa] *= px[i * sx]
        iter_next(it)


cdef void _prod_int(int64_t* acc, intlike_t* x, NdIter* it) noexcept nogil:
    cdef Py_ssize_t r, i, n = it.inner, sa = it.ist[0], sx = it.ist[1]
    cdef int64_t* pa
    cdef intlike_t* px
    for r in range(it.rows):
        pa = acc + it.off[0]
        px = x + it.off[1]
        for i in range(n):
            pa[i * sa] *= px[i * sx]
        iter_next(it)


cdef void _extreme(any_t* acc, any_t* x, NdIter* it, bint is_max) noexcept nogil:
    cdef Py_ssize_t r, i, n = it.inner, sa = it.ist[0], sx = it.ist[1]
    cdef any_t* pa
    cdef any_t* px
    cdef any_t v, a
    for r in range(it.rows):
        pa = acc + it.off[0]
        px = x + it.off[1]
        for i in range(n):
            v = px[i * sx]
            a = pa[i * sa]
            # NaN wins and then stays: is_nan(v) takes it, and nothing compares above it
            if (v > a if is_max else v < a) or is_nan(v):
                pa[i * sa] = v
        iter_next(it)


cdef void _logical(bool_t* acc, any_t* x, NdIter* it, bint is_any) noexcept nogil:
    cdef Py_ssize_t r, i, n = it.inner, sa = it.ist[0], sx = it.ist[1]
    cdef bool_t* pa
    cdef any_t* px
    for r in range(it.rows):
        pa = acc + it.off[0]
        px = x + it.off[1]
        for i in range(n):
            if is_any:
                pa[i * sa] = pa[i * sa] | (px[i * sx] != 0)
            else:
                pa[i * sa] = pa[i * sa] & (px[i * sx] != 0)
        iter_next(it)


cdef void _run(int op, int code, char* acc, char* x, NdIter* it) noexcept nogil:
    if op == SUM or op == PROD:
        if code == FLOAT32 or code == FLOAT64:
            if op == SUM:
                if code == FLOAT32:
                    _sum_float(<double*>acc, <float32_t*>x, it)
                else:
                    _sum_float(<double*>acc, <float64_t*>x, it)
            elif code == FLOAT32:
                _prod_float(<double*>acc, <float32_t*>x, it)
            else:
                _prod_float(<double*>acc, <float64_t*>x, it)
        elif op == SUM:
            if code == BOOL:
                _sum_int(<int64_t*>acc, <bool_t*>x, it)
            elif code == INT32:
                _sum_int(<int64_t*>acc, <int32_t*>x, it)
            else:
                _sum_int(<int64_t*>acc, <int64_t*>x, it)
        elif code == BOOL:
            _prod_int(<int64_t*>acc, <bool_t*>x, it)
        elif code == INT32:
            _prod_int(<int64_t*>acc, <int32_t*>x, it)
        else:
            _prod_int(<int64_t*>acc, <int64_t*>x, it)
    elif op == MAX or op == MIN:
        if code == BOOL:
            _extreme(<bool_t*>acc, <bool_t*>x, it, op == MAX)
        elif code == INT32:
            _extreme(<int32_t*>acc, <int32_t*>x, it, op == MAX)
        elif code == INT64:
            _extreme(<int64_t*>acc, <int64_t*>x, it, op == MAX)
        elif code == FLOAT32:
            _extreme(<float32_t*>acc, <float32_t*>x, it, op == MAX)
        else:
            _extreme(<float64_t*>acc, <float64_t*>x, it, op == MAX)
    elif code == BOOL:
        _logical(<bool_t*>acc, <bool_t*>x, it, op == ANY)
    elif code == INT32:
        _logical(<bool_t*>acc, <int32_t*>x, it, op == ANY)
    elif code == INT64:
        _logical(<bool_t*>acc, <int64_t*>x, it, op == ANY)
    elif code == FLOAT32:
        _logical(<bool_t*>acc, <float32_t*>x, it, op == ANY)
    else:
        _logical(<bool_t*>acc, <float64_t*>x, it, op == ANY)


cdef void _identity(int op, int code, char* acc, Py_ssize_t n) noexcept nogil:
    """Start every accumulator at the operation's neutral element."""
    cdef Py_ssize_t i
    for i in range(n):
        if code == FLOAT64:
            (<double*>acc)[i] = (0.0 if op == SUM else 1.0 if op == PROD else
                                 -INFINITY if op == MAX else INFINITY)
        elif code == FLOAT32:
            (<float*>acc)[i] = -INFINITY if op == MAX else INFINITY
        elif code == INT64:
            (<int64_t*>acc)[i] = (0 if op == SUM else 1 if op == PROD else
                                  INT64_MIN if op == MAX else INT64_MAX)
        elif code == INT32:
            (<int32_t*>acc)[i] = INT32_MIN if op == MAX else INT32_MAX
        else:  # bool: max/any start False, min/all start True
            (<bool_t*>acc)[i] = 0 if op == MAX or op == ANY else 1


cdef inline Py_ssize_t _abs(Py_ssize_t v) noexcept nogil:
    return -v if v < 0 else v


cdef void _sort_dims(NdIter* it, int ndim, int xop) noexcept nogil:
    """Order dims by the input's stride, largest first (a stable insertion sort), so the
    walk follows memory."""
    cdef int d, e, k
    cdef Py_ssize_t tmp
    for d in range(1, ndim):
        e = d
        while e > 0 and _abs(it.st[xop][e - 1]) < _abs(it.st[xop][e]):
            tmp = it.size[e]
            it.size[e] = it.size[e - 1]
            it.size[e - 1] = tmp
            for k in range(it.nops):
                tmp = it.st[k][e]
                it.st[k][e] = it.st[k][e - 1]
                it.st[k][e - 1] = tmp
            e -= 1


def reduce(str op, Buffer x, axes, bint keepdim, out_dtype):
    """Reduce ``x`` over ``axes`` (non-negative ints); an empty group gives the identity
    (0 for sum, 1 for prod, False for any, True for all)."""
    cdef int opc = _OPS[op], code = x.code, acc_code, d
    cdef bint reduced[MAXDIM]
    for d in range(x.ndim):
        reduced[d] = False
    for d in axes:
        reduced[d] = True
    if opc == SUM or opc == PROD:
        acc_code = FLOAT64 if code in (FLOAT32, FLOAT64) else INT64
    elif opc == MAX or opc == MIN:
        acc_code = code
    else:
        acc_code = BOOL
    kept = tuple([x.shape[d] for d in range(x.ndim) if not reduced[d]])
    out_shape = tuple([1 if reduced[d] else x.shape[d] for d in range(x.ndim)]) if keepdim else kept
    cdef int out_code = code_of(out_dtype)
    cdef Buffer acc = new_buffer(kept, out_dtype if acc_code == out_code else None, acc_code)
    _identity(opc, acc_code, data_of(acc), acc.numel)
    cdef NdIter it
    cdef Py_ssize_t s = 1
    it.nops = 2
    it.off[0] = it.off[1] = 0
    read_ints(x.shape, it.size)
    read_ints(x.strides, it.st[1])
    for d in range(x.ndim - 1, -1, -1):  # the accumulator: contiguous over kept dims
        it.st[0][d] = 0 if reduced[d] else s
        if not reduced[d]:
            s *= it.size[d]
    _sort_dims(&it, x.ndim, 1)
    iter_prepare(&it, x.ndim)
    cdef char* pa = data_of(acc)
    cdef char* px = data_of(x)
    with nogil:
        _run(opc, code, pa, px, &it)
    if acc_code != out_code:
        result = new_buffer(kept, out_dtype, out_code)
        if acc.numel:
            cast_into(result, acc)
        acc = result
    return make_view(acc.storage, out_shape, c_strides(out_shape), 0, out_dtype, out_code)


# ---------------------------------------------------------------- argmax, argmin

cdef void _arg(int64_t* out, any_t* x, NdIter* it, Py_ssize_t n, Py_ssize_t step,
               bint is_max) noexcept nogil:
    cdef Py_ssize_t r, i, j, best_j
    cdef any_t* p
    cdef any_t best, v
    for r in range(it.rows):
        for i in range(it.inner):
            p = x + it.off[1] + i * it.ist[1]
            best = p[0]
            best_j = 0
            j = 1
            while j < n and not is_nan(best):
                v = p[j * step]
                if is_nan(v) or (v > best if is_max else v < best):
                    best = v
                    best_j = j
                j += 1
            out[it.off[0] + i * it.ist[0]] = best_j
        iter_next(it)


def arg_reduce(str op, Buffer x, Py_ssize_t axis, bint keepdim, out_dtype):
    """Index (int64) of the first max/min along ``axis``; a NaN counts as the extreme."""
    cdef bint is_max = op == "argmax"
    cdef int d
    keep_shape = tuple([1 if d == axis else x.shape[d] for d in range(x.ndim)])
    out_shape = keep_shape if keepdim else tuple([x.shape[d] for d in range(x.ndim) if d != axis])
    cdef Buffer out = new_buffer(out_shape, out_dtype, INT64)
    if out.numel == 0:
        return out
    cdef NdIter it
    it.nops = 2
    it.off[0] = it.off[1] = 0
    read_ints(keep_shape, it.size)
    read_ints(c_strides(keep_shape), it.st[0])
    read_ints(x.strides, it.st[1])
    iter_prepare(&it, x.ndim)
    cdef Py_ssize_t n = x.shape[axis], step = x.strides[axis]
    cdef int64_t* po = <int64_t*>data_of(out)
    cdef char* px = data_of(x)
    cdef int code = x.code
    with nogil:
        if code == BOOL:
            _arg(po, <bool_t*>px, &it, n, step, is_max)
        elif code == INT32:
            _arg(po, <int32_t*>px, &it, n, step, is_max)
        elif code == INT64:
            _arg(po, <int64_t*>px, &it, n, step, is_max)
        elif code == FLOAT32:
            _arg(po, <float32_t*>px, &it, n, step, is_max)
        else:
            _arg(po, <float64_t*>px, &it, n, step, is_max)
    return out
