// Scaled dot-product attention, forward and backward, a block of query rows and a tile of keys
// at a time.
//
// Design: softmax(scale * q @ k^T + mask) @ v over n independent (L x E, S x E, S x Ev) problems
// (the batch and head dims flattened; with grouped-query attention `group` query heads share
// one key/value head, kv = n / group). The composite builds the whole L x S score matrix, masks
// it, softmaxes it and multiplies, each a pass over memory and a graph node. Here a block of
// at most kRows query rows meets the keys kKeys at a time: the tile's scores are computed (a
// GEMM) into a per-thread kRows x kKeys buffer and scaled and masked there; their exponentials
// are written straight into the micro-panels the next GEMM's micro-kernel reads (to_panels),
// which multiplies them by the tile's values into the block's output. No buffer grows with L or
// S, whatever the mask, and every product runs in the GEMM's micro-kernel. A tile is at most one
// K block of the GEMM (KC), so its panels are laid out as the GEMM's own packing would lay them.
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
//     dS = scale p (dP - D) (written in place and into panels for the next product),
//     dQ += dS @ K, dK += dS^T @ Q, dV += P^T @ dO. Threads take whole
//     key/value heads (with all the query heads of their group), so no two add into the same
//     dK or dV.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

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

// A block's rows x tile matrix written straight into the MR-row micro-panels the micro-kernel
// reads as A (gemm.hpp's prepacked_a with one K block: panel i at panels + i * tile, step j's MR
// values at + j * MR), so the product that takes it packs nothing: value(r, j) gives the W values
// of row r from column j (0 past the tile; rows past `rows` are 0). With `sum`, each row's sum
// into sum[r]. On AVX-512 the MR rows of a 16-column step are transposed in registers, whose
// vertical sum is every row's sum at once; elsewhere they pass through a small buffer.
template <class A, class T, class Value>
void to_panels(int64_t rows, int64_t tile, Value value, T* panels, T* sum) {
    using B = vec<T, A>;
    constexpr int MR = kernel_shape<A, T>::mr;
    constexpr int64_t W = B::size;
#if XSIMD_WITH_AVX512BW
    constexpr bool registers = std::is_same_v<A, xsimd::avx512bw> && std::is_same_v<T, float> && MR < W;
#else
    constexpr bool registers = false;
#endif
    for (int64_t i0 = 0; i0 < rows; i0 += MR) {
        T* panel = panels + i0 * tile;
        B e[MR], total[MR];
        for (int m = 0; m < MR; ++m) total[m] = B(T(0));
        for (int64_t j = 0; j < tile; j += W) {
            const int64_t cnt = std::min(W, tile - j);
            for (int m = 0; m < MR; ++m) e[m] = i0 + m < rows ? value(i0 + m, j) : B(T(0));
            if constexpr (registers) {
#if XSIMD_WITH_AVX512BW
                __m512 r[16], out[16];
                for (int i = 0; i < 16; ++i) r[i] = i < MR ? __m512(e[i]) : _mm512_setzero_ps();
                transpose16(r, out);
                for (int64_t k = 0; k < cnt; ++k) {
                    _mm512_mask_storeu_ps(panel + (j + k) * MR, __mmask16((1u << MR) - 1), out[k]);
                    total[0] += B(out[k]);  // lane m: row m's sum
                }
#endif
            } else {
                alignas(64) T buf[MR][W];
                for (int m = 0; m < MR; ++m) {
                    e[m].store_aligned(buf[m]);
                    total[m] += e[m];
                }
                for (int64_t k = 0; k < cnt; ++k)
                    for (int m = 0; m < MR; ++m) panel[(j + k) * MR + m] = buf[m][k];
            }
        }
        if (!sum) continue;
        alignas(64) T lanes[W];
        total[0].store_aligned(lanes);
        for (int m = 0; m < MR && i0 + m < rows; ++m) sum[i0 + m] = registers ? lanes[m] : xsimd::hadd(total[m]);
    }
}

// The W probabilities of row r from key j of a tile: exp(s - shift) of its scaled, masked
// scores s (keys from `seen` on give 0, as a masked key does; a NaN stays).
template <class A, class T>
vec<T, A> probabilities(const T* s, int64_t j, int64_t seen, T shift) {
    using B = vec<T, A>;
    const int64_t vis = std::clamp<int64_t>(seen - j, 0, B::size);
    if (vis == 0 || shift == -INFINITY) return B(T(0));  // no key of the step takes part
    const B x = load_n<B>(s + j, vis);
    const B p = xsimd::select(x == B(-INFINITY), B(T(0)), exp_full(x - B(shift)));
    return xsimd::select(lanes_below<B>(vis), p, B(T(0)));
}

// exp(s - shift) in place over a row's `keys` seen, 0 past them up to `tile` (the backward's
// probabilities, row by row, for dS and the P^T dO product).
template <class A, class T>
void exponentials(T* s, int64_t keys, int64_t tile, T shift) {
    constexpr int64_t W = vec<T, A>::size;
    for (int64_t j = 0; j < tile; j += W)
        store_n(s + j, std::min(W, tile - j), probabilities<A, T>(s, j, keys, shift));
}

}  // namespace detail

// out (n x L x Ev) and lse (n x L, each row's log-sum-exp, -inf for a row no key takes part in).
template <class A, class T>
void attention_forward(const sg3_attention& a, T* out, T* lse, const T* q, const T* k, const T* v, const void* mask,
                       int nthreads) {
    using B = vec<T, A>;
    constexpr int MR = kernel_shape<A, T>::mr;
    const gemm_blocking_info& bl = gemm_blocking<A, T>();
    const int64_t L = a.l, S = a.s, E = a.e, Ev = a.ev, kR = detail::kRows;
    const int64_t kK = std::min(detail::kKeys, bl.kc / 16 * 16);  // a tile is one K block of P V
    const int64_t padded = (kR + MR - 1) / MR * MR;
    over_rows(a.n, L * S * (E + Ev), 1, nthreads, [&](int64_t n0, int64_t n1) {
        T* p = thread_buffer<A, T, 10>().get(static_cast<std::size_t>(kR * kK + padded * kK + 3 * kR));
        T* panels = p + kR * kK;  // the tile's probabilities, packed for P V
        T* m = panels + padded * kK;  // each row's running maximum and sum, and the tile's sums
        T* l = m + kR;
        T* sums = l + kR;
        int64_t seen[detail::kRows];
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
                        seen[r] = detail::row_keys(a, i0 + r, j0, tile);
                        T top = m[r];
                        detail::scores<A, T>(a, p + r * kK, seen[r], detail::mask_row<T>(a, mask, n, i0 + r, j0),
                                             &top);
                        if (top != m[r] && m[r] != -INFINITY) {  // a new maximum: rescale what the row has
                            const T c = std::exp(m[r] - top);    // (nothing yet while m is -inf)
                            l[r] *= c;
                            for (int64_t e = 0; e < Ev; e += B::size) {
                                const int64_t w = std::min<int64_t>(B::size, Ev - e);
                                store_n(o + r * Ev + e, w, load_n<B>(o + r * Ev + e, w) * B(c));
                            }
                        }
                        m[r] = top;
                    }
                    detail::to_panels<A, T>(rows, tile, [&](int64_t r, int64_t j) {
                        return detail::probabilities<A, T>(p + r * kK, j, seen[r], m[r]);
                    }, panels, sums);
                    for (int64_t r = 0; r < rows; ++r) l[r] += sums[r];
                    gemm_from<A, T>(bl, rows, Ev, tile, prepacked_a<A, T>{panels, (rows + MR - 1) / MR * MR},
                                    strided_b<A, T>{vn + j0 * Ev, Ev, 1}, o, Ev, j0 > 0, 1);  // O += P V
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
    constexpr int MR = kernel_shape<A, T>::mr;
    constexpr int64_t W = B::size;
    const gemm_blocking_info& bl = gemm_blocking<A, T>();
    const int64_t L = a.l, S = a.s, E = a.e, Ev = a.ev, kR = detail::kRows;
    const int64_t kK = std::min(detail::kKeys, bl.kc / 16 * 16);  // a tile is one K block of dS K
    const int64_t padded = (kR + MR - 1) / MR * MR, heads = a.n / a.group;
    over_rows(heads, a.group * L * S * (2 * E + 2 * Ev), 1, nthreads, [&](int64_t h0, int64_t h1) {
        T* p = thread_buffer<A, T, 10>().get(static_cast<std::size_t>(kR * (2 * kK + 1) + padded * kK));
        T* ds = p + kR * kK;
        T* d = ds + kR * kK;  // rowsum(dO * O) of each row of the block
        T* panels = d + kR;   // dS, packed for dS K
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
                        B acc(T(0));
                        for (int64_t e = 0; e < Ev; e += W) {
                            const int64_t c = std::min(W, Ev - e);
                            acc += load_n<B>(gi + r * Ev + e, c) * load_n<B>(out + (at + r) * Ev + e, c);
                        }
                        d[r] = xsimd::hadd(acc);
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
                        // dS = scale P (dP - D), in place for dS^T Q and packed for dS K
                        detail::to_panels<A, T>(rows, tile, [&](int64_t r, int64_t j) {
                            const int64_t c = std::min(W, tile - j);
                            T* dsr = ds + r * kK + j;
                            const B x = load_n<B>(p + r * kK + j, c) * (load_n<B>(dsr, c) - B(d[r])) * B(T(a.scale));
                            store_n(dsr, c, x);
                            return x;
                        }, panels, static_cast<T*>(nullptr));
                        gemm_from<A, T>(bl, rows, E, tile, prepacked_a<A, T>{panels, (rows + MR - 1) / MR * MR},
                                        strided_b<A, T>{kt, E, 1}, dq + at * E, E, true, 1);  // dQ += dS K
                        gemm<A, T>(tile, E, rows, ds, 1, kK, q + at * E, E, 1, gk + j0 * E, E, true, 1);  // += dS^T Q
                        gemm<A, T>(tile, Ev, rows, p, 1, kK, gi, Ev, 1, gv + j0 * Ev, Ev, true, 1);  // += P^T dO
                    }
                }
            }
        }
    });
}

}  // namespace sg3
