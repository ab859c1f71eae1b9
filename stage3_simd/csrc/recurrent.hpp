// The LSTM cell's elementwise part, forward and backward, in one pass each.
//
// Design: a step of an LSTM layer is one GEMM (h @ W_hh^T, added to the step's slice of the
// whole sequence's input projection: `pre`, rows x 4H, gates i, f, g, o) and then a dozen
// elementwise operations on (rows x H) pieces, each one a frontend call and a pass over memory:
//   c' = sigmoid(f) c + sigmoid(i) tanh(g),   h' = sigmoid(o) tanh(c')
// Here they are one pass, with the same functors (and so the same bits) as the elementwise
// kernels and the composite's order of operations. The forward saves the activated gates and
// tanh(c'); the backward takes the gradients of h' and c' and gives those of `pre` and c.
#pragma once

#include <algorithm>
#include <cstdint>

#include "elementwise.hpp"
#include "fused.hpp"
#include "simd.hpp"

namespace sg3 {

template <class A, class T>
void lstm_cell_rows(T* h, T* c_next, T* act, T* tc, const T* pre, const T* c, int64_t rows, int64_t H, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    over_rows(rows, 4 * H, 16, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const T* p = pre + r * 4 * H;
            T* a = act + r * 4 * H;
            for (int64_t j = 0; j < H; j += W) {
                const int64_t n = std::min(W, H - j);
                const B i = Sigmoid{}(load_n<B>(p + j, n)), f = Sigmoid{}(load_n<B>(p + H + j, n));
                const B g = Tanh{}(load_n<B>(p + 2 * H + j, n)), o = Sigmoid{}(load_n<B>(p + 3 * H + j, n));
                const B cn = f * load_n<B>(c + r * H + j, n) + i * g, t = Tanh{}(cn);
                store_n(a + j, n, i), store_n(a + H + j, n, f), store_n(a + 2 * H + j, n, g), store_n(a + 3 * H + j, n, o);
                store_n(c_next + r * H + j, n, cn), store_n(tc + r * H + j, n, t), store_n(h + r * H + j, n, o * t);
            }
        }
    });
}

template <class A, class T>
void lstm_cell_backward_rows(T* gpre, T* gc, const T* gh, const T* gc_next, const T* act, const T* tc, const T* c,
                             int64_t rows, int64_t H, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    over_rows(rows, 4 * H, 4, nthreads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const T* a = act + r * 4 * H;
            T* gp = gpre + r * 4 * H;
            for (int64_t j = 0; j < H; j += W) {
                const int64_t n = std::min(W, H - j), at = r * H + j;
                const B i = load_n<B>(a + j, n), f = load_n<B>(a + H + j, n);
                const B g = load_n<B>(a + 2 * H + j, n), o = load_n<B>(a + 3 * H + j, n);
                const B t = load_n<B>(tc + at, n), dh = load_n<B>(gh + at, n), one(1);
                const B dc = load_n<B>(gc_next + at, n) + dh * o * (one - t * t);  // through h' = o tanh(c')
                store_n(gp + j, n, dc * g * i * (one - i));
                store_n(gp + H + j, n, dc * load_n<B>(c + at, n) * f * (one - f));
                store_n(gp + 2 * H + j, n, dc * i * (one - g * g));
                store_n(gp + 3 * H + j, n, dh * t * o * (one - o));
                store_n(gc + at, n, dc * f);
            }
        }
    });
}

}  // namespace sg3
