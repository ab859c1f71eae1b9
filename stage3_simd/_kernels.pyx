"""Bindings to stage 3's compiled kernels: the ISA dispatch, threads, and the primitives
that the backend routes here.

Design: the kernels live in one extension module per ISA (``_isa_sse2``, ``_isa_avx2``,
``_isa_avx512``; see csrc/kernels.h). At import this module detects what the CPU and OS
can run (cpuid and xgetbv, csrc/cpu.h), takes the best path, or a lower one named by
``STAGEGRAD_SIMD``, imports that module alone and keeps its table of function pointers.
Every function here takes stage 2's Buffers (stage 3 keeps stage 2's storage), fills the
operand description, releases the GIL and calls through the table.

Threads: one setting (``set_num_threads``) for the kernels' OpenMP regions and for
OpenBLAS. Each kernel is given the count explicitly, so a call from any Python thread
obeys it, and a threaded GEMM never runs inside a threaded loop (batched products loop
over the batch on one thread and thread each product).
"""
import importlib
import os

from cpython.dict cimport PyDict_GetItem
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport int64_t, uint16_t
from libc.string cimport memset

from stage2_cython._buffer cimport (Buffer, c_strides, code_of, contiguous_layout, copy, data_of,
                                    load_operand, new_buffer, read_ints)
from stage2_cython._types cimport (BFLOAT16, BOOL, FLOAT16, FLOAT32, FLOAT64, INT64, MAXDIM, is_float_code,
                                   itemsize_of)

from stage2_cython._buffer import broadcast_shapes


cdef extern from "csrc/kernels.h" nogil:
    enum:
        SG3_MAXDIM
        SG3_OK
        SG3_ENONFINITE
        SG3_SUM
        SG3_PROD
        SG3_MAX
        SG3_MIN
        SG3_ARGMAX
        SG3_ARGMIN
        SG3_NEG
        SG3_ABS
        SG3_SIGN
        SG3_RELU
        SG3_FLOOR
        SG3_CEIL
        SG3_ROUND
        SG3_EXP
        SG3_LOG
        SG3_LOG1P
        SG3_SQRT
        SG3_RSQRT
        SG3_SIN
        SG3_COS
        SG3_TANH
        SG3_SIGMOID
        SG3_SILU
        SG3_GELU
        SG3_ERF
        SG3_RECIPROCAL
        SG3_ADD
        SG3_SUB
        SG3_MUL
        SG3_DIV
        SG3_MAXIMUM
        SG3_MINIMUM
        SG3_POW
        SG3_EQ
        SG3_NE
        SG3_LT
        SG3_LE
        SG3_GT
        SG3_GE
    ctypedef struct sg3_operands:
        int nops
        int ndim
        int64_t shape[SG3_MAXDIM]
        char* data[4]
        int64_t strides[4][SG3_MAXDIM]
    ctypedef struct sg3_adam:
        double lr, weight_decay, lerp_w, lerp_w1, beta2, eps
        int decoupled, maximize
    ctypedef struct sg3_sgd:
        double lr, weight_decay, momentum, dampening
        int nesterov, maximize
    ctypedef struct sg3_rmsprop:
        double lr, weight_decay, alpha, eps, momentum, lerp_w, lerp_w1
        int maximize
    ctypedef struct sg3_attention:
        int64_t n, l, s, e, ev, group
        double scale
        int causal, mask_kind, mask_shared
    ctypedef struct sg3_recurrent:
        int mode, reverse
        int64_t steps, batch, hidden, proj
        const int64_t* batch_sizes
    ctypedef struct sg3_conv:
        int64_t n, c, h, w, o, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw
        int algo
    ctypedef struct sg3_pool:
        int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, out_channels
    ctypedef struct sg3_batch_norm:
        int64_t n, c, s
        double momentum, eps
        int training, act
    ctypedef struct sg3_table:
        const char* isa
        int vector_bytes
        int (*unary)(int op, int dtype, const sg3_operands* o, int nthreads) noexcept nogil
        int (*binary)(int op, int dtype, const sg3_operands* o, int nthreads) noexcept nogil
        int (*where)(int dtype, const sg3_operands* o, int nthreads) noexcept nogil
        int (*cast)(int src, int dst, const sg3_operands* o, int nthreads) noexcept nogil
        int (*reduce)(int op, int dtype, const sg3_operands* o, int axis, int nthreads) noexcept nogil
        void (*gemm_f32)(int64_t m, int64_t n, int64_t k, const float* a, int64_t rsa, int64_t csa,
                         const float* b, int64_t rsb, int64_t csb, float* c, int64_t ldc,
                         int accumulate, int nthreads) noexcept nogil
        void (*gemm_f64)(int64_t m, int64_t n, int64_t k, const double* a, int64_t rsa, int64_t csa,
                         const double* b, int64_t rsb, int64_t csb, double* c, int64_t ldc,
                         int accumulate, int nthreads) noexcept nogil
        int (*gemm_rung)(int rung, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         float* c, int nthreads) noexcept nogil
        void (*gemm_blocking)(int64_t out[8]) noexcept nogil
        int64_t (*fma_peak)(int64_t iters) noexcept nogil
        int (*bias_act)(int dtype, char* y, const char* x, const char* bias, char* pre, int64_t rows,
                        int64_t cols, int act, int nthreads) noexcept nogil
        int (*act_backward)(int dtype, char* gx, char* gb, const char* g, const char* saved, int64_t rows,
                            int64_t cols, int act, int nthreads) noexcept nogil
        int (*softmax)(int dtype, char* y, const char* x, int64_t rows, int64_t cols, int log,
                       int nthreads) noexcept nogil
        int (*softmax_backward)(int dtype, char* gx, const char* g, const char* y, int64_t rows, int64_t cols,
                                int log, int nthreads) noexcept nogil
        int64_t (*cross_entropy)(int dtype, char* loss, char* wrow, char* probs, const char* x,
                                 const int64_t* target, const char* weight, int64_t ignore, double smoothing,
                                 int64_t rows, int64_t cols, int nthreads) noexcept nogil
        int (*cross_entropy_backward)(int dtype, char* gx, const char* probs, const int64_t* target,
                                      const char* weight, const char* scale, int64_t ignore, double smoothing,
                                      int64_t rows, int64_t cols, int nthreads) noexcept nogil
        int (*layer_norm)(int dtype, char* y, char* mean, char* rstd, const char* x, const char* w,
                          const char* b, int64_t rows, int64_t cols, double eps, int nthreads) noexcept nogil
        int (*layer_norm_backward)(int dtype, char* gx, double* gw, double* gb, const char* g, const char* x,
                                   const char* mean, const char* rstd, const char* w, int64_t rows,
                                   int64_t cols, int nthreads) noexcept nogil
        int (*adam)(int dtype, int count, char** p, char** g, char** m, char** v, char** vmax,
                    const int64_t* n, const double* step_size, const double* bias_correction2_sqrt,
                    const sg3_adam* h, int nthreads) noexcept nogil
        int (*sgd)(int dtype, int count, char** p, char** g, char** buf, const int64_t* n,
                   const unsigned char* first, const sg3_sgd* h, int nthreads) noexcept nogil
        int (*rmsprop)(int dtype, int count, char** p, char** g, char** sq, char** gavg, char** buf,
                       const int64_t* n, const sg3_rmsprop* h, int nthreads) noexcept nogil
        int (*conv2d)(int dtype, const sg3_conv* q, char* y, const char* x, const char* w, const char* bias,
                      int nthreads) noexcept nogil
        int (*conv2d_backward_input)(int dtype, const sg3_conv* q, char* gx, const char* g, const char* w,
                                     int nthreads) noexcept nogil
        int (*conv2d_backward_weight)(int dtype, const sg3_conv* q, char* gw, const char* g, const char* x,
                                      int nthreads) noexcept nogil
        int (*depthwise)(int dtype, const sg3_pool* q, int64_t mult, char* y, const char* x, const char* w,
                         const char* bias, int nthreads) noexcept nogil
        int (*depthwise_backward_input)(int dtype, const sg3_pool* q, int64_t mult, char* gx, const char* g,
                                        const char* w, int nthreads) noexcept nogil
        int (*depthwise_backward_weight)(int dtype, const sg3_pool* q, int64_t mult, char* gw, const char* g,
                                         const char* x, int nthreads) noexcept nogil
        int (*max_pool2d)(int dtype, const sg3_pool* q, char* y, int64_t* index, const char* x,
                          int nthreads) noexcept nogil
        int (*max_pool2d_backward)(int dtype, const sg3_pool* q, char* gx, const char* g, const int64_t* index,
                                   int nthreads) noexcept nogil
        int (*avg_pool2d)(int dtype, const sg3_pool* q, char* y, const char* x, int include_pad, double divisor,
                          int nthreads) noexcept nogil
        int (*avg_pool2d_backward)(int dtype, const sg3_pool* q, char* gx, const char* g, int include_pad,
                                   double divisor, int nthreads) noexcept nogil
        int (*batch_norm)(int dtype, const sg3_batch_norm* q, char* y, char* mean, char* rstd, const char* x,
                          const char* w, const char* b, char* running_mean, char* running_var,
                          int nthreads) noexcept nogil
        int (*batch_norm_backward)(int dtype, const sg3_batch_norm* q, char* gx, char* gw, char* gb,
                                   const char* g, const char* x, const char* y, const char* mean,
                                   const char* rstd, const char* w, int nthreads) noexcept nogil
        int (*lstm_cell)(int dtype, char* h, char* c_next, char* act, char* tc, const char* pre, const char* c,
                         int64_t rows, int64_t hidden, int nthreads) noexcept nogil
        int (*lstm_cell_backward)(int dtype, char* gpre, char* gc, const char* gh, const char* gc_next,
                                  const char* act, const char* tc, const char* c, int64_t rows, int64_t hidden,
                                  int nthreads) noexcept nogil
        int (*recurrent)(int dtype, const sg3_recurrent* q, char* out, char* h, char* c, char* saved, char* hprev,
                         const char* gi, const char* w, const char* b, const char* w_hr, int nthreads) noexcept nogil
        int (*recurrent_backward)(int dtype, const sg3_recurrent* q, char* ggi, char* gh, char* gc, char* gw,
                                  char* gb, char* gw_hr, char* gp, char* gproj, const char* gout, const char* saved,
                                  const char* hprev, const char* w, const char* w_hr, int nthreads) noexcept nogil
        int (*attention)(int dtype, const sg3_attention* a, char* out, char* lse, const char* q, const char* k,
                         const char* v, const void* mask, int nthreads) noexcept nogil
        int (*attention_backward)(int dtype, const sg3_attention* a, char* dq, char* dk, char* dv, const char* g,
                                  const char* q, const char* k, const char* v, const char* out, const char* lse,
                                  const void* mask, int nthreads) noexcept nogil
        int (*gemm_half)(int dtype, int tiles, int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t rsa,
                         int64_t csa, const uint16_t* b, int64_t rsb, int64_t csb, float* c, int64_t ldc,
                         int nthreads) noexcept nogil
        int (*has_bf16_tiles)() noexcept nogil

cdef extern from "csrc/cpu.h" nogil:
    ctypedef struct sg3_cpu:
        int sse2, avx, fma, f16c, avx2, avx512f, avx512dq, avx512bw, avx512vl, os_ymm, os_zmm, neon
    sg3_cpu sg3_detect_cpu()
    int sg3_has_avx2(sg3_cpu c)
    int sg3_has_avx512(sg3_cpu c)

cdef extern from "cblas.h" nogil:
    enum:
        CblasRowMajor
        CblasNoTrans
        CblasTrans
    void scipy_cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                           int lda, const float* b, int ldb, float beta, float* c, int ldc)
    void scipy_cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a,
                           int lda, const double* b, int ldb, double beta, double* c, int ldc)
    void scipy_openblas_set_num_threads(int n)
    char* scipy_openblas_get_corename()

# each op's name to the C enum member of that name (kernels.h's sg3_unary and sg3_binary)
UNARY_OPS = {
    "neg": SG3_NEG, "abs": SG3_ABS, "sign": SG3_SIGN, "relu": SG3_RELU, "floor": SG3_FLOOR,
    "ceil": SG3_CEIL, "round": SG3_ROUND, "exp": SG3_EXP, "log": SG3_LOG, "log1p": SG3_LOG1P,
    "sqrt": SG3_SQRT, "rsqrt": SG3_RSQRT, "sin": SG3_SIN, "cos": SG3_COS, "tanh": SG3_TANH,
    "sigmoid": SG3_SIGMOID, "silu": SG3_SILU, "gelu": SG3_GELU, "erf": SG3_ERF,
    "reciprocal": SG3_RECIPROCAL}
BINARY_OPS = {
    "add": SG3_ADD, "sub": SG3_SUB, "mul": SG3_MUL, "div": SG3_DIV, "maximum": SG3_MAXIMUM,
    "minimum": SG3_MINIMUM, "pow": SG3_POW, "eq": SG3_EQ, "ne": SG3_NE, "lt": SG3_LT, "le": SG3_LE,
    "gt": SG3_GT, "ge": SG3_GE}
COMPARISONS = frozenset(["eq", "ne", "lt", "le", "gt", "ge"])
INT_UNARY = frozenset(["neg", "abs", "sign", "relu"])  # compiled for the integers too
INT_BINARY = frozenset(["add", "sub", "mul", "maximum", "minimum"]) | COMPARISONS
# the same sets as ranges of codes, for the entry points' checks: kernels.h orders each enum so
# (the integer unary ops first, the comparisons last, add to minimum before pow); checked here
cdef enum:
    LAST_INT_UNARY = SG3_RELU
    DIV = SG3_DIV
    POW = SG3_POW
    FIRST_COMPARISON = SG3_EQ
assert {o for o, c in UNARY_OPS.items() if c <= LAST_INT_UNARY} == INT_UNARY
assert {o for o, c in BINARY_OPS.items() if c >= FIRST_COMPARISON} == COMPARISONS
assert {o for o, c in BINARY_OPS.items() if c < POW} == {"add", "sub", "mul", "div", "maximum", "minimum"}
REDUCE_OPS = {"sum": SG3_SUM, "prod": SG3_PROD, "max": SG3_MAX, "min": SG3_MIN}
PATHS = ("sse2", "avx2", "avx512")  # x86-64, lowest first
INT_MAX = 2**31 - 1

# ---------------------------------------------------------------- the ISA path

cdef const sg3_table* T = NULL
cdef sg3_cpu CPU = sg3_detect_cpu()
cdef int NTHREADS = 1
_module = None
_forced = None


def supported_paths():
    """The SIMD paths this CPU and OS can run, lowest first."""
    if CPU.neon:
        return ["neon"]
    paths = ["sse2"] if CPU.sse2 else []
    if sg3_has_avx2(CPU):
        paths.append("avx2")
    if sg3_has_avx512(CPU):
        paths.append("avx512")
    return paths


def set_path(str path):
    """Send every kernel to the module of ``path`` (one of ``supported_paths()``) from now
    on; returns the path in use before. For measuring one kernel on each ISA in one
    process; ``STAGEGRAD_SIMD`` chooses at import."""
    global T, _module
    supported = supported_paths()
    if path not in supported:
        raise ValueError(f"set_path: this CPU runs {', '.join(supported)}, not {path!r}")
    before = T.isa.decode() if T != NULL else None
    module = importlib.import_module(f"stage3_simd._isa_{path}")
    T = <const sg3_table*>PyCapsule_GetPointer(module.table, b"stage3_simd.sg3_table")
    _module = module
    return before


def _select():
    global _forced
    supported = supported_paths()
    if not supported:
        raise ImportError("stage3_simd: this CPU has none of the SIMD paths stage 3 is built for "
                          "(SSE2 on x86-64, NEON on arm64)")
    wanted = os.environ.get("STAGEGRAD_SIMD", "").strip().lower() or None
    if wanted is not None and wanted not in supported:
        raise ImportError(f"stage3_simd: STAGEGRAD_SIMD={wanted!r}, but this CPU runs only "
                          f"{', '.join(supported)}")
    set_path(wanted or supported[len(supported) - 1])
    _forced = wanted


_select()


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def simd_info():
    """The CPU, its SIMD features, the paths it can run and the one in use."""
    features = {"sse2": CPU.sse2, "avx": CPU.avx, "fma": CPU.fma, "f16c": CPU.f16c, "avx2": CPU.avx2,
                "avx512f": CPU.avx512f, "avx512dq": CPU.avx512dq, "avx512bw": CPU.avx512bw,
                "avx512vl": CPU.avx512vl, "os_saves_ymm": CPU.os_ymm, "os_saves_zmm": CPU.os_zmm,
                "neon": CPU.neon}
    return {"cpu": _cpu_name(), "features": sorted(k for k, v in features.items() if v),
            "supported": supported_paths(), "path": T.isa.decode(), "forced": _forced,
            "vector_bits": 8 * T.vector_bytes, "openblas_core": scipy_openblas_get_corename().decode()}


def isa():
    return T.isa.decode()


# ---------------------------------------------------------------- threads

def set_num_threads(int n):
    """Threads for the kernels (OpenMP) and for OpenBLAS alike."""
    global NTHREADS
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive count, got {n}")
    NTHREADS = n
    scipy_openblas_set_num_threads(n)


def get_num_threads():
    return NTHREADS


def _default_threads():
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


set_num_threads(_default_threads())


# ---------------------------------------------------------------- operands

cdef inline int _code(Buffer b):
    return b.code


cdef void _operands(sg3_operands* o, tuple shape, list bufs) except *:
    """Fill ``o`` for ``bufs`` (output first) over ``shape``: inputs broadcast by stride 0."""
    cdef Py_ssize_t sizes[MAXDIM]
    cdef Py_ssize_t st[MAXDIM]
    cdef int k, d, nd = len(shape)
    cdef Buffer b
    read_ints(shape, sizes)
    o.nops = len(bufs)
    o.ndim = nd
    for d in range(nd):
        o.shape[d] = sizes[d]
    for k in range(o.nops):
        b = bufs[k]
        o.data[k] = data_of(b)
        load_operand(b, nd, sizes, st)
        for d in range(nd):
            o.strides[k][d] = st[d]


# The backend's elementwise entry points: backend.py exports these functions themselves,
# since a layer of Python between the frontend and a small kernel costs more than the
# kernel. What the SIMD kernels do not cover goes to stage 2's routing (set_fallbacks).

# a stage's DType class -> its (unary, binary, bool dtype): stage 4 runs stage 3's backend
# as its own cpu device, and this one compiled module serves both stages
cdef dict _FALLBACKS = {}
# Below this many elements a kernel keeps the GIL: releasing and taking it back costs
# more than the work, and no other thread could do much in the meantime
cdef enum:
    GIL_FREE_FROM = 4096


cdef inline int _op_code(dict codes, str op):
    cdef PyObject* found = PyDict_GetItem(codes, op)
    return -1 if found == NULL else <int><object>found


def set_fallbacks(unary, binary, bool_dtype):
    """Stage 2's ``unary`` and ``binary``, for what no SIMD kernel covers, and the dtype
    comparisons return, for the stage whose dtypes are of ``bool_dtype``'s class."""
    _FALLBACKS[type(bool_dtype)] = (unary, binary, bool_dtype)


cdef void _elementwise(sg3_operands* o, tuple shape, Buffer out, Buffer a, Buffer b) except *:
    """Operands for ``out = f(a[, b])``: one flat run when every operand is contiguous and of
    ``out``'s shape (the common case, and the kernel's fastest loop), else strided."""
    if a.shape is out.shape or a.shape == shape:
        if contiguous_layout(a) and (b is None or ((b.shape is a.shape or b.shape == shape)
                                                   and contiguous_layout(b))):
            o.nops = 2 if b is None else 3
            o.ndim = 1
            o.shape[0] = out.numel
            o.data[0], o.data[1] = data_of(out), data_of(a)
            o.strides[0][0] = o.strides[1][0] = 1
            if b is not None:
                o.data[2] = data_of(b)
                o.strides[2][0] = 1
            return
    _operands(o, shape, [out, a] if b is None else [out, a, b])


def unary(str op, Buffer x, dtype=None):
    """``op`` of every element (stage 0's primitive); the result cast to ``dtype`` if given."""
    cdef int rc, opc = _op_code(UNARY_OPS, op)
    if (opc < 0 or x.code == BOOL or x.code == FLOAT16 or x.code == BFLOAT16
            or not is_float_code(x.code) and opc > LAST_INT_UNARY):
        return (<tuple>_FALLBACKS[type(x.dtype)])[0](op, x, dtype)
    cdef Buffer out = new_buffer(x.shape, x.dtype, x.code)
    cdef sg3_operands o
    if out.numel:
        _elementwise(&o, x.shape, out, x, None)
        if out.numel < GIL_FREE_FROM:
            rc = T.unary(opc, x.code, &o, NTHREADS)
        else:
            with nogil:
                rc = T.unary(opc, x.code, &o, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"{op}: no stage 3 kernel for {x.dtype}")
    return out if dtype is None or dtype is out.dtype else cast(out, dtype)


def binary(str op, Buffer a, Buffer b, dtype):
    """``op`` elementwise over broadcast ``a`` and ``b``, which hold ``dtype`` (cast first
    where they do not); comparisons return bool (stage 0's primitive)."""
    cdef int code = a.code if a.dtype is dtype else code_of(dtype), rc, opc = _op_code(BINARY_OPS, op)
    # the 2-byte floats' arithmetic (add to minimum) widens a block at a time in the kernel
    cdef bint half_arithmetic = (code == FLOAT16 or code == BFLOAT16) and 0 <= opc < POW
    if (opc < 0 or code == BOOL or (code == FLOAT16 or code == BFLOAT16) and not half_arithmetic
            or not is_float_code(code) and (opc == DIV or opc == POW)):
        return (<tuple>_FALLBACKS[type(dtype)])[1](op, a, b, dtype)
    if a.dtype is not dtype:
        a = cast(a, dtype)
    if b.dtype is not dtype:
        b = cast(b, dtype)
    shape = a.shape if a.shape is b.shape or a.shape == b.shape else broadcast_shapes(a.shape, b.shape)
    if shape is None:
        raise ValueError(f"{op}: shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast")
    cdef Buffer out
    if opc >= FIRST_COMPARISON:
        out = new_buffer(shape, (<tuple>_FALLBACKS[type(dtype)])[2], BOOL)
    else:
        out = new_buffer(shape, dtype, code)
    cdef sg3_operands o
    if out.numel:
        _elementwise(&o, shape, out, a, b)
        if out.numel < GIL_FREE_FROM:
            rc = T.binary(opc, code, &o, NTHREADS)
        else:
            with nogil:
                rc = T.binary(opc, code, &o, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"{op}: no stage 3 kernel for {dtype}")
    return out


def cast(Buffer x, dtype):
    """``x`` converted to ``dtype`` (a new contiguous buffer)."""
    cdef int src = x.code, dst = code_of(dtype), rc = SG3_OK
    cdef Buffer out = new_buffer(x.shape, dtype, dst)
    cdef sg3_operands o
    if out.numel:
        _operands(&o, x.shape, [out, x])
        with nogil:
            rc = T.cast(src, dst, &o, NTHREADS)
    if rc == SG3_ENONFINITE:
        raise ValueError(f"cast: cannot convert nan or inf to an integer dtype ({x.dtype} to {dtype})")
    if rc != SG3_OK:
        raise TypeError(f"cast: no stage 3 kernel from {x.dtype} to {dtype}")
    return out


def where(Buffer cond, Buffer a, Buffer b, tuple shape):
    cdef Buffer out = new_buffer(shape, a.dtype, a.code)
    cdef sg3_operands o
    cdef int dtype = a.code, rc
    if out.numel:
        _operands(&o, shape, [out, cond, a, b])
        with nogil:
            rc = T.where(dtype, &o, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"where: no stage 3 kernel for {a.dtype}")
    return out


# ---------------------------------------------------------------- reductions

cdef void _fill(Buffer acc, double value):
    cdef Py_ssize_t i, n = acc.numel
    cdef char* p = data_of(acc)
    if acc.code == FLOAT64:
        for i in range(n):
            (<double*>p)[i] = value
    else:
        for i in range(n):
            (<float*>p)[i] = <float>value


def reduce(str op, Buffer x, axes, bint keepdim):
    """Sum, prod, max or min of a float buffer over ``axes``: (accumulator, kept shape,
    result shape). Sums and products accumulate in float64 (the caller casts back)."""
    cdef int opc = REDUCE_OPS[op], d, rc, dtype = x.code
    cdef bint reduced[MAXDIM]
    for d in range(x.ndim):
        reduced[d] = False
    for d in axes:
        reduced[d] = True
    kept = tuple([x.shape[d] for d in range(x.ndim) if not reduced[d]])
    out_shape = tuple([1 if reduced[d] else x.shape[d] for d in range(x.ndim)]) if keepdim else kept
    cdef int acc_code = FLOAT64 if op in ("sum", "prod") else x.code
    cdef Buffer acc = new_buffer(kept, x.dtype if acc_code == x.code else None, acc_code)
    _fill(acc, 0.0 if op == "sum" else 1.0 if op == "prod" else float("-inf") if op == "max" else float("inf"))
    cdef sg3_operands o
    cdef Py_ssize_t s = 1
    o.nops = 2
    o.ndim = x.ndim
    o.data[0] = data_of(acc)
    o.data[1] = data_of(x)
    for d in range(x.ndim - 1, -1, -1):  # the accumulator: contiguous over the kept dims
        o.shape[d] = x.shape[d]
        o.strides[1][d] = x.strides[d]
        o.strides[0][d] = 0 if reduced[d] else s
        if not reduced[d]:
            s *= x.shape[d]
    if x.numel:
        with nogil:
            rc = T.reduce(opc, dtype, &o, -1, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"{op}: no stage 3 kernel for {x.dtype}")
    return acc, out_shape


def arg_reduce(str op, Buffer x, int axis, bint keepdim, out_dtype):
    """Index (int64) of the first max/min (or first NaN) along ``axis`` of a float buffer."""
    cdef int d, rc, dtype = x.code
    cdef int opc = SG3_ARGMAX if op == "argmax" else SG3_ARGMIN
    keep_shape = tuple([1 if d == axis else x.shape[d] for d in range(x.ndim)])
    out_shape = keep_shape if keepdim else tuple([x.shape[d] for d in range(x.ndim) if d != axis])
    cdef Buffer out = new_buffer(out_shape, out_dtype, INT64)
    if out.numel == 0:
        return out
    cdef sg3_operands o
    cdef tuple ost = c_strides(keep_shape)
    o.nops = 2
    o.ndim = x.ndim
    o.data[0] = data_of(out)
    o.data[1] = data_of(x)
    for d in range(x.ndim):
        o.shape[d] = x.shape[d]
        o.strides[0][d] = 0 if d == axis else <Py_ssize_t>ost[d]
        o.strides[1][d] = x.strides[d]
    with nogil:
        rc = T.reduce(opc, dtype, &o, axis, NTHREADS)
    if rc != SG3_OK:
        raise TypeError(f"{op}: no stage 3 kernel for {x.dtype}")
    return out


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


def _doubles(values):
    from array import array
    return array("d", values) if values else array("d", [0.0])


# convolution, pooling and batch norm on images: see _kernels_images.pxi
include "_kernels_images.pxi"
