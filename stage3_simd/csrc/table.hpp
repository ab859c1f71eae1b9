// One ISA's table of kernels (sg3_table), and the extension module that hands it out.
//
// Design: this header is included by exactly one translation unit per ISA
// (isa_sse2.cpp, isa_avx2.cpp, isa_avx512.cpp), each compiled with that ISA's flags into
// its own extension module. ``SG3_ISA_MODULE(name, Arch)`` instantiates every kernel for
// ``Arch`` and defines the module ``stage3_simd._isa_<name>``, whose ``table`` is a
// capsule holding a pointer to the table. Everything else is hidden (-fvisibility=hidden).
#pragma once

#include <Python.h>

#include "elementwise.hpp"
#include "gemm.hpp"
#include "gemm_ladder.hpp"
#include "kernels.h"
#include "reduce.hpp"

namespace sg3 {

template <class A, class T>
void gemm_entry(int64_t m, int64_t n, int64_t k, const T* a, int64_t rsa, int64_t csa, const T* b,
                int64_t rsb, int64_t csb, T* c, int64_t ldc, int accumulate, int nthreads) {
    gemm<A, T>(m, n, k, a, rsa, csa, b, rsb, csb, c, ldc, accumulate != 0, nthreads);
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

template <class A>
const sg3_table* table(const char* isa) {
    static const sg3_table t = {
        isa,
        static_cast<int>(vec<float, A>::size * sizeof(float)),
        &unary<A>,
        &binary<A>,
        &where<A>,
        &cast<A>,
        &reduce<A>,
        &gemm_entry<A, float>,
        &gemm_entry<A, double>,
        &gemm_rung<A>,
        &blocking<A>,
        &fma_peak<A>,
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
