// Direct convolution, stride 1 (groups 1, dilation 1), for layers with few channels: forward
// (and so the input gradient, the adjoint convolution) and weight gradient, no GEMM, no packing.
//
// Design:
//   A layer like the MNIST CNN's (1 to 16 channels, 5x5) has too few channels for the GEMM: its
//   products are 16 or 32 rows by 25 or 400 deep, so the GEMM's packing (a transposing gather of
//   every patch) costs as much as the arithmetic and its 6 x 64 micro-kernel runs mostly padding.
//   Here the image is the vector instead. Each image is copied once into a zero-bordered buffer
//   of Hp x Wp (Wp = W + 2 pw), and the output is computed on the same width: output pixel
//   (oy, ox) is virtual pixel q = oy * Wp + ox, and tap (c, ki, kj) reads input element
//   q + ki * Wp + kj of plane c, so the taps of a run of consecutive q are one contiguous,
//   unaligned vector load. The Wp - OW columns past each row's end are computed and dropped
//   (OW / Wp of the work is kept: 87% on 28 x 28 with padding 2, 71% on 14 x 14 without).
//   Forward: a block of kOut output channels by two vectors of q in registers, per tap two loads
//   and kOut broadcasts of the filter (packed tap-major, kOut channels per tap) feeding 2 x kOut
//   FMAs. Weight gradient: dW[o][tap] = sum over q of dY'[o][q] * X[tap][q], dY' the output
//   gradient on the padded width (zeros past each row's end): a block of 4 channels by 4 taps of
//   vector accumulators, reduced across lanes at the end.
//   Threads take whole images (each its own padded buffer; the weight gradient a partial sum per
//   thread, added at the end).
#pragma once

#include <algorithm>
#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "gemm_arch.hpp"
#include "teams.hpp"

namespace sg3 {

// n images of c channels of h x w, a kh x kw filter, padding (py, px) >= 0, stride 1: o channels
// of oh x ow out.
struct direct_geometry {
    int64_t n, c, h, w, o, kh, kw, py, px;
    int64_t hp() const { return h + 2 * py; }
    int64_t wp() const { return w + 2 * px; }
    int64_t oh() const { return hp() - kh + 1; }
    int64_t ow() const { return wp() - kw + 1; }
    int64_t virtual_pixels() const { return oh() * wp(); }
    // a padded plane, with room for the last vectors' overreach past its end
    int64_t plane(int64_t lanes) const { return hp() * wp() + kw + 2 * lanes; }
};

namespace direct {

constexpr int64_t kOut = 8;  // output channels per register block of the forward

// Copy image `src` (c planes of h x w) into `dst` (c planes of `plane` elements, Hp x Wp with a
// zero border and a zero tail).
template <class T>
void pad_image(const direct_geometry& g, const T* src, T* dst, int64_t plane) {
    const int64_t wp = g.wp();
    for (int64_t c = 0; c < g.c; ++c) {
        T* p = dst + c * plane;
        std::fill(p, p + plane, T(0));
        for (int64_t y = 0; y < g.h; ++y)
            std::copy(src + (c * g.h + y) * g.w, src + (c * g.h + y + 1) * g.w, p + (y + g.py) * wp + g.px);
    }
}

}  // namespace direct

// [conv rung 3: direct]
// y (n, o, oh, ow) = the convolution of x (n, c, h, w) by filters whose tap (o, c, ki, kj) is
// w[o * so + c * sc + ki * sk + kj * sl] (the input gradient reads the forward's flipped and
// transposed), plus bias (o,) when not null.
template <class A, class T>
void direct_conv(const direct_geometry& g, T* y, const T* x, const T* w, int64_t so, int64_t sc, int64_t sk,
                 int64_t sl, const T* bias, int nthreads) {
    using B = xsimd::batch<T, A>;
    constexpr int64_t N = B::size, R = direct::kOut;
    const int64_t taps = g.c * g.kh * g.kw, blocks = (g.o + R - 1) / R, wp = g.wp(), ow = g.ow(), oh = g.oh();
    const int64_t plane = g.plane(N), P = g.virtual_pixels();
    const int team = team_size(nthreads);
    // every buffer from the calling thread, before any team starts (a failed allocation throws)
    T* wt = thread_buffer<A, T, 13>().get(static_cast<std::size_t>(blocks * taps * R));
    T* pad = thread_buffer<A, T, 14>().get(static_cast<std::size_t>(team * (g.c * plane + 2 * R * N)));
    for (int64_t b = 0; b < blocks; ++b)  // wt[b][tap][r]: the block's R channels side by side per tap
        for (int64_t c = 0; c < g.c; ++c)
            for (int64_t ki = 0; ki < g.kh; ++ki)
                for (int64_t kj = 0; kj < g.kw; ++kj)
                    for (int64_t r = 0; r < R; ++r) {
                        const int64_t o = b * R + r, t = (c * g.kh + ki) * g.kw + kj;
                        wt[(b * taps + t) * R + r] = o < g.o ? w[o * so + c * sc + ki * sk + kj * sl] : T(0);
                    }
    over_items(g.n, team, [&](int64_t i, int tid) {
        T* xp = pad + tid * (g.c * plane + 2 * R * N);
        T* out = xp + g.c * plane;  // one block's results, R x 2N
        direct::pad_image(g, x + i * g.c * g.h * g.w, xp, plane);
        for (int64_t b = 0; b < blocks; ++b)
            for (int64_t q0 = 0; q0 < P; q0 += 2 * N) {
                B acc[R][2];
                for (int64_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = B(T(0));
                const T* wv = wt + b * taps * R;
                for (int64_t c = 0; c < g.c; ++c)
                    for (int64_t ki = 0; ki < g.kh; ++ki) {
                        const T* row = xp + c * plane + q0 + ki * wp;
                        for (int64_t kj = 0; kj < g.kw; ++kj, wv += R) {
                            const B x0 = B::load_unaligned(row + kj), x1 = B::load_unaligned(row + kj + N);
                            for (int64_t r = 0; r < R; ++r) {
                                const B f(wv[r]);
                                acc[r][0] = xsimd::fma(f, x0, acc[r][0]);
                                acc[r][1] = xsimd::fma(f, x1, acc[r][1]);
                            }
                        }
                    }
                for (int64_t r = 0; r < R; ++r) {
                    acc[r][0].store_unaligned(out + r * 2 * N);
                    acc[r][1].store_unaligned(out + r * 2 * N + N);
                }
                // keep the virtual pixels that are real (ox < ow, q < P), a row's run at a time
                const int64_t q1 = std::min(P, q0 + 2 * N);
                for (int64_t r = 0; r < R && b * R + r < g.o; ++r) {
                    const int64_t o = b * R + r;
                    const T add = bias ? bias[o] : T(0);
                    T* plane_y = y + (i * g.o + o) * oh * ow;
                    for (int64_t q = q0, oy = q0 / wp, ox = q0 % wp; q < q1; ++oy, q += wp - ox, ox = 0) {
                        const int64_t end = std::min(ow, ox + (q1 - q));
                        const T* run = out + r * 2 * N + (q - q0);
                        for (int64_t k = ox; k < end; ++k) plane_y[oy * ow + k] = run[k - ox] + add;
                    }
                }
            }
    });
}
// [end conv rung 3]

// gw (o, c, kh, kw) of the convolution above (filters not strided) from the output's gradient dy
// (n, o, oh, ow) and its input x.
template <class A, class T>
void direct_weight(const direct_geometry& g, T* gw, const T* dy, const T* x, int nthreads) {
    using B = xsimd::batch<T, A>;
    constexpr int64_t N = B::size, RO = 4, RT = 4;
    const int64_t taps = g.c * g.kh * g.kw, wp = g.wp(), ow = g.ow(), oh = g.oh();
    const int64_t plane = g.plane(N), P = g.virtual_pixels(), Pv = (P + N - 1) / N * N, size = g.o * taps;
    const int team = team_size(nthreads);
    // per thread: the padded image, dY', then its partial sum of dW
    const int64_t acc_at = g.c * plane + g.o * Pv, per_thread = acc_at + size;
    T* work = thread_buffer<A, T, 14>().get(static_cast<std::size_t>(team * per_thread));
    for (int t = 0; t < team; ++t) std::fill(work + t * per_thread + acc_at, work + (t + 1) * per_thread, T(0));
    const int ran = over_items(g.n, team, [&](int64_t i, int tid) {
        T* xp = work + tid * per_thread;
        T* gp = xp + g.c * plane;  // dY' (o x Pv): the gradient on the padded width, zeros elsewhere
        T* acc_w = xp + acc_at;
        direct::pad_image(g, x + i * g.c * g.h * g.w, xp, plane);
        std::fill(gp, gp + g.o * Pv, T(0));
        for (int64_t o = 0; o < g.o; ++o)
            for (int64_t oy = 0; oy < oh; ++oy)
                std::copy(dy + ((i * g.o + o) * oh + oy) * ow, dy + ((i * g.o + o) * oh + oy + 1) * ow,
                          gp + o * Pv + oy * wp);
        for (int64_t o0 = 0; o0 < g.o; o0 += RO)
            for (int64_t t0 = 0; t0 < taps; t0 += RT) {
                const int64_t ro = std::min(RO, g.o - o0), rt = std::min(RT, taps - t0);
                const T* xs[RT];  // where each tap's run starts in the padded image, from virtual pixel 0
                for (int64_t k = 0; k < RT; ++k) {
                    const int64_t t = t0 + std::min(k, rt - 1), c = t / (g.kh * g.kw), ki = t / g.kw % g.kh;
                    xs[k] = xp + c * plane + ki * wp + t % g.kw;
                }
                const T* gs[RO];
                for (int64_t k = 0; k < RO; ++k) gs[k] = gp + (o0 + std::min(k, ro - 1)) * Pv;
                B acc[RO][RT];
                for (int64_t a = 0; a < RO; ++a)
                    for (int64_t b = 0; b < RT; ++b) acc[a][b] = B(T(0));
                for (int64_t q = 0; q < Pv; q += N) {
                    B xv[RT];
                    for (int64_t b = 0; b < RT; ++b) xv[b] = B::load_unaligned(xs[b] + q);
                    for (int64_t a = 0; a < RO; ++a) {
                        const B gv = B::load_unaligned(gs[a] + q);
                        for (int64_t b = 0; b < RT; ++b) acc[a][b] = xsimd::fma(gv, xv[b], acc[a][b]);
                    }
                }
                for (int64_t a = 0; a < ro; ++a)
                    for (int64_t b = 0; b < rt; ++b) acc_w[(o0 + a) * taps + t0 + b] += xsimd::hadd(acc[a][b]);
            }
    });
    for (int64_t k = 0; k < size; ++k) {
        T s = T(0);
        for (int t = 0; t < ran; ++t) s += work[t * per_thread + acc_at + k];
        gw[k] = s;
    }
}

}  // namespace sg3
