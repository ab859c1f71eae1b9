# Matrix products (OpenBLAS or the own GEMM), bfloat16 and float16 products, the GEMM ladder's
# rungs; included by _kernels.pyx (csrc/table.hpp's entries, through T).

# ---------------------------------------------------------------- matmul

cdef bint _blas_layout(Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, int* trans,
                       int* ld) noexcept:
    """A (rows x cols) operand as BLAS takes it: row-major as it lies, or its transpose,
    with the leading dimension; False when neither fits (a copy is needed)."""
    if cs == 1 and (rows == 1 or rs >= cols) and (rs if rows > 1 else cols) <= INT_MAX:
        trans[0], ld[0] = CblasNoTrans, (rs if rows > 1 else cols) or 1
        return True
    if rs == 1 and (cols == 1 or cs >= rows) and (cs if cols > 1 else rows) <= INT_MAX:
        trans[0], ld[0] = CblasTrans, (cs if cols > 1 else rows) or 1
        return True
    return False


cdef void _blas(int code, Py_ssize_t n, Py_ssize_t k, Py_ssize_t m, char* a, int ta, int lda,
                char* b, int tb, int ldb, char* c) noexcept nogil:
    if code == FLOAT32:
        scipy_cblas_sgemm(CblasRowMajor, ta, tb, <int>n, <int>m, <int>k, 1.0, <float*>a, lda,
                          <float*>b, ldb, 0.0, <float*>c, <int>m)
    else:
        scipy_cblas_dgemm(CblasRowMajor, ta, tb, <int>n, <int>m, <int>k, 1.0, <double*>a, lda,
                          <double*>b, ldb, 0.0, <double*>c, <int>m)


cdef void _own(int code, Py_ssize_t n, Py_ssize_t k, Py_ssize_t m, char* a, Py_ssize_t rsa,
               Py_ssize_t csa, char* b, Py_ssize_t rsb, Py_ssize_t csb, char* c, int nthreads) noexcept nogil:
    if code == FLOAT32:
        T.gemm_f32(n, m, k, <float*>a, rsa, csa, <float*>b, rsb, csb, <float*>c, m, 0, nthreads)
    else:
        T.gemm_f64(n, m, k, <double*>a, rsa, csa, <double*>b, rsb, csb, <double*>c, m, 0, nthreads)


cdef inline void _read_batch(Buffer out, Buffer a, Buffer b, Py_ssize_t* sizes, Py_ssize_t* sa,
                             Py_ssize_t* sb) noexcept:
    """What ``_batch_offsets`` reads: the output's dims and both operands' strides."""
    read_ints(out.shape, sizes)
    read_ints(a.strides, sa)
    read_ints(b.strides, sb)


cdef inline void _batch_offsets(Py_ssize_t t, int nd, Py_ssize_t* sizes, Py_ssize_t* sa, Py_ssize_t* sb,
                                Py_ssize_t* oa, Py_ssize_t* ob) noexcept nogil:
    """Where product ``t`` of a batch starts in A and in B (elements), its batch index read
    off the output's leading dims."""
    cdef Py_ssize_t rest = t, i
    oa[0] = ob[0] = 0
    for i in range(nd - 3, -1, -1):
        oa[0] += (rest % sizes[i]) * sa[i]
        ob[0] += (rest % sizes[i]) * sb[i]
        rest //= sizes[i]


def matmul(Buffer a, Buffer b, str gemm):
    """``a`` (..., n, k) @ ``b`` (..., k, m), float32 or float64, batch dims equal, with our
    GEMM (``gemm="own"``) or OpenBLAS (``"blas"``). BLAS gets strided and transposed
    operands as transpose flags and leading dimensions; only an operand with neither
    dim contiguous is copied first. Our GEMM reads any strides itself."""
    cdef int nd = a.ndim, code = a.code
    cdef Py_ssize_t n = a.shape[nd - 2], k = a.shape[nd - 1], m = b.shape[nd - 1]
    cdef Buffer out = new_buffer((*a.shape[:nd - 2], n, m), a.dtype, a.code)
    if out.numel == 0:
        return out
    cdef Py_ssize_t item = itemsize_of(code)
    if k == 0:
        memset(data_of(out), 0, out.numel * item)
        return out
    cdef bint blas = gemm == "blas" and n <= INT_MAX and m <= INT_MAX and k <= INT_MAX
    cdef int ta = 0, tb = 0, lda = 0, ldb = 0
    if blas and not _blas_layout(n, k, a.strides[nd - 2], a.strides[nd - 1], &ta, &lda):
        a = copy(a)
        _blas_layout(n, k, a.strides[nd - 2], a.strides[nd - 1], &ta, &lda)
    if blas and not _blas_layout(k, m, b.strides[nd - 2], b.strides[nd - 1], &tb, &ldb):
        b = copy(b)
        _blas_layout(k, m, b.strides[nd - 2], b.strides[nd - 1], &tb, &ldb)
    cdef Py_ssize_t rsa = a.strides[nd - 2], csa = a.strides[nd - 1]
    cdef Py_ssize_t rsb = b.strides[nd - 2], csb = b.strides[nd - 1]
    # the batch: one product after another, each on every thread
    cdef Py_ssize_t nb = out.numel // (n * m), t, oa, ob
    cdef Py_ssize_t sizes[MAXDIM]
    cdef Py_ssize_t sa[MAXDIM]
    cdef Py_ssize_t sb[MAXDIM]
    _read_batch(out, a, b, sizes, sa, sb)
    cdef char* pa = data_of(a)
    cdef char* pb = data_of(b)
    cdef char* pc = data_of(out)
    cdef int nthreads = NTHREADS
    with nogil:
        for t in range(nb):
            _batch_offsets(t, nd, sizes, sa, sb, &oa, &ob)
            if blas:
                _blas(code, n, k, m, pa + oa * item, ta, lda, pb + ob * item, tb, ldb, pc + t * n * m * item)
            else:
                _own(code, n, k, m, pa + oa * item, rsa, csa, pb + ob * item, rsb, csb,
                     pc + t * n * m * item, nthreads)
    return out


def has_bf16_tiles():
    """Whether bfloat16 products can run on AMX tiles here (the path's module and the CPU and
    OS)."""
    return bool(T.has_bf16_tiles())


def matmul_half(Buffer a, Buffer b, float32, bint tiles=True):
    """``a`` (..., n, k) @ ``b`` (..., k, m), both float16 or both bfloat16 with equal batch
    dims, into a new ``float32`` buffer, the operands read in their 2 bytes: bfloat16 on AMX
    tiles where ``tiles`` and the machine allow (csrc/amx.hpp), else our GEMM, which widens
    each value as it packs the panels (no float32 copy of either operand)."""
    cdef int nd = a.ndim, code = a.code
    cdef Py_ssize_t n = a.shape[nd - 2], k = a.shape[nd - 1], m = b.shape[nd - 1]
    cdef Buffer out = new_buffer((*a.shape[:nd - 2], n, m), float32, FLOAT32)
    cdef Py_ssize_t rsa = a.strides[nd - 2], csa = a.strides[nd - 1]
    cdef Py_ssize_t rsb = b.strides[nd - 2], csb = b.strides[nd - 1]
    cdef Py_ssize_t nb = out.numel // (n * m) if n * m else 0, t, oa, ob
    cdef Py_ssize_t sizes[MAXDIM]
    cdef Py_ssize_t sa[MAXDIM]
    cdef Py_ssize_t sb[MAXDIM]
    _read_batch(out, a, b, sizes, sa, sb)
    cdef uint16_t* pa = <uint16_t*>data_of(a)
    cdef uint16_t* pb = <uint16_t*>data_of(b)
    cdef float* pc = <float*>data_of(out)
    cdef int nthreads = NTHREADS
    with nogil:
        for t in range(nb):
            _batch_offsets(t, nd, sizes, sa, sb, &oa, &ob)
            T.gemm_half(code, tiles, n, m, k, pa + oa, rsa, csa, pb + ob, rsb, csb, pc + t * n * m, m, nthreads)
    return out


# ---------------------------------------------------------------- the GEMM ladder

def gemm_rung(int rung, Buffer a, Buffer b, int nthreads=1):
    """One rung of the GEMM ladder (1 naive ... 6 threads) on contiguous float32 2-D buffers."""
    if a.code != FLOAT32 or b.code != FLOAT32 or not (contiguous_layout(a) and contiguous_layout(b)):
        raise TypeError("gemm_rung: expected contiguous float32 matrices")
    cdef int64_t n = a.shape[0], k = a.shape[1], m = b.shape[1]
    cdef Buffer out = new_buffer((n, m), a.dtype, a.code)
    cdef int rc
    cdef float* pa = <float*>data_of(a)
    cdef float* pb = <float*>data_of(b)
    cdef float* pc = <float*>data_of(out)
    with nogil:
        rc = T.gemm_rung(rung, n, m, k, pa, pb, pc, nthreads)
    if rc != 0:
        raise ValueError(f"gemm_rung: no rung {rung} (1-6)")
    return out


def fma_peak_gflops(double seconds=0.2):
    """One core's float32 multiply-add rate on this path: independent chains in registers,
    no memory traffic (the ceiling every kernel of the path is held against)."""
    import time
    cdef int64_t iters = 1 << 16, flops
    cdef double best = 0.0, t0, dt
    flops = T.fma_peak(iters)  # warm-up
    while True:  # grow the loop until one run is long enough to time
        t0 = time.perf_counter()
        with nogil:
            flops = T.fma_peak(iters)
        dt = time.perf_counter() - t0
        if dt > seconds / 10:
            break
        iters *= 4
    for _ in range(5):
        t0 = time.perf_counter()
        with nogil:
            flops = T.fma_peak(iters)
        dt = time.perf_counter() - t0
        best = max(best, flops / dt / 1e9)
    return best


def gemm_blocking():
    """Our GEMM's register block and cache blocks, and the cache sizes they come from."""
    cdef int64_t v[8]
    T.gemm_blocking(v)
    return {"MR": v[0], "NR": v[1], "MC": v[2], "KC": v[3], "NC": v[4],
            "L1d_bytes": v[5], "L2_bytes": v[6], "L3_bytes": v[7]}
