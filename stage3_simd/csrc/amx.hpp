// bfloat16 GEMM on AMX tiles (Intel Sapphire Rapids and later): C (float32) = A @ B with A and
// B bfloat16, compiled into the AVX-512 module only and used where the CPU has AMX-BF16 and the
// OS grants the tile state.
//
// Design:
//   AMX adds tile products: TDPBF16PS adds to a 16 x 16 float32 tile of C the product of a
//   16 x 32 bfloat16 tile of A (16 rows, 32 steps of k) and a 32 x 16 tile of B held as 16
//   rows of k-pairs (the "VNNI" layout: row q holds B[2q][j], B[2q+1][j] for j < 16). Each
//   product is exact and the sums are float32; denormal inputs and outputs are flushed, as in
//   every AMX library (PyTorch's bfloat16 matmul on this hardware runs the same instruction).
//   Eight tile registers: four hold a 32 x 32 block of C, two the block's 32 rows of A and
//   two its 32 columns of B, so each tile loaded feeds two products.
//   Packing: both operands into whole tiles, each 1 KiB contiguous (16 rows of 64 bytes) and
//   64-byte aligned, in the order the k loop reads them: A's 16-row groups, each a run of
//   16 x 32 tiles along k; B's 16-column groups, each a run of VNNI tiles along k. Edges are
//   zero-padded to whole tiles, and any strides are read (a transposed operand costs nothing
//   extra). Tile loads with a 64-byte stride read 1 KiB in sequence; loads straight from
//   row-major panels, 16 lines 1 or 2 KiB apart, ran at a third of the speed, and tiles whose
//   rows straddle two cache lines (an unaligned buffer) at two thirds.
//   Blocking (BLIS's loops, with a 32 x 32 block of C as the micro-tile): k in blocks of KC;
//   per block, B's KC x n is packed by all threads together (it stays in L2), then each thread
//   packs MC of its rows of A at a time and runs each 32-row micro-panel of them (KC x 32 x 2
//   bytes: 16 KiB, in L1) across every 32-column panel of B. With KC = 256 that B block is
//   512 KiB for n = 1024. Measured (1 thread, n = 512 to 2048) against KC from 256 to 1024,
//   MC from 64 to 512 and the other loop order: this order and KC = 256 won at every size,
//   though C is read and written back once per KC; the old loops, packing everything first
//   and keeping a 32-column panel of B (64 KiB, past L1) across the rows, ran at half.
#pragma once

#if defined(__x86_64__) && defined(__AVX512F__)

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include <immintrin.h>

#include "gemm_arch.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sg3 {
namespace amx {

constexpr std::int64_t KC = 256, MC = 64;

// Whether the CPU has AMX-BF16 and Linux lets this process use the tile data (asked once:
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, which a kernel without AMX support refuses).
inline bool available() {
    static const bool ok = [] {
        unsigned a, b, c, d;
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
        const bool tile = (d >> 24) & 1, bf16 = (d >> 22) & 1;
        return tile && bf16 && syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
    }();
    return ok;
}

struct tile_config {  // palette 1's layout (Intel SDM, LDTILECFG)
    std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
};

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16")

// tiles 0-3: C, 4-5: A, 6-7: B; every one 16 rows of 64 bytes
inline void configure() {
    tile_config cfg;
    for (int t = 0; t < 8; ++t) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    // GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes only: make the stores happen
    __asm__ __volatile__("" : : "r"(&cfg) : "memory");
    _tile_loadconfig(&cfg);
}

// C tile `T` at (i, j) of the m x n matrix c: in place when it lies inside, else through `tmp`
#define SG3_AMX_LOAD_C(T, i, j)                                                                      \
    do {                                                                                               \
        if (!first) {                                                                                  \
            if ((i) + 16 <= m && (j) + 16 <= n) {                                                      \
                _tile_loadd(T, c + (i) * ldc + (j), ldc * 4);                                          \
            } else {                                                                                   \
                edge_in(c, ldc, m, n, i, j, tmp);                                                      \
                _tile_loadd(T, tmp, 64);                                                               \
            }                                                                                          \
        }                                                                                              \
    } while (0)
#define SG3_AMX_STORE_C(T, i, j)                                                                     \
    do {                                                                                               \
        if ((i) < m && (j) < n) {                                                                      \
            if ((i) + 16 <= m && (j) + 16 <= n) {                                                      \
                _tile_stored(T, c + (i) * ldc + (j), ldc * 4);                                         \
            } else {                                                                                   \
                _tile_stored(T, tmp, 64);                                                              \
                edge_out(c, ldc, m, n, i, j, tmp);                                                     \
            }                                                                                          \
        }                                                                                              \
    } while (0)

inline void edge_in(const float* c, std::int64_t ldc, std::int64_t m, std::int64_t n, std::int64_t i,
                    std::int64_t j, float* tmp) {
    for (std::int64_t r = 0; r < 16; ++r)
        for (std::int64_t s = 0; s < 16; ++s)
            tmp[r * 16 + s] = (i + r < m && j + s < n) ? c[(i + r) * ldc + j + s] : 0.0f;
}

inline void edge_out(float* c, std::int64_t ldc, std::int64_t m, std::int64_t n, std::int64_t i, std::int64_t j,
                     const float* tmp) {
    for (std::int64_t r = 0; r < 16 && i + r < m; ++r)
        for (std::int64_t s = 0; s < 16 && j + s < n; ++s) c[(i + r) * ldc + j + s] = tmp[r * 16 + s];
}

// The 32 x 32 block of C at (i, j) (+)= its 32 rows of packed A (a0: two 16-row groups) @ its 32
// columns of packed B (b0: two 16-column groups), each group a run of `steps` tiles along k
inline void block(const std::uint16_t* a0, const std::uint16_t* b0, std::int64_t steps, float* c,
                  std::int64_t ldc, std::int64_t m, std::int64_t n, std::int64_t i, std::int64_t j, bool first,
                  float* tmp) {
    if (first) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    SG3_AMX_LOAD_C(0, i, j);
    SG3_AMX_LOAD_C(1, i, j + 16);
    SG3_AMX_LOAD_C(2, i + 16, j);
    SG3_AMX_LOAD_C(3, i + 16, j + 16);
    for (std::int64_t s = 0; s < steps; ++s) {
        // each load issued just before the first product that needs it, so loads overlap products
        _tile_loadd(4, a0 + s * 512, 64);
        _tile_loadd(6, b0 + s * 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b0 + (steps + s) * 512, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a0 + (steps + s) * 512, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    SG3_AMX_STORE_C(0, i, j);
    SG3_AMX_STORE_C(1, i, j + 16);
    SG3_AMX_STORE_C(2, i + 16, j);
    SG3_AMX_STORE_C(3, i + 16, j + 16);
}

#undef SG3_AMX_LOAD_C
#undef SG3_AMX_STORE_C

inline void release() { _tile_release(); }

#pragma GCC pop_options

// Pack rows [i0, i1) of A (m x k) over k [p0, p0 + kc) into whole 16 x 32 tiles: 16-row group
// g's tiles in a run along k at dst + g * steps * 512 (rows past m and steps past k are zeros).
inline void pack_a(const std::uint16_t* a, std::int64_t rsa, std::int64_t csa, std::int64_t m, std::int64_t k,
                   std::int64_t i0, std::int64_t i1, std::int64_t p0, std::int64_t steps, std::uint16_t* dst) {
    for (std::int64_t i = i0; i < i1; ++i) {
        std::uint16_t* row = dst + ((i - i0) / 16) * steps * 512 + (i % 16) * 32;
        for (std::int64_t s = 0; s < steps; ++s) {
            std::uint16_t* out = row + s * 512;
            const std::int64_t p = p0 + s * 32, len = i < m ? std::clamp<std::int64_t>(k - p, 0, 32) : 0;
            const std::uint16_t* src = a + i * rsa + p * csa;
            if (len == 32 && csa == 1) {
                _mm512_store_si512(out, _mm512_loadu_si512(src));
                continue;
            }
            for (std::int64_t t = 0; t < len; ++t) out[t] = src[t * csa];
            std::fill(out + len, out + 32, std::uint16_t(0));
        }
    }
}

// Pack columns [j0, j0 + 16) of B (k x n) over k [p0, p0 + kc) into VNNI tiles: row q of tile s
// holds the 32-bit pairs (B[p][j], B[p+1][j]), p = p0 + 32 s + 2 q (zeros past k and n).
inline void pack_b(const std::uint16_t* b, std::int64_t rsb, std::int64_t csb, std::int64_t k, std::int64_t n,
                   std::int64_t j0, std::int64_t p0, std::int64_t steps, std::uint16_t* dst) {
    std::uint32_t* out = reinterpret_cast<std::uint32_t*>(dst);
    const std::int64_t cols = std::clamp<std::int64_t>(n - j0, 0, 16);
    for (std::int64_t p = p0; p < p0 + steps * 32; p += 2, out += 16) {
        const std::uint16_t* r0 = b + p * rsb + j0 * csb;
        if (cols == 16 && csb == 1 && p + 1 < k) {  // two rows of 16, interleaved
            const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0)));
            const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + rsb)));
            _mm512_store_si512(out, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
            continue;
        }
        for (std::int64_t t = 0; t < 16; ++t) {
            const std::uint32_t x0 = t < cols && p < k ? r0[t * csb] : 0;
            const std::uint32_t x1 = t < cols && p + 1 < k ? r0[rsb + t * csb] : 0;
            out[t] = x0 | (x1 << 16);
        }
    }
}

// C[m x n] (row stride ldc, float32) = A @ B, A (m x k) and B (k x n) bfloat16 bits through any
// strides. False where AMX is unavailable (the caller takes another path).
inline bool gemm_bf16(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a, std::int64_t rsa,
                      std::int64_t csa, const std::uint16_t* b, std::int64_t rsb, std::int64_t csb, float* c,
                      std::int64_t ldc, int nthreads) {
    if (!available()) return false;
    if (m == 0 || n == 0) return true;
    if (k == 0) {
        for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
        return true;
    }
    const std::int64_t mp = (m + 31) / 32 * 32, kp = (k + 31) / 32 * 32, np = (n + 31) / 32 * 32;
    const std::int64_t kc = std::min(kp, KC), groups = np / 16, rows32 = mp / 32;
    // B's block of kc x n is shared: packed by every thread together; then each thread packs its
    // own rows of A. Both buffers from the calling thread, before the team starts (a failed
    // allocation reaches the caller).
    const int nt = static_cast<int>(std::clamp<std::int64_t>(nthreads, 1, rows32));
    // (64-byte aligned: tile loads of rows that straddle two cache lines ran at two thirds)
    std::uint16_t* pb = thread_buffer<xsimd::avx512bw, std::uint16_t, 0>().get(static_cast<std::size_t>(kc * np));
    std::uint16_t* pas = thread_buffer<xsimd::avx512bw, std::uint16_t, 1>().get(static_cast<std::size_t>(nt * MC * kc));
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#ifdef _OPENMP
        const int tid = omp_get_thread_num(), team = omp_get_num_threads();
#else
        const int tid = 0, team = 1;
#endif
        const std::int64_t i0 = rows32 * tid / team * 32, i1 = rows32 * (tid + 1) / team * 32;
        std::uint16_t* pa = pas + tid * MC * kc;
        alignas(64) float tmp[16 * 16];
        configure();
        for (std::int64_t p0 = 0; p0 < kp; p0 += kc) {
            const std::int64_t steps = std::min(kc, kp - p0) / 32;
#pragma omp for schedule(static)
            for (std::int64_t g = 0; g < groups; ++g)
                pack_b(b, rsb, csb, k, n, g * 16, p0, steps, pb + g * steps * 512);
            for (std::int64_t ib = i0; ib < i1; ib += MC) {
                const std::int64_t ie = std::min(i1, ib + MC);
                pack_a(a, rsa, csa, m, k, ib, ie, p0, steps, pa);
                for (std::int64_t i = ib; i < ie; i += 32)
                    for (std::int64_t j = 0; j < np; j += 32)
                        block(pa + ((i - ib) / 16) * steps * 512, pb + (j / 16) * steps * 512, steps, c, ldc, m, n,
                              i, j, p0 == 0, tmp);
            }
#pragma omp barrier
        }
        release();
    }
    return true;
}

}  // namespace amx
}  // namespace sg3

#endif
