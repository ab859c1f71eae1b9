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


# the bindings, by topic
include "_kernels_isa.pxi"
include "_kernels_elementwise.pxi"
include "_kernels_matmul.pxi"
include "_kernels_fused.pxi"
include "_kernels_recurrent.pxi"
include "_kernels_attention.pxi"
include "_kernels_images.pxi"  # convolution, pooling and batch norm on images
