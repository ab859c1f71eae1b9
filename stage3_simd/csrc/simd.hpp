// Small helpers over xsimd shared by the kernels.
//
// Design: a kernel's body runs on whole registers of W elements; the last (n mod W)
// elements, and operands that are neither contiguous nor broadcast, go through the same
// register code by way of a small aligned buffer (load_part/store_part). So every element
// is computed by the same instructions wherever it lies, and no scalar copy of an
// operation exists to drift from the vector one.
#pragma once

#include <cstdint>
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

// n <= B::size contiguous elements: one vector load or store when the register is full
template <class B, class T>
inline B load_n(const T* p, int64_t n) {
    return n == int64_t(B::size) ? B::load_unaligned(p) : load_part<B>(p, n, 1);
}

template <class B, class T>
inline void store_n(T* p, int64_t n, const B& v) {
    if (n == int64_t(B::size))
        v.store_unaligned(p);
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
