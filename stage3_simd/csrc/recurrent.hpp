// The LSTM cell's elementwise part, forward and backward, in one pass each.
//
// Design: a step of an LSTM layer is one GEMM (h @ W_hh^T, added to the step's slice of the
// whole sequence's input projection: `pre`, rows x 4H, gates i, f, g, o) and then a dozen
// elementwise operations on (rows x H) pieces, each one a frontend call and a pass over memory:
//   c' = sigmoid(f) c + sigmoid(i) tanh(g),   h' = sigmoid(o) tanh(c')
// Here they are one pass, with the same functors (and so the same bits) as the elementwise
// kernels and the composite's order of operations. The forward saves the activated gates and
// tanh(c'); the backward takes the gradients of h' and c' and gives those of `pre` and c.
//
// A whole layer (one direction) is one call below: recurrent_forward runs the time loop, step
// by step a GEMM h @ W_hh^T on the weights packed once for every step (prepacked_b) and the
// cell's elementwise pass; recurrent_backward runs backpropagation through time the same way,
// one GEMM (dgates @ W_hh) per step, then the weights' gradient as a single GEMM over every
// step's rows (dgates^T @ the saved previous states). The input projection x @ W_ih^T of
// every step stays outside, one GEMM over the sequence, and so does its backward.
//
// A sequence is packed rows: step t has batch_sizes[t] rows, a non-increasing count, so that
// at each step only the first rows advance. The running state (h, c) is a (batch x H) buffer
// that starts as the initial state; rows whose sequence is over keep their last state, and in
// the reverse direction rows whose sequence starts later still hold the initial one. So both
// directions are the same loop, in opposite orders, and the buffer ends as the final state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "elementwise.hpp"
#include "fused.hpp"
#include "gemm.hpp"
#include "kernels.h"
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

// ------------------------------------------------------------------ a layer's time loop

inline int64_t recurrent_gates(int mode) { return mode == SG3_LSTM ? 4 : mode == SG3_GRU ? 3 : 1; }

// Elements saved per row for the backward: LSTM the activated gates i f g o, tanh(c'), c and,
// with a projection, o tanh(c') before it; GRU r, z, n and the hidden projection's n part;
// the plain RNN its output (a copy: the caller may change the one it was given).
inline int64_t recurrent_saved(const sg3_recurrent& q) {
    const int64_t H = q.hidden;
    return q.mode == SG3_LSTM ? (q.proj ? 7 : 6) * H : q.mode == SG3_GRU ? 4 * H : H;
}

namespace detail {

inline std::vector<int64_t> step_offsets(const sg3_recurrent& q) {
    std::vector<int64_t> off(static_cast<std::size_t>(q.steps) + 1, 0);
    for (int64_t t = 0; t < q.steps; ++t) off[t + 1] = off[t] + q.batch_sizes[t];
    return off;
}

// One row of a step, forward: x the row's input projection, p its hidden projection (no bias
// yet), b the hidden bias or null, h and c the state (read, then written), out the output row,
// sv what the backward needs. With a projection the LSTM leaves o tanh(c') in sv, for the
// caller's GEMM to project into h and out.
template <class A, class T>
void cell_forward(int mode, int64_t H, bool proj, const T* x, const T* p, const T* b, T* h, T* c, T* out, T* sv) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    for (int64_t j = 0; j < H; j += W) {
        const int64_t n = std::min(W, H - j);
        auto hidden = [&](int64_t k) {  // the hidden projection of gate k, with its bias
            const B v = load_n<B>(p + k * H + j, n);
            return b ? v + load_n<B>(b + k * H + j, n) : v;
        };
        auto in = [&](int64_t k) { return load_n<B>(x + k * H + j, n); };
        B hn;
        if (mode == SG3_LSTM) {
            const B i = Sigmoid{}(in(0) + hidden(0)), f = Sigmoid{}(in(1) + hidden(1));
            const B g = Tanh{}(in(2) + hidden(2)), o = Sigmoid{}(in(3) + hidden(3));
            const B cp = load_n<B>(c + j, n), cn = f * cp + i * g, t = Tanh{}(cn);
            hn = o * t;
            store_n(sv + j, n, i), store_n(sv + H + j, n, f), store_n(sv + 2 * H + j, n, g);
            store_n(sv + 3 * H + j, n, o), store_n(sv + 4 * H + j, n, t), store_n(sv + 5 * H + j, n, cp);
            store_n(c + j, n, cn);
            if (proj) {
                store_n(sv + 6 * H + j, n, hn);
                continue;
            }
        } else if (mode == SG3_GRU) {
            const B r = Sigmoid{}(in(0) + hidden(0)), z = Sigmoid{}(in(1) + hidden(1)), hn_part = hidden(2);
            const B nn = Tanh{}(in(2) + r * hn_part);
            hn = nn + z * (load_n<B>(h + j, n) - nn);
            store_n(sv + j, n, r), store_n(sv + H + j, n, z), store_n(sv + 2 * H + j, n, nn);
            store_n(sv + 3 * H + j, n, hn_part);
        } else {
            const B v = in(0) + hidden(0);
            hn = mode == SG3_RNN_TANH ? Tanh{}(v) : Relu{}(v);
            store_n(sv + j, n, hn);
        }
        store_n(h + j, n, hn), store_n(out + j, n, hn);
    }
}

// One row of a step, backward: dh the gradient of the cell's output (in part: go, when not
// null, is added), gc the cell state's (in: from the steps after, out: for the state before).
// Writes the input projection's gradient gx and the hidden projection's gp (the same as gx
// but for the GRU's n gate). The GRU writes h's own share of its gradient into dh; the share
// through W_hh is the caller's GEMM.
template <class A, class T>
void cell_backward(int mode, int64_t H, T* gx, T* gp, T* dh_row, T* gc, const T* go, const T* sv, const T* hp) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    const B one(1);
    for (int64_t j = 0; j < H; j += W) {
        const int64_t n = std::min(W, H - j);
        const B dh = go ? load_n<B>(dh_row + j, n) + load_n<B>(go + j, n) : load_n<B>(dh_row + j, n);
        auto saved = [&](int64_t k) { return load_n<B>(sv + k * H + j, n); };
        if (mode == SG3_LSTM) {
            const B i = saved(0), f = saved(1), g = saved(2), o = saved(3), t = saved(4);
            const B dc = load_n<B>(gc + j, n) + dh * o * (one - t * t);  // through h' = o tanh(c')
            store_n(gx + j, n, dc * g * i * (one - i));
            store_n(gx + H + j, n, dc * saved(5) * f * (one - f));
            store_n(gx + 2 * H + j, n, dc * i * (one - g * g));
            store_n(gx + 3 * H + j, n, dh * t * o * (one - o));
            store_n(gc + j, n, dc * f);
        } else if (mode == SG3_GRU) {
            const B r = saved(0), z = saved(1), nn = saved(2);
            const B dn = dh * (one - z) * (one - nn * nn), dz = dh * (load_n<B>(hp + j, n) - nn) * z * (one - z);
            const B dr = dn * saved(3) * r * (one - r);
            store_n(gx + j, n, dr), store_n(gx + H + j, n, dz), store_n(gx + 2 * H + j, n, dn);
            store_n(gp + j, n, dr), store_n(gp + H + j, n, dz), store_n(gp + 2 * H + j, n, dn * r);
            store_n(dh_row + j, n, dh * z);  // h' = n + z (h - n)
        } else {
            const B y = saved(0);
            store_n(gx + j, n, mode == SG3_RNN_TANH ? dh * (one - y * y) : xsimd::select(y > B(0), dh, B(0)));
        }
    }
}

// B for h @ M^T or h @ M on every step: M (rows x cols) packed once, transposed or not.
template <class A, class T, int Role>
prepacked_b<A, T> packed_weights(const T* m, int64_t rows, int64_t cols, bool transposed) {
    constexpr int NR = kernel_shape<A, T>::nv * static_cast<int>(xsimd::batch<T, A>::size);
    const int64_t k = transposed ? cols : rows, n = transposed ? rows : cols;
    T* dst = thread_buffer<A, T, Role>().get(static_cast<std::size_t>(k * ceil_div(n, NR) * NR));
    return transposed ? prepack_b<A, T>(gemm_blocking<A, T>(), k, n, m, 1, cols, dst)
                      : prepack_b<A, T>(gemm_blocking<A, T>(), k, n, m, cols, 1, dst);
}

}  // namespace detail

// The time loop of one layer and direction, P = q.proj or else H wide. gi: every step's input
// projection with its bias (rows x G*H, G the gates); h, c: the initial state (batch x P, batch
// x H; c for the LSTM only), left as the final state; w: W_hh (G*H x P); b: b_hh or null;
// w_hr: the LSTM's projection (P x H) or null. Writes out (rows x P), the previous state of
// every row (hprev, rows x P) and what the backward needs (saved, rows x recurrent_saved).
template <class A, class T>
void recurrent_forward(const sg3_recurrent& q, T* out, T* h, T* c, T* saved, T* hprev, const T* gi, const T* w,
                       const T* b, const T* w_hr, int nthreads) {
    const int64_t H = q.hidden, P = q.proj ? q.proj : H, G = recurrent_gates(q.mode) * H, S = recurrent_saved(q);
    const gemm_blocking_info& bl = gemm_blocking<A, T>();
    const prepacked_b<A, T> wt = detail::packed_weights<A, T, 7>(w, G, P, true);  // W_hh^T
    const prepacked_b<A, T> wr = q.proj ? detail::packed_weights<A, T, 9>(w_hr, P, H, true) : prepacked_b<A, T>{};
    T* pre = thread_buffer<A, T, 8>().get(static_cast<std::size_t>(q.batch * G));
    const std::vector<int64_t> off = detail::step_offsets(q);
    for (int64_t s = 0; s < q.steps; ++s) {
        const int64_t t = q.reverse ? q.steps - 1 - s : s, n = q.batch_sizes[t], o = off[t];
        T* hp = hprev + o * P;
        std::copy(h, h + n * P, hp);
        gemm_from<A, T>(bl, n, G, P, strided_a<A, T>{hp, P, 1}, wt, pre, G, false, nthreads);
        over_rows(n, G, 16, nthreads, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
                detail::cell_forward<A, T>(q.mode, H, q.proj != 0, gi + (o + r) * G, pre + r * G, b, h + r * P,
                                           c ? c + r * H : nullptr, out + (o + r) * P, saved + (o + r) * S);
        });
        if (q.proj) {  // h' = (o tanh(c')) @ W_hr^T
            T* y = out + o * P;
            gemm_from<A, T>(bl, n, P, H, strided_a<A, T>{saved + o * S + 6 * H, S, 1}, wr, y, P, false, nthreads);
            std::copy(y, y + n * P, h);
        }
    }
}

// Backpropagation through recurrent_forward. gh, gc: the final state's gradients (batch x P,
// batch x H), left as the initial state's; gout: the output's (rows x P). Writes ggi (the input
// projection's gradient, rows x G*H), gw (W_hh's), gb (b_hh's, when not null) and gw_hr (the
// projection's, with one). Scratch: gp, the GRU's hidden projection's gradient (rows x G*H;
// null for the others, whose is ggi); gproj, the projection's output gradient (rows x P).
template <class A, class T>
void recurrent_backward(const sg3_recurrent& q, T* ggi, T* gh, T* gc, T* gw, T* gb, T* gw_hr, T* gp, T* gproj,
                        const T* gout, const T* saved, const T* hprev, const T* w, const T* w_hr, int nthreads) {
    const int64_t H = q.hidden, P = q.proj ? q.proj : H, G = recurrent_gates(q.mode) * H, S = recurrent_saved(q);
    const gemm_blocking_info& bl = gemm_blocking<A, T>();
    if (!gp) gp = ggi;
    const prepacked_b<A, T> wp = detail::packed_weights<A, T, 7>(w, G, P, false);
    const prepacked_b<A, T> wr = q.proj ? detail::packed_weights<A, T, 9>(w_hr, P, H, false) : prepacked_b<A, T>{};
    T* dhc = q.proj ? thread_buffer<A, T, 8>().get(static_cast<std::size_t>(q.batch * H)) : nullptr;
    const std::vector<int64_t> off = detail::step_offsets(q);
    for (int64_t s = 0; s < q.steps; ++s) {
        const int64_t t = q.reverse ? s : q.steps - 1 - s, n = q.batch_sizes[t], o = off[t];
        T* dh = gh;
        const T* go = gout + o * P;
        if (q.proj) {  // back through h' = (o tanh(c')) @ W_hr^T
            T* d = gproj + o * P;
            for (int64_t e = 0; e < n * P; ++e) d[e] = gh[e] + go[e];
            gemm_from<A, T>(bl, n, H, P, strided_a<A, T>{d, P, 1}, wr, dhc, H, false, nthreads);
            dh = dhc, go = nullptr;
        }
        over_rows(n, G, 16, nthreads, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
                detail::cell_backward<A, T>(q.mode, H, ggi + (o + r) * G, gp + (o + r) * G, dh + r * H,
                                            gc ? gc + r * H : nullptr, go ? go + r * P : nullptr,
                                            saved + (o + r) * S, hprev + (o + r) * P);
        });
        gemm_from<A, T>(bl, n, P, G, strided_a<A, T>{gp + o * G, G, 1}, wp, gh, P, q.mode == SG3_GRU, nthreads);
    }
    const int64_t rows = off[q.steps];
    gemm<A, T>(G, P, rows, gp, 1, G, hprev, P, 1, gw, P, false, nthreads);  // dgates^T @ previous states
    if (q.proj) gemm<A, T>(P, H, rows, gproj, 1, P, saved + 6 * H, S, 1, gw_hr, H, false, nthreads);
    if (!gb) return;
    constexpr int64_t kColumns = 256;  // the bias's gradient: column sums, threads over column blocks
    over_rows(detail::ceil_div(G, kColumns), rows * kColumns, 1, nthreads, [&](int64_t b0, int64_t b1) {
        const int64_t j0 = b0 * kColumns, j1 = std::min(G, b1 * kColumns);
        std::fill(gb + j0, gb + j1, T(0));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = j0; j < j1; ++j) gb[j] += gp[r * G + j];
    });
}

}  // namespace sg3
