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
//   Packing: both operands into whole tiles, each 1 KiB contiguous (16 rows of 64 bytes), in
//   the order the k loop reads them: A's 16-row groups, each a run of 16 x 32 tiles along k;
//   B's 16-column groups, each a run of VNNI tiles along k. m, n and k are rounded up to 32
//   and zero-padded, and any strides are read (a transposed operand costs nothing extra).
//   Tile loads with a 64-byte stride read 1 KiB in sequence; loads straight from row-major
//   panels, 16 lines 1 or 2 KiB apart, ran at a third of the speed.
//   Blocking: k in blocks of KC (C accumulates across them in place: a long KC keeps C's
//   tiles loaded and stored rarely), m in blocks of MC that threads share out; within a block,
//   each 32-column panel of B is reused by every 32-row block of A from L2. Tiles at the edges
//   of C go through a 16 x 16 scratch tile so nothing outside C is written. Measured against
//   the other loop order and KC from 256 to 1024 (stagegrad's bench_half.Matmul).
#pragma once

#if defined(__x86_64__) && defined(__AVX512F__)

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <immintrin.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sg3 {
namespace amx {

constexpr std::int64_t KC = 1024, MC = 256;

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

// The 32 x 32 block of C at (i, j) (+)= A rows [i, i+32) @ B columns [j, j+32) over k [p0, p1);
// `steps` tiles of 32 along k in each 16-row group of packed A and 16-column group of packed B
inline void block(const std::uint16_t* pa, const std::uint16_t* pb, std::int64_t steps, std::int64_t p0,
                  std::int64_t p1, float* c, std::int64_t ldc, std::int64_t m, std::int64_t n, std::int64_t i,
                  std::int64_t j, bool first, float* tmp) {
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
    const std::uint16_t* a0 = pa + (i / 16) * steps * 512;
    const std::uint16_t* b0 = pb + (j / 16) * steps * 512;
    for (std::int64_t s = p0 / 32; s < p1 / 32; ++s) {
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

// A row of zeros that ``n`` elements ``stride`` apart (either sign) can be read from
inline const std::uint16_t* zeros_row(std::int64_t n, std::int64_t stride) {
    thread_local std::vector<std::uint16_t> zeros;
    const std::int64_t reach = (n - 1) * (stride < 0 ? -stride : stride);
    zeros.assign(std::max<std::size_t>(zeros.size(), reach + 1), 0);
    return zeros.data() + (stride < 0 ? reach : 0);
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
    // grow-only, per thread: a training loop allocates nothing after its first step
    thread_local std::vector<std::uint16_t> packed_a, packed_b;
    if (mp == m && kp == k && np == n) {  // every element is written below: no padding to zero
        packed_a.resize(std::max<std::size_t>(packed_a.size(), mp * kp));
        packed_b.resize(std::max<std::size_t>(packed_b.size(), kp * np));
    } else {
        packed_a.assign(std::max<std::size_t>(packed_a.size(), mp * kp), 0);
        packed_b.assign(std::max<std::size_t>(packed_b.size(), kp * np), 0);
    }
    std::uint16_t* pa = packed_a.data();
    std::uint16_t* pb = packed_b.data();
    const std::int64_t steps = kp / 32;
    // A (i, p) -> tile (i / 16, p / 32), its row i % 16, column p % 32: runs of 32 along k
    for (std::int64_t i = 0; i < m; ++i) {
        std::uint16_t* row = pa + (i / 16) * steps * 512 + (i % 16) * 32;
        for (std::int64_t p0 = 0; p0 < k; p0 += 32) {
            std::uint16_t* dst = row + (p0 / 32) * 512;
            const std::uint16_t* src = a + i * rsa + p0 * csa;
            const std::int64_t len = std::min<std::int64_t>(32, k - p0);
            if (csa == 1) {
                std::memcpy(dst, src, len * 2);
            } else {
                for (std::int64_t t = 0; t < len; ++t) dst[t] = src[t * csa];
            }
        }
    }
    // B (p, j) -> tile (j / 16, p / 32), its row (p % 32) / 2, column j % 16: one 32-bit pair
    // (B[p][j], B[p+1][j]) per column, built from two rows at once
    std::uint32_t* pb32 = reinterpret_cast<std::uint32_t*>(pb);
    for (std::int64_t p = 0; p < k; p += 2) {
        const std::uint16_t* r0 = b + p * rsb;
        const std::uint16_t* r1 = p + 1 < k ? r0 + rsb : zeros_row(n, csb);  // an odd k: pairs with 0
        std::uint32_t* row = pb32 + (p / 32) * 256 + ((p % 32) / 2) * 16;
        for (std::int64_t j0 = 0; j0 < n; j0 += 16) {
            std::uint32_t* dst = row + (j0 / 16) * steps * 256;
            const std::int64_t len = std::min<std::int64_t>(16, n - j0);
            for (std::int64_t t = 0; t < len; ++t)
                dst[t] = r0[(j0 + t) * csb] | (std::uint32_t(r1[(j0 + t) * csb]) << 16);
        }
    }
    const std::int64_t blocks = (mp + MC - 1) / MC;
    const int nt = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(nthreads, blocks)));
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        alignas(64) float tmp[16 * 16];
        configure();
        for (std::int64_t p0 = 0; p0 < kp; p0 += KC) {
            const std::int64_t p1 = std::min(kp, p0 + KC);
#pragma omp for schedule(static)
            for (std::int64_t ib = 0; ib < blocks; ++ib) {
                const std::int64_t i1 = std::min(mp, (ib + 1) * MC);
                for (std::int64_t j = 0; j < np; j += 32)
                    for (std::int64_t i = ib * MC; i < i1; i += 32)
                        block(pa, pb, steps, p0, p1, c, ldc, m, n, i, j, p0 == 0, tmp);
            }
        }
        release();
    }
    return true;
}

}  // namespace amx
}  // namespace sg3

#endif
