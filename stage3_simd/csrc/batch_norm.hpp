// Batch normalisation over (N, C, S) (S: the spatial size, 1 for (N, C) inputs), forward and
// backward, with an optional ReLU fused after it.
//
// Design: a channel's statistics need all of its N * S values, which are N rows of S
// contiguous values; channels are independent, so they are split among threads. Training
// forward: the mean (a float64 sum), the variance from the deviations (a second pass, so no
// cancellation), then y = (x - mean) * rstd * w + b in a third pass that the compiler
// vectorises, and the running statistics updated as the composite does (unbiased variance).
// Eval: the running statistics folded into one scale and shift per channel, one pass.
// Backward: sum(g) and sum(g * (x - mean)) per channel, then
//   training  gx = w rstd (g - sum(g)/M - (x - mean) rstd^2 sum(g (x - mean))/M)
//   eval      gx = w rstd g
// with gw = rstd sum(g (x - mean)), gb = sum(g). With the fused ReLU, g is first masked by
// the saved output (y > 0).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels.h"
#include "pool.hpp"
#include "reduce.hpp"
#include "simd.hpp"

namespace sg3 {

// Sums of one contiguous row of n values, in registers (two chains), returned in float64:
// sum((x - m)^2), and sum(g') and sum(g' (x - m)) with g' = g masked by y > 0 when y is given.
template <class A, class T>
double centered_squares(const T* x, T m, int64_t n) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    B a0(0), a1(0);
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        const B d0 = B::load_unaligned(x + i) - B(m), d1 = B::load_unaligned(x + i + W) - B(m);
        a0 += d0 * d0, a1 += d1 * d1;
    }
    for (; i < n; i += W) {
        const B d = xsimd::select(lanes_below<B>(n - i), load_n<B>(x + i, std::min(W, n - i)) - B(m), B(0));
        a0 += d * d;
    }
    return double(xsimd::hadd(a0 + a1));
}

template <class A, class T>
void gradient_sums(const T* g, const T* x, const T* y, T hi, T m, int64_t n, double& sg, double& sgx) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    B s(0), sx(0);
    for (int64_t i = 0; i < n; i += W) {
        const int64_t k = std::min(W, n - i);
        B gi = load_n<B>(g + i, k);  // zero-filled past the row, as x - m is masked below
        if (y) {  // through the fused activation: where its output is inside (0, hi)
            const B yi = load_n<B>(y + i, k);
            gi = xsimd::select((yi > B(0)) & (yi < B(hi)), gi, B(0));
        }
        s += gi;
        sx += gi * xsimd::select(lanes_below<B>(k), load_n<B>(x + i, k) - B(m), B(0));
    }
    sg += double(xsimd::hadd(s)), sgx += double(xsimd::hadd(sx));
}

// One row of gx = a g' + k (x - m) + d, g' masked as in gradient_sums. A function of its own,
// with the pointers as values: inside the threaded lambda they were references to the
// caller's stack, reloaded at every element (a store to gx might change them), and the two
// threads' loads of that stack line collided with the first thread's own stores to it.
template <class A, class T>
void input_gradient_row(T* gx, const T* g, const T* x, const T* y, T hi, T m, T a, T k, T d, int64_t n) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    if (n < W) {  // a row shorter than a register (2x2 images): a masked load costs more than it saves
        for (int64_t i = 0; i < n; ++i)
            gx[i] = a * (y && !(y[i] > T(0) && y[i] < hi) ? T(0) : g[i]) + k * (x[i] - m) + d;
        return;
    }
    for (int64_t i = 0; i < n; i += W) {
        const int64_t w = std::min(W, n - i);
        B gi = load_n<B>(g + i, w);
        if (y) {
            const B yi = load_n<B>(y + i, w);
            gi = xsimd::select((yi > B(0)) & (yi < B(hi)), gi, B(0));
        }
        store_n(gx + i, w, B(a) * gi + B(k) * (load_n<B>(x + i, w) - B(m)) + B(d));
    }
}

template <class A, class T>
void batch_norm_forward(const sg3_batch_norm& q, T* y, T* mean, T* rstd, const T* x, const T* w, const T* b,
                        T* running_mean, T* running_var, int nthreads) {
    const int64_t M = q.n * q.s;
    over_planes(q.c, M * 3, nthreads, [&](int64_t c) {
        double mu, inv;
        if (q.training) {
            double sum = 0, sq = 0;
            for (int64_t n = 0; n < q.n; ++n) sum += sum_contiguous<A, T>(x + (n * q.c + c) * q.s, q.s);
            mu = sum / double(M);
            const T m = T(mu);
            for (int64_t n = 0; n < q.n; ++n) sq += centered_squares<A, T>(x + (n * q.c + c) * q.s, m, q.s);
            const double var = sq / double(M);
            inv = 1.0 / std::sqrt(var + q.eps);
            if (running_mean) running_mean[c] = running_mean[c] * T(1 - q.momentum) + m * T(q.momentum);
            if (running_var)
                running_var[c] = running_var[c] * T(1 - q.momentum) + T(var) * T(q.momentum * M / (M - 1));
        } else {
            mu = double(running_mean[c]);
            inv = 1.0 / std::sqrt(double(running_var[c]) + q.eps);
        }
        mean[c] = T(mu), rstd[c] = T(inv);
        // y = x * scale + shift
        const T scale = T(inv * (w ? double(w[c]) : 1.0));
        const T shift = T((b ? double(b[c]) : 0.0) - mu * inv * (w ? double(w[c]) : 1.0));
        for (int64_t n = 0; n < q.n; ++n) {
            const T* xr = x + (n * q.c + c) * q.s;
            T* yr = y + (n * q.c + c) * q.s;
            if (q.act == SG3_BN_RELU)
                for (int64_t i = 0; i < q.s; ++i) yr[i] = std::max(xr[i] * scale + shift, T(0));
            else if (q.act == SG3_BN_RELU6)
                for (int64_t i = 0; i < q.s; ++i) yr[i] = std::min(std::max(xr[i] * scale + shift, T(0)), T(6));
            else
                for (int64_t i = 0; i < q.s; ++i) yr[i] = xr[i] * scale + shift;
        }
    });
}

// gx, gw, gb may each be null (not asked for); y is read only with the fused ReLU
template <class A, class T>
void batch_norm_backward(const sg3_batch_norm& q, T* gx, T* gw, T* gb, const T* g, const T* x, const T* y,
                         const T* mean, const T* rstd, const T* w, int nthreads) {
    const int64_t M = q.n * q.s;
    const T hi = q.act == SG3_BN_RELU6 ? T(6) : T(INFINITY);  // where the activation stops passing
    over_planes(q.c, M * 3, nthreads, [&](int64_t c) {
        const T m = mean[c];
        double sg = 0, sgx = 0;
        for (int64_t n = 0; n < q.n; ++n) {
            const int64_t at = (n * q.c + c) * q.s;
            gradient_sums<A, T>(g + at, x + at, q.act ? y + at : nullptr, hi, m, q.s, sg, sgx);
        }
        const double inv = double(rstd[c]), wc = w ? double(w[c]) : 1.0;
        if (gw) gw[c] = T(sgx * inv);
        if (gb) gb[c] = T(sg);
        if (!gx) return;
        // gx = a * g + k * (x - mean) + d, the per-channel constants computed once
        const T a = T(wc * inv);
        const T k = q.training ? T(-wc * inv * inv * inv * sgx / double(M)) : T(0);
        const T d = q.training ? T(-wc * inv * sg / double(M)) : T(0);
        for (int64_t n = 0; n < q.n; ++n) {
            const int64_t at = (n * q.c + c) * q.s;
            input_gradient_row<A, T>(gx + at, g + at, x + at, q.act ? y + at : nullptr, hi, m, a, k, d, q.s);
        }
    });
}

}  // namespace sg3
