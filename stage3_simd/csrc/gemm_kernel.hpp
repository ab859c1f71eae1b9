// The micro-kernel: the only code in the GEMM that does arithmetic at full speed.
//
// Design:
//   Contract (the BLIS micro-kernel):
//     C[0:m, 0:n] = A_panel @ B_panel  (+ C[0:m, 0:n] when beta)
//   where A_panel is a packed MR x kc micro-panel (kc steps of MR values), B_panel a packed
//   kc x NR micro-panel (kc steps of NR values, 64-byte aligned), C row-major with leading
//   dimension ldc, and m <= MR, n <= NR. The packing routines zero-pad the panels, so the
//   arithmetic always runs on the full MR x NR block.
//   The MR x NR block of C lives in registers for the whole k loop as MR rows of NV vectors.
//   Each step loads NV vectors of B, and for each of the MR rows broadcasts one value of A and
//   does NV multiply-adds: MR*NV independent FMAs per step (enough to hide FMA latency, while
//   one loaded B vector is reused MR times and one broadcast NV times).
//   C is touched only once, at the end. A full block is added/stored straight to C; an edge
//   block (m < MR or n < NR) goes through a small tile on the stack so the kernel never reads
//   or writes outside C.
//   A may also be read in place (`lda` > 0): MR rows of a row-major matrix, lda apart, the
//   kernel's broadcasts walking each row (rows past m repeat row m - 1, so nothing outside A is
//   read). Where few column panels would reuse a packed A (gemm.hpp's rows_a), packing it costs
//   more than it saves: the broadcasts read a line once per 16 steps either way.
#pragma once

#include <cstdint>

#include "gemm_arch.hpp"

namespace sg3 {

template <class Arch, class T>
void micro_kernel(std::int64_t kc, const T* __restrict a, std::int64_t lda, const T* __restrict b, T* c,
                  std::int64_t ldc, std::int64_t m, std::int64_t n, bool beta) {
    using batch = xsimd::batch<T, Arch>;
    constexpr int MR = kernel_shape<Arch, T>::mr;
    constexpr int NV = kernel_shape<Arch, T>::nv;
    constexpr int W = static_cast<int>(batch::size);
    constexpr int NR = NV * W;

    // Ask for the C block's cache lines now: they arrive while the k loop runs, not at the store.
    constexpr int line = 64 / sizeof(T);
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; j += line) __builtin_prefetch(c + i * ldc + j, 1);
        __builtin_prefetch(c + i * ldc + n - 1, 1);
    }

    batch acc[MR][NV];
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[i][v] = batch(T(0));

    if (lda > 0) {  // A in place: row i at rows[i]
        const T* rows[MR];
#pragma GCC unroll 32
        for (int i = 0; i < MR; ++i) rows[i] = a + (i < m ? i : m - 1) * lda;
        for (std::int64_t p = 0; p < kc; ++p) {
            batch bv[NV];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) bv[v] = batch::load_aligned(b + v * W);
#pragma GCC unroll 32
            for (int i = 0; i < MR; ++i) {
                const batch ai(rows[i][p]);
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) acc[i][v] = madd(ai, bv[v], acc[i][v]);
            }
            b += NR;
        }
    } else {
        for (std::int64_t p = 0; p < kc; ++p) {
            batch bv[NV];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) bv[v] = batch::load_aligned(b + v * W);
#pragma GCC unroll 32
            for (int i = 0; i < MR; ++i) {
                const batch ai(a[i]);  // broadcast: one load, used by NV multiply-adds
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) acc[i][v] = madd(ai, bv[v], acc[i][v]);
            }
            a += MR;
            b += NR;
        }
    }

    if (m == MR && n == NR) {
#pragma GCC unroll 32
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                T* ci = c + i * ldc + v * W;
                batch r = beta ? acc[i][v] + batch::load_unaligned(ci) : acc[i][v];
                r.store_unaligned(ci);
            }
        return;
    }
    alignas(buffer_alignment) T tile[MR * NR];
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[i][v].store_aligned(tile + i * NR + v * W);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            c[i * ldc + j] = beta ? c[i * ldc + j] + tile[i * NR + j] : tile[i * NR + j];
}

}  // namespace sg3
