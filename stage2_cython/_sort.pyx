"""Sorting and scans along one axis.

Both walk the input's rows along ``axis`` through its strides (the other dims are
iterated as in ``arg_reduce``), and write contiguous results of the input's shape.

``sort`` copies a row into a scratch array and merge-sorts its indices bottom-up: a
merge takes from the right run only when strictly before, so equal keys keep their
order (a stable sort, whichever the direction). NaN sorts after every number.

``scan`` keeps one running value per row: float sums, products and log-sum-exps
accumulate in double (as PyTorch's CPU kernels do), integer ones in uint64 so that
overflow wraps as two's complement instead of being undefined. max/min take the latest
index of a tie and stay at the first NaN's value (PyTorch's cummax/cummin).
"""
from libc.math cimport INFINITY, NAN, exp, fabs, log1p
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from stage2_cython._buffer cimport Buffer, c_strides, data_of, new_buffer, read_ints
from stage2_cython._iter cimport NdIter, iter_next, iter_prepare
from stage2_cython._types cimport (BOOL, FLOAT32, FLOAT64, INT32, INT64, any_t, bool_t, float32_t,
                                   float64_t, float_t, int32_t, int64_t, intlike_t, is_nan,
                                   uint64_t)

cdef enum ScanOp:
    SUM, PROD, MAX, MIN, LOGSUMEXP

cdef dict _SCANS = {"sum": SUM, "prod": PROD, "max": MAX, "min": MIN, "logsumexp": LOGSUMEXP}


cdef inline bint _before(any_t a, any_t b, bint desc) noexcept nogil:
    """Whether ``a`` sorts strictly before ``b`` (NaN is the largest value)."""
    if desc:
        return not is_nan(b) and (is_nan(a) or a > b)
    return not is_nan(a) and (is_nan(b) or a < b)


cdef void _merge_sort(any_t* key, int64_t* idx, int64_t* tmp, Py_ssize_t n, bint desc) noexcept nogil:
    cdef Py_ssize_t width = 1, lo, mid, hi, i, j, k
    cdef int64_t* src = idx
    cdef int64_t* dst = tmp
    cdef int64_t* t
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _before(key[src[j]], key[src[i]], desc):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
            lo += 2 * width
        t = src
        src = dst
        dst = t
        width *= 2
    if src != idx:
        memcpy(idx, src, n * sizeof(int64_t))


cdef void _sort(any_t* x, any_t* vals, int64_t* inds, NdIter* it, Py_ssize_t n, Py_ssize_t step,
                Py_ssize_t ostep, bint desc, any_t* row, int64_t* idx, int64_t* tmp) noexcept nogil:
    cdef Py_ssize_t r, i, j
    cdef any_t* p
    for r in range(it.rows):
        for i in range(it.inner):
            p = x + it.off[2] + i * it.ist[2]
            for j in range(n):
                row[j] = p[j * step]
                idx[j] = j
            _merge_sort(row, idx, tmp, n, desc)
            for j in range(n):
                vals[it.off[0] + i * it.ist[0] + j * ostep] = row[idx[j]]
                inds[it.off[1] + i * it.ist[1] + j * ostep] = idx[j]
        iter_next(it)


cdef int _setup(NdIter* it, Buffer x, Py_ssize_t axis) except -1:
    """Rows along ``axis``: operands 0 and 1 are the contiguous outputs, 2 the input."""
    keep = tuple([1 if d == axis else x.shape[d] for d in range(x.ndim)])
    it.nops = 3
    it.off[0] = it.off[1] = 0
    it.off[2] = x.offset
    read_ints(keep, it.size)
    read_ints(c_strides(x.shape), it.st[0])
    read_ints(c_strides(x.shape), it.st[1])
    read_ints(x.strides, it.st[2])
    iter_prepare(it, x.ndim)
    return 0


def sort(Buffer x, Py_ssize_t axis, bint descending, index_dtype):
    """(values, int64 indices) of ``x`` sorted along ``axis``, stably."""
    cdef Buffer vals = new_buffer(x.shape, x.dtype, x.code)
    cdef Buffer inds = new_buffer(x.shape, index_dtype, INT64)
    cdef Py_ssize_t n = x.shape[axis]
    if vals.numel == 0:
        return vals, inds
    cdef NdIter it
    _setup(&it, x, axis)
    cdef Py_ssize_t step = x.strides[axis], ostep = c_strides(x.shape)[axis]
    cdef char* row = <char*>malloc(n * 8)
    cdef int64_t* idx = <int64_t*>malloc(n * sizeof(int64_t))
    cdef int64_t* tmp = <int64_t*>malloc(n * sizeof(int64_t))
    cdef char* px = data_of(x)
    cdef char* pv = data_of(vals)
    cdef int64_t* pi = <int64_t*>data_of(inds)
    cdef int code = x.code
    try:
        if row == NULL or idx == NULL or tmp == NULL:
            raise MemoryError(f"sort: cannot allocate scratch rows of {n} elements")
        with nogil:
            if code == BOOL:
                _sort(<bool_t*>px, <bool_t*>pv, pi, &it, n, step, ostep, descending, <bool_t*>row,
                      idx, tmp)
            elif code == INT32:
                _sort(<int32_t*>px, <int32_t*>pv, pi, &it, n, step, ostep, descending, <int32_t*>row,
                      idx, tmp)
            elif code == INT64:
                _sort(<int64_t*>px, <int64_t*>pv, pi, &it, n, step, ostep, descending, <int64_t*>row,
                      idx, tmp)
            elif code == FLOAT32:
                _sort(<float32_t*>px, <float32_t*>pv, pi, &it, n, step, ostep, descending, <float32_t*>row,
                      idx, tmp)
            else:
                _sort(<float64_t*>px, <float64_t*>pv, pi, &it, n, step, ostep, descending, <float64_t*>row,
                      idx, tmp)
    finally:
        free(row)
        free(idx)
        free(tmp)
    return vals, inds


cdef inline double _logaddexp(double a, double b) noexcept nogil:
    cdef double m = a if a > b else b
    if a != a or b != b:
        return NAN
    if m == INFINITY or m == -INFINITY:
        return m  # both -inf stays -inf (the formula would give nan)
    return m + log1p(exp(-fabs(a - b)))


cdef void _scan_extreme(any_t* x, any_t* vals, int64_t* inds, NdIter* it, Py_ssize_t n,
                        Py_ssize_t step, Py_ssize_t ostep, bint is_max) noexcept nogil:
    cdef Py_ssize_t r, i, j, bj
    cdef any_t* p
    cdef any_t best, v
    for r in range(it.rows):
        for i in range(it.inner):
            p = x + it.off[2] + i * it.ist[2]
            best = p[0]
            bj = 0
            for j in range(n):
                v = p[j * step]
                if is_nan(v) or (not is_nan(best) and (v >= best if is_max else v <= best)):
                    best = v
                    bj = j
                vals[it.off[0] + i * it.ist[0] + j * ostep] = best
                inds[it.off[1] + i * it.ist[1] + j * ostep] = bj
        iter_next(it)


cdef void _scan_float(float_t* x, float_t* vals, NdIter* it, Py_ssize_t n, Py_ssize_t step,
                      Py_ssize_t ostep, int op) noexcept nogil:
    cdef Py_ssize_t r, i, j
    cdef float_t* p
    cdef double acc, v
    for r in range(it.rows):
        for i in range(it.inner):
            p = x + it.off[2] + i * it.ist[2]
            acc = <double>p[0]
            for j in range(n):
                if j:
                    v = <double>p[j * step]
                    if op == SUM:
                        acc = acc + v
                    elif op == PROD:
                        acc = acc * v
                    else:
                        acc = _logaddexp(acc, v)
                vals[it.off[0] + i * it.ist[0] + j * ostep] = <float_t>acc
        iter_next(it)


cdef void _scan_int(intlike_t* x, intlike_t* vals, NdIter* it, Py_ssize_t n, Py_ssize_t step,
                    Py_ssize_t ostep, int op) noexcept nogil:
    cdef Py_ssize_t r, i, j
    cdef intlike_t* p
    cdef uint64_t acc, v
    for r in range(it.rows):
        for i in range(it.inner):
            p = x + it.off[2] + i * it.ist[2]
            acc = <uint64_t><int64_t>p[0]
            for j in range(n):
                if j:
                    v = <uint64_t><int64_t>p[j * step]
                    acc = acc + v if op == SUM else acc * v
                if intlike_t is bool_t:
                    vals[it.off[0] + i * it.ist[0] + j * ostep] = acc != 0
                else:
                    vals[it.off[0] + i * it.ist[0] + j * ostep] = <intlike_t><int64_t>acc
        iter_next(it)


def scan(str op, Buffer x, Py_ssize_t axis, index_dtype):
    """Running ``op`` along ``axis``: (values, int64 indices for max/min, else None)."""
    cdef int sop = _SCANS[op]
    cdef bint extreme = sop == MAX or sop == MIN
    cdef Buffer vals = new_buffer(x.shape, x.dtype, x.code)
    cdef Buffer inds = new_buffer(x.shape, index_dtype, INT64) if extreme else None
    if sop == LOGSUMEXP and x.code != FLOAT32 and x.code != FLOAT64:
        raise TypeError(f"logcumsumexp: expected a floating point tensor, got {x.dtype}")
    if vals.numel == 0:
        return vals, inds
    cdef NdIter it
    _setup(&it, x, axis)
    cdef Py_ssize_t n = x.shape[axis], step = x.strides[axis], ostep = c_strides(x.shape)[axis]
    cdef char* px = data_of(x)
    cdef char* pv = data_of(vals)
    cdef int64_t* pi = <int64_t*>data_of(inds) if extreme else NULL
    cdef int code = x.code
    with nogil:
        if extreme:
            if code == BOOL:
                _scan_extreme(<bool_t*>px, <bool_t*>pv, pi, &it, n, step, ostep, sop == MAX)
            elif code == INT32:
                _scan_extreme(<int32_t*>px, <int32_t*>pv, pi, &it, n, step, ostep, sop == MAX)
            elif code == INT64:
                _scan_extreme(<int64_t*>px, <int64_t*>pv, pi, &it, n, step, ostep, sop == MAX)
            elif code == FLOAT32:
                _scan_extreme(<float32_t*>px, <float32_t*>pv, pi, &it, n, step, ostep, sop == MAX)
            else:
                _scan_extreme(<float64_t*>px, <float64_t*>pv, pi, &it, n, step, ostep, sop == MAX)
        elif code == FLOAT32:
            _scan_float(<float32_t*>px, <float32_t*>pv, &it, n, step, ostep, sop)
        elif code == FLOAT64:
            _scan_float(<float64_t*>px, <float64_t*>pv, &it, n, step, ostep, sop)
        elif code == BOOL:
            _scan_int(<bool_t*>px, <bool_t*>pv, &it, n, step, ostep, sop)
        elif code == INT32:
            _scan_int(<int32_t*>px, <int32_t*>pv, &it, n, step, ostep, sop)
        else:
            _scan_int(<int64_t*>px, <int64_t*>pv, &it, n, step, ostep, sop)
    return vals, inds
