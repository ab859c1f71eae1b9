// Scaled dot-product attention, forward and backward, a block of query rows and a tile of keys
// at a time.
//
// Design: softmax(scale * q @ k^T + mask) @ v over n independent (L x E, S x E, S x Ev) problems
// (the batch and head dims flattened; with grouped-query attention `group` query heads share
// one key/value head, kv = n / group). The composite builds the whole L x S score matrix, masks
// it, softmaxes it and multiplies, each a pass over memory and a graph node. Here a block of
// at most kRows query rows meets the keys kKeys at a time: the tile's scores are computed (a
// GEMM), scaled, masked and exponentiated in a per-thread kRows x kKeys buffer, then multiplied
// by the tile's values (a GEMM) into the block's output. No buffer grows with L or S, whatever
// the mask, and every product runs in the GEMM's micro-kernel.
//   * Online softmax (FlashAttention's forward): each row keeps its running maximum m and sum
//     l. A tile whose maximum exceeds m rescales the row's output and sum by exp(m_old - m_new)
//     before adding its own exp(s - m_new) terms; the last tile divides by l. The forward keeps
//     each row's log-sum-exp (m + log l) for the backward, which recomputes the probabilities
//     of each tile from it instead of storing them (a little arithmetic for L x S of memory).
//   * Masks: causal (query i sees keys 0..i), bool (1 takes part) or additive, one L x S
//     plane shared by every problem or one per problem. A causal block computes only the keys
//     its last row sees. A row that no key takes part in gives zeros, as the composite; a NaN
//     score makes its row NaN.
//   * Backward, per block and tile (p = exp(s - lse), D = rowsum(dO * O)): dP = dO @ V^T,
//     dS = scale p (dP - D), dQ += dS @ K, dK += dS^T @ Q, dV += P^T @ dO. Threads take whole
//     key/value heads (with all the query heads of their group), so no two add into the same
//     dK or dV.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "fused.hpp"
#include "gemm.hpp"
#include "kernels.h"
#include "math.hpp"
#include "simd.hpp"

namespace sg3 {

namespace detail {

constexpr int64_t kRows = 64;   // query rows per block
constexpr int64_t kKeys = 256;  // keys per tile: a block's scores (kRows x kKeys) stay in L2

template <class T>
const void* mask_row(const sg3_attention& a, const void* mask, int64_t n, int64_t i, int64_t j0) {
    if (a.mask_kind == SG3_MASK_NONE) return nullptr;
    const int64_t item = a.mask_kind == SG3_MASK_BOOL ? 1 : int64_t(sizeof(T));
    return static_cast<const char*>(mask) + ((a.mask_shared ? 0 : n * a.l * a.s) + i * a.s + j0) * item;
}

// Keys a block's GEMMs compute (a causal block stops at its last row's last key), and how many
// of the tile from key j0 (tile wide) row i sees.
inline int64_t block_keys(const sg3_attention& a, int64_t i0, int64_t rows) {
    return a.causal ? std::min(a.s, i0 + rows) : a.s;
}
inline int64_t row_keys(const sg3_attention& a, int64_t i, int64_t j0, int64_t tile) {
    const int64_t seen = a.causal ? std::min(a.s, i + 1) : a.s;
    return std::clamp<int64_t>(seen - j0, 0, tile);
}

// A row's raw scores of one tile (`keys` seen of `tile`) scaled and masked in place, a register
// at a time; its maximum is folded into *m (a NaN stays).
template <class A, class T>
void scores(const sg3_attention& a, T* s, int64_t keys, const void* mask_row, T* m) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    const B scale(T(a.scale)), none(T(-INFINITY));
    B top = none;
    auto nan = B(0) != B(0);
    for (int64_t j = 0; j < keys; j += W) {
        const int64_t n = std::min(W, keys - j);
        B x = load_n<B>(s + j, n) * scale;
        if (a.mask_kind == SG3_MASK_BOOL) {
            alignas(64) T keep[W] = {};
            for (int64_t t = 0; t < n; ++t) keep[t] = static_cast<const uint8_t*>(mask_row)[j + t] ? T(1) : T(0);
            x = xsimd::select(B::load_aligned(keep) != B(0), x, none);
        }
        if (a.mask_kind == SG3_MASK_ADD) x = x + load_n<B>(static_cast<const T*>(mask_row) + j, n);
        store_n(s + j, n, x);
        if (n < W) x = xsimd::select(lanes_below<B>(n), x, none);
        nan = nan | isnan(x);
        top = xsimd::max(top, x);
    }
    if (!m || *m != *m) return;
    if (xsimd::any(nan)) {
        *m = T(NAN);
        return;
    }
    alignas(64) T lanes[W];
    top.store_aligned(lanes);
    for (int64_t t = 0; t < W; ++t) *m = lanes[t] > *m ? lanes[t] : *m;
}

// exp(s - shift) in place over the `keys` seen (0 for a masked key, all 0 when shift is -inf:
// no key takes part), 0 past them up to `tile`; returns their sum.
template <class A, class T>
T exponentials(T* s, int64_t keys, int64_t tile, T shift) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    std::fill(s + keys, s + tile, T(0));
    if (shift == -INFINITY) {
        std::fill(s, s + keys, T(0));
        return T(0);
    }
    B sum(T(0));
    int64_t j = 0;
    for (; j + W <= keys; j += W) {
        const B x = B::load_unaligned(s + j);
        const B p = xsimd::select(x == B(-INFINITY), B(T(0)), exp_full(x - B(shift)));
        p.store_unaligned(s + j);
        sum += p;
    }
    if (j < keys) {  // a causal row's last, partial register: the lanes past it add nothing
        const B x = load_n<B>(s + j, keys - j);
        const B p = xsimd::select(x == B(-INFINITY), B(T(0)), exp_full(x - B(shift)));
        store_n(s + j, keys - j, p);
        sum += xsimd::select(lanes_below<B>(keys - j), p, B(T(0)));
    }
    return xsimd::hadd(sum);
}

}  // namespace detail

// out (n x L x Ev) and lse (n x L, each row's log-sum-exp, -inf for a row no key takes part in).
template <class A, class T>
void attention_forward(const sg3_attention& a, T* out, T* lse, const T* q, const T* k, const T* v, const void* mask,
                       int nthreads) {
    using B = vec<T, A>;
    const int64_t L = a.l, S = a.s, E = a.e, Ev = a.ev, kR = detail::kRows, kK = detail::kKeys;
    over_rows(a.n, L * S * (E + Ev), 1, nthreads, [&](int64_t n0, int64_t n1) {
        T* p = thread_buffer<A, T, 10>().get(static_cast<std::size_t>(kR * (kK + 2)));
        T* m = p + kR * kK;  // each row's running maximum and sum
        T* l = m + kR;
        for (int64_t n = n0; n < n1; ++n) {
            const T* kn = k + n / a.group * S * E;
            const T* vn = v + n / a.group * S * Ev;
            for (int64_t i0 = 0; i0 < L; i0 += kR) {
                const int64_t rows = std::min(kR, L - i0), keys = detail::block_keys(a, i0, rows), at = n * L + i0;
                T* o = out + at * Ev;
                std::fill(m, m + rows, T(-INFINITY));
                std::fill(l, l + rows, T(0));
                if (keys == 0) std::fill(o, o + rows * Ev, T(0));  // else the first tile's product sets it
                for (int64_t j0 = 0; j0 < keys; j0 += kK) {
                    const int64_t tile = std::min(kK, keys - j0);
                    gemm<A, T>(rows, tile, E, q + at * E, E, 1, kn + j0 * E, 1, E, p, kK, false, 1);  // Q K^T
                    for (int64_t r = 0; r < rows; ++r) {
                        T* s = p + r * kK;
                        const int64_t seen = detail::row_keys(a, i0 + r, j0, tile);
                        T top = m[r];
                        detail::scores<A, T>(a, s, seen, detail::mask_row<T>(a, mask, n, i0 + r, j0), &top);
                        const T sum = detail::exponentials<A, T>(s, seen, tile, top);
                        if (top != m[r] && m[r] != -INFINITY) {  // a new maximum: rescale what the row has
                            const T c = std::exp(m[r] - top);    // (nothing yet while m is -inf)
                            l[r] *= c;
                            for (int64_t e = 0; e < Ev; e += B::size) {
                                const int64_t w = std::min<int64_t>(B::size, Ev - e);
                                store_n(o + r * Ev + e, w, load_n<B>(o + r * Ev + e, w) * B(c));
                            }
                        }
                        m[r] = top;
                        l[r] += sum;
                    }
                    gemm<A, T>(rows, Ev, tile, p, kK, 1, vn + j0 * Ev, Ev, 1, o, Ev, j0 > 0, 1);  // O += P V
                }
                for (int64_t r = 0; r < rows; ++r) {
                    const T inv = l[r] > T(0) ? T(1) / l[r] : T(0);  // no key: a row of zeros
                    for (int64_t e = 0; e < Ev; ++e) o[r * Ev + e] *= inv;
                    lse[at + r] = l[r] > T(0) || l[r] != l[r] ? m[r] + std::log(l[r]) : T(-INFINITY);
                }
            }
        }
    });
}

// dq, dk, dv from the output's gradient g (n x L x Ev) and the forward's out and lse.
template <class A, class T>
void attention_backward(const sg3_attention& a, T* dq, T* dk, T* dv, const T* g, const T* q, const T* k, const T* v,
                        const T* out, const T* lse, const void* mask, int nthreads) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    const int64_t L = a.l, S = a.s, E = a.e, Ev = a.ev, kR = detail::kRows, kK = detail::kKeys;
    const int64_t heads = a.n / a.group;
    over_rows(heads, a.group * L * S * (2 * E + 2 * Ev), 1, nthreads, [&](int64_t h0, int64_t h1) {
        T* p = thread_buffer<A, T, 10>().get(static_cast<std::size_t>(kR * (2 * kK + 1)));
        T* ds = p + kR * kK;
        T* d = ds + kR * kK;  // rowsum(dO * O) of each row of the block
        for (int64_t kv = h0; kv < h1; ++kv) {
            const T* kn = k + kv * S * E;
            const T* vn = v + kv * S * Ev;
            T* gk = dk + kv * S * E;
            T* gv = dv + kv * S * Ev;
            std::fill(gk, gk + S * E, T(0));
            std::fill(gv, gv + S * Ev, T(0));
            for (int64_t n = kv * a.group; n < (kv + 1) * a.group; ++n) {
                for (int64_t i0 = 0; i0 < L; i0 += kR) {
                    const int64_t rows = std::min(kR, L - i0), keys = detail::block_keys(a, i0, rows);
                    const int64_t at = n * L + i0;
                    const T* gi = g + at * Ev;
                    for (int64_t r = 0; r < rows; ++r) {
                        d[r] = 0;
                        for (int64_t e = 0; e < Ev; ++e) d[r] += gi[r * Ev + e] * out[(at + r) * Ev + e];
                    }
                    std::fill(dq + at * E, dq + (at + rows) * E, T(0));
                    for (int64_t j0 = 0; j0 < keys; j0 += kK) {
                        const int64_t tile = std::min(kK, keys - j0);
                        const T* kt = kn + j0 * E;
                        gemm<A, T>(rows, tile, E, q + at * E, E, 1, kt, 1, E, p, kK, false, 1);  // Q K^T again
                        for (int64_t r = 0; r < rows; ++r) {
                            const int64_t seen = detail::row_keys(a, i0 + r, j0, tile);
                            detail::scores<A, T>(a, p + r * kK, seen, detail::mask_row<T>(a, mask, n, i0 + r, j0),
                                              nullptr);
                            detail::exponentials<A, T>(p + r * kK, seen, tile, lse[at + r]);
                        }
                        gemm<A, T>(rows, tile, Ev, gi, Ev, 1, vn + j0 * Ev, 1, Ev, ds, kK, false, 1);  // dO V^T
                        for (int64_t r = 0; r < rows; ++r) {  // dS = scale P (dP - D)
                            T* dsr = ds + r * kK;
                            const T* pr = p + r * kK;
                            for (int64_t j = 0; j < tile; j += W) {
                                const int64_t c = std::min(W, tile - j);
                                store_n(dsr + j, c,
                                        load_n<B>(pr + j, c) * (load_n<B>(dsr + j, c) - B(d[r])) * B(T(a.scale)));
                            }
                        }
                        gemm<A, T>(rows, E, tile, ds, kK, 1, kt, E, 1, dq + at * E, E, true, 1);  // dQ += dS K
                        gemm<A, T>(tile, E, rows, ds, 1, kK, q + at * E, E, 1, gk + j0 * E, E, true, 1);  // += dS^T Q
                        gemm<A, T>(tile, Ev, rows, p, 1, kK, gi, Ev, 1, gv + j0 * Ev, Ev, true, 1);  // += P^T dO
                    }
                }
            }
        }
    });
}

}  // namespace sg3
