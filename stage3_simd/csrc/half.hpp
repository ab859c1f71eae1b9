// The 2-byte floats: IEEE binary16 (float16) and bfloat16 (float32's top 16 bits).
//
// Design: they are storage formats. A kernel never computes in them: the backend widens
// each operand to float32 (exactly: every 2-byte value is a float32), runs the float32
// kernel, and narrows the result with one correct rounding, as PyTorch's CPU kernels do.
// So the only code that knows the formats is the pair of conversions below, written on
// the bits (round to nearest, ties to even), with no dependence on the compiler's
// _Float16 or the CPU's F16C instructions.
#pragma once

#include <cstdint>
#include <cstring>

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
