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
