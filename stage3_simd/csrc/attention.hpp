// Scaled dot-product attention, forward and backward, a block of query rows at a time.
//
// Design: softmax(scale * q @ k^T + mask) @ v over n independent (L x E, S x E, S x Ev) problems
// (the batch and head dims flattened; with grouped-query attention `group` query heads share
// one key/value head, kv = n / group). The composite builds the whole L x S score matrix, masks
// it, softmaxes it and multiplies, each a pass over memory and a graph node. Here a block of
// at most kRows query rows at a time has its scores computed (a GEMM), scaled, masked and
// softmaxed in place in a per-thread buffer (kRows x S), then multiplied by the values (a
// GEMM): the L x S matrix never exists, whatever the mask, and every product runs in the GEMM's
// micro-kernel.
//   * Softmax: exact, over each whole row (max, exp, sum), so no online rescaling is needed;
//     the forward keeps each row's log-sum-exp for the backward, which recomputes the
//     probabilities from it instead of storing them (FlashAttention's trade: a little
//     arithmetic for L x S of memory traffic).
//   * Masks: causal (query i sees keys 0..i), bool (1 takes part) or additive, one L x S
//     plane shared by every problem or one per problem. A causal block computes only the keys
//     its last row sees. A row that no key takes part in gives zeros, as the composite.
//   * Backward, per block (p = exp(s - lse), D = rowsum(dO * O)): dP = dO @ V^T, dS = scale
//     p (dP - D), dQ = dS @ K, dK += dS^T @ Q, dV += P^T @ dO. Threads take whole key/value
//     heads (with all the query heads of their group), so no two add into the same dK or dV.
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

constexpr int64_t kRows = 64;  // query rows per block

template <class T>
const void* mask_row(const sg3_attention& a, const void* mask, int64_t n, int64_t i) {
    if (a.mask_kind == SG3_MASK_NONE) return nullptr;
    const int64_t item = a.mask_kind == SG3_MASK_BOOL ? 1 : int64_t(sizeof(T));
    return static_cast<const char*>(mask) + ((a.mask_shared ? 0 : n * a.l * a.s) + i * a.s) * item;
}

// Keys a block's GEMM computes (a causal block stops at its last row's last key) and keys row i sees.
inline int64_t block_keys(const sg3_attention& a, int64_t i0, int64_t rows) {
    return a.causal ? std::min(a.s, i0 + rows) : a.s;
}
inline int64_t row_keys(const sg3_attention& a, int64_t i) { return a.causal ? std::min(a.s, i + 1) : a.s; }

// A row of raw scores s (`computed` of them, the first `keys` seen by this row) becomes its
// probabilities in place, 0 past `keys`. The forward (lse null) normalises by the row's sum and
// returns the log-sum-exp (-inf when no key takes part: a row of zeros); the backward passes
// the forward's log-sum-exp in, and gets back the probabilities without a sum.
template <class A, class T>
T probabilities(const sg3_attention& a, T* s, int64_t computed, int64_t keys, const void* mask_row, const T* lse) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    const T scale = T(a.scale);
    for (int64_t j = 0; j < keys; ++j) s[j] *= scale;
    if (a.mask_kind == SG3_MASK_BOOL)
        for (int64_t j = 0; j < keys; ++j) s[j] = static_cast<const uint8_t*>(mask_row)[j] ? s[j] : -INFINITY;
    if (a.mask_kind == SG3_MASK_ADD)
        for (int64_t j = 0; j < keys; ++j) s[j] += static_cast<const T*>(mask_row)[j];
    std::fill(s + keys, s + computed, T(0));
    T shift = lse ? *lse : -INFINITY;
    if (!lse)
        for (int64_t j = 0; j < keys; ++j)
            if (shift == shift && !(s[j] <= shift)) shift = s[j];  // a NaN score makes the row NaN
    if (shift == -INFINITY) {  // no key takes part
        std::fill(s, s + keys, T(0));
        return shift;
    }
    B sum(T(0));
    T tail = 0;
    for (int64_t j = 0; j < keys; j += W) {
        const int64_t n = std::min(W, keys - j);
        const B x = load_n<B>(s + j, n);
        const B p = xsimd::select(x == B(-INFINITY), B(T(0)), exp_full(x - B(shift)));
        store_n(s + j, n, p);
        if (n == W)
            sum += p;
        else
            for (int64_t t = 0; t < n; ++t) tail += s[j + t];
    }
    if (lse) return shift;
    const T total = xsimd::hadd(sum) + tail, inv = T(1) / total;
    for (int64_t j = 0; j < keys; j += W) {
        const int64_t n = std::min(W, keys - j);
        store_n(s + j, n, load_n<B>(s + j, n) * B(inv));
    }
    return shift + std::log(total);
}

}  // namespace detail

// out (n x L x Ev) and lse (n x L, each row's log-sum-exp, -inf for a row no key takes part in).
template <class A, class T>
void attention_forward(const sg3_attention& a, T* out, T* lse, const T* q, const T* k, const T* v, const void* mask,
                       int nthreads) {
    const int64_t L = a.l, S = a.s, E = a.e, Ev = a.ev, kR = detail::kRows;
    over_rows(a.n, L * S * (E + Ev), 1, nthreads, [&](int64_t n0, int64_t n1) {
        T* p = thread_buffer<A, T, 10>().get(static_cast<std::size_t>(kR * S));
        for (int64_t n = n0; n < n1; ++n) {
            const T* kn = k + n / a.group * S * E;
            const T* vn = v + n / a.group * S * Ev;
            for (int64_t i0 = 0; i0 < L; i0 += kR) {
                const int64_t rows = std::min(kR, L - i0), keys = detail::block_keys(a, i0, rows), at = n * L + i0;
                gemm<A, T>(rows, keys, E, q + at * E, E, 1, kn, 1, E, p, S, false, 1);  // Q K^T
                for (int64_t r = 0; r < rows; ++r)
                    lse[at + r] = detail::probabilities<A, T>(a, p + r * S, keys, detail::row_keys(a, i0 + r),
                                                              detail::mask_row<T>(a, mask, n, i0 + r), nullptr);
                gemm<A, T>(rows, Ev, keys, p, S, 1, vn, Ev, 1, out + at * Ev, Ev, false, 1);  // P V
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
    const int64_t L = a.l, S = a.s, E = a.e, Ev = a.ev, kR = detail::kRows, heads = a.n / a.group;
    over_rows(heads, a.group * L * S * (2 * E + 2 * Ev), 1, nthreads, [&](int64_t h0, int64_t h1) {
        T* p = thread_buffer<A, T, 10>().get(static_cast<std::size_t>(2 * kR * S));
        T* ds = p + kR * S;
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
                    gemm<A, T>(rows, keys, E, q + at * E, E, 1, kn, 1, E, p, S, false, 1);  // Q K^T again
                    for (int64_t r = 0; r < rows; ++r)
                        detail::probabilities<A, T>(a, p + r * S, keys, detail::row_keys(a, i0 + r),
                                                    detail::mask_row<T>(a, mask, n, i0 + r), lse + at + r);
                    gemm<A, T>(rows, keys, Ev, gi, Ev, 1, vn, 1, Ev, ds, S, false, 1);  // dP = dO V^T
                    for (int64_t r = 0; r < rows; ++r) {  // dS = scale P (dP - rowsum(dO * O))
                        T d = 0;
                        for (int64_t e = 0; e < Ev; ++e) d += gi[r * Ev + e] * out[(at + r) * Ev + e];
                        T* dsr = ds + r * S;
                        const T* pr = p + r * S;
                        for (int64_t j = 0; j < keys; j += W) {
                            const int64_t c = std::min(W, keys - j);
                            store_n(dsr + j, c, load_n<B>(pr + j, c) * (load_n<B>(dsr + j, c) - B(d)) * B(T(a.scale)));
                        }
                    }
                    gemm<A, T>(rows, E, keys, ds, S, 1, kn, E, 1, dq + at * E, E, false, 1);  // dQ = dS K
                    gemm<A, T>(keys, E, rows, ds, 1, S, q + at * E, E, 1, gk, E, true, 1);   // dK += dS^T Q
                    gemm<A, T>(keys, Ev, rows, p, 1, S, gi, Ev, 1, gv, Ev, true, 1);         // dV += P^T dO
                }
            }
        }
    });
}

}  // namespace sg3
