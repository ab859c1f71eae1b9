/* The contract between stage 3's compiled kernels and their Cython bindings.
 *
 * Design: the kernels are written once, as C++ templates over the xsimd architecture,
 * and compiled three times (isa_sse2.cpp, isa_avx2.cpp, isa_avx512.cpp), each object
 * with its own flags, into its own extension module. Each module hands the bindings one
 * table of plain C function pointers (sg3_table, in a capsule); the bindings pick the
 * module of the best ISA this CPU runs and call through its table. Nothing in a module
 * is visible to the others, so no instruction of one ISA can leak into another's code.
 *
 * Operands are described by sg3_operands: one shape, and per operand a data pointer and
 * element strides (0 where the operand is broadcast). Operand 0 is the output. Dtype
 * codes are stage 2's (a Buffer's ``code``). A function returns 0, or an SG3_E* code.
 */
#ifndef SG3_KERNELS_H
#define SG3_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SG3_MAXDIM 64
#define SG3_MAXOPS 4

enum sg3_dtype {
    SG3_BOOL = 0, SG3_INT32 = 1, SG3_INT64 = 2, SG3_FLOAT32 = 3, SG3_FLOAT64 = 4,
    SG3_FLOAT16 = 5, SG3_BFLOAT16 = 6, /* stored in 2 bytes: cast converts them, and the arithmetic
                                           * of binary widens them in registers */
    SG3_UINT8 = 7, SG3_INT8 = 8, SG3_INT16 = 9 /* computed in as the wider integers are */
};

enum sg3_error {
    SG3_OK = 0,
    SG3_EUNSUPPORTED = 1, /* this op or dtype is not compiled here: the caller falls back */
    SG3_ENONFINITE = 2,   /* a cast met NaN or an infinity on its way to an integer dtype */
};

/* Elementwise operations. The output has the inputs' dtype, except the comparisons
 * (bool). Compiled for float32 and float64, and for int32 and int64 where an operation is
 * integer arithmetic (neg, abs, sign, relu; add, sub, mul, maximum, minimum and the
 * comparisons; integers wrap around); the bindings send the rest to stage 2. */
enum sg3_unary {
    SG3_NEG, SG3_ABS, SG3_SIGN, SG3_RELU, SG3_FLOOR, SG3_CEIL, SG3_ROUND, SG3_EXP, SG3_LOG,
    SG3_LOG1P, SG3_SQRT, SG3_RSQRT, SG3_SIN, SG3_COS, SG3_TANH, SG3_SIGMOID, SG3_SILU,
    SG3_GELU, SG3_ERF, SG3_RECIPROCAL, SG3_NUNARY
};

enum sg3_binary {
    SG3_ADD, SG3_SUB, SG3_MUL, SG3_DIV, SG3_MAXIMUM, SG3_MINIMUM, SG3_POW,
    SG3_EQ, SG3_NE, SG3_LT, SG3_LE, SG3_GT, SG3_GE, SG3_NBINARY
};

enum sg3_reduction { SG3_SUM, SG3_PROD, SG3_MAX, SG3_MIN, SG3_ARGMAX, SG3_ARGMIN, SG3_NREDUCTION };

enum sg3_activation { SG3_ACT_NONE = 0, SG3_ACT_RELU = 1, SG3_ACT_GELU = 2, SG3_ACT_GELU_TANH = 3 };

/* Hyperparameters of the fused optimizer steps, as the composite computes them in
 * float64 (each is rounded to the parameters' dtype inside, as the composite's 0-d
 * tensors are). lerp_w is lerp_'s weight, lerp_w1 = 1 - lerp_w computed the same way. */
typedef struct {
    double lr, weight_decay, lerp_w, lerp_w1, beta2, eps;
    int decoupled, maximize;
} sg3_adam;
typedef struct {
    double lr, weight_decay, momentum, dampening;
    int nesterov, maximize;
} sg3_sgd;
typedef struct {
    double lr, weight_decay, alpha, eps, momentum, lerp_w, lerp_w1;
    int maximize;
} sg3_rmsprop;

/* A 2-d convolution (groups 1): input (n, c, h, w), filters (o, c, kh, kw), output
 * (n, o, oh, ow); stride, padding and dilation per axis. All operands contiguous. algo: the
 * implicit GEMM, Winograd F(2x2, 3x3) where it applies (3x3, stride 1; csrc/winograd.hpp), the
 * direct convolution where it applies (stride 1; csrc/direct.hpp), channels last a tap at a
 * time where it applies (csrc/taps.hpp), or the rule that picks one per shape and pass
 * (SG3_CONV_AUTO). */
enum sg3_conv_algorithm {
    SG3_CONV_AUTO = 0, SG3_CONV_IMPLICIT = 1, SG3_CONV_WINOGRAD = 2, SG3_CONV_DIRECT = 3, SG3_CONV_TAPS = 4
};
typedef struct {
    int64_t n, c, h, w, o, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
    int algo;
} sg3_conv;
/* A window over ``planes`` contiguous planes of h x w giving oh x ow (pooling; depthwise
 * convolution, whose planes are the output's n * out_channels). */
typedef struct {
    int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, out_channels;
} sg3_pool;
/* Batch norm over (n, c, s): training uses and updates the batch statistics; act fuses the
 * activation after it (SG3_BN_RELU, SG3_BN_RELU6, or SG3_BN_NONE). */
enum sg3_bn_activation { SG3_BN_NONE = 0, SG3_BN_RELU = 1, SG3_BN_RELU6 = 2 };
typedef struct {
    int64_t n, c, s;
    double momentum, eps;
    int training, act;
} sg3_batch_norm;

/* One layer and direction of a recurrent network over packed rows (csrc/recurrent.hpp): step
 * t has batch_sizes[t] rows (non-increasing, the first equal to batch), hidden size hidden,
 * and for an LSTM with projections proj (else 0) the width of h; reverse runs the steps last
 * to first. */
enum sg3_recurrent_mode { SG3_RNN_TANH = 0, SG3_RNN_RELU = 1, SG3_LSTM = 2, SG3_GRU = 3 };
typedef struct {
    int mode, reverse;
    int64_t steps, batch, hidden, proj;
    const int64_t* batch_sizes;
} sg3_recurrent;

/* Scaled dot-product attention over n problems of (l x e) queries, (s x e) keys and (s x ev)
 * values, all contiguous; group query problems share one key/value problem (kv = n / group).
 * The mask is none, bool (uint8, 1 takes part) or additive (the dtype's), l x s, one plane for
 * every problem (mask_shared) or one per problem; causal lets query i see keys 0..i. */
enum sg3_mask_kind { SG3_MASK_NONE = 0, SG3_MASK_BOOL = 1, SG3_MASK_ADD = 2 };
typedef struct {
    int64_t n, l, s, e, ev, group;
    double scale;
    int causal, mask_kind, mask_shared;
} sg3_attention;

typedef struct {
    int nops;                               /* operands, output first */
    int ndim;
    int64_t shape[SG3_MAXDIM];
    char* data[SG3_MAXOPS];
    int64_t strides[SG3_MAXOPS][SG3_MAXDIM]; /* in elements */
} sg3_operands;

typedef struct {
    const char* isa;     /* "sse2", "avx2", "avx512" or "neon" */
    int vector_bytes;    /* the width of one SIMD register */

    /* op(x): operands out, x */
    int (*unary)(int op, int dtype, const sg3_operands* o, int nthreads);
    /* op(a, b): operands out, a, b (broadcast by their strides) */
    int (*binary)(int op, int dtype, const sg3_operands* o, int nthreads);
    /* out = cond ? a : b: operands out, cond (bool), a, b */
    int (*where)(int dtype, const sg3_operands* o, int nthreads);
    /* out = x converted from dtype ``from`` to ``to``: operands out, x. Floats become
     * integers by truncation toward zero, wrapping modulo 2**bits; NaN and infinities give
     * SG3_ENONFINITE. Anything becomes bool as x != 0. */
    int (*cast)(int from, int to, const sg3_operands* o, int nthreads);
    /* Reduce operand 1 into operand 0, which has stride 0 along the reduced dims (a sum,
     * product, max or min) and is int64 for the arg-reductions, whose one reduced dim is
     * ``axis``. Accumulators are sound for float32: pairwise sums, float64 products. */
    int (*reduce)(int op, int dtype, const sg3_operands* o, int axis, int nthreads);

    /* C[m x n] (row stride ldc) = A @ B (+ C when accumulate); A and B through any strides */
    void (*gemm_f32)(int64_t m, int64_t n, int64_t k, const float* a, int64_t rsa, int64_t csa,
                     const float* b, int64_t rsb, int64_t csb, float* c, int64_t ldc,
                     int accumulate, int nthreads);
    void (*gemm_f64)(int64_t m, int64_t n, int64_t k, const double* a, int64_t rsa, int64_t csa,
                     const double* b, int64_t rsb, int64_t csb, double* c, int64_t ldc,
                     int accumulate, int nthreads);
    /* The GEMM ladder's rung ``rung`` (1..6) on row-major float operands; -1 if no such rung */
    int (*gemm_rung)(int rung, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                     float* c, int nthreads);
    /* The GEMM's register block and cache blocking: MR, NR, MC, KC, NC, then the L1, L2
     * and L3 sizes in bytes they were derived from (float32) */
    void (*gemm_blocking)(int64_t out[8]);
    /* ``iters`` steps of twelve independent float32 multiply-add chains in registers (fused
     * where the ISA has FMA): the FLOPs done, for timing the core's arithmetic peak */
    int64_t (*fma_peak)(int64_t iters);

    /* Fused kernels (csrc/fused.hpp) on contiguous rows of float32 or float64 (dtype). */
    /* y = act(x + bias) (x may be y, bias and pre null; pre keeps the values before act) */
    int (*bias_act)(int dtype, char* y, const char* x, const char* bias, char* pre, int64_t rows, int64_t cols,
                    int act, int nthreads);
    /* gx = g * act'(saved) over (rows, cols); gb (may be null) gets gx's column sums */
    int (*act_backward)(int dtype, char* gx, char* gb, const char* g, const char* saved, int64_t rows, int64_t cols,
                        int act, int nthreads);
    int (*softmax)(int dtype, char* y, const char* x, int64_t rows, int64_t cols, int log, int nthreads);
    int (*softmax_backward)(int dtype, char* gx, const char* g, const char* y, int64_t rows, int64_t cols,
                            int log, int nthreads);
    /* the first row whose target is out of range (neither a class nor ignore), else -1 */
    int64_t (*cross_entropy)(int dtype, char* loss, char* wrow, char* probs, const char* x,
                             const int64_t* target, const char* weight, int64_t ignore, double smoothing,
                             int64_t rows, int64_t cols, int nthreads);
    int (*cross_entropy_backward)(int dtype, char* gx, const char* probs, const int64_t* target,
                                  const char* weight, const char* scale, int64_t ignore, double smoothing,
                                  int64_t rows, int64_t cols, int nthreads);
    int (*layer_norm)(int dtype, char* y, char* mean, char* rstd, const char* x, const char* w, const char* b,
                      int64_t rows, int64_t cols, double eps, int nthreads);
    int (*layer_norm_backward)(int dtype, char* gx, double* gw, double* gb, const char* g, const char* x,
                               const char* mean, const char* rstd, const char* w, int64_t rows, int64_t cols,
                               int nthreads);
    /* one step for ``count`` tensors: pointers per tensor (vmax, gavg, buf may be NULL) */
    int (*adam)(int dtype, int count, char** p, char** g, char** m, char** v, char** vmax, const int64_t* n,
                const double* step_size, const double* bias_correction2_sqrt, const sg3_adam* h, int nthreads);
    int (*sgd)(int dtype, int count, char** p, char** g, char** buf, const int64_t* n, const uint8_t* first,
               const sg3_sgd* h, int nthreads);
    int (*rmsprop)(int dtype, int count, char** p, char** g, char** sq, char** gavg, char** buf,
                   const int64_t* n, const sg3_rmsprop* h, int nthreads);

    /* Convolution, pooling and batch norm on contiguous NCHW float32 or float64 (csrc/conv.hpp,
     * pool.hpp, batch_norm.hpp). Outputs are fully written; bias, weight and running stats may be
     * NULL. Pool indices are flat positions (h * W + w) in the input plane. */
    int (*conv2d)(int dtype, const sg3_conv* q, char* y, const char* x, const char* w, const char* bias,
                  int nthreads);
    int (*conv2d_backward_input)(int dtype, const sg3_conv* q, char* gx, const char* g, const char* w,
                                 int nthreads);
    int (*conv2d_backward_weight)(int dtype, const sg3_conv* q, char* gw, const char* g, const char* x,
                                  int nthreads);
    /* groups == channels, each channel's filters ``mult`` output channels (weight (o, 1, kh, kw)) */
    int (*depthwise)(int dtype, const sg3_pool* q, int64_t mult, char* y, const char* x, const char* w,
                     const char* bias, int nthreads);
    int (*depthwise_backward_input)(int dtype, const sg3_pool* q, int64_t mult, char* gx, const char* g,
                                    const char* w, int nthreads);
    int (*depthwise_backward_weight)(int dtype, const sg3_pool* q, int64_t mult, char* gw, const char* g,
                                     const char* x, int nthreads);
    int (*max_pool2d)(int dtype, const sg3_pool* q, char* y, int64_t* index, const char* x, int nthreads);
    int (*max_pool2d_backward)(int dtype, const sg3_pool* q, char* gx, const char* g, const int64_t* index,
                               int nthreads);
    /* divisor != 0 overrides PyTorch's window counts (count_include_pad: include_pad) */
    int (*avg_pool2d)(int dtype, const sg3_pool* q, char* y, const char* x, int include_pad, double divisor,
                      int nthreads);
    int (*avg_pool2d_backward)(int dtype, const sg3_pool* q, char* gx, const char* g, int include_pad,
                               double divisor, int nthreads);
    /* y, and the mean and 1/std per channel the backward reads */
    int (*batch_norm)(int dtype, const sg3_batch_norm* q, char* y, char* mean, char* rstd, const char* x,
                      const char* w, const char* b, char* running_mean, char* running_var, int nthreads);
    /* gx, gw, gb each NULL when not wanted; y (the output) is read only with the fused ReLU */
    int (*batch_norm_backward)(int dtype, const sg3_batch_norm* q, char* gx, char* gw, char* gb, const char* g,
                               const char* x, const char* y, const char* mean, const char* rstd, const char* w,
                               int nthreads);

    /* The LSTM cell after its GEMM (csrc/recurrent.hpp): pre (rows x 4H, gates i f g o), c
     * (rows x H) give h', c', the activated gates and tanh(c'); the backward the gradients of
     * pre and c from those of h' and c'. Contiguous float32 or float64. */
    int (*lstm_cell)(int dtype, char* h, char* c_next, char* act, char* tc, const char* pre, const char* c,
                     int64_t rows, int64_t hidden, int nthreads);
    int (*lstm_cell_backward)(int dtype, char* gpre, char* gc, const char* gh, const char* gc_next,
                              const char* act, const char* tc, const char* c, int64_t rows, int64_t hidden,
                              int nthreads);
    /* A recurrent layer's time loop and its backward through time (see recurrent.hpp for the
     * operands); h, c and gh, gc are read as one end's state and left as the other's. */
    int (*recurrent)(int dtype, const sg3_recurrent* q, char* out, char* h, char* c, char* saved, char* hprev,
                     const char* gi, const char* w, const char* b, const char* w_hr, int nthreads);
    int (*recurrent_backward)(int dtype, const sg3_recurrent* q, char* ggi, char* gh, char* gc, char* gw, char* gb,
                              char* gw_hr, char* gp, char* gproj, const char* gout, const char* saved,
                              const char* hprev, const char* w, const char* w_hr, int nthreads);
    /* out (n x l x ev) and each row's log-sum-exp (n x l); then the backward's dq, dk, dv */
    int (*attention)(int dtype, const sg3_attention* a, char* out, char* lse, const char* q, const char* k,
                     const char* v, const void* mask, int nthreads);
    int (*attention_backward)(int dtype, const sg3_attention* a, char* dq, char* dk, char* dv, const char* g,
                              const char* q, const char* k, const char* v, const char* out, const char* lse,
                              const void* mask, int nthreads);
    /* C[m x n] (row stride ldc, float32) = A @ B for float16 or bfloat16 (dtype) A and B (their
     * bits) through any strides: bfloat16 on AMX tiles (csrc/amx.hpp) when ``tiles`` and the
     * module and machine have them, else the GEMM widening the operands as it packs them */
    int (*gemm_half)(int dtype, int tiles, int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t rsa,
                     int64_t csa, const uint16_t* b, int64_t rsb, int64_t csb, float* c, int64_t ldc, int nthreads);
    /* 1 where gemm_half can run bfloat16 on AMX tiles */
    int (*has_bf16_tiles)(void);
} sg3_table;

#ifdef __cplusplus
}
#endif

#endif /* SG3_KERNELS_H */
