// The 2-byte floats: IEEE binary16 (float16) and bfloat16 (float32's top 16 bits).
//
// Design: they are storage formats. A kernel never computes in them: the backend widens
// each operand to float32 (exactly: every 2-byte value is a float32), runs the float32
// kernel, and narrows the result with one correct rounding, as PyTorch's CPU kernels do.
// So the only code that knows the formats is the pair of conversions below, written on
// the bits (round to nearest, ties to even), with no dependence on the compiler's
// _Float16. A contiguous row converts a vector at a time (`widen_row`, `narrow_row`):
// F16C's vcvtph2ps/vcvtps2ph for float16 on the AVX2 and AVX-512 paths (the runtime
// dispatch takes those only where the CPU has F16C), and the same bit arithmetic in
// integer lanes for bfloat16; the scalar code finishes each row and is the SSE2 path.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

struct sg3_half { uint16_t bits; };      // float16
struct sg3_bfloat16 { uint16_t bits; };  // bfloat16

template <class T> struct is_half : std::false_type {};
template <> struct is_half<sg3_half> : std::true_type {};
template <> struct is_half<sg3_bfloat16> : std::true_type {};

inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// drop the low `shift` bits of `m`, rounding to nearest, ties to even (a carry may reach
// the exponent field above: that is the right next value)
inline uint32_t round_shift(uint32_t m, int shift) {
    const uint32_t half = 1u << (shift - 1), rest = m & ((1u << shift) - 1), q = m >> shift;
    return q + (rest > half || (rest == half && (q & 1)));
}

inline float to_float(sg3_half h) {
    const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000) << 16;
    const uint32_t e = (h.bits >> 10) & 0x1f, m = h.bits & 0x3ff;
    if (e == 0) {  // zero or subnormal: m units of 2**-24, exact in float32
        const float f = static_cast<float>(m) * 5.9604644775390625e-08f;
        return sign ? -f : f;
    }
    if (e == 0x1f) return bits_float(sign | 0x7f800000 | (m << 13));  // inf, NaN (payload kept)
    return bits_float(sign | ((e + 112) << 23) | (m << 13));  // rebias 15 -> 127
}

inline float to_float(sg3_bfloat16 h) { return bits_float(static_cast<uint32_t>(h.bits) << 16); }

inline sg3_half to_half(float f) {
    const uint32_t u = float_bits(f), sign = (u >> 16) & 0x8000, mag = u & 0x7fffffff;
    if (mag > 0x7f800000) return {static_cast<uint16_t>(sign | 0x7e00)};  // NaN: a quiet one
    if (mag >= 0x477ff000) return {static_cast<uint16_t>(sign | 0x7c00)};  // >= 65520 rounds to inf
    if (mag >= 0x38800000)  // normal in float16 (>= 2**-14): rebias, keep 10 fraction bits
        return {static_cast<uint16_t>(sign | round_shift(mag - (112u << 23), 13))};
    if (mag <= 0x33000000) return {static_cast<uint16_t>(sign)};  // <= 2**-25 ties to zero
    // subnormal: the 24-bit significand in units of 2**-24
    const uint32_t e = mag >> 23, m = (mag & 0x7fffff) | 0x800000;
    return {static_cast<uint16_t>(sign | round_shift(m, static_cast<int>(126 - e)))};
}

inline sg3_bfloat16 to_bfloat16(float f) {
    const uint32_t u = float_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return {static_cast<uint16_t>((u >> 16) | 0x40)};  // quiet NaN
    return {static_cast<uint16_t>(round_shift(u, 16))};  // may carry into inf: correct
}

// ------------------------------------------------------------------ contiguous rows

template <class H> inline H narrow(float f);
template <> inline sg3_half narrow<sg3_half>(float f) { return to_half(f); }
template <> inline sg3_bfloat16 narrow<sg3_bfloat16>(float f) { return to_bfloat16(f); }

#if defined(__AVX2__)
// 8 bfloat16 bits to float32: each shifted into a float's top half
inline __m256 widen8(const sg3_bfloat16* x) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m256 widen8(const sg3_half* x) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
}
// 8 float32 to bfloat16 bits, as to_bfloat16: round to nearest even, a NaN kept quiet
inline __m128i narrow8_bf16(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb);  // ties go to the even one
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
inline void narrow8(__m256 v, sg3_bfloat16* out) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), narrow8_bf16(v));
}
inline void narrow8(__m256 v, sg3_half* out) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
#endif

#if defined(__AVX512F__)
// the same, 16 at a time
inline __m512 widen16(const sg3_half* x) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
}
inline __m512 widen16(const sg3_bfloat16* x) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline void narrow16(__m512 v, sg3_half* out) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline void narrow16(__m512 v, sg3_bfloat16* out) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(_mm512_srli_epi32(u, 16),
                                                                                      _mm512_set1_epi32(1)));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet)));
}
#endif

// o[i] = op(a[i], b[i]) for contiguous 2-byte floats, a SIMD register at a time, each
// operand widened in the register and the result narrowed from it, for as many leading
// elements as whole registers cover; returns that count (0 where the batch width has no
// conversion here: the caller finishes the row)
template <class B, class H, class Op>
inline int64_t half_binary_registers(H* o, const H* a, const H* b, int64_t n, const Op& op) {
    int64_t i = 0;
#if defined(__AVX512F__)
    if constexpr (B::size == 16) {
        for (; i + 16 <= n; i += 16) narrow16(op(B(widen16(a + i)), B(widen16(b + i))), o + i);
    }
#endif
#if defined(__AVX2__)
    if constexpr (B::size == 8) {
        for (; i + 8 <= n; i += 8) narrow8(op(B(widen8(a + i)), B(widen8(b + i))), o + i);
    }
#endif
    (void)o, (void)a, (void)b, (void)n, (void)op;
    return i;
}

// out[i] = x[i] widened to float32, for n contiguous values
template <class H>
inline void widen_row(const H* x, float* out, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, widen8(x + i));
#endif
    for (; i < n; ++i) out[i] = to_float(x[i]);
}

// out[i] = x[i] narrowed from float32 with one rounding, for n contiguous values
template <class H>
inline void narrow_row(const float* x, H* out, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__)
    for (; i + 8 <= n; i += 8) narrow8(_mm256_loadu_ps(x + i), out + i);
#endif
    for (; i < n; ++i) out[i] = narrow<H>(x[i]);
}
