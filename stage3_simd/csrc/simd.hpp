// Small helpers over xsimd shared by the kernels.
//
// Design: a kernel's body runs on whole registers of W elements; the last (n mod W)
// elements, and operands that are neither contiguous nor broadcast, go through the same
// register code, by way of a small aligned buffer (load_part/store_part) or, for a float or
// double tail on AVX2 and AVX-512, one masked move (load_n/store_n). So every element is
// computed by the same instructions wherever it lies, and no scalar copy of an operation
// exists to drift from the vector one.
#pragma once

#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace sg3 {

template <class T, class A>
using vec = xsimd::batch<T, A>;

// How far ahead a streaming loop asks for its data: the hardware prefetcher alone falls
// behind a loop that reads from L3 at a register per cycle
constexpr int64_t kPrefetchBytes = 8192;

// n (< W) elements ``s`` apart into a register; the unused lanes hold 0
template <class B, class T>
inline B load_part(const T* p, int64_t n, int64_t s) {
    alignas(64) T tmp[B::size] = {};
    for (int64_t i = 0; i < n; ++i) tmp[i] = p[i * s];
    return B::load_aligned(tmp);
}

// the first n lanes of ``v`` to n places ``s`` apart
template <class B, class T>
inline void store_part(T* p, int64_t n, int64_t s, const B& v) {
    alignas(64) T tmp[B::size];
    v.store_aligned(tmp);
    for (int64_t i = 0; i < n; ++i) p[i * s] = tmp[i];
}

namespace detail {

// A masked load or store moves the first n lanes in one instruction (lanes past n are neither
// read nor written, so nothing past the end can fault). Through load_part's buffer a partial
// register costs n scalar moves and a store-forwarding stall, as much as a dozen full ones: a
// causal attention row or an odd channel count ends every row in one.
template <class B>
constexpr bool has_masked_moves =
    (std::is_same_v<typename B::value_type, float> || std::is_same_v<typename B::value_type, double>) &&
    (std::is_base_of_v<xsimd::avx512f, typename B::arch_type> || std::is_base_of_v<xsimd::avx2, typename B::arch_type>);

#if XSIMD_WITH_AVX2
inline __m256i avx2_lanes(int64_t n, bool wide) {  // all bits set in the first n 32- or 64-bit lanes
    return wide ? _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
                : _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

template <class B, class T>
inline B load_masked(const T* p, int64_t n) {
    constexpr bool f32 = std::is_same_v<T, float>;
#if XSIMD_WITH_AVX512F
    if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type>) {
        if constexpr (f32)
            return B(_mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p));
        else
            return B(_mm512_maskz_loadu_pd(__mmask8((1u << n) - 1), p));
    }
#endif
#if XSIMD_WITH_AVX2
    if constexpr (std::is_base_of_v<xsimd::avx2, typename B::arch_type>) {
        if constexpr (f32)
            return B(_mm256_maskload_ps(p, avx2_lanes(n, false)));
        else
            return B(_mm256_maskload_pd(p, avx2_lanes(n, true)));
    }
#endif
    return load_part<B>(p, n, 1);
}

template <class B, class T>
inline void store_masked(T* p, int64_t n, const B& v) {
    constexpr bool f32 = std::is_same_v<T, float>;
#if XSIMD_WITH_AVX512F
    if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type>) {
        if constexpr (f32)
            _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v);
        else
            _mm512_mask_storeu_pd(p, __mmask8((1u << n) - 1), v);
        return;
    }
#endif
#if XSIMD_WITH_AVX2
    if constexpr (std::is_base_of_v<xsimd::avx2, typename B::arch_type>) {
        if constexpr (f32)
            _mm256_maskstore_ps(p, avx2_lanes(n, false), v);
        else
            _mm256_maskstore_pd(p, avx2_lanes(n, true), v);
        return;
    }
#endif
    store_part(p, n, 1, v);
}

}  // namespace detail

// n <= B::size contiguous elements: one vector load or store when the register is full, one
// masked move for a partial float or double register on AVX2 and AVX-512
template <class B, class T>
inline B load_n(const T* p, int64_t n) {
    if (n == int64_t(B::size)) return B::load_unaligned(p);
    if constexpr (detail::has_masked_moves<B>) return detail::load_masked<B>(p, n);
    return load_part<B>(p, n, 1);
}

template <class B, class T>
inline void store_n(T* p, int64_t n, const B& v) {
    if (n == int64_t(B::size))
        v.store_unaligned(p);
    else if constexpr (detail::has_masked_moves<B>)
        detail::store_masked(p, n, v);
    else
        store_part(p, n, 1, v);
}

// the lanes [0, m) of a register, as a mask (for a row's partial last register)
template <class B>
inline auto lanes_below(int64_t m) {
    using T = typename B::value_type;
    alignas(64) T index[B::size];
    for (int64_t k = 0; k < int64_t(B::size); ++k) index[k] = T(k);
    return B::load_aligned(index) < B(T(m));
}

// NaN lanes of x. Not `x != x`: xsimd's != on float batches is an ordered compare (false for
// NaN on AVX and AVX-512).
template <class B>
inline auto isnan(const B& x) {
    return xsimd::isnan(x);
}

}  // namespace sg3
