// The GEMM ladder: six versions of C = A @ B (+ C), each adding ONE idea to the previous, so a
// benchmark can show what each idea is worth.
//
// Design:
//   Every rung has sg3::gemm's signature (the thread count is ignored until rung 6) and is
//   correct for any strides; only the speed changes.
//     1 gemm_naive        i-j-k loops: a dot product per element of C; the k loop walks B down a
//                         column, one cache line per multiply.
//     2 gemm_ikj          loop order i-k-j: the inner loop runs along a row of B and a row of C,
//                         unit stride, which the compiler vectorises.
//     3 gemm_packed       pack A into MR-row panels and B into NR-column panels, then plain
//                         loops on one pair of panels at a time (a rank-1 update of the
//                         MR x NR block of C per step of k): contiguous reads whatever the
//                         layout. For row-major operands no faster than rung 2 (its inner loop
//                         was unit-stride already); for a transposed B (x @ W.T) rung 2 misses
//                         the cache on every element and rung 3 does not. Its real payoff is
//                         rung 4, which needs exactly this layout.
//     4 gemm_microkernel  the register-blocked xsimd micro-kernel on those panels: the MR x NR
//                         block of C is held in registers for the whole k loop, with fused
//                         multiply-adds and aligned vector loads. No cache blocking: the
//                         panels span all of k, m and n.
//     5 gemm_blocked      cache blocking MC / KC / NC: the real sg3::gemm, one thread. What it
//                         adds depends on how fast rung 4 streams its panels from L3 / memory:
//                         on Zen 4 little for the AVX-512 float kernel (about 1 byte of A per
//                         cycle, which L3 feeds easily), a lot for AVX2 and for double.
//     6 gemm_threaded     threads: the real sg3::gemm.
//   Rungs 3-6 reuse the real implementation's pieces (packing, micro-kernel, loops).
//   `// [rung N: ...]` and `// [end rung N]` mark each rung for docs/stage3_gemm.md's listings.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gemm.hpp"

namespace sg3 {
namespace ladder {

// [rung 1: naive]
// Rung 1: the textbook triple loop.
template <class Arch, class T>
void gemm_naive(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t rsa, std::int64_t csa,
                const T* b, std::int64_t rsb, std::int64_t csb, T* c, std::int64_t ldc, bool accumulate, int) {
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            T sum = 0;
            for (std::int64_t p = 0; p < k; ++p) sum += a[i * rsa + p * csa] * b[p * rsb + j * csb];
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + sum : sum;
        }
}
// [end rung 1]

// [rung 2: loop order i-k-j]
// Rung 2: + loop order i-k-j. C's row i accumulates a[i,p] * (row p of B): the inner loop is
// unit-stride in B and C (when B is row-major), so it vectorises.
template <class Arch, class T>
void gemm_ikj(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t rsa, std::int64_t csa,
              const T* b, std::int64_t rsb, std::int64_t csb, T* c, std::int64_t ldc, bool accumulate, int) {
    for (std::int64_t i = 0; i < m; ++i) {
        T* __restrict ci = c + i * ldc;
        if (!accumulate)
            for (std::int64_t j = 0; j < n; ++j) ci[j] = T(0);
        for (std::int64_t p = 0; p < k; ++p) {
            const T aip = a[i * rsa + p * csa];
            const T* __restrict bp = b + p * rsb;
            if (csb == 1)
                for (std::int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
            else
                for (std::int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j * csb];
        }
    }
}
// [end rung 2]

// [rung 3: packing]
// Rung 3: + packing. A and B are copied once into MR-row / NR-column panels (gemm_pack.hpp),
// so the loops read contiguous memory whatever the strides. Each MR x NR block of C is then
// updated with rung 2's i-k-j loops over one A panel and one B panel: that block of C and
// the A panel stay in L1 and the B panel in L2, but every multiply-add still loads and
// stores C (no register blocking yet).
template <class Arch, class T>
void gemm_packed(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t rsa, std::int64_t csa,
                 const T* b, std::int64_t rsb, std::int64_t csb, T* c, std::int64_t ldc, bool accumulate, int) {
    constexpr int MR = kernel_shape<Arch, T>::mr;
    constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    if (m <= 0 || n <= 0) return;
    T* pa = thread_buffer<Arch, T, 1>().get(static_cast<std::size_t>(detail::ceil_div(m, MR) * MR * k));
    T* pb = thread_buffer<Arch, T, 2>().get(static_cast<std::size_t>(detail::ceil_div(n, NR) * NR * k));
    pack_a<Arch, T>(m, k, a, rsa, csa, pa);
    pack_b<Arch, T>(k, n, b, rsb, csb, pb);
    if (!accumulate)
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
    for (std::int64_t jr = 0; jr < n; jr += NR)
        for (std::int64_t ir = 0; ir < m; ir += MR) {
            const T* ap = pa + ir * k;
            const T* bp = pb + jr * k;
            const std::int64_t rows = std::min<std::int64_t>(MR, m - ir), cols = std::min<std::int64_t>(NR, n - jr);
            for (std::int64_t p = 0; p < k; ++p)
                for (std::int64_t i = 0; i < rows; ++i) {
                    const T aip = ap[p * MR + i];
                    T* __restrict ci = c + (ir + i) * ldc + jr;
                    for (std::int64_t j = 0; j < cols; ++j) ci[j] += aip * bp[p * NR + j];
                }
        }
}
// [end rung 3]

// [rung 4: micro-kernel]
// Rung 4: + the register-blocked xsimd micro-kernel (gemm_kernel.hpp) on the packed panels.
// The real loops with blocks as large as the whole problem: no cache blocking yet.
template <class Arch, class T>
void gemm_microkernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t rsa,
                      std::int64_t csa, const T* b, std::int64_t rsb, std::int64_t csb, T* c, std::int64_t ldc,
                      bool accumulate, int) {
    gemm_blocking_info whole = gemm_blocking<Arch, T>();
    whole.mc = detail::ceil_div(std::max<std::int64_t>(m, 1), whole.mr) * whole.mr;
    whole.kc = std::max<std::int64_t>(k, 1);
    whole.nc = detail::ceil_div(std::max<std::int64_t>(n, 1), whole.nr) * whole.nr;
    gemm_with_blocking<Arch, T>(whole, m, n, k, a, rsa, csa, b, rsb, csb, c, ldc, accumulate, 1);
}
// [end rung 4]

// [rung 5: cache blocking]
// Rung 5: + cache blocking MC / KC / NC sized from the caches (gemm_blocking.hpp), one thread.
template <class Arch, class T>
void gemm_blocked(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t rsa, std::int64_t csa,
                  const T* b, std::int64_t rsb, std::int64_t csb, T* c, std::int64_t ldc, bool accumulate, int) {
    gemm<Arch, T>(m, n, k, a, rsa, csa, b, rsb, csb, c, ldc, accumulate, 1);
}
// [end rung 5]

// [rung 6: threads]
// Rung 6: + threads: the team shares the packed B block and splits the rows of C.
template <class Arch, class T>
void gemm_threaded(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t rsa,
                   std::int64_t csa, const T* b, std::int64_t rsb, std::int64_t csb, T* c, std::int64_t ldc,
                   bool accumulate, int nthreads) {
    gemm<Arch, T>(m, n, k, a, rsa, csa, b, rsb, csb, c, ldc, accumulate, nthreads);
}
// [end rung 6]

}  // namespace ladder
}  // namespace sg3
