// exp over its whole range, on registers of float or double.
//
// Design: xsimd's exp gives up early at both ends (float32 results below 1e-38 flush to 0,
// exp(88.7) overflows although it is 3.3e38), where stage 2's libm gives the subnormal or
// finite result. This one keeps the whole range:
//   x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2, ln2 split into a high part
//   with trailing zero bits (so n * high is exact) and a low part (Cody and Waite);
//   e^r by its Taylor polynomial, Horner's rule with a fused multiply-add where the ISA
//   has one (``madd``, gemm_arch.hpp) (degree 7 for float, 13 for double: the first term left out is below half an
//   ulp on that interval);
//   2^n applied as 2^(n/2) * 2^(n - n/2): each factor is a normal number, so a result in
//   the subnormal range is rounded once, by the last multiplication, and one just below
//   the largest finite value does not overflow on the way.
// Held to 2 ulp (float32) and 1 ulp (float64) against a correctly rounded reference by the
// suite. NaN stays NaN, -inf gives 0 and inf gives inf.
#pragma once

#include <cstdint>

#include "gemm_arch.hpp"
#include "simd.hpp"

namespace sg3 {

template <class T>
struct ExpConstants;

template <>
struct ExpConstants<float> {
    static constexpr float lo = -104.0f, hi = 89.0f;  // beyond: 0 and inf
    static constexpr float log2e = 1.44269504088896341f;
    static constexpr float ln2_hi = 0.693145751953125f;  // 0x3f317200: 12 trailing zero bits
    static constexpr float ln2_lo = 1.42860676533018704e-06f;
    static constexpr int degree = 7;
    static constexpr int mantissa = 23, bias = 127;
};

template <>
struct ExpConstants<double> {
    static constexpr double lo = -746.0, hi = 710.0;
    static constexpr double log2e = 1.4426950408889634074;
    static constexpr double ln2_hi = 6.93147180369123816490e-01;  // 0x3fe62e42fee00000
    static constexpr double ln2_lo = 1.90821492927058770002e-10;
    static constexpr int degree = 13;
    static constexpr int mantissa = 52, bias = 1023;
};

// 2**k for integral k (a register of T holding whole numbers) within the normal range
template <class B>
inline B pow2i(const B& k) {
    using T = typename B::value_type;
    using C = ExpConstants<T>;
    using I = xsimd::batch<xsimd::as_integer_t<T>, typename B::arch_type>;
    const I bits = xsimd::to_int(k + B(T(C::bias)));
    return xsimd::bitwise_cast<B>(bits << C::mantissa);
}

template <class B>
inline B exp_full(const B& x) {
    using T = typename B::value_type;
    using C = ExpConstants<T>;
    const B xc = xsimd::min(xsimd::max(x, B(C::lo)), B(C::hi));
    const B n = xsimd::nearbyint(xc * B(C::log2e));
    const B r = (xc - n * B(C::ln2_hi)) - n * B(C::ln2_lo);
    T coef[C::degree + 1];  // 1/k!
    coef[0] = 1;
    for (int k = 1; k <= C::degree; ++k) coef[k] = coef[k - 1] / T(k);
    B p(coef[C::degree]);
    for (int k = C::degree - 1; k >= 0; --k) p = madd(p, r, B(coef[k]));
    const B n1 = xsimd::trunc(n * B(T(0.5)));
    const B e = p * pow2i(n1) * pow2i(n - n1);
    return xsimd::select(isnan(x), x, e);
}

}  // namespace sg3
