// One ISA's table of kernels (sg3_table), and the extension module that hands it out.
//
// Design: this header is included by exactly one translation unit per ISA
// (isa_sse2.cpp, isa_avx2.cpp, isa_avx512.cpp), each compiled with that ISA's flags into
// its own extension module. ``SG3_ISA_MODULE(name, Arch)`` instantiates every kernel for
// ``Arch`` and defines the module ``stage3_simd._isa_<name>``, whose ``table`` is a
// capsule holding a pointer to the table. Everything else is hidden (-fvisibility=hidden).
#pragma once

#include <Python.h>

#include "amx.hpp"
#include "attention.hpp"
#include "batch_norm.hpp"
#include "conv.hpp"
#include "depthwise.hpp"
#include "elementwise.hpp"
#include "fused.hpp"
#include "gemm.hpp"
#include "gemm_ladder.hpp"
#include "kernels.h"
#include "pool.hpp"
#include "recurrent.hpp"
#include "reduce.hpp"

namespace sg3 {

template <class A, class T>
void gemm_entry(int64_t m, int64_t n, int64_t k, const T* a, int64_t rsa, int64_t csa, const T* b,
                int64_t rsb, int64_t csb, T* c, int64_t ldc, int accumulate, int nthreads) {
    gemm<A, T>(m, n, k, a, rsa, csa, b, rsb, csb, c, ldc, accumulate != 0, nthreads);
}

// 2-byte float operands (float16 or bfloat16, their bits), float32 C: bfloat16 on AMX tiles
// when `tiles` and the module and the machine have them, else our GEMM widening as it packs
template <class A>
int gemm_half(int dtype, int tiles, int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t rsa, int64_t csa,
              const uint16_t* b, int64_t rsb, int64_t csb, float* c, int64_t ldc, int nthreads) {
#if defined(__x86_64__) && defined(__AVX512F__)
    if (dtype == SG3_BFLOAT16 && tiles && amx::gemm_bf16(m, n, k, a, rsa, csa, b, rsb, csb, c, ldc, nthreads))
        return SG3_OK;
#endif
    (void)tiles;
    auto widening = [&](auto* h) {  // h: a null pointer of the 2-byte type, naming it
        using H = std::remove_const_t<std::remove_pointer_t<decltype(h)>>;
        gemm_from<A, float>(gemm_blocking<A, float>(), m, n, k,
                            strided_a<A, float, H>{reinterpret_cast<const H*>(a), rsa, csa},
                            strided_b<A, float, H>{reinterpret_cast<const H*>(b), rsb, csb}, c, ldc, false, nthreads);
        return SG3_OK;
    };
    if (dtype == SG3_FLOAT16) return widening(static_cast<sg3_half*>(nullptr));
    if (dtype == SG3_BFLOAT16) return widening(static_cast<sg3_bfloat16*>(nullptr));
    return SG3_EUNSUPPORTED;
}

template <class A>
int has_bf16_tiles() {
#if defined(__x86_64__) && defined(__AVX512F__)
    return amx::available();
#else
    return 0;
#endif
}

template <class A>
int gemm_rung(int rung, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
              int nthreads) {
    // row-major operands: A is m x k, B is k x n, C is m x n
    switch (rung) {
        case 1: ladder::gemm_naive<A, float>(m, n, k, a, k, 1, b, n, 1, c, n, false, 1); return 0;
        case 2: ladder::gemm_ikj<A, float>(m, n, k, a, k, 1, b, n, 1, c, n, false, 1); return 0;
        case 3: ladder::gemm_packed<A, float>(m, n, k, a, k, 1, b, n, 1, c, n, false, 1); return 0;
        case 4: ladder::gemm_microkernel<A, float>(m, n, k, a, k, 1, b, n, 1, c, n, false, 1); return 0;
        case 5: ladder::gemm_blocked<A, float>(m, n, k, a, k, 1, b, n, 1, c, n, false, 1); return 0;
        case 6: ladder::gemm_threaded<A, float>(m, n, k, a, k, 1, b, n, 1, c, n, false, nthreads); return 0;
        default: return -1;
    }
}

template <class A>
void blocking(int64_t out[8]) {
    const gemm_blocking_info& b = gemm_blocking<A, float>();
    const int64_t v[8] = {b.mr, b.nr, b.mc, b.kc, b.nc, b.l1d, b.l2, b.l3};
    for (int i = 0; i < 8; ++i) out[i] = v[i];
}

template <class A>
int64_t fma_peak(int64_t iters) {
    using B = vec<float, A>;
    B acc[12];
    for (int j = 0; j < 12; ++j) acc[j] = B(1e-3f * float(j));
    const B a(0.999999f), b(1e-7f);
    for (int64_t i = 0; i < iters; ++i)
        for (int j = 0; j < 12; ++j) acc[j] = madd(acc[j], a, b);
    B s = acc[0];
    for (int j = 1; j < 12; ++j) s += acc[j];
    volatile float sink = xsimd::hadd(s);  // keeps the loop from being optimised away
    (void)sink;
    return iters * 12 * int64_t(B::size) * 2;
}

// ------------------------------------------------------------------ fused entries
// Each takes the dtype and calls the float or double instantiation (others: unsupported).

#define SG3_BY_DTYPE(dtype, CALL)                                             \
    do {                                                                      \
        if ((dtype) == SG3_FLOAT32) { using T = float; CALL; return SG3_OK; } \
        if ((dtype) == SG3_FLOAT64) { using T = double; CALL; return SG3_OK; } \
        return SG3_EUNSUPPORTED;                                              \
    } while (0)

template <class A>
int f_bias_act(int dtype, char* y, const char* x, const char* bias, char* pre, int64_t rows, int64_t cols, int act,
               int nt) {
    SG3_BY_DTYPE(dtype, (bias_act_rows<A, T>((T*)y, (const T*)x, (const T*)bias, (T*)pre, rows, cols, act, nt)));
}

template <class A>
int f_act_backward(int dtype, char* gx, char* gb, const char* g, const char* saved, int64_t rows, int64_t cols,
                   int act, int nt) {
    SG3_BY_DTYPE(dtype, (act_backward<A, T>((T*)gx, (T*)gb, (const T*)g, (const T*)saved, rows, cols, act, nt)));
}

template <class A>
int f_softmax(int dtype, char* y, const char* x, int64_t rows, int64_t cols, int log, int nt) {
    SG3_BY_DTYPE(dtype, (softmax_rows<A, T>((T*)y, (const T*)x, rows, cols, log != 0, nt)));
}

template <class A>
int f_softmax_backward(int dtype, char* gx, const char* g, const char* y, int64_t rows, int64_t cols, int log,
                       int nt) {
    SG3_BY_DTYPE(dtype, (softmax_backward_rows<A, T>((T*)gx, (const T*)g, (const T*)y, rows, cols, log != 0, nt)));
}

template <class A>
int64_t f_cross_entropy(int dtype, char* loss, char* wrow, char* probs, const char* x, const int64_t* target,
                        const char* weight, int64_t ignore, double smoothing, int64_t rows, int64_t cols, int nt) {
    if (dtype == SG3_FLOAT32)
        return cross_entropy_rows<A, float>((float*)loss, (float*)wrow, (float*)probs, (const float*)x, target,
                                            (const float*)weight, ignore, smoothing, rows, cols, nt);
    return cross_entropy_rows<A, double>((double*)loss, (double*)wrow, (double*)probs, (const double*)x, target,
                                         (const double*)weight, ignore, smoothing, rows, cols, nt);
}

template <class A>
int f_cross_entropy_backward(int dtype, char* gx, const char* probs, const int64_t* target, const char* weight,
                             const char* scale, int64_t ignore, double smoothing, int64_t rows, int64_t cols,
                             int nt) {
    SG3_BY_DTYPE(dtype, (cross_entropy_backward_rows<A, T>((T*)gx, (const T*)probs, target, (const T*)weight,
                                                           (const T*)scale, ignore, smoothing, rows, cols, nt)));
}

template <class A>
int f_layer_norm(int dtype, char* y, char* mean, char* rstd, const char* x, const char* w, const char* b,
                 int64_t rows, int64_t cols, double eps, int nt) {
    SG3_BY_DTYPE(dtype, (layer_norm_rows<A, T>((T*)y, (T*)mean, (T*)rstd, (const T*)x, (const T*)w,
                                               (const T*)b, rows, cols, eps, nt)));
}

template <class A>
int f_layer_norm_backward(int dtype, char* gx, double* gw, double* gb, const char* g, const char* x,
                          const char* mean, const char* rstd, const char* w, int64_t rows, int64_t cols, int nt) {
    SG3_BY_DTYPE(dtype, (layer_norm_backward_rows<A, T>((T*)gx, gw, gb, (const T*)g, (const T*)x, (const T*)mean,
                                                        (const T*)rstd, (const T*)w, rows, cols, nt)));
}

template <class A>
int f_adam(int dtype, int count, char** p, char** g, char** m, char** v, char** vmax, const int64_t* n,
           const double* step_size, const double* bc2, const sg3_adam* h, int nt) {
    SG3_BY_DTYPE(dtype, (over_tensors(count, n, nt, [&](int t, int64_t at, int64_t len) {
        adam_update<A, T>((T*)p[t] + at, (const T*)g[t] + at, (T*)m[t] + at, (T*)v[t] + at,
                          vmax ? (T*)vmax[t] + at : nullptr, len, step_size[t], bc2[t], *h);
    })));
}

template <class A>
int f_sgd(int dtype, int count, char** p, char** g, char** buf, const int64_t* n, const uint8_t* first,
          const sg3_sgd* h, int nt) {
    SG3_BY_DTYPE(dtype, (over_tensors(count, n, nt, [&](int t, int64_t at, int64_t len) {
        sgd_update<A, T>((T*)p[t] + at, (const T*)g[t] + at, buf ? (T*)buf[t] + at : nullptr, len,
                         first[t] != 0, *h);
    })));
}

template <class A>
int f_rmsprop(int dtype, int count, char** p, char** g, char** sq, char** gavg, char** buf, const int64_t* n,
              const sg3_rmsprop* h, int nt) {
    SG3_BY_DTYPE(dtype, (over_tensors(count, n, nt, [&](int t, int64_t at, int64_t len) {
        rmsprop_update<A, T>((T*)p[t] + at, (const T*)g[t] + at, (T*)sq[t] + at, gavg ? (T*)gavg[t] + at : nullptr,
                             buf ? (T*)buf[t] + at : nullptr, len, *h);
    })));
}

// ------------------------------------------------------------------ convolution, pooling, batch norm

template <class A>
int f_conv2d(int dtype, const sg3_conv* q, char* y, const char* x, const char* w, const char* bias, int nt) {
    SG3_BY_DTYPE(dtype, (conv2d_forward<A, T>(*q, (T*)y, (const T*)x, (const T*)w, (const T*)bias, nt)));
}

template <class A>
int f_conv2d_backward_input(int dtype, const sg3_conv* q, char* gx, const char* g, const char* w, int nt) {
    SG3_BY_DTYPE(dtype, (conv2d_backward_input<A, T>(*q, (T*)gx, (const T*)g, (const T*)w, nt)));
}

template <class A>
int f_conv2d_backward_weight(int dtype, const sg3_conv* q, char* gw, const char* g, const char* x, int nt) {
    SG3_BY_DTYPE(dtype, (conv2d_backward_weight<A, T>(*q, (T*)gw, (const T*)g, (const T*)x, nt)));
}

template <class A>
int f_depthwise(int dtype, const sg3_pool* q, int64_t mult, char* y, const char* x, const char* w, const char* bias,
                int nt) {
    SG3_BY_DTYPE(dtype, (depthwise_forward<A, T>(*q, mult, (T*)y, (const T*)x, (const T*)w, (const T*)bias, nt)));
}

template <class A>
int f_depthwise_backward_input(int dtype, const sg3_pool* q, int64_t mult, char* gx, const char* g, const char* w,
                               int nt) {
    SG3_BY_DTYPE(dtype, (depthwise_backward_input<A, T>(*q, mult, (T*)gx, (const T*)g, (const T*)w, nt)));
}

template <class A>
int f_depthwise_backward_weight(int dtype, const sg3_pool* q, int64_t mult, char* gw, const char* g, const char* x,
                                int nt) {
    SG3_BY_DTYPE(dtype, (depthwise_backward_weight<A, T>(*q, mult, (T*)gw, (const T*)g, (const T*)x, nt)));
}

template <class A>
int f_max_pool2d(int dtype, const sg3_pool* q, char* y, int64_t* index, const char* x, int nt) {
    SG3_BY_DTYPE(dtype, (max_pool2d<A, T>(*q, (T*)y, index, (const T*)x, nt)));
}

template <class A>
int f_max_pool2d_backward(int dtype, const sg3_pool* q, char* gx, const char* g, const int64_t* index, int nt) {
    SG3_BY_DTYPE(dtype, (max_pool2d_backward<A, T>(*q, (T*)gx, (const T*)g, index, nt)));
}

template <class A>
int f_avg_pool2d(int dtype, const sg3_pool* q, char* y, const char* x, int include_pad, double divisor, int nt) {
    SG3_BY_DTYPE(dtype, (avg_pool2d<A, T>(*q, (T*)y, (const T*)x, include_pad != 0, divisor, nt)));
}

template <class A>
int f_avg_pool2d_backward(int dtype, const sg3_pool* q, char* gx, const char* g, int include_pad, double divisor,
                          int nt) {
    SG3_BY_DTYPE(dtype, (avg_pool2d_backward<A, T>(*q, (T*)gx, (const T*)g, include_pad != 0, divisor, nt)));
}

template <class A>
int f_batch_norm(int dtype, const sg3_batch_norm* q, char* y, char* mean, char* rstd, const char* x, const char* w,
                 const char* b, char* rm, char* rv, int nt) {
    SG3_BY_DTYPE(dtype, (batch_norm_forward<A, T>(*q, (T*)y, (T*)mean, (T*)rstd, (const T*)x, (const T*)w,
                                                  (const T*)b, (T*)rm, (T*)rv, nt)));
}

template <class A>
int f_batch_norm_backward(int dtype, const sg3_batch_norm* q, char* gx, char* gw, char* gb, const char* g,
                          const char* x, const char* y, const char* mean, const char* rstd, const char* w, int nt) {
    SG3_BY_DTYPE(dtype, (batch_norm_backward<A, T>(*q, (T*)gx, (T*)gw, (T*)gb, (const T*)g, (const T*)x,
                                                   (const T*)y, (const T*)mean, (const T*)rstd, (const T*)w, nt)));
}

template <class A>
int f_lstm_cell(int dtype, char* h, char* c_next, char* act, char* tc, const char* pre, const char* c, int64_t rows,
                int64_t hidden, int nt) {
    SG3_BY_DTYPE(dtype, (lstm_cell_rows<A, T>((T*)h, (T*)c_next, (T*)act, (T*)tc, (const T*)pre, (const T*)c, rows,
                                              hidden, nt)));
}

template <class A>
int f_lstm_cell_backward(int dtype, char* gpre, char* gc, const char* gh, const char* gc_next, const char* act,
                         const char* tc, const char* c, int64_t rows, int64_t hidden, int nt) {
    SG3_BY_DTYPE(dtype, (lstm_cell_backward_rows<A, T>((T*)gpre, (T*)gc, (const T*)gh, (const T*)gc_next,
                                                       (const T*)act, (const T*)tc, (const T*)c, rows, hidden, nt)));
}

template <class A>
int f_recurrent(int dtype, const sg3_recurrent* q, char* out, char* h, char* c, char* saved, char* hprev,
                const char* gi, const char* w, const char* b, const char* w_hr, int nt) {
    SG3_BY_DTYPE(dtype, (recurrent_forward<A, T>(*q, (T*)out, (T*)h, (T*)c, (T*)saved, (T*)hprev, (const T*)gi,
                                                 (const T*)w, (const T*)b, (const T*)w_hr, nt)));
}

template <class A>
int f_recurrent_backward(int dtype, const sg3_recurrent* q, char* ggi, char* gh, char* gc, char* gw, char* gb,
                         char* gw_hr, char* gp, char* gproj, const char* gout, const char* saved, const char* hprev,
                         const char* w, const char* w_hr, int nt) {
    SG3_BY_DTYPE(dtype, (recurrent_backward<A, T>(*q, (T*)ggi, (T*)gh, (T*)gc, (T*)gw, (T*)gb, (T*)gw_hr, (T*)gp,
                                                  (T*)gproj, (const T*)gout, (const T*)saved, (const T*)hprev,
                                                  (const T*)w, (const T*)w_hr, nt)));
}

template <class A>
int f_attention(int dtype, const sg3_attention* a, char* out, char* lse, const char* q, const char* k, const char* v,
                const void* mask, int nt) {
    SG3_BY_DTYPE(dtype, (attention_forward<A, T>(*a, (T*)out, (T*)lse, (const T*)q, (const T*)k, (const T*)v, mask,
                                                 nt)));
}

template <class A>
int f_attention_backward(int dtype, const sg3_attention* a, char* dq, char* dk, char* dv, const char* g,
                         const char* q, const char* k, const char* v, const char* out, const char* lse,
                         const void* mask, int nt) {
    SG3_BY_DTYPE(dtype, (attention_backward<A, T>(*a, (T*)dq, (T*)dk, (T*)dv, (const T*)g, (const T*)q, (const T*)k,
                                                  (const T*)v, (const T*)out, (const T*)lse, mask, nt)));
}

#undef SG3_BY_DTYPE

// Filled by name (designated initializers, in the struct's order, which the compiler checks), so
// two entries of the same signature cannot be swapped unnoticed.
template <class A>
const sg3_table* table(const char* isa) {
    static const sg3_table t = {
        .isa = isa,
        .vector_bytes = static_cast<int>(vec<float, A>::size * sizeof(float)),
        .unary = &unary<A>,
        .binary = &binary<A>,
        .where = &where<A>,
        .cast = &cast<A>,
        .reduce = &reduce<A>,
        .gemm_f32 = &gemm_entry<A, float>,
        .gemm_f64 = &gemm_entry<A, double>,
        .gemm_rung = &gemm_rung<A>,
        .gemm_blocking = &blocking<A>,
        .fma_peak = &fma_peak<A>,
        .bias_act = &f_bias_act<A>,
        .act_backward = &f_act_backward<A>,
        .softmax = &f_softmax<A>,
        .softmax_backward = &f_softmax_backward<A>,
        .cross_entropy = &f_cross_entropy<A>,
        .cross_entropy_backward = &f_cross_entropy_backward<A>,
        .layer_norm = &f_layer_norm<A>,
        .layer_norm_backward = &f_layer_norm_backward<A>,
        .adam = &f_adam<A>,
        .sgd = &f_sgd<A>,
        .rmsprop = &f_rmsprop<A>,
        .conv2d = &f_conv2d<A>,
        .conv2d_backward_input = &f_conv2d_backward_input<A>,
        .conv2d_backward_weight = &f_conv2d_backward_weight<A>,
        .depthwise = &f_depthwise<A>,
        .depthwise_backward_input = &f_depthwise_backward_input<A>,
        .depthwise_backward_weight = &f_depthwise_backward_weight<A>,
        .max_pool2d = &f_max_pool2d<A>,
        .max_pool2d_backward = &f_max_pool2d_backward<A>,
        .avg_pool2d = &f_avg_pool2d<A>,
        .avg_pool2d_backward = &f_avg_pool2d_backward<A>,
        .batch_norm = &f_batch_norm<A>,
        .batch_norm_backward = &f_batch_norm_backward<A>,
        .lstm_cell = &f_lstm_cell<A>,
        .lstm_cell_backward = &f_lstm_cell_backward<A>,
        .recurrent = &f_recurrent<A>,
        .recurrent_backward = &f_recurrent_backward<A>,
        .attention = &f_attention<A>,
        .attention_backward = &f_attention_backward<A>,
        .gemm_half = &gemm_half<A>,
        .has_bf16_tiles = &has_bf16_tiles<A>,
    };
    return &t;
}

}  // namespace sg3

#define SG3_ISA_MODULE(NAME, ARCH)                                                              \
    static PyModuleDef sg3_module = {PyModuleDef_HEAD_INIT, "stage3_simd._isa_" #NAME,           \
                                     "stage 3's kernels compiled for " #NAME, -1, nullptr};      \
    PyMODINIT_FUNC PyInit__isa_##NAME(void) {                                                    \
        PyObject* m = PyModule_Create(&sg3_module);                                              \
        if (m == nullptr) return nullptr;                                                        \
        PyObject* cap = PyCapsule_New(const_cast<sg3_table*>(sg3::table<ARCH>(#NAME)),           \
                                      "stage3_simd.sg3_table", nullptr);                         \
        if (cap == nullptr || PyModule_AddObject(m, "table", cap) < 0) {                         \
            Py_XDECREF(cap);                                                                     \
            Py_DECREF(m);                                                                        \
            return nullptr;                                                                      \
        }                                                                                        \
        return m;                                                                                \
    }
