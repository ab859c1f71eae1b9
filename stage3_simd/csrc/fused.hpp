// Fused kernels: several primitives' work in one pass over the data.
//
// Design: a composite (the frontend's reference) reads and writes every intermediate
// tensor, and pays the per-operation overhead once per primitive. Each kernel here does
// the same arithmetic in one pass over contiguous rows:
//   bias_act          y = act(y + bias) in place after a GEMM (linear's epilogue)
//   act_backward      g * act'(saved) (relu from its output, gelu from its input), and the
//                     bias's gradient (the column sums) in the same pass
//   softmax           a row's max, exp and sum, then the normalisation (or log_softmax)
//   softmax_backward  y * (g - sum(g y)), or g - exp(y) sum(g) for log_softmax
//   cross_entropy     log_softmax, the weighted, smoothed loss of each row and the
//                     probabilities its backward reuses; the backward in one pass
//   layer_norm        a row's mean and variance, the normalisation, scale and shift;
//                     the backward's input gradient per row, and weight and bias
//                     gradients down the columns
//   adam, sgd, rmsprop  one optimizer step for every parameter of a group, in the order
//                     of operations of the composite (and of PyTorch's single-tensor path)
// Float32 rows are reduced in float64 where a sum decides the result (softmax's
// denominator, layer norm's statistics), so a fused result is at least as accurate as
// the composite's. Rows are split among threads when there are many.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "elementwise.hpp"
#include "kernels.h"
#include "loops.hpp"
#include "math.hpp"
#include "simd.hpp"

namespace sg3 {

// Run fn(r0, r1) over rows [0, rows), split among threads when rows * cols is large
template <class Fn>
void over_rows(int64_t rows, int64_t cols, int64_t cost, int nthreads, Fn fn) {
    const int nt = static_cast<int>(std::min<int64_t>({nthreads, rows, rows * cols * cost / kParallelWork}));
    if (nt <= 1) {
        fn(int64_t(0), rows);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; ++t) fn(rows * t / nt, rows * (t + 1) / nt);
}

// ------------------------------------------------------------------ linear's epilogue

// y = act(x + bias) over (rows, cols); x may be y (in place, the GEMM's output), bias and pre
// (where the values before the activation are kept) may be null.
template <class A, class T>
void bias_act_rows(T* y, const T* x, const T* bias, T* pre, int64_t rows, int64_t cols, int act, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    over_rows(rows, cols, act >= SG3_ACT_GELU ? 16 : 1, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            for (int64_t j = 0; j < cols; j += W) {
                const int64_t m = cols - j < W ? cols - j : W;
                B v = load_n<B>(x + r * cols + j, m);
                if (bias) v = v + load_n<B>(bias + j, m);
                if (pre) store_n(pre + r * cols + j, m, v);
                if (act == SG3_ACT_RELU) v = Relu{}(v);
                if (act == SG3_ACT_GELU) v = Gelu{}(v);
                if (act == SG3_ACT_GELU_TANH) v = GeluTanh{}(v);
                store_n(y + r * cols + j, m, v);
            }
        }
    });
}

// d act / d pre times g: relu from its output y (y > 0), gelu from its input x: Phi(x) + x phi(x),
// or for the tanh form 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x) with t = tanh(u(x)) (GeluTanh).
template <class B>
B act_grad(B g, B s, int act) {
    if (act == SG3_ACT_RELU) return xsimd::select(s > B(0), g, B(0));
    if (act == SG3_ACT_GELU) {
        const B cdf = B(0.5) * xsimd::erfc(s * B(-0.70710678118654752440));
        const B pdf = exp_full(B(-0.5) * s * s) * B(0.39894228040143267794);
        return g * (cdf + s * pdf);
    }
    const B s2 = s * s, t = Tanh{}(B(GeluTanh::k) * (s + B(GeluTanh::c) * s2 * s));
    const B du = B(GeluTanh::k) * (B(1) + B(3 * GeluTanh::c) * s2);
    return g * (B(0.5) * (B(1) + t) + B(0.5) * s * (B(1) - t * t) * du);
}

// gx = g * act'(saved) over (rows, cols); with gb, also the bias's gradient, gx's column sums, in
// the same pass (linear's backward: gx is read once, while in registers, not again by a
// reduction). The sums run in T over blocks of kBlock rows, then in float64 per thread, and
// the threads' totals are added in a fixed order, so the result does not depend on timing.
template <class A, class T>
void act_backward(T* gx, T* gb, const T* g, const T* saved, int64_t rows, int64_t cols, int act, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size, kChunk = 4096, kBlock = 32;
    const int64_t cost = act == SG3_ACT_RELU ? 1 : 16;
    if (!gb) {  // elementwise: threads share chunks of elements, whatever the row length
        const int64_t n = rows * cols, chunks = (n + kChunk - 1) / kChunk;
        over_rows(chunks, kChunk, cost, nthreads, [&](int64_t c0, int64_t c1) {
            for (int64_t i = c0 * kChunk; i < std::min(n, c1 * kChunk); i += W) {
                const int64_t m = n - i < W ? n - i : W;
                store_n(gx + i, m, act_grad(load_n<B>(g + i, m), load_n<B>(saved + i, m), act));
            }
        });
        return;
    }
    const int nt = static_cast<int>(std::clamp<int64_t>(rows * cols * cost / kParallelWork, 1, std::max(1, nthreads)));
    std::vector<double> totals(static_cast<std::size_t>(nt * cols), 0.0);
    std::vector<T> block(static_cast<std::size_t>(nt * cols));
    over_rows(nt, 1, kParallelWork, nt, [&](int64_t t0, int64_t t1) {  // one share of the rows per thread
        for (int64_t t = t0; t < t1; ++t) {
            double* total = totals.data() + t * cols;
            T* part = block.data() + t * cols;
            for (int64_t r0 = rows * t / nt; r0 < rows * (t + 1) / nt; r0 += kBlock) {
                const int64_t r1 = std::min(r0 + kBlock, rows * (t + 1) / nt);
                std::fill(part, part + cols, T(0));
                for (int64_t r = r0; r < r1; ++r)
                    for (int64_t j = 0; j < cols; j += W) {
                        const int64_t m = cols - j < W ? cols - j : W, i = r * cols + j;
                        const B out = act_grad(load_n<B>(g + i, m), load_n<B>(saved + i, m), act);
                        store_n(gx + i, m, out);
                        store_n(part + j, m, load_n<B>(part + j, m) + out);
                    }
                for (int64_t j = 0; j < cols; ++j) total[j] += double(part[j]);
            }
        }
    });
    for (int64_t j = 0; j < cols; ++j) {
        double sum = 0;
        for (int t = 0; t < nt; ++t) sum += totals[t * cols + j];
        gb[j] = T(sum);
    }
}

// ------------------------------------------------------------------ softmax

template <class A, class T>
T row_max(const T* x, int64_t n) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    B m(-INFINITY);
    auto nan = B(0) != B(0);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        const B v = B::load_unaligned(x + j);
        m = xsimd::max(m, v);
        nan = nan | isnan(v);
    }
    if (xsimd::any(nan)) return NAN;
    alignas(64) T lanes[W];
    m.store_aligned(lanes);
    T best = -INFINITY;
    for (int64_t k = 0; k < W; ++k) best = lanes[k] > best ? lanes[k] : best;
    for (; j < n; ++j) {
        if (x[j] != x[j]) return NAN;
        best = x[j] > best ? x[j] : best;
    }
    return best;
}

// y = exp(x - shift) over a row, returning the sum: each lane adds at most 64 terms in T
// before the lanes are added into a float64 total, so long float32 rows lose no digits
template <class A, class T>
double exp_shifted(T* y, const T* x, int64_t n, T shift) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size, BLOCK = 64 * W;
    double sum = 0;
    for (int64_t j0 = 0; j0 < n; j0 += BLOCK) {
        const int64_t j1 = std::min(n, j0 + BLOCK);
        B acc(0);
        for (int64_t j = j0; j < j1; j += W) {
            const int64_t m = std::min(W, j1 - j);
            const B e = exp_full(load_n<B>(x + j, m) - B(shift));
            store_n(y + j, m, e);
            acc += m == W ? e : xsimd::select(lanes_below<B>(m), e, B(0));
        }
        sum += xsimd::hadd(acc);
    }
    return sum;
}

// One row of softmax (or log_softmax), shifted by its max: a row with NaN, or whose max
// is infinite (inf - inf), gives NaN, as in PyTorch
template <class A, class T>
void softmax_row(T* y, const T* x, int64_t n, bool log) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    const T shift = row_max<A, T>(x, n);
    const double sum = exp_shifted<A, T>(y, x, n, shift);
    if (log) {  // (x - shift) - log(sum): shift + log(sum) would round away log(sum)'s digits
        const B lsum(static_cast<T>(std::log(sum))), sh(shift);
        for (int64_t j = 0; j < n; j += W) {
            const int64_t m = n - j < W ? n - j : W;
            store_n(y + j, m, (load_n<B>(x + j, m) - sh) - lsum);
        }
    } else {
        const B scale(static_cast<T>(1.0 / sum));
        for (int64_t j = 0; j < n; j += W) {
            const int64_t m = n - j < W ? n - j : W;
            store_n(y + j, m, load_n<B>(y + j, m) * scale);
        }
    }
}

template <class A, class T>
void softmax_rows(T* y, const T* x, int64_t rows, int64_t cols, bool log, int nthreads) {
    over_rows(rows, cols, 16, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) softmax_row<A, T>(y + r * cols, x + r * cols, cols, log);
    });
}

// softmax: gx = y * (g - sum(g y)); log_softmax: gx = g - exp(y) * sum(g)
template <class A, class T>
void softmax_backward_rows(T* gx, const T* g, const T* y, int64_t rows, int64_t cols, bool log, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    over_rows(rows, cols, 4, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const T* gr = g + r * cols;
            const T* yr = y + r * cols;
            T* out = gx + r * cols;
            double dot = 0;
            for (int64_t j = 0; j < cols; ++j) dot += log ? double(gr[j]) : double(gr[j]) * yr[j];
            const B d(static_cast<T>(dot));
            for (int64_t j = 0; j < cols; j += W) {
                const int64_t m = cols - j < W ? cols - j : W;
                const B gv = load_n<B>(gr + j, m), yv = load_n<B>(yr + j, m);
                store_n(out + j, m, log ? gv - exp_full(yv) * d : yv * (gv - d));
            }
        }
    });
}

// ------------------------------------------------------------------ cross-entropy

// Per row: loss (weighted, smoothed; 0 for an ignored row), the row's weight in a mean
// (w[target], 0 if ignored) and the probabilities (softmax) the backward reuses.
// Returns the first row whose target is out of range (neither a class nor ignore), or -1.
template <class A, class T>
int64_t cross_entropy_rows(T* loss, T* wrow, T* probs, const T* x, const int64_t* target, const T* weight,
                           int64_t ignore, double smoothing, int64_t rows, int64_t cols, int nthreads) {
    int64_t bad = -1;
    over_rows(rows, cols, 16, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const T* xr = x + r * cols;
            T* pr = probs + r * cols;
            const int64_t t = target[r];
            if (t == ignore) {
                loss[r] = 0;
                wrow[r] = 0;
                softmax_row<A, T>(pr, xr, cols, false);
                continue;
            }
            if (t < 0 || t >= cols) {
#pragma omp critical
                if (bad < 0 || r < bad) bad = r;
                continue;
            }
            const T shift = row_max<A, T>(xr, cols);
            const double lse = std::log(exp_shifted<A, T>(pr, xr, cols, shift)) + shift;
            const double inv = 1.0 / std::exp(lse - shift);
            double smooth = 0;  // -sum_c w_c log p_c
            for (int64_t c = 0; c < cols; ++c) {
                pr[c] = static_cast<T>(pr[c] * inv);
                if (smoothing != 0) smooth -= (weight ? double(weight[c]) : 1.0) * (double(xr[c]) - lse);
            }
            const double wt = weight ? double(weight[t]) : 1.0;
            const double nll = -(double(xr[t]) - lse) * wt;
            loss[r] = static_cast<T>(nll * (1 - smoothing) + smooth * (smoothing / cols));
            wrow[r] = static_cast<T>(wt);
        }
    });
    return bad;
}

// d loss_r / d x_rc = scale_r * ((1-s) w_t (p_rc - [c = t]) + s/C (W p_rc - w_c)),
// W the sum of the class weights; an ignored row gets 0
template <class A, class T>
void cross_entropy_backward_rows(T* gx, const T* probs, const int64_t* target, const T* weight, const T* scale,
                                 int64_t ignore, double smoothing, int64_t rows, int64_t cols, int nthreads) {
    double wsum = 0;
    for (int64_t c = 0; c < cols; ++c) wsum += weight ? double(weight[c]) : 1.0;
    over_rows(rows, cols, 2, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            T* out = gx + r * cols;
            const T* pr = probs + r * cols;
            const int64_t t = target[r];
            if (t == ignore) {
                for (int64_t c = 0; c < cols; ++c) out[c] = 0;
                continue;
            }
            const double s = scale[r], wt = weight ? double(weight[t]) : 1.0;
            const double a = s * (1 - smoothing) * wt + s * smoothing / cols * wsum;  // times p_rc
            const double b = s * smoothing / cols;                                      // times w_c
            for (int64_t c = 0; c < cols; ++c)
                out[c] = static_cast<T>(a * pr[c] - b * (weight ? double(weight[c]) : 1.0));
            out[t] = static_cast<T>(double(out[t]) - s * (1 - smoothing) * wt);
        }
    });
}

// ------------------------------------------------------------------ layer norm
//
// Sums along a row keep W lanes in T, each lane adding at most 64 terms before the lanes go
// into a float64 total (as exp_shifted): vector speed, and no digits lost on long rows.

// sum over a row of x_c and, with a shift m, of (x_c - m) and (x_c - m)^2
template <class A, class T>
double row_sum(const T* x, int64_t n) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size, BLOCK = 64 * W;
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += BLOCK) {
        B acc(0);
        for (int64_t j = j0; j < std::min(n, j0 + BLOCK); j += W) acc += load_n<B>(x + j, std::min(W, n - j));
        total += double(xsimd::hadd(acc));
    }
    return total;
}

template <class A, class T>
void row_moments(const T* x, int64_t n, T m, double& d, double& dd) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size, BLOCK = 64 * W;
    d = dd = 0;
    for (int64_t j0 = 0; j0 < n; j0 += BLOCK) {
        B s(0), ss(0);
        for (int64_t j = j0; j < std::min(n, j0 + BLOCK); j += W) {
            const int64_t k = std::min(W, n - j);
            B v = load_n<B>(x + j, k) - B(m);
            if (k < W) v = xsimd::select(lanes_below<B>(k), v, B(0));
            s += v;
            ss += v * v;
        }
        d += double(xsimd::hadd(s)), dd += double(xsimd::hadd(ss));
    }
}

template <class A, class T>
void layer_norm_rows(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b, int64_t rows, int64_t cols,
                     double eps, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    over_rows(rows, cols, 4, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const T* xr = x + r * cols;
            const double mu = row_sum<A>(xr, cols) / cols;
            // the deviations from mu rounded to T, and their own mean d: var = E[(x - m)^2] - d^2
            // exactly for any shift m, and m this close to the mean leaves no cancellation
            const B m(static_cast<T>(mu));
            double d, ss;
            row_moments<A>(xr, cols, static_cast<T>(mu), d, ss);
            d /= cols;
            const double inv = 1.0 / std::sqrt(std::max(ss / cols - d * d, 0.0) + eps);
            mean[r] = static_cast<T>(mu);
            rstd[r] = static_cast<T>(inv);
            const B k(static_cast<T>(inv));
            for (int64_t c = 0; c < cols; c += W) {
                const int64_t n = cols - c < W ? cols - c : W;
                B v = (load_n<B>(xr + c, n) - m) * k;
                if (w) v = v * load_n<B>(w + c, n);
                if (b) v = v + load_n<B>(b + c, n);
                store_n(y + r * cols + c, n, v);
            }
        }
    });
}

// gx per row; gw, gb (float64 accumulators of cols elements, zeroed by the caller) summed
// down the rows: each thread sums its rows into lanes of T, 64 rows at a time, then into its
// own float64 partial, and the partials are added in thread order
template <class A, class T>
void layer_norm_backward_rows(T* gx, double* gw, double* gb, const T* g, const T* x, const T* mean,
                              const T* rstd, const T* w, int64_t rows, int64_t cols, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size, ROWS = 64;
    const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({nthreads, rows, rows * cols * 6 / kParallelWork})));
    const bool columns = gw || gb;
    std::vector<double> partial(columns && nt > 1 ? size_t(nt) * 2 * cols : 0);
    auto run = [&](int t, int64_t r0, int64_t r1) {
        double* pw = !columns ? nullptr : nt > 1 ? partial.data() + size_t(t) * 2 * cols : gw;
        double* pb = !columns ? nullptr : nt > 1 ? pw + cols : gb;
        thread_local std::vector<T> lanes;  // the running T sums of g xhat and g down a block of rows
        if (columns) lanes.assign(2 * cols, T(0));
        T* const sx = lanes.data();  // hoisted: each use of a thread_local may be a call
        T* const s1 = sx + cols;
        for (int64_t r = r0; r < r1; ++r) {
            const T* gr = g + r * cols;
            const T* xr = x + r * cols;
            const B mu(mean[r]), k(rstd[r]);
            B sa(0), sb(0);  // sums of w g and of w g xhat, a register at a time
            double a = 0, bsum = 0;
            for (int64_t c = 0; c < cols; c += W) {
                const int64_t n = cols - c < W ? cols - c : W;
                const B gv = load_n<B>(gr + c, n), xhat = (load_n<B>(xr + c, n) - mu) * k;  // 0 past the end
                const B wg = w ? gv * load_n<B>(w + c, n) : gv;
                sa += wg;
                sb += wg * xhat;
                if (columns) {
                    store_n(sx + c, n, load_n<B>(sx + c, n) + gv * xhat);
                    store_n(s1 + c, n, load_n<B>(s1 + c, n) + gv);
                }
                if ((c / W) % 64 == 63) {  // a long row: into float64 every 64 registers
                    a += double(xsimd::hadd(sa)), bsum += double(xsimd::hadd(sb));
                    sa = B(0), sb = B(0);
                }
            }
            a = (a + double(xsimd::hadd(sa))) / cols;
            bsum = (bsum + double(xsimd::hadd(sb))) / cols;
            if (columns && ((r - r0) % ROWS == ROWS - 1 || r == r1 - 1)) {
                for (int64_t c = 0; c < cols; ++c) {
                    if (gw) pw[c] += sx[c];
                    if (gb) pb[c] += s1[c];
                }
                std::fill(sx, sx + 2 * cols, T(0));
            }
            if (gx) {
                const B av(static_cast<T>(a)), bv(static_cast<T>(bsum));
                for (int64_t c = 0; c < cols; c += W) {
                    const int64_t n = cols - c < W ? cols - c : W;
                    const B gv = load_n<B>(gr + c, n), xhat = (load_n<B>(xr + c, n) - mu) * k;
                    const B wg = w ? gv * load_n<B>(w + c, n) : gv;
                    store_n(gx + r * cols + c, n, k * (wg - av - xhat * bv));
                }
            }
        }
    };
    if (nt <= 1) {
        run(0, 0, rows);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; ++t) run(t, rows * t / nt, rows * (t + 1) / nt);
    for (int t = 0; t < nt && columns; ++t)
        for (int64_t c = 0; c < cols; ++c) {
            if (gw) gw[c] += partial[size_t(t) * 2 * cols + c];
            if (gb) gb[c] += partial[size_t(t) * 2 * cols + cols + c];
        }
}

// ------------------------------------------------------------------ optimizer steps
//
// Each update follows the composite's order of float operations exactly (stage 0's
// optim/*.py, itself PyTorch's single-tensor path), with every scalar rounded to T first,
// as the composite's 0-d tensors are: the fused step gives the composite's bits.

// the gradient an L2-decayed rule steps along: negated to maximize, then g + p * weight_decay
template <class B, class H>
inline B decayed(B g, const B& p, const H& h) {
    using T = typename B::value_type;
    if (h.maximize) g = Neg{}(g);
    return h.weight_decay != 0 ? g + p * B(T(h.weight_decay)) : g;
}

// lerp_(start, end, w): start + (end - start) w, or end - (end - start) (1 - w) for w >= 0.5
template <class B>
inline B lerp(const B& start, const B& end, double w, double w1) {
    using T = typename B::value_type;
    return w < 0.5 ? start + (end - start) * B(T(w)) : end - (end - start) * B(T(w1));
}

template <class A, class T>
void adam_update(T* p, const T* g_in, T* m, T* v, T* vmax, int64_t n, double step_size, double bc2,
                 const sg3_adam& h) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    for (int64_t i = 0; i < n; i += W) {
        const int64_t k = n - i < W ? n - i : W;
        B pv = load_n<B>(p + i, k), g = load_n<B>(g_in + i, k);
        if (h.maximize) g = Neg{}(g);
        if (h.weight_decay != 0) {
            if (h.decoupled)
                pv = pv * B(T(1 - h.lr * h.weight_decay));
            else
                g = g + pv * B(T(h.weight_decay));
        }
        const B mv = lerp(load_n<B>(m + i, k), g, h.lerp_w, h.lerp_w1);
        B vv = load_n<B>(v + i, k) * B(T(h.beta2));
        vv = vv + g * g * B(T(1 - h.beta2));
        B second = vv;
        if (vmax) {
            second = Maximum{}(load_n<B>(vmax + i, k), vv);
            store_n(vmax + i, k, second);
        }
        const B denom = xsimd::sqrt(second) / B(T(bc2)) + B(T(h.eps));
        store_n(p + i, k, pv + mv / denom * B(T(-step_size)));
        store_n(m + i, k, mv);
        store_n(v + i, k, vv);
    }
}

template <class A, class T>
void sgd_update(T* p, const T* g_in, T* buf, int64_t n, bool first, const sg3_sgd& h) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    for (int64_t i = 0; i < n; i += W) {
        const int64_t k = n - i < W ? n - i : W;
        const B pv = load_n<B>(p + i, k);
        B g = decayed(load_n<B>(g_in + i, k), pv, h);
        if (buf) {
            B b = g;  // the first step's buffer is the gradient itself
            if (!first) {
                b = load_n<B>(buf + i, k) * B(T(h.momentum));
                b = h.dampening != 0 ? b + g * B(T(1 - h.dampening)) : b + g;
            }
            store_n(buf + i, k, b);
            g = h.nesterov ? g + b * B(T(h.momentum)) : b;
        }
        store_n(p + i, k, pv + g * B(T(-h.lr)));
    }
}

template <class A, class T>
void rmsprop_update(T* p, const T* g_in, T* sq, T* gavg, T* buf, int64_t n, const sg3_rmsprop& h) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    for (int64_t i = 0; i < n; i += W) {
        const int64_t k = n - i < W ? n - i : W;
        B pv = load_n<B>(p + i, k);
        B g = decayed(load_n<B>(g_in + i, k), pv, h);
        B s = load_n<B>(sq + i, k) * B(T(h.alpha));
        s = s + g * g * B(T(1 - h.alpha));
        store_n(sq + i, k, s);
        B avg;
        if (gavg) {
            const B ga = lerp(load_n<B>(gavg + i, k), g, h.lerp_w, h.lerp_w1);
            store_n(gavg + i, k, ga);
            avg = xsimd::sqrt(s - ga * ga);
        } else {
            avg = xsimd::sqrt(s);
        }
        avg = avg + B(T(h.eps));
        if (buf) {
            const B b = load_n<B>(buf + i, k) * B(T(h.momentum)) + g / avg;
            store_n(buf + i, k, b);
            pv = pv + b * B(T(-h.lr));
        } else {
            pv = pv + g / avg * B(T(-h.lr));
        }
        store_n(p + i, k, pv);
    }
}

// Many tensors, one call: the work is cut into chunks of whole registers, shared by threads
template <class Fn>
void over_tensors(int count, const int64_t* n, int nthreads, Fn fn) {
    constexpr int64_t CHUNK = 1 << 14;
    int64_t total = 0;
    for (int t = 0; t < count; ++t) total += (n[t] + CHUNK - 1) / CHUNK;
    const int nt = static_cast<int>(std::min<int64_t>(nthreads, total * CHUNK * 8 / kParallelWork));
    auto run = [&](int64_t c0, int64_t c1) {  // chunks [c0, c1) of all tensors, in order
        int64_t c = 0;
        for (int t = 0; t < count && c < c1; ++t) {
            const int64_t chunks = (n[t] + CHUNK - 1) / CHUNK;
            for (int64_t j = 0; j < chunks; ++j, ++c)
                if (c >= c0 && c < c1) fn(t, j * CHUNK, std::min(CHUNK, n[t] - j * CHUNK));
        }
    };
    if (nt <= 1) {
        run(0, total);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int k = 0; k < nt; ++k) run(total * k / nt, total * (k + 1) / nt);
}

}  // namespace sg3
