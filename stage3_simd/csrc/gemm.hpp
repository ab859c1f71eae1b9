// sg3::gemm: C = A @ B (+ C) for float and double, on any xsimd architecture.
//
// Design (BLIS / GotoBLAS):
//   Five loops around one micro-kernel (gemm_kernel.hpp), each cutting the problem so that the
//   data it reuses stays in one level of the memory hierarchy (sizes: gemm_blocking.hpp):
//     5th loop  jc over n  in steps of NC   B block kc x nc, packed once per (jc, pc): L3
//     4th loop  pc over k  in steps of KC   (packs that B block)
//     3rd loop  ic over m  in steps of MC   A block mc x kc, packed once per (jc, pc, ic): L2
//     2nd loop  jr over nc in steps of NR   B micro-panel kc x NR, reused by every ir: L2/L1
//     1st loop  ir over mc in steps of MR   A micro-panel MR x kc, streamed from L2
//     micro-kernel: the MR x NR block of C in registers, kc rank-1 updates, C touched once.
//   Packing (gemm_pack.hpp) reads A and B through arbitrary strides, so transposed or strided
//   operands need no copy beforehand, and zero-pads so the kernel only ever sees full panels.
//   A and B come from *sources*, objects whose pack(rows, cols, r0, c0, dst) writes the
//   micro-panels of the block at (r0, c0): `strided_a`/`strided_b` read a matrix through
//   strides; a convolution passes ones that gather its image patches while packing (conv.hpp),
//   so its im2col matrix never exists.
//   Block sizes are balanced (k = 1030 with KC = 256 becomes 5 blocks of 206, not 4 x 256 + 6).
//
//   Threads (OpenMP): the team shares one packed B block (each thread packs a slice of its
//   micro-panels, then a barrier) and splits the rows of C: each thread packs its own A block
//   into its own buffer and runs the 3rd..1st loops on its rows. Threads are arranged as a
//   tm x tn grid: tm threads split m, and when m is too short to give every thread rows, tn
//   threads split the jr loop instead. nthreads == 1, small products and calls from inside a
//   parallel region run on the calling thread and never open a parallel region.
//
//   Buffers are thread_local, grow-only and 64-byte aligned (gemm_arch.hpp): a training loop
//   that calls gemm repeatedly allocates nothing after the first call, and nothing leaks.
//   C must not overlap A or B.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm_arch.hpp"
#include "gemm_blocking.hpp"
#include "gemm_kernel.hpp"
#include "gemm_pack.hpp"

namespace sg3 {

namespace detail {

template <class T>
struct gemm_problem {
    std::int64_t m, n, k;
    T* c;
    std::int64_t ldc;
    bool accumulate;
};

inline constexpr std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

// Split `total` into the fewest blocks of at most `block`, all of about equal size, rounded up
// to a multiple of `step`: the step to use in a blocked loop over `total`. An empty `total`
// (a zero-size dimension) is no blocks, and any step will do.
inline constexpr std::int64_t balanced_step(std::int64_t total, std::int64_t block, std::int64_t step) {
    if (total <= 0) return step;
    const std::int64_t pieces = ceil_div(total, block);
    return std::max<std::int64_t>(step, ceil_div(ceil_div(total, pieces), step) * step);
}

// 2nd and 1st loops: C[0:mc, panels) (+)= A block @ packed B panels [jp0, jp1); the A block
// packed, or read in place with rows lda apart (lda > 0).
template <class Arch, class T>
void macro_kernel(std::int64_t mc, std::int64_t nc, std::int64_t kc, const T* pa, std::int64_t lda, const T* pb,
                  T* c, std::int64_t ldc, bool beta, std::int64_t jp0, std::int64_t jp1) {
    constexpr int MR = kernel_shape<Arch, T>::mr;
    constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    for (std::int64_t jr = jp0 * NR; jr < std::min(nc, jp1 * NR); jr += NR)
        for (std::int64_t ir = 0; ir < mc; ir += MR)
            micro_kernel<Arch, T>(kc, pa + ir * (lda > 0 ? lda : kc), lda, pb + jr * kc, c + ir * ldc + jr, ldc,
                                  std::min<std::int64_t>(MR, mc - ir), std::min<std::int64_t>(NR, nc - jr), beta);
}

// The row stride at which an A source is read in place (its `in_place` member), else 0 (packed).
template <class S, class = void>
struct in_place_rows {
    static std::int64_t of(const S&) { return 0; }
};
template <class S>
struct in_place_rows<S, std::void_t<decltype(S::in_place)>> {
    static std::int64_t of(const S& s) { return s.rs; }
};

// Elements to reserve for an A block (mc x kc) in the workspace: at most MC rows, at most m.
template <class Arch, class T>
std::int64_t a_block_size(const gemm_blocking_info& bl, std::int64_t m, std::int64_t kc_step) {
    constexpr int MR = kernel_shape<Arch, T>::mr;
    const std::int64_t rows = std::min(ceil_div(bl.mc, MR), ceil_div(m, MR)) * MR;
    const std::int64_t line = buffer_alignment / sizeof(T);
    return ceil_div(rows * kc_step, line) * line;
}

// 5th..3rd loops, run by thread `tid` of a team of `nt`; with nt > 1 every member of the team
// must call this (it has barriers). `pb` is the team's shared B block, `pa` this thread's
// A block (both in the caller's workspace).
template <class Arch, class T, class ASource, class BSource>
void gemm_loops(const gemm_problem<T>& g, const ASource& a, const BSource& b, const gemm_blocking_info& bl, T* pb,
                T* pa, int tid, int nt) {
    constexpr int MR = kernel_shape<Arch, T>::mr;
    constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);

    // Thread grid tm x tn: split the rows of C first; split the jr loop only when there are
    // fewer MR-row blocks than threads. Threads outside the grid just help pack B.
    const std::int64_t mblocks = ceil_div(g.m, MR);
    const int tm = static_cast<int>(std::min<std::int64_t>(nt, mblocks));
    const int tn = nt / tm;
    const bool in_grid = tid < tm * tn;
    const int ti = in_grid ? tid / tn : 0, tj = in_grid ? tid % tn : 0;

    // This thread's rows of C: a contiguous share of the MR-row blocks.
    const std::int64_t m0 = in_grid ? std::min(g.m, mblocks * ti / tm * MR) : 0;
    const std::int64_t m1 = in_grid ? std::min(g.m, mblocks * (ti + 1) / tm * MR) : 0;

    const std::int64_t kc_step = balanced_step(g.k, bl.kc, 1);
    const std::int64_t nc_step = balanced_step(g.n, bl.nc, NR);
    const std::int64_t mc_step = m1 > m0 ? balanced_step(m1 - m0, bl.mc, MR) : MR;

    for (std::int64_t jc = 0; jc < g.n; jc += nc_step) {  // 5th loop
        const std::int64_t nc = std::min(nc_step, g.n - jc);
        const std::int64_t panels = ceil_div(nc, NR);
        for (std::int64_t pc = 0; pc < g.k; pc += kc_step) {  // 4th loop
            const std::int64_t kc = std::min(kc_step, g.k - pc);
            // The B block: packed already, or packed now, each thread its slice of the micro-panels.
            const T* b_block = pb;
            if constexpr (BSource::packed) {
                b_block = b.block(kc, pc, jc);
            } else {
                const std::int64_t q0 = panels * tid / nt, q1 = panels * (tid + 1) / nt;
                if (q1 > q0)
                    b.pack(kc, std::min(nc, q1 * NR) - q0 * NR, pc, jc + q0 * NR, pb + q0 * NR * kc);
#ifdef _OPENMP
                if (nt > 1) {
#pragma omp barrier
                }
#endif
            }
            const bool beta = g.accumulate || pc > 0;
            for (std::int64_t ic = m0; ic < m1; ic += mc_step) {  // 3rd loop
                const std::int64_t mc = std::min(mc_step, m1 - ic);
                const T* a_block = a.panels(mc, kc, ic, pc, pa);
                macro_kernel<Arch, T>(mc, nc, kc, a_block, in_place_rows<ASource>::of(a), b_block,
                                      g.c + ic * g.ldc + jc, g.ldc, beta, panels * tj / tn, panels * (tj + 1) / tn);
            }
#ifdef _OPENMP
            if (!BSource::packed && nt > 1) {  // nobody repacks B while another thread still reads it
#pragma omp barrier
            }
#endif
        }
    }
}

}  // namespace detail

// A read through strides: element (i, p) at a[i*rs + p*cs]. An A source's panels() returns
// the packed block at (i0, p0), packing it into `scratch` when it is not packed already. The
// elements may be 2-byte floats S, widened to T as they are packed.
template <class Arch, class T, class S = T>
struct strided_a {
    const S* a;
    std::int64_t rs, cs;
    const T* panels(std::int64_t mc, std::int64_t kc, std::int64_t i0, std::int64_t p0, T* scratch) const {
        pack_a<Arch, T, S>(mc, kc, a + i0 * rs + p0 * cs, rs, cs, scratch);
        return scratch;
    }
};

// A read in place, row-major (element (i, p) at a[i*rs + p]): the micro-kernel broadcasts from
// its rows directly. For products with few column panels (at most kInPlaceColumns, below),
// which would reuse a packed block too few times to repay packing it.
template <class Arch, class T>
struct rows_a {
    static constexpr bool in_place = true;
    const T* a;
    std::int64_t rs;
    const T* panels(std::int64_t, std::int64_t, std::int64_t i0, std::int64_t p0, T*) const { return a + i0 * rs + p0; }
};

// A packed once for many products (a convolution's filters, for every image of a batch): per
// KC block of k (gemm's own split) the whole of A's MR-row micro-panels, so any block of rows
// that starts on a panel is already laid out as the micro-kernel reads it.
template <class Arch, class T>
struct prepacked_a {
    const T* data;
    std::int64_t m_padded;  // m rounded up to MR
    const T* panels(std::int64_t, std::int64_t kc, std::int64_t i0, std::int64_t p0, T*) const {
        return data + p0 * m_padded + i0 * kc;
    }
};

// Pack A (m x k, through strides) into `dst` (m rounded up to MR, times k, elements) for
// products run with blocking `bl`.
template <class Arch, class T>
prepacked_a<Arch, T> prepack_a(const gemm_blocking_info& bl, std::int64_t m, std::int64_t k, const T* a,
                               std::int64_t rs, std::int64_t cs, T* dst) {
    constexpr int MR = kernel_shape<Arch, T>::mr;
    const std::int64_t m_padded = detail::ceil_div(m, MR) * MR, kc_step = detail::balanced_step(k, bl.kc, 1);
    for (std::int64_t pc = 0; pc < k; pc += kc_step)
        pack_a<Arch, T>(m, std::min(kc_step, k - pc), a + pc * cs, rs, cs, dst + pc * m_padded);
    return {dst, m_padded};
}

// B read through strides: element (p, j) at b[p*rs + j*cs]. A B source either packs a block
// into the team's buffer (pack, `packed` false) or has it packed already (block, `packed` true).
template <class Arch, class T, class S = T>
struct strided_b {
    static constexpr bool packed = false;
    const S* b;
    std::int64_t rs, cs;
    void pack(std::int64_t kc, std::int64_t nc, std::int64_t p0, std::int64_t j0, T* dst) const {
        pack_b<Arch, T, S>(kc, nc, b + p0 * rs + j0 * cs, rs, cs, dst);
    }
};

// B packed once for many products (a recurrent layer's weights, for every time step), laid out
// as prepacked_a: per KC block of k, all of B's NR-column micro-panels.
template <class Arch, class T>
struct prepacked_b {
    static constexpr bool packed = true;
    const T* data;
    std::int64_t n_padded;  // n rounded up to NR
    const T* block(std::int64_t kc, std::int64_t p0, std::int64_t j0) const { return data + p0 * n_padded + j0 * kc; }
};

// Pack B (k x n, through strides) into `dst` (k times n rounded up to NR, elements) for
// products run with blocking `bl`.
template <class Arch, class T>
prepacked_b<Arch, T> prepack_b(const gemm_blocking_info& bl, std::int64_t k, std::int64_t n, const T* b,
                               std::int64_t rs, std::int64_t cs, T* dst) {
    constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    const std::int64_t n_padded = detail::ceil_div(n, NR) * NR, kc_step = detail::balanced_step(k, bl.kc, 1);
    for (std::int64_t pc = 0; pc < k; pc += kc_step)
        pack_b<Arch, T>(std::min(kc_step, k - pc), n, b + pc * rs, rs, cs, dst + pc * n_padded);
    return {dst, n_padded};
}

// C[m x n] = A @ B (+ C) with A and B from sources (see the Design note) and explicit blocking.
template <class Arch, class T, class ASource, class BSource>
void gemm_from(const gemm_blocking_info& bl, std::int64_t m, std::int64_t n, std::int64_t k, const ASource& a,
               const BSource& b, T* c, std::int64_t ldc, bool accumulate, int nthreads) {
    constexpr int MR = kernel_shape<Arch, T>::mr;
    constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {  // empty sum
        if (!accumulate)
            for (std::int64_t i = 0; i < m; ++i)
                for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
        return;
    }
    const detail::gemm_problem<T> g{m, n, k, c, ldc, accumulate};

    // Threads: never nested, never more than the cores, and not for products too small to
    // repay waking a team (a few microseconds).
    int nt = std::max(1, nthreads);
#ifdef _OPENMP
    if (omp_in_parallel()) nt = 1;
    nt = std::min(nt, omp_get_num_procs());
#else
    nt = 1;
#endif
    if (double(m) * double(n) * double(k) < double(bl.min_parallel_work)) nt = 1;
    // no more threads than MR x NR blocks of C to share out
    nt = static_cast<int>(std::min<std::int64_t>(nt, detail::ceil_div(m, MR) * detail::ceil_div(n, NR)));

    // Workspace, from the calling thread's buffer: the team's B block, then one A block per
    // thread, each 64-byte aligned. Taken here, outside the parallel region, so that a failed
    // allocation throws to the caller instead of terminating the OpenMP team.
    const std::int64_t kc_step = detail::balanced_step(k, bl.kc, 1);
    const std::int64_t nc_step = detail::balanced_step(n, bl.nc, NR);
    const std::int64_t line = buffer_alignment / sizeof(T);
    const std::int64_t b_size = detail::ceil_div(kc_step * nc_step, line) * line;
    const std::int64_t a_size = detail::a_block_size<Arch, T>(bl, m, kc_step);
    T* work = thread_buffer<Arch, T, 0>().get(static_cast<std::size_t>(b_size + nt * a_size));

    if (nt == 1) {
        detail::gemm_loops<Arch, T>(g, a, b, bl, work, work + b_size, 0, 1);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
    {
        // the runtime may grant fewer threads than asked: use the team's real size
        const int tid = omp_get_thread_num();
        detail::gemm_loops<Arch, T>(g, a, b, bl, work, work + b_size + tid * a_size, tid, omp_get_num_threads());
    }
#endif
}

// A row-major A is read in place when C has at most this many column panels (see rows_a).
constexpr std::int64_t kInPlaceColumns = 8;

// The GEMM with explicit blocking (gemm below uses the machine's; the ladder and tuning runs
// pass their own). See gemm for the arguments.
template <class Arch, class T>
void gemm_with_blocking(const gemm_blocking_info& bl, std::int64_t m, std::int64_t n, std::int64_t k,
                        const T* a, std::int64_t rsa, std::int64_t csa, const T* b, std::int64_t rsb,
                        std::int64_t csb, T* c, std::int64_t ldc, bool accumulate, int nthreads) {
    constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    const strided_b<Arch, T> bs{b, rsb, csb};
    if (csa == 1 && rsa > 0 && n <= kInPlaceColumns * NR)
        gemm_from<Arch, T>(bl, m, n, k, rows_a<Arch, T>{a, rsa}, bs, c, ldc, accumulate, nthreads);
    else
        gemm_from<Arch, T>(bl, m, n, k, strided_a<Arch, T>{a, rsa, csa}, bs, c, ldc, accumulate, nthreads);
}

// C[m x n] = A[m x k] @ B[k x n]  (+ C when accumulate). A element (i,p) at a[i*rsa + p*csa],
// B element (p,j) at b[p*rsb + j*csb], C element (i,j) at c[i*ldc + j]. Any strides (including 0
// or negative for A and B) are allowed. k == 0 gives C = 0 (or C unchanged when accumulate).
// nthreads: OpenMP threads to use (values below 1 mean 1).
template <class Arch, class T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k,
          const T* a, std::int64_t rsa, std::int64_t csa,
          const T* b, std::int64_t rsb, std::int64_t csb,
          T* c, std::int64_t ldc, bool accumulate, int nthreads) {
    gemm_with_blocking<Arch, T>(gemm_blocking<Arch, T>(), m, n, k, a, rsa, csa, b, rsb, csb, c, ldc,
                                accumulate, nthreads);
}

}  // namespace sg3
