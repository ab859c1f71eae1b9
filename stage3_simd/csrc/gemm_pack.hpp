// Packing: copy a block of A or B into the contiguous, zero-padded micro-panels the
// micro-kernel reads.
//
// Design:
//   The micro-kernel reads, at each step p of the k loop, MR consecutive values of A (column p
//   of an MR-row slice) and NR consecutive values of B (row p of an NR-column slice). Packing
//   lays the operands out in exactly that order:
//     A block (mc x kc)  ->  ceil(mc/MR) micro-panels, each kc steps of MR values;
//     B block (kc x nc)  ->  ceil(nc/NR) micro-panels, each kc steps of NR values.
//   So the kernel's loads are unit-stride and the B loads are aligned, whatever the original
//   layout: the operands are read here through an arbitrary row stride and column stride
//   (transposed, strided, negative or zero-stride views cost the same as contiguous ones), and
//   packing costs O(mc*kc + kc*nc) against the O(mc*nc*kc) work that reuses it.
//   Rows of A past m and columns of B past n are filled with zeros, so the kernel always runs
//   full MR x NR steps; only its final store to C looks at the true edge.
//   Both are loops over one routine, pack_panel, with a fast path for each unit-stride case
//   (a plain copy the compiler vectorises, or a cache-friendly transpose) and a general one.
//   The source may hold 2-byte floats (float16, bfloat16) where the panels are float32: each
//   value is widened (exactly) as it is copied, so no float32 copy of the operand is made.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gemm_arch.hpp"
#include "half.hpp"

namespace sg3 {

// A source element as the panel's type T: itself, or a 2-byte float widened
template <class T, class S>
inline T panel_value(S x) {
    if constexpr (is_half<S>::value) {
        return to_float(x);
    } else {
        return x;
    }
}

#if XSIMD_WITH_AVX512BW
// The 16 registers r transposed into out (r is overwritten): lane i of out[k] is lane k of r[i].
// AVX-512 float: four rounds of in-register shuffles.
inline void transpose16(__m512 r[16], __m512 out[16]) {
    __m512 a[16];
    for (int i = 0; i < 8; ++i) {  // lane l of a[2i], a[2i+1]: rows 2i, 2i+1 of columns 4l..4l+3
        a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int g = 0; g < 4; ++g) {  // lane l of r[4g + j]: column 4l + j of rows 4g..4g+3
        r[4 * g] = _mm512_shuffle_ps(a[4 * g], a[4 * g + 2], 0x44);
        r[4 * g + 1] = _mm512_shuffle_ps(a[4 * g], a[4 * g + 2], 0xEE);
        r[4 * g + 2] = _mm512_shuffle_ps(a[4 * g + 1], a[4 * g + 3], 0x44);
        r[4 * g + 3] = _mm512_shuffle_ps(a[4 * g + 1], a[4 * g + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {  // gather lane l of r[j], r[4 + j], r[8 + j], r[12 + j]: column 4l + j
        const __m512 p = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x44), q = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xEE);
        const __m512 u = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x44);
        const __m512 v = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xEE);
        out[j] = _mm512_shuffle_f32x4(p, u, 0x88);
        out[4 + j] = _mm512_shuffle_f32x4(p, u, 0xDD);
        out[8 + j] = _mm512_shuffle_f32x4(q, v, 0x88);
        out[12 + j] = _mm512_shuffle_f32x4(q, v, 0xDD);
    }
}

// The 16 x 16 block at src (rows `rs` apart; rows past `rows`, or past Max, and columns past
// `cols` read as zeros) transposed: out[k] is column k (a Max below 16 lets the compiler drop
// the zero rows' loads).
template <int Max = 16>
inline void transpose16(const float* src, int64_t rs, int64_t rows, int64_t cols, __m512 out[16]) {
    const __mmask16 mask = cols >= 16 ? __mmask16(0xffff) : __mmask16((1u << cols) - 1);
    __m512 r[16];
    for (int i = 0; i < 16; ++i)
        r[i] = i < Max && i < rows ? _mm512_maskz_loadu_ps(mask, src + i * rs) : _mm512_setzero_ps();
    transpose16(r, out);
}
#endif

// Pack one micro-panel: `lanes` (<= R) lanes of kc steps, lane r of step p read from
// src[r * lane_stride + p * step_stride], written to dst[p * R + r]; lanes past `lanes` are 0.
// (For A a lane is a row and a step a column; for B a lane is a column and a step a row.)
template <class Arch, class T, int R, class S = T>
void pack_panel(std::int64_t kc, std::int64_t lanes, const S* __restrict src, std::int64_t lane_stride,
                std::int64_t step_stride, T* __restrict dst) {
    if constexpr (is_half<S>::value) {  // contiguous runs widen a vector at a time (F16C where present)
        if (lanes == R && lane_stride == 1) {
            for (std::int64_t p = 0; p < kc; ++p) widen_row(src + p * step_stride, dst + p * R, R);
            return;
        }
        if (lanes == R && step_stride == 1) {
            float run[64];
            for (std::int64_t p0 = 0; p0 < kc; p0 += 64) {
                const std::int64_t len = std::min<std::int64_t>(64, kc - p0);
                for (int r = 0; r < R; ++r) {
                    widen_row(src + r * lane_stride + p0, run, len);
                    for (std::int64_t t = 0; t < len; ++t) dst[(p0 + t) * R + r] = run[t];
                }
            }
            return;
        }
    }
#if XSIMD_WITH_AVX512BW
    if constexpr (std::is_same_v<Arch, xsimd::avx512bw> && std::is_same_v<T, float> && std::is_same_v<S, float> &&
                  (R % 16 == 0 || R < 16)) {
        if (step_stride == 1) {  // each lane contiguous: 16 x 16 blocks transposed in registers
            for (std::int64_t p0 = 0; p0 < kc; p0 += 16) {
                const std::int64_t steps = std::min<std::int64_t>(16, kc - p0);
                for (int l0 = 0; l0 < R; l0 += 16) {
                    __m512 out[16];
                    transpose16<(R < 16 ? R : 16)>(src + l0 * lane_stride + p0, lane_stride, lanes - l0, steps, out);
                    for (std::int64_t k = 0; k < steps; ++k) {
                        if constexpr (R < 16)
                            _mm512_mask_storeu_ps(dst + (p0 + k) * R, __mmask16((1u << R) - 1), out[k]);
                        else
                            _mm512_storeu_ps(dst + (p0 + k) * R + l0, out[k]);
                    }
                }
            }
            return;
        }
    }
#endif
    if (lanes == R && lane_stride == 1) {
        // the R lanes of a step are contiguous: a plain copy per step, which vectorises
        for (std::int64_t p = 0; p < kc; ++p)
            for (int r = 0; r < R; ++r) dst[p * R + r] = panel_value<T>(src[p * step_stride + r]);
    } else if (lanes == R && step_stride == 1) {
        // each lane is contiguous (a transpose): read a cache line's worth of steps from every
        // lane in turn, so each line is read once and the writes stay within a small window
        constexpr std::int64_t tile = 64 / sizeof(S);
        for (std::int64_t p0 = 0; p0 < kc; p0 += tile) {
            const std::int64_t p1 = std::min(kc, p0 + tile);
            for (int r = 0; r < R; ++r)
                for (std::int64_t p = p0; p < p1; ++p) dst[p * R + r] = panel_value<T>(src[r * lane_stride + p]);
        }
    } else {
        // general strides, or a partial panel at the edge (zero-padded)
        for (std::int64_t p = 0; p < kc; ++p) {
            for (std::int64_t r = 0; r < lanes; ++r)
                dst[p * R + r] = panel_value<T>(src[r * lane_stride + p * step_stride]);
            for (std::int64_t r = lanes; r < R; ++r) dst[p * R + r] = T(0);
        }
    }
}

// Pack rows [0, mc) x columns [0, kc) of A (element (i, p) at a[i*rsa + p*csa]) into MR-row
// micro-panels at `dst`: element (i, p) goes to dst[(i / MR) * MR * kc + p * MR + i % MR].
template <class Arch, class T, class S = T>
void pack_a(std::int64_t mc, std::int64_t kc, const S* a, std::int64_t rsa, std::int64_t csa, T* dst) {
    constexpr int MR = kernel_shape<Arch, T>::mr;
    if (rsa == 1 && csa != 1) {
        // A's columns contiguous (a transposed operand: the weight gradient's dY^T): 16 columns
        // at a time, MR values of each to every panel. Panel by panel would read MR values of
        // each of kc lines, and a column at a time would write to every panel at once: panels
        // 6 x kc floats apart, a multiple of 4 KiB for kc = 1024, all in one set of L1.
        constexpr std::int64_t kCols = 16;
        for (std::int64_t p0 = 0; p0 < kc; p0 += kCols)
            for (std::int64_t ir = 0; ir < mc; ir += MR)
                for (std::int64_t p = p0; p < std::min(kc, p0 + kCols); ++p) {
                    const S* col = a + p * csa + ir;
                    T* d = dst + ir * kc + p * MR;
                    const std::int64_t lanes = std::min<std::int64_t>(MR, mc - ir);
#if XSIMD_WITH_AVX512BW
                    if constexpr (std::is_same_v<Arch, xsimd::avx512bw> && std::is_same_v<T, float> &&
                                  std::is_same_v<S, float> && MR < 16) {  // one masked copy (zeros past mc)
                        _mm512_mask_storeu_ps(d, __mmask16((1u << MR) - 1),
                                              _mm512_maskz_loadu_ps(__mmask16((1u << lanes) - 1), col));
                        continue;
                    }
#endif
                    for (std::int64_t r = 0; r < lanes; ++r) d[r] = panel_value<T>(col[r]);
                    for (std::int64_t r = lanes; r < MR; ++r) d[r] = T(0);
                }
        return;
    }
    for (std::int64_t ir = 0; ir < mc; ir += MR)
        pack_panel<Arch, T, MR, S>(kc, std::min<std::int64_t>(MR, mc - ir), a + ir * rsa, rsa, csa, dst + ir * kc);
}

// Pack rows [0, kc) x columns [0, nc) of B (element (p, j) at b[p*rsb + j*csb]) into NR-column
// micro-panels at `dst`: element (p, j) goes to dst[(j / NR) * NR * kc + p * NR + j % NR].
template <class Arch, class T, class S = T>
void pack_b(std::int64_t kc, std::int64_t nc, const S* b, std::int64_t rsb, std::int64_t csb, T* dst) {
    constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    for (std::int64_t jr = 0; jr < nc; jr += NR)
        pack_panel<Arch, T, NR, S>(kc, std::min<std::int64_t>(NR, nc - jr), b + jr * csb, csb, rsb, dst + jr * kc);
}

}  // namespace sg3
