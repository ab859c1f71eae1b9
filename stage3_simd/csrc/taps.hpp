// The weight gradient of a convolution with many channels, a filter tap at a time over
// channels-last copies of the images (the conv ladder's "taps" rung).
//
// Design:
//   The implicit GEMM's weight gradient (conv.hpp) multiplies the patch matrix P(x), K = C*KH*KW
//   rows by N*OH*OW columns, which it gathers: every input element is gathered once per tap, and
//   each gathered element then meets only O multiply-adds. With 64 channels of 32 x 32 and 3 x 3
//   taps, the gather cost about as much as the arithmetic.
//   Here each image is copied once, channels last, zero-bordered and padded to whole vectors
//   (x': Hp x Wp rows of Cv >= C channels; 16 x 16 blocks transposed in registers on AVX-512).
//   For a tap t = (ki, kj), output pixel (oy, ox) saw row r = (oy*sy + ki*dy) * Wp + ox*sx + kj*dx
//   of x', so
//       dW_t (O x C) = sum over output pixels q of  g[:, q]  x'[r(q)]      (an outer product each)
//   a GEMM whose k runs over the pixels and which reads both operands where they lie: g (the
//   output's gradient, NCHW) a scalar per output channel and pixel, x' a row of channels, sx rows
//   on per pixel along an output row. Nothing is gathered per tap.
//   Register block: MR output channels by NV vectors of input channels (the GEMM micro-kernel's
//   shape, kernel_shape): per pixel MR broadcasts (one from each of MR planes of g) and NV
//   aligned loads from one row of x' feed MR*NV FMAs. The pixels come a chunk of output rows at
//   a time (spanning images where they are small) whose rows of x' stay in L2 while every block
//   reads them; the blocks' sums live in dW' (taps x Ov x Cv, Ov a whole number of blocks),
//   loaded and stored once per chunk.
//   Threads: the copies are shared out by image, then the (tap, block of output channels) pairs
//   by range, so no two threads add into the same part of dW' and nothing is summed at the end;
//   every thread reads the same copies. Last, dW' is reordered into (O, C, KH, KW).
//   Measured (`stagegrad conv-ladder`, ResNet-18's 3x3 layers at batch 16): 140-165 GFLOP/s on
//   one AVX-512 thread where the implicit GEMM's weight gradient made 70-130, and 1.6-1.9x that
//   on two threads, where the implicit GEMM's per-thread sums gained 1.0-1.5x.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "gemm_arch.hpp"
#include "gemm_pack.hpp"
#include "kernels.h"
#include "teams.hpp"

namespace sg3 {

namespace taps {

// A chunk: as many output rows as keep the rows of x' they read within kChunkBytes (in L2 while
// every block reads them), at least one. The accumulators are loaded and stored once per chunk.
// Measured on ResNet-18's 3x3 layers against chunks sized for L1 (the slice of x' one width of
// blocks reads, the blocks' order swapped to match): those ran 5-40% slower.
constexpr int64_t kChunkBytes = 1 << 20;

// The layout of the copies: x' and g' as rows of cv and ov elements, per image.
struct layout {
    int64_t hp, wp, cv, ov;
    int64_t image() const { return hp * wp * cv; }  // elements of one image's x'
};

// x' of image `src` (c planes of h x w): pixel (y, x) at row (y + py) * wp + x + px, channels
// past c zero, and the border zero. Blocks of 16 channels by 16 pixels (in the planes' order,
// across their rows) are transposed in registers where the ISA can (else one at a time).
template <class A, class T>
void channels_last_padded(const sg3_conv& q, const layout& l, const T* src, T* dst) {
    constexpr int64_t kRun = 16;
    const int64_t hw = q.h * q.w;
    auto row_of = [&](int64_t p) { return dst + ((p / q.w + q.ph) * l.wp + p % q.w + q.pw) * l.cv; };
    std::fill(dst, dst + q.ph * l.wp * l.cv, T(0));
    std::fill(dst + (q.ph + q.h) * l.wp * l.cv, dst + l.image(), T(0));
    for (int64_t y = 0; y < q.h; ++y) {
        T* row = dst + (y + q.ph) * l.wp * l.cv;
        std::fill(row, row + q.pw * l.cv, T(0));
        std::fill(row + (q.pw + q.w) * l.cv, row + l.wp * l.cv, T(0));
    }
    for (int64_t p0 = 0; p0 < hw; p0 += kRun) {
        const int64_t run = std::min(kRun, hw - p0);
#if XSIMD_WITH_AVX512BW
        if constexpr (std::is_same_v<A, xsimd::avx512bw> && std::is_same_v<T, float>) {
            for (int64_t c0 = 0; c0 < l.cv; c0 += 16) {
                __m512 out[16];
                transpose16(src + c0 * hw + p0, hw, q.c - c0, run, out);
                for (int64_t k = 0; k < run; ++k) _mm512_store_ps(row_of(p0 + k) + c0, out[k]);
            }
            continue;
        }
#endif
        for (int64_t k = 0; k < run; ++k) {
            T* out = row_of(p0 + k);
            for (int64_t c = 0; c < q.c; ++c) out[c] = src[c * hw + p0 + k];
            std::fill(out + q.c, out + l.cv, T(0));
        }
    }
}

// acc (MR x NV vectors, at acc_w with row stride cv) += the tap's terms of output rows
// [r0, r1) (row r: image r / oh, output row r % oh): output channels o0.. of g (n, o, oh, ow;
// past o, the last channel's again, whose sums are never read), input channels from x (at the
// block's first channel of the tap's x' row 0 of image 0).
template <class A, class T, int NV>
void block(const sg3_conv& q, const layout& l, const T* g, int64_t o0, const T* x, int64_t r0, int64_t r1,
           T* acc_w) {  // (the first chunk, r0 = 0, starts from zero)
    using B = xsimd::batch<T, A>;
    constexpr int MR = kernel_shape<A, T>::mr;
    constexpr int64_t L = B::size;
    B acc[MR][NV];
    for (int m = 0; m < MR; ++m)
        for (int v = 0; v < NV; ++v) acc[m][v] = r0 ? B::load_aligned(acc_w + m * l.cv + v * L) : B(T(0));
    const int64_t step = q.sw * l.cv, pixels = q.oh * q.ow;
    for (int64_t r = r0; r < r1;) {  // an image's rows at a time: its pixels are a run of each plane of g
        const int64_t n = r / q.oh, end = std::min(r1, (n + 1) * q.oh);
        const T* gm[MR];
        for (int m = 0; m < MR; ++m) gm[m] = g + (n * q.o + std::min(o0 + m, q.o - 1)) * pixels;
        const T* xn = x + n * l.image();
        for (int64_t p = (r - n * q.oh) * q.ow; r < end; ++r) {
            const T* xr = xn + (r - n * q.oh) * q.sh * l.wp * l.cv;
            for (int64_t ox = 0; ox < q.ow; ++ox, ++p, xr += step) {
                B xv[NV];
                for (int v = 0; v < NV; ++v) xv[v] = B::load_aligned(xr + v * L);
                for (int m = 0; m < MR; ++m) {
                    const B gv(gm[m][p]);
                    for (int v = 0; v < NV; ++v) acc[m][v] = madd(gv, xv[v], acc[m][v]);
                }
            }
        }
    }
    for (int m = 0; m < MR; ++m)
        for (int v = 0; v < NV; ++v) acc[m][v].store_aligned(acc_w + m * l.cv + v * L);
}

// fn(std::integral_constant<int, v>) for a run-time v in 1 .. V: a block's width in vectors
template <int V, class Fn>
void with_width(int64_t v, Fn fn) {
    if (v == V) {
        fn(std::integral_constant<int, V>());
    } else if constexpr (V > 1) {
        with_width<V - 1>(v, fn);
    }
}

}  // namespace taps

// Whether the tap-by-tap weight gradient applies (groups 1, any stride, padding and dilation).
inline bool taps_fit(const sg3_conv& q) { return q.oh > 0 && q.ow > 0 && q.ph >= 0 && q.pw >= 0; }

// gw (o, c, kh, kw) of the convolution q from the output's gradient g (n, o, oh, ow) and its
// input x (n, c, h, w).
template <class A, class T>
void taps_weight(const sg3_conv& q, T* gw, const T* g, const T* x, int nthreads) {
    constexpr int MR = kernel_shape<A, T>::mr, NV = kernel_shape<A, T>::nv;
    constexpr int64_t L = xsimd::batch<T, A>::size;
    const taps::layout l{q.h + 2 * q.ph, q.w + 2 * q.pw, (q.c + L - 1) / L * L, (q.o + MR - 1) / MR * MR};
    const int64_t taps = q.kh * q.kw, rows = q.n * q.oh;
    if (rows == 0) {  // no pixel: every sum is empty
        std::fill(gw, gw + q.o * q.c * taps, T(0));
        return;
    }
    const int64_t xs = q.n * l.image(), ws = taps * l.ov * l.cv;
    // every buffer from the calling thread, before any team starts (a failed allocation throws)
    T* dw = thread_buffer<A, T, 15>().get(static_cast<std::size_t>(ws + xs));  // dW': per tap, ov x cv
    T* xp = dw + ws;  // (every row of dW' and x' starts a whole vector on: aligned loads)
    const int64_t blocks = l.ov / MR, units = taps * blocks;
    const int64_t row_bytes = q.sh * l.wp * l.cv * static_cast<int64_t>(sizeof(T));
    const int64_t chunk = std::max<int64_t>(1, taps::kChunkBytes / row_bytes);
    const int team = static_cast<int>(std::min<int64_t>(team_size(nthreads), std::max<int64_t>(units, 1)));
#pragma omp parallel num_threads(team) if (team > 1)
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < q.n; ++i)
            taps::channels_last_padded<A, T>(q, l, x + i * q.c * q.h * q.w, xp + i * l.image());
        // (the implied barrier: every copy is made)
#ifdef _OPENMP
        const int64_t tid = omp_get_thread_num(), size = omp_get_num_threads();
#else
        const int64_t tid = 0, size = 1;
#endif
        const int64_t u0 = units * tid / size, u1 = units * (tid + 1) / size;
        for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
            const int64_t r1 = std::min(rows, r0 + chunk);
            for (int64_t u = u0; u < u1; ++u) {
                const int64_t t = u / blocks, o0 = u % blocks * MR, ki = t / q.kw, kj = t % q.kw;
                const T* xt = xp + (ki * q.dh * l.wp + kj * q.dw) * l.cv;
                T* acc = dw + (t * l.ov + o0) * l.cv;
                for (int64_t c0 = 0; c0 < l.cv; c0 += NV * L)
                    taps::with_width<NV>(std::min<int64_t>(NV, (l.cv - c0) / L), [&](auto width) {
                        taps::block<A, T, decltype(width)::value>(q, l, g, o0, xt + c0, r0, r1, acc + c0);
                    });
            }
        }
#pragma omp barrier
#pragma omp for schedule(static)
        for (int64_t o = 0; o < q.o; ++o)
            for (int64_t c = 0; c < q.c; ++c)
                for (int64_t t = 0; t < taps; ++t) gw[(o * q.c + c) * taps + t] = dw[(t * l.ov + o) * l.cv + c];
    }
}

}  // namespace sg3
