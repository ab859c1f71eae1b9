// Convolution channels last, a filter tap at a time over a channels-last copy of the images
// (the conv ladder's "taps" rung): the weight gradient (below), and the forward (taps_forward,
// at the end; the stride-1 input gradient is its adjoint, conv.hpp).
//
// Design (the weight gradient; the forward is the same idea with the roles turned, see there):
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
//   on two threads, where the implicit GEMM's per-thread sums gained 1.0-1.5x. The forward
//   measured within 10% of the implicit GEMM's either way on those layers (the implicit GEMM's
//   gather is amortised over O output channels there, not lost), and so did the input gradient
//   on the 32x32 and 16x16 planes, so "auto" keeps those on the NCHW kernels; on the 8x8 and
//   4x4 planes the input gradient ran 10% and 2% faster here on one thread, 12-15% on two. The
//   forward of the MNIST CNN's 5x5 16-to-32 layer ran at twice the direct convolution's speed,
//   so "auto" takes it for 25 taps and more (conv.hpp's use_taps).
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
// The forward's k blocks: as many steps as keep a block's packed filters (NV vectors each) in L1.
constexpr int64_t kFilterBytes = 32 << 10;

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

// [conv rung 5: channels last, by taps]
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
// [end conv rung 5]

// y (o planes of `pixels`) from y' (pixels rows of ovp channels), plus bias per plane: 16 x 16
// blocks transposed in registers on AVX-512.
template <class A, class T>
void planes_from_rows(const T* rows, int64_t ovp, int64_t pixels, int64_t o, const T* bias, T* y) {
    for (int64_t p0 = 0; p0 < pixels; p0 += 16) {
        const int64_t run = std::min<int64_t>(16, pixels - p0);
#if XSIMD_WITH_AVX512BW
        if constexpr (std::is_same_v<A, xsimd::avx512bw> && std::is_same_v<T, float>) {
            const __mmask16 mask = run == 16 ? __mmask16(0xffff) : __mmask16((1u << run) - 1);
            for (int64_t c0 = 0; c0 < o; c0 += 16) {
                __m512 out[16];
                transpose16(rows + p0 * ovp + c0, ovp, run, 16, out);
                for (int64_t k = 0; k < std::min<int64_t>(16, o - c0); ++k) {
                    const __m512 b = _mm512_set1_ps(bias ? bias[c0 + k] : 0.0f);
                    _mm512_mask_storeu_ps(y + (c0 + k) * pixels + p0, mask, _mm512_add_ps(out[k], b));
                }
            }
            continue;
        }
#endif
        for (int64_t c = 0; c < o; ++c) {
            const T b = bias ? bias[c] : T(0);
            for (int64_t k = 0; k < run; ++k) y[c * pixels + p0 + k] = rows[(p0 + k) * ovp + c] + b;
        }
    }
}

// Inside a team: every image's x' (shared out by image; the implied barrier ends it).
template <class A, class T>
void copy_images(const sg3_conv& q, const layout& l, const T* x, T* xp) {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < q.n; ++i) channels_last_padded<A, T>(q, l, x + i * q.c * q.h * q.w, xp + i * l.image());
}

// Inside a team: this thread's range [lo, hi) of `count` items, the ranges in thread order;
// returns the thread's number.
inline int64_t share(int64_t count, int64_t& lo, int64_t& hi) {
#ifdef _OPENMP
    const int64_t tid = omp_get_thread_num(), size = omp_get_num_threads();
#else
    const int64_t tid = 0, size = 1;
#endif
    lo = count * tid / size;
    hi = count * (tid + 1) / size;
    return tid;
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

constexpr int64_t kMaxTaps = 64;  // the forward's table of tap offsets: kernels up to 8 x 8

// Whether the tap-by-tap kernels apply (groups 1, any stride, padding and dilation).
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
        taps::copy_images<A, T>(q, l, x, xp);
        int64_t u0, u1;
        taps::share(units, u0, u1);
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

namespace taps {

// acc (MR pixels x V vectors of output channels, at y' rows ys[m], channels o0..) (+)= the
// products of k steps [k0, k1) (step k: tap k / c, channel k % c) of the pixels' x' rows xs[m]
// (each at its tap (0, 0)) and the packed filters wt (row k: the ov output channels of step k).
template <class A, class T, int V>
void forward_block(const sg3_conv& q, const layout& l, const T* const* xs, const int64_t* tap_rows, const T* wt,
                   int64_t ovp, int64_t k0, int64_t k1, T* const* ys, bool first) {
    using B = xsimd::batch<T, A>;
    constexpr int MR = kernel_shape<A, T>::mr;
    constexpr int64_t L = B::size;
    B acc[MR][V];
    for (int m = 0; m < MR; ++m)
        for (int v = 0; v < V; ++v) acc[m][v] = first ? B(T(0)) : B::load_aligned(ys[m] + v * L);
    for (int64_t k = k0; k < k1;) {  // a tap's run of channels at a time
        const int64_t t = k / q.c, end = std::min(k1, (t + 1) * q.c), off = tap_rows[t] * l.cv - t * q.c;
        for (; k < end; ++k) {
            B wv[V];
            for (int v = 0; v < V; ++v) wv[v] = B::load_aligned(wt + k * ovp + v * L);
            for (int m = 0; m < MR; ++m) {
                const B xv(xs[m][off + k]);
                for (int v = 0; v < V; ++v) acc[m][v] = madd(xv, wv[v], acc[m][v]);
            }
        }
    }
    for (int m = 0; m < MR; ++m)
        for (int v = 0; v < V; ++v) acc[m][v].store_aligned(ys[m] + v * L);
}

}  // namespace taps

// y (n, o, oh, ow) = the convolution q of x (n, c, h, w) by filters whose tap (o, c, ki, kj) is
// w[o * so + c * sc + ki * sk + kj * sl] (the input gradient reads the forward's flipped and
// transposed), plus bias (o,) when not null; channels last: a GEMM of the pixels' x' rows (read
// in place, a broadcast per pixel and channel) by the filters packed tap-major (K = taps x C
// steps of the output channels, padded to whole vectors), K in blocks whose packed filters stay
// in L1, the output channels-last in y' (pixels x ovp) and transposed into y at the end.
template <class A, class T>
void taps_forward(const sg3_conv& q, T* y, const T* x, const T* w, int64_t so, int64_t sc, int64_t sk, int64_t sl,
                  const T* bias, int nthreads) {
    constexpr int MR = kernel_shape<A, T>::mr, NV = kernel_shape<A, T>::nv;
    constexpr int64_t L = xsimd::batch<T, A>::size;
    const taps::layout l{q.h + 2 * q.ph, q.w + 2 * q.pw, (q.c + L - 1) / L * L, 0};
    const int64_t taps = q.kh * q.kw, K = taps * q.c, pixels = q.oh * q.ow, total = q.n * pixels;
    const int64_t ovp = (q.o + L - 1) / L * L;
    if (total == 0) return;
    if (K == 0) {  // no input channel: every sum is empty
        for (int64_t i = 0; i < q.n * q.o; ++i)
            std::fill(y + i * pixels, y + (i + 1) * pixels, bias ? bias[i % q.o] : T(0));
        return;
    }
    const int team = static_cast<int>(std::min<int64_t>(team_size(nthreads), (total + MR - 1) / MR));
    const int64_t xs_size = q.n * l.image(), ws = K * ovp, ys_size = (total + team * MR) * ovp;
    // every buffer from the calling thread, before any team starts (a failed allocation throws)
    T* wt = thread_buffer<A, T, 15>().get(static_cast<std::size_t>(ws + xs_size + ys_size));
    T* xp = wt + ws;
    T* yp = xp + xs_size;  // y': pixel p's ovp channels at yp + p * ovp; past total, spare rows per thread
    int64_t tap_rows[kMaxTaps];  // x' rows from a pixel's tap (0, 0) to each tap
    for (int64_t t = 0; t < taps; ++t) tap_rows[t] = (t / q.kw) * q.dh * l.wp + (t % q.kw) * q.dw;
    const int64_t kc = std::max<int64_t>(1, taps::kFilterBytes / (NV * L * static_cast<int64_t>(sizeof(T))));
#pragma omp parallel num_threads(team) if (team > 1)
    {
#pragma omp for schedule(static)
        for (int64_t o0 = 0; o0 < ovp; o0 += L)  // wt[k][o] = tap k / c, channel k % c of filter o:
            for (int64_t k = 0; k < K; ++k) {     // a vector's filters at a time, each read along k
                const int64_t t = k / q.c, c = k % q.c, at = c * sc + (t / q.kw) * sk + (t % q.kw) * sl;
                for (int64_t o = o0; o < o0 + L; ++o) wt[k * ovp + o] = o < q.o ? w[o * so + at] : T(0);
            }
        taps::copy_images<A, T>(q, l, x, xp);
        int64_t p0, p1;  // this thread's pixels
        const int64_t tid = taps::share(total, p0, p1);
        for (int64_t o0 = 0; o0 < ovp; o0 += NV * L)
            taps::with_width<NV>(std::min<int64_t>(NV, (ovp - o0) / L), [&](auto width) {
                constexpr int V = decltype(width)::value;
                for (int64_t k0 = 0; k0 < K; k0 += kc)
                    for (int64_t b = p0; b < p1; b += MR) {
                        const T* xs[MR];
                        T* ys[MR];
                        for (int m = 0; m < MR; ++m) {  // pixel p; past the thread's last, a spare row
                            const int64_t p = std::min(b + m, total - 1), n = p / pixels, r = p % pixels;
                            xs[m] = xp + n * l.image() + ((r / q.ow) * q.sh * l.wp + (r % q.ow) * q.sw) * l.cv;
                            ys[m] = yp + (b + m < p1 ? b + m : total + tid * MR + m) * ovp + o0;
                        }
                        taps::forward_block<A, T, V>(q, l, xs, tap_rows, wt + o0, ovp, k0, std::min(K, k0 + kc), ys,
                                                     k0 == 0);
                    }
            });
#pragma omp barrier
#pragma omp for schedule(static)
        for (int64_t i = 0; i < q.n; ++i)
            taps::planes_from_rows<A, T>(yp + i * pixels * ovp, ovp, pixels, q.o, bias, y + i * q.o * pixels);
    }
}

}  // namespace sg3
