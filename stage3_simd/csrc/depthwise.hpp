// Depthwise convolution (groups == channels, `mult` filters per channel), forward and backward.
//
// Design: a channel's plane is small (MobileNetV2's are 32 x 32 down to 4 x 4), so per-row loops
// would spend more on their bounds than on the nine multiply-adds per pixel. For stride 1 each
// plane is first copied into a zero-bordered scratch grid (`padded_plane`), and every filter tap
// then becomes one multiply-add over the whole grid at a fixed offset: a long, vectorised loop
// with no bounds at all (output pixel (oy, ox) sits at oy * Wp + ox of the result grid; the few
// columns past the output are computed and dropped). The input gradient is the same
// convolution of g by the flipped filters; the weight gradient a dot product per tap of the
// gradient (laid on the grid) with the shifted input. Strides above 1, and the rare geometry
// whose adjoint would need negative padding, walk the output rows instead (the `_rows`
// kernels), as pooling does. Planes are split among threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels.h"
#include "pool.hpp"
#include "simd.hpp"

namespace sg3 {

// groups == channels: output channel o filters input channel o / mult with its own
// kh x kw taps (weight (O, 1, kh, kw)). The same tap walk as pooling, a multiply-add per
// tap; sg3_pool describes the geometry (planes = N * O output planes, h x w the input).

template <class A, class T>
void depthwise_forward_rows(const sg3_pool& q, int64_t mult, T* y, const T* x, const T* w, const T* bias,
                       int nthreads) {
    const int64_t L = q.oh * q.ow, HW = q.h * q.w, taps = q.kh * q.kw;
    over_planes(q.planes, L * taps, nthreads, [&](int64_t i) {  // i = n * O + o
        const int64_t o = i % q.out_channels;
        const T* xp = x + (i / mult) * HW;  // n * C + o / mult, as O = C * mult
        const T* wo = w + o * taps;
        T* yp = y + i * L;
        std::fill(yp, yp + L, bias ? bias[o] : T(0));
        for (int64_t oy = 0; oy < q.oh; ++oy) {
            T* yr = yp + oy * q.ow;
            for (int64_t ki = 0; ki < q.kh; ++ki) {
                const int64_t iy = oy * q.sh - q.ph + ki * q.dh;
                if (iy < 0 || iy >= q.h) continue;
                for (int64_t kj = 0; kj < q.kw; ++kj) {
                    int64_t o0, o1;
                    tap_range(q.w, q.ow, q.sw, q.pw, kj * q.dw, o0, o1);
                    const T* xr = xp + iy * q.w + kj * q.dw - q.pw;
                    const T wt = wo[ki * q.kw + kj];
                    for (int64_t ox = o0; ox < o1; ++ox) yr[ox] += wt * xr[ox * q.sw];
                }
            }
        }
    });
}

// The input gradient, one input plane per task (it gathers from its mult output planes).
template <class A, class T>
void depthwise_backward_input_rows(const sg3_pool& q, int64_t mult, T* gx, const T* g, const T* w, int nthreads) {
    const int64_t L = q.oh * q.ow, HW = q.h * q.w, taps = q.kh * q.kw, C = q.out_channels / mult;
    over_planes(q.planes / mult, L * taps * mult, nthreads, [&](int64_t i) {  // i = n * C + c
        T* gp = gx + i * HW;
        std::fill(gp, gp + HW, T(0));
        for (int64_t m = 0; m < mult; ++m) {
            const int64_t o = (i % C) * mult + m;
            const T* gq = g + (i * mult + m) * L;
            const T* wo = w + o * taps;
            for (int64_t oy = 0; oy < q.oh; ++oy) {
                const T* gr = gq + oy * q.ow;
                for (int64_t ki = 0; ki < q.kh; ++ki) {
                    const int64_t iy = oy * q.sh - q.ph + ki * q.dh;
                    if (iy < 0 || iy >= q.h) continue;
                    for (int64_t kj = 0; kj < q.kw; ++kj) {
                        int64_t o0, o1;
                        tap_range(q.w, q.ow, q.sw, q.pw, kj * q.dw, o0, o1);
                        T* xr = gp + iy * q.w + kj * q.dw - q.pw;
                        const T wt = wo[ki * q.kw + kj];
                        for (int64_t ox = o0; ox < o1; ++ox) xr[ox * q.sw] += wt * gr[ox];
                    }
                }
            }
        }
    });
}

// The weight gradient, one output channel per task (summed over the batch).
template <class A, class T>
void depthwise_backward_weight_rows(const sg3_pool& q, int64_t mult, T* gw, const T* g, const T* x, int nthreads) {
    const int64_t L = q.oh * q.ow, HW = q.h * q.w, taps = q.kh * q.kw, O = q.out_channels, N = q.planes / O;
    over_planes(O, N * L * taps, nthreads, [&](int64_t o) {
        T* wo = gw + o * taps;
        for (int64_t t = 0; t < taps; ++t) {
            const int64_t ki = t / q.kw, kj = t % q.kw;
            int64_t o0, o1;
            tap_range(q.w, q.ow, q.sw, q.pw, kj * q.dw, o0, o1);
            T acc = T(0);
            for (int64_t n = 0; n < N; ++n) {
                const T* xp = x + (n * O + o) / mult * HW;
                const T* gp = g + (n * O + o) * L;
                for (int64_t oy = 0; oy < q.oh; ++oy) {
                    const int64_t iy = oy * q.sh - q.ph + ki * q.dh;
                    if (iy < 0 || iy >= q.h) continue;
                    const T* xr = xp + iy * q.w + kj * q.dw - q.pw;
                    const T* gr = gp + oy * q.ow;
                    T row = T(0);
                    for (int64_t ox = o0; ox < o1; ++ox) row += gr[ox] * xr[ox * q.sw];
                    acc += row;
                }
            }
            wo[t] = acc;
        }
    });
}


// A thread's zero-bordered copy of one h x w plane: `top`/`left` zero rows and columns before
// it, the grid `wp` wide and `hp` tall, plus `tail` zeros after (taps past the last row).
template <class T>
T* padded_plane(const T* src, int64_t h, int64_t w, int64_t top, int64_t left, int64_t hp, int64_t wp, int64_t tail) {
    thread_local std::vector<T> grid;
    const std::size_t n = static_cast<std::size_t>(hp * wp + tail);
    if (grid.size() < n) grid.resize(n);
    T* d = grid.data();
    std::fill(d, d + n, T(0));
    for (int64_t r = 0; r < h; ++r) std::copy(src + r * w, src + (r + 1) * w, d + (top + r) * wp + left);
    return d;
}

// A thread's result grid of n elements (not zeroed)
template <class T>
T* result_grid(int64_t n) {
    thread_local std::vector<T> grid;
    if (int64_t(grid.size()) < n) grid.resize(static_cast<std::size_t>(n));
    return grid.data();
}

// A thread's room for one filter's taps, flipped
template <class T>
T* flipped_taps(int64_t n) {
    thread_local std::vector<T> taps;
    if (int64_t(taps.size()) < n) taps.resize(static_cast<std::size_t>(n));
    return taps.data();
}

// acc[j] += sum over taps t of wt[t] * src[j + offset of t], j < n: one pass per tap
template <class T>
void taps_over_grid(T* acc, int64_t n, const T* src, const T* wt, int64_t kh, int64_t kw, int64_t dy, int64_t dx,
                    int64_t wp) {
    for (int64_t ki = 0; ki < kh; ++ki)
        for (int64_t kj = 0; kj < kw; ++kj) {
            const T v = wt[ki * kw + kj];
            const T* s = src + ki * dy * wp + kj * dx;
            for (int64_t j = 0; j < n; ++j) acc[j] += v * s[j];
        }
}

// sum of a[j] * b[j], j < n, in registers (four chains)
template <class A, class T>
T dot(const T* a, const T* b, int64_t n) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    B s0(0), s1(0), s2(0), s3(0);
    int64_t j = 0;
    for (; j + 4 * W <= n; j += 4 * W) {
        s0 += B::load_unaligned(a + j) * B::load_unaligned(b + j);
        s1 += B::load_unaligned(a + j + W) * B::load_unaligned(b + j + W);
        s2 += B::load_unaligned(a + j + 2 * W) * B::load_unaligned(b + j + 2 * W);
        s3 += B::load_unaligned(a + j + 3 * W) * B::load_unaligned(b + j + 3 * W);
    }
    T sum = xsimd::hadd((s0 + s1) + (s2 + s3));
    for (; j < n; ++j) sum += a[j] * b[j];
    return sum;
}

// Whether the grid kernels apply: stride 1, and an adjoint padding d * (k - 1) - p that is
// not negative (padding at most the dilated kernel's reach)
inline bool depthwise_on_grid(const sg3_pool& q) {
    return q.sh == 1 && q.sw == 1 && q.ph >= 0 && q.pw >= 0 && q.ph <= q.dh * (q.kh - 1) && q.pw <= q.dw * (q.kw - 1);
}

template <class A, class T>
void depthwise_forward(const sg3_pool& q, int64_t mult, T* y, const T* x, const T* w, const T* bias,
                       int nthreads) {
    if (!depthwise_on_grid(q)) return depthwise_forward_rows<A, T>(q, mult, y, x, w, bias, nthreads);
    const int64_t taps = q.kh * q.kw, wp = q.w + 2 * q.pw, hp = q.h + 2 * q.ph, n = q.oh * wp;
    over_planes(q.planes, n * taps, nthreads, [&](int64_t i) {  // i = n * O + o
        const int64_t o = i % q.out_channels;
        const T* xp = padded_plane(x + (i / mult) * q.h * q.w, q.h, q.w, q.ph, q.pw, hp, wp, q.kw * q.dw);
        T* acc = result_grid<T>(n);
        std::fill(acc, acc + n, bias ? bias[o] : T(0));
        taps_over_grid(acc, n, xp, w + o * taps, q.kh, q.kw, q.dh, q.dw, wp);
        for (int64_t oy = 0; oy < q.oh; ++oy) std::copy(acc + oy * wp, acc + oy * wp + q.ow, y + (i * q.oh + oy) * q.ow);
    });
}

template <class A, class T>
void depthwise_backward_input(const sg3_pool& q, int64_t mult, T* gx, const T* g, const T* w, int nthreads) {
    if (!depthwise_on_grid(q)) return depthwise_backward_input_rows<A, T>(q, mult, gx, g, w, nthreads);
    // gx = g convolved with the flipped filters, padding d * (k - 1) - p, summed over the mult outputs
    const int64_t taps = q.kh * q.kw, C = q.out_channels / mult;
    const int64_t top = q.dh * (q.kh - 1) - q.ph, left = q.dw * (q.kw - 1) - q.pw;
    const int64_t wp = q.ow + 2 * left, hp = q.oh + 2 * top, n = q.h * wp;
    over_planes(q.planes / mult, n * taps * mult, nthreads, [&](int64_t i) {  // i = n * C + c
        T* acc = result_grid<T>(n);
        std::fill(acc, acc + n, T(0));
        T* wf = flipped_taps<T>(taps);
        for (int64_t m = 0; m < mult; ++m) {
            const int64_t o = (i % C) * mult + m;
            for (int64_t t = 0; t < taps; ++t) wf[t] = w[o * taps + taps - 1 - t];
            const T* gp = padded_plane(g + (i * mult + m) * q.oh * q.ow, q.oh, q.ow, top, left, hp, wp, q.kw * q.dw);
            taps_over_grid(acc, n, gp, wf, q.kh, q.kw, q.dh, q.dw, wp);
        }
        for (int64_t iy = 0; iy < q.h; ++iy) std::copy(acc + iy * wp, acc + iy * wp + q.w, gx + (i * q.h + iy) * q.w);
    });
}

template <class A, class T>
void depthwise_backward_weight(const sg3_pool& q, int64_t mult, T* gw, const T* g, const T* x, int nthreads) {
    if (!depthwise_on_grid(q)) return depthwise_backward_weight_rows<A, T>(q, mult, gw, g, x, nthreads);
    const int64_t taps = q.kh * q.kw, O = q.out_channels, N = q.planes / O;
    const int64_t wp = q.w + 2 * q.pw, hp = q.h + 2 * q.ph, n = q.oh * wp;
    over_planes(O, N * n * taps, nthreads, [&](int64_t o) {
        T* wo = gw + o * taps;
        std::fill(wo, wo + taps, T(0));
        for (int64_t b = 0; b < N; ++b) {
            const T* xp = padded_plane(x + (b * O + o) / mult * q.h * q.w, q.h, q.w, q.ph, q.pw, hp, wp, q.kw * q.dw);
            T* gg = result_grid<T>(n);  // g laid on the grid, zeros past each output row
            std::fill(gg, gg + n, T(0));
            const T* gp = g + (b * O + o) * q.oh * q.ow;
            for (int64_t oy = 0; oy < q.oh; ++oy) std::copy(gp + oy * q.ow, gp + (oy + 1) * q.ow, gg + oy * wp);
            for (int64_t ki = 0; ki < q.kh; ++ki)
                for (int64_t kj = 0; kj < q.kw; ++kj)
                    wo[ki * q.kw + kj] += dot<A, T>(gg, xp + ki * q.dh * wp + kj * q.dw, n);
        }
    });
}

}  // namespace sg3
