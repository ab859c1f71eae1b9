"""Batched matmul: a cache-blocked GEMM in plain typed loops (no BLAS, no intrinsics).

The textbook triple loop in i-j-k order reads a column of B with stride m: one cache
line per multiply-add. Reordered to i-k-j, the innermost loop is ``C[i, :] += A[i, k] *
B[k, :]``, unit stride on both, which the compiler vectorises. Blocking then keeps the
working set in cache (the GotoBLAS scheme):

- B is copied, KC rows x NC columns at a time, into panels NR columns wide, contiguous
  in the order the kernel reads them (this also makes a transposed B, ``x @ w.T``,
  cost nothing extra: packing reads through any strides);
- A is copied MC rows x KC at a time into panels MR rows tall;
- a micro-kernel multiplies one MR x KC panel of A by one KC x NR panel of B into an
  MR x NR block of C held in local variables: for each k it loads NR values of B and MR
  of A and does MR * NR multiply-adds, with no loads or stores of C in the loop.

The block sizes fit the caches of a current x86 or ARM core: a B panel (KC x NR) stays in
L1, the packed A block (MC x KC) in L2, the packed B block (KC x NC) in L2/L3.
Blocked products accumulate in the operands' dtype, as BLAS does (integers wrap). Tiny
products (under 4096 multiply-adds) skip packing, which would cost more than the product,
and compute each output as stage 0 does: a dot product accumulated in double, rounded
once. Their results then equal stage 0's, which keeps small models (and optimizer
comparisons run on them) on the reference's rounding.
"""
from libc.string cimport memset

from stage2_cython._buffer cimport Buffer, data_of, new_buffer, read_ints
from stage2_cython._iter cimport NdIter, iter_next, iter_prepare
from stage2_cython._storage cimport Storage, new_storage
from stage2_cython._types cimport (BOOL, FLOAT32, FLOAT64, INT32, float32_t, float64_t,
                                   int32_t, int64_t, num_t)

cdef enum:
    MR = 4  # rows of the register block
    NR = 8  # columns of the register block
    KC = 256
    MC = 64  # a multiple of MR
    NC = 512  # a multiple of NR
    SMALL = 4096  # multiply-adds below which packing costs more than it saves


cdef inline Py_ssize_t _min(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    return a if a < b else b


cdef void _pack_a(num_t* dst, num_t* a, Py_ssize_t si, Py_ssize_t sk, Py_ssize_t mc,
                  Py_ssize_t kc) noexcept nogil:
    """Rows [0, mc) of A as panels of MR rows: dst[panel][k][r]; rows past mc are 0."""
    cdef Py_ssize_t p = 0, k, r
    while p < mc:
        for k in range(kc):
            for r in range(MR):
                dst[r] = a[(p + r) * si + k * sk] if p + r < mc else 0
            dst += MR
        p += MR


cdef void _pack_b(num_t* dst, num_t* b, Py_ssize_t sk, Py_ssize_t sj, Py_ssize_t kc,
                  Py_ssize_t nc) noexcept nogil:
    """Columns [0, nc) of B as panels of NR columns: dst[panel][k][c]; past nc are 0."""
    cdef Py_ssize_t q = 0, k, c
    while q < nc:
        for k in range(kc):
            for c in range(NR):
                dst[c] = b[k * sk + (q + c) * sj] if q + c < nc else 0
            dst += NR
        q += NR


cdef void _micro(Py_ssize_t kc, num_t* ap, num_t* bp, num_t* c, Py_ssize_t ldc, Py_ssize_t mr,
                 Py_ssize_t nr) noexcept nogil:
    """C[:mr, :nr] += Apanel @ Bpanel, the MR x NR block held in ``acc``."""
    cdef num_t acc[MR][NR]
    cdef num_t av
    cdef Py_ssize_t p, r, j
    for r in range(MR):
        for j in range(NR):
            acc[r][j] = 0
    for p in range(kc):
        for r in range(MR):
            av = ap[r]
            for j in range(NR):
                acc[r][j] += av * bp[j]
        ap += MR
        bp += NR
    for r in range(mr):
        for j in range(nr):
            c[r * ldc + j] += acc[r][j]


cdef void _gemm(Py_ssize_t n, Py_ssize_t k, Py_ssize_t m, num_t* a, Py_ssize_t sai, Py_ssize_t sak,
                num_t* b, Py_ssize_t sbk, Py_ssize_t sbj, num_t* c, num_t* abuf,
                num_t* bbuf) noexcept nogil:
    """C (n x m, contiguous, zeroed) += A (n x k) @ B (k x m), A and B through strides."""
    cdef Py_ssize_t jc, pc, ic, jr, ir, nc, kc, mc
    # (while loops: Cython turns range() into a C loop only for a literal step)
    jc = 0
    while jc < m:
        nc = _min(NC, m - jc)
        pc = 0
        while pc < k:
            kc = _min(KC, k - pc)
            _pack_b(bbuf, b + pc * sbk + jc * sbj, sbk, sbj, kc, nc)
            ic = 0
            while ic < n:
                mc = _min(MC, n - ic)
                _pack_a(abuf, a + ic * sai + pc * sak, sai, sak, mc, kc)
                jr = 0
                while jr < nc:
                    ir = 0
                    while ir < mc:
                        _micro(kc, abuf + ir * kc, bbuf + jr * kc, c + (ic + ir) * m + jc + jr, m,
                               _min(MR, mc - ir), _min(NR, nc - jr))
                        ir += MR
                    jr += NR
                ic += MC
            pc += KC
        jc += NC


cdef void _small(Py_ssize_t n, Py_ssize_t k, Py_ssize_t m, num_t* a, Py_ssize_t sai, Py_ssize_t sak,
                 num_t* b, Py_ssize_t sbk, Py_ssize_t sbj, num_t* c) noexcept nogil:
    """C = A @ B for tiny products: one dot product per output, in double (int64 for
    integers), as stage 0 computes it: each float32 product is exact and each output is
    rounded once."""
    cdef Py_ssize_t i, j, p
    cdef double s
    cdef int64_t t
    for i in range(n):
        for j in range(m):
            if num_t is float32_t or num_t is float64_t:
                s = 0.0
                for p in range(k):
                    s += <double>a[i * sai + p * sak] * <double>b[p * sbk + j * sbj]
                c[i * m + j] = <num_t>s
            else:
                t = 0
                for p in range(k):
                    t += <int64_t>a[i * sai + p * sak] * <int64_t>b[p * sbk + j * sbj]
                c[i * m + j] = <num_t>t


cdef void _batched(num_t* a, num_t* b, num_t* c, NdIter* it, Py_ssize_t n, Py_ssize_t k,
                   Py_ssize_t m, Py_ssize_t sai, Py_ssize_t sak, Py_ssize_t sbk, Py_ssize_t sbj,
                   num_t* abuf, num_t* bbuf) noexcept nogil:
    cdef Py_ssize_t r, i
    cdef bint tiny = n * k * m < SMALL
    for r in range(it.rows):
        for i in range(it.inner):
            if tiny:
                _small(n, k, m, a + it.off[1] + i * it.ist[1], sai, sak,
                       b + it.off[2] + i * it.ist[2], sbk, sbj, c + it.off[0] + i * it.ist[0])
            else:
                _gemm(n, k, m, a + it.off[1] + i * it.ist[1], sai, sak,
                      b + it.off[2] + i * it.ist[2], sbk, sbj,
                      c + it.off[0] + i * it.ist[0], abuf, bbuf)
        iter_next(it)


def matmul(Buffer a, Buffer b):
    """``a`` (..., n, k) @ ``b`` (..., k, m); the batch dims of both are equal."""
    if a.code != b.code or a.code == BOOL:
        raise TypeError(f"matmul: expected two numeric operands of one dtype, got {a.dtype} and {b.dtype}")
    cdef int nd = a.ndim
    cdef Py_ssize_t n = a.shape[nd - 2], k = a.shape[nd - 1], m = b.shape[nd - 1]
    cdef Buffer out = new_buffer((*a.shape[:nd - 2], n, m), a.dtype, a.code)
    if out.numel == 0:
        return out
    memset(data_of(out), 0, out.nbytes())
    if k == 0:
        return out
    cdef NdIter it  # over the batch dims
    it.nops = 3
    it.off[0] = it.off[1] = it.off[2] = 0
    read_ints(out.shape, it.size)
    read_ints(out.strides, it.st[0])
    read_ints(a.strides, it.st[1])
    read_ints(b.strides, it.st[2])
    iter_prepare(&it, nd - 2)
    cdef Py_ssize_t sai = a.strides[nd - 2], sak = a.strides[nd - 1]
    cdef Py_ssize_t sbk = b.strides[nd - 2], sbj = b.strides[nd - 1]
    # packing space, from the pool: the same sizes come back every training step
    cdef Py_ssize_t kc = _min(KC, k)
    cdef Py_ssize_t asize = _min(MC, (n + MR - 1) // MR * MR) * kc
    cdef Py_ssize_t bsize = _min(NC, (m + NR - 1) // NR * NR) * kc
    cdef Storage space = new_storage(asize + bsize, a.code)
    cdef char* abuf = space.ptr
    cdef char* bbuf = space.ptr + asize * space.stride
    cdef char* pa = data_of(a)
    cdef char* pb = data_of(b)
    cdef char* pc = data_of(out)
    cdef int code = a.code
    with nogil:
        if code == FLOAT32:
            _batched(<float32_t*>pa, <float32_t*>pb, <float32_t*>pc, &it, n, k, m, sai, sak, sbk, sbj,
                     <float32_t*>abuf, <float32_t*>bbuf)
        elif code == FLOAT64:
            _batched(<float64_t*>pa, <float64_t*>pb, <float64_t*>pc, &it, n, k, m, sai, sak, sbk, sbj,
                     <float64_t*>abuf, <float64_t*>bbuf)
        elif code == INT32:
            _batched(<int32_t*>pa, <int32_t*>pb, <int32_t*>pc, &it, n, k, m, sai, sak, sbk, sbj,
                     <int32_t*>abuf, <int32_t*>bbuf)
        else:
            _batched(<int64_t*>pa, <int64_t*>pb, <int64_t*>pc, &it, n, k, m, sai, sak, sbk, sbj,
                     <int64_t*>abuf, <int64_t*>bbuf)
    return out
