# Strided iteration shared by the kernels: up to four operands walked in lockstep over
# one shape. The caller fills ``size``, ``st`` (element strides per operand, 0 where an
# operand is broadcast) and ``off`` (each operand's start), then calls ``iter_prepare``,
# which drops size-1 dims and merges every run of dims that all operands step through
# as one (a contiguous tensor becomes a single row). A kernel then handles one row at a
# time -- ``inner`` elements, operand k at ``off[k]`` stepping by ``ist[k]`` -- and
# calls ``iter_next`` to move to the next row: only the innermost loop is per element.
from stage2_cython._types cimport MAXDIM


cdef struct NdIter:
    int nops
    int ndim  # dims of the outer (row) loop, after merging
    Py_ssize_t rows
    Py_ssize_t inner
    Py_ssize_t ist[4]
    Py_ssize_t off[4]
    Py_ssize_t size[MAXDIM]
    Py_ssize_t idx[MAXDIM]
    Py_ssize_t st[4][MAXDIM]


cdef inline void iter_prepare(NdIter* it, int ndim) noexcept nogil:
    cdef int d, k, nd = 0
    cdef bint merge
    cdef Py_ssize_t numel = 1
    for d in range(ndim):
        numel *= it.size[d]
    it.rows = 0
    it.inner = 0
    for k in range(it.nops):
        it.ist[k] = 0
    it.ndim = 0
    if numel == 0:
        return
    for d in range(ndim):
        if it.size[d] == 1:
            continue
        merge = nd > 0
        k = 0
        while merge and k < it.nops:
            merge = it.st[k][nd - 1] == it.st[k][d] * it.size[d]
            k += 1
        if merge:
            it.size[nd - 1] *= it.size[d]
            for k in range(it.nops):
                it.st[k][nd - 1] = it.st[k][d]
        else:
            it.size[nd] = it.size[d]
            for k in range(it.nops):
                it.st[k][nd] = it.st[k][d]
            nd += 1
    if nd == 0:  # a single element
        it.inner = 1
        it.rows = 1
        return
    it.inner = it.size[nd - 1]
    for k in range(it.nops):
        it.ist[k] = it.st[k][nd - 1]
    it.ndim = nd - 1
    it.rows = numel // it.inner
    for d in range(it.ndim):
        it.idx[d] = 0


cdef inline void iter_next(NdIter* it) noexcept nogil:
    """Advance ``off`` to the start of the next row (row-major over the outer dims)."""
    cdef int d, k
    for d in range(it.ndim - 1, -1, -1):
        it.idx[d] += 1
        if it.idx[d] < it.size[d]:
            for k in range(it.nops):
                it.off[k] += it.st[k][d]
            return
        it.idx[d] = 0
        for k in range(it.nops):
            it.off[k] -= it.st[k][d] * (it.size[d] - 1)
