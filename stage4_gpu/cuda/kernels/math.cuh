// The element functions of elementwise.cu, one struct per operation, each applying to the
// element types it is instantiated for (elementwise.py's tables name which). CUDA's libm
// is IEEE-correct at NaN and infinity; what PyTorch defines differently from C (maximum
// propagating NaN, Python's floor division and remainder, shifts past the width) is
// written out here. Integer arithmetic wraps, as on the CPU: it is done in unsigned
// types, where C++ defines the wrap.
#pragma once

// a float function of any width: NAME(x) picks the float or the double libm call (the
// 2-byte floats compute in float, as PyTorch)
#define MATH1(NAME, F32, F64) \
  template <typename T> __device__ __forceinline__ T NAME(T x) { \
    if constexpr (sizeof(T) <= 4) return F32(x); else return F64(x); }
#define MATH2(NAME, F32, F64) \
  template <typename T> __device__ __forceinline__ T NAME(T a, T b) { \
    if constexpr (sizeof(T) <= 4) return F32(a, b); else return F64(a, b); }
MATH1(m_exp, expf, exp) MATH1(m_log, logf, log) MATH1(m_sqrt, sqrtf, sqrt)
MATH1(m_sin, sinf, sin) MATH1(m_cos, cosf, cos) MATH1(m_tan, tanf, tan)
MATH1(m_tanh, tanhf, tanh) MATH1(m_erf, erff, erf) MATH1(m_erfc, erfcf, erfc)
MATH1(m_log1p, log1pf, log1p) MATH1(m_expm1, expm1f, expm1) MATH1(m_floor, floorf, floor)
MATH1(m_ceil, ceilf, ceil) MATH1(m_rint, rintf, rint) MATH1(m_trunc, truncf, trunc)
MATH1(m_asin, asinf, asin) MATH1(m_acos, acosf, acos) MATH1(m_atan, atanf, atan)
MATH1(m_sinh, sinhf, sinh) MATH1(m_cosh, coshf, cosh) MATH1(m_asinh, asinhf, asinh)
MATH1(m_acosh, acoshf, acosh) MATH1(m_atanh, atanhf, atanh) MATH1(m_exp2, exp2f, exp2)
MATH1(m_log2, log2f, log2) MATH1(m_log10, log10f, log10) MATH1(m_fabs, fabsf, fabs)
MATH2(m_pow, powf, pow) MATH2(m_atan2, atan2f, atan2) MATH2(m_copysign, copysignf, copysign)
MATH2(m_fmod, fmodf, fmod) MATH2(m_hypot, hypotf, hypot)

// the unsigned type an integer's wrapping arithmetic runs in: unsigned int for the 1- to
// 4-byte integers (the narrowing store keeps the low bits)
template <typename T> struct unsigned_of { typedef unsigned int type; };
template <> struct unsigned_of<long long> { typedef unsigned long long type; };
template <> struct unsigned_of<bool> { typedef unsigned int type; };

// ---------------------------------------------------------------- unary

struct Identity { template <typename T> static __device__ T f(T x) { return x; } };
struct Neg {
  template <typename T> static __device__ T f(T x) {
    if constexpr (is_float<T>::value) return -x;
    else return (T)(0 - (typename unsigned_of<T>::type)x);
  }
};
struct Abs {
  template <typename T> static __device__ T f(T x) {
    if constexpr (is_float<T>::value) return m_fabs(x);
    else if constexpr (is_bool<T>::value || is_unsigned<T>::value) return x;
    else return x < 0 ? Neg::f(x) : x;
  }
};
// 1 for positive, -1 for negative, 0 for zero, NaN for NaN
struct Sign {
  template <typename T> static __device__ T f(T x) {
    if (nan_of(x)) return x;
    return x > T(0) ? T(1) : (negative(x) ? T(-1) : T(0));
  }
};
struct Relu { template <typename T> static __device__ T f(T x) { return negative(x) ? T(0) : x; } };
struct BitwiseNot {
  template <typename T> static __device__ T f(T x) {
    if constexpr (is_bool<T>::value) return !x; else return ~x;
  }
};
struct LogicalNot { template <typename T> static __device__ bool f(T x) { return x == T(0); } };
struct IsNan { template <typename T> static __device__ bool f(T x) { return nan_of(x); } };
struct IsInf {
  template <typename T> static __device__ bool f(T x) {
    if constexpr (is_float<T>::value) return m_fabs(x) == limits<T>::highest(); else return false;
  }
};
struct IsPosInf {
  template <typename T> static __device__ bool f(T x) {
    if constexpr (is_float<T>::value) return x == limits<T>::highest(); else return false;
  }
};
struct IsNegInf {
  template <typename T> static __device__ bool f(T x) {
    if constexpr (is_float<T>::value) return x == limits<T>::lowest(); else return false;
  }
};
struct IsFinite {
  template <typename T> static __device__ bool f(T x) {
    if constexpr (is_float<T>::value) return m_fabs(x) < limits<T>::highest(); else return true;
  }
};

// the float functions: one struct per libm call
#define FLOAT_OP(NAME, EXPR) \
  struct NAME { template <typename T> static __device__ T f(T x) { return EXPR; } };
FLOAT_OP(Exp, m_exp(x)) FLOAT_OP(Log, m_log(x)) FLOAT_OP(Sqrt, m_sqrt(x))
FLOAT_OP(Rsqrt, T(1) / m_sqrt(x)) FLOAT_OP(Sin, m_sin(x)) FLOAT_OP(Cos, m_cos(x))
FLOAT_OP(Tanh, m_tanh(x)) FLOAT_OP(Sigmoid, T(1) / (T(1) + m_exp(-x)))
FLOAT_OP(Reciprocal, T(1) / x)
// gelu through erfc, not 1 + erf (which cancels below 0), and in double: the rounding of
// x / sqrt(2) grows by 2 x^2 through erfc's slope, which float32 cannot absorb
FLOAT_OP(Gelu, T(0.5 * (double)x * erfc((double)x * -0.70710678118654752440)))
FLOAT_OP(Silu, x / (T(1) + m_exp(-x))) FLOAT_OP(Erf, m_erf(x))
FLOAT_OP(Log1p, m_log1p(x)) FLOAT_OP(Floor, m_floor(x)) FLOAT_OP(Ceil, m_ceil(x))
FLOAT_OP(Round, m_rint(x)) FLOAT_OP(Trunc, m_trunc(x))
// (the op table's float functions, tan to logit, are op_table.cuh's: written from the table)

// ---------------------------------------------------------------- binary

template <typename T> __device__ __forceinline__ T wrap_add(T a, T b) {
  typedef typename unsigned_of<T>::type U;
  return (T)((U)a + (U)b);
}
template <typename T> __device__ __forceinline__ T wrap_mul(T a, T b) {
  typedef typename unsigned_of<T>::type U;
  return (T)((U)a * (U)b);
}

struct Add {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_float<T>::value) return a + b;
    else if constexpr (is_bool<T>::value) return a || b;
    else return wrap_add(a, b);
  }
};
struct Sub {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_float<T>::value) return a - b; else return wrap_add(a, Neg::f(b));
  }
};
struct Mul {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_float<T>::value) return a * b;
    else if constexpr (is_bool<T>::value) return a && b;
    else return wrap_mul(a, b);
  }
};
struct Div { template <typename T> static __device__ T f(T a, T b) { return a / b; } };
struct Maximum {
  template <typename T> static __device__ T f(T a, T b) { return max_nan(a, b); }
};
struct Minimum {
  template <typename T> static __device__ T f(T a, T b) { return min_nan(a, b); }
};
// an integer divisor of -1: the quotient is -a (wrapping at the lowest value, where C++'s
// division is undefined) and the remainder 0
template <typename T> __device__ __forceinline__ bool minus_one(T b) {
  if constexpr (is_float<T>::value || is_unsigned<T>::value) return false; else return b == T(-1);
}

// Python's remainder: the sign of the divisor (the host refuses an integer zero divisor)
struct Remainder {
  template <typename T> static __device__ T f(T a, T b) {
    if (minus_one(b)) return T(0);
    T r;
    if constexpr (is_float<T>::value) r = m_fmod(a, b); else r = a % b;
    if (r != T(0) && (negative(r) != negative(b))) r += b;
    return r;
  }
};
// Python's floor division: the quotient whose remainder is Remainder's
struct FloorDiv {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_float<T>::value) {
      if (b == T(0)) return a / b;
      const T m = m_fmod(a, b);
      T d = (a - m) / b;
      if (m != T(0) && ((b < T(0)) != (m < T(0)))) d -= T(1);
      if (d == T(0)) return m_copysign(T(0), T(a / b));
      T fl = m_floor(d);
      if (d - fl > T(0.5)) fl += T(1);
      return fl;
    } else {
      if (minus_one(b)) return Neg::f(a);
      T q = a / b;
      if (a % b != 0 && (negative(a) != negative(b))) q -= 1;
      return q;
    }
  }
};
// C's fmod: the sign of the dividend
struct Fmod {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_float<T>::value) return m_fmod(a, b); else return minus_one(b) ? T(0) : a % b;
  }
};
// a float power is libm's (C99's special cases are PyTorch's); an integer power squares
// (the host refuses negative exponents)
struct Pow {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_float<T>::value) {
      // the square root is correctly rounded, CUDA's pow is not (up to 2 ulp): x ** 0.5 is
      // common, and the CPU stages give the rounded root; pow's rules at -0 and -inf kept.
      // Likewise x ** 1, x ** 2 and x ** -1 are exact or rounded once (CUDA's pow(3.0, 1.0)
      // is not 3, nor is its pow(3.0, -1.0) the rounded third)
      if (b == T(1)) return a;
      if (b == T(2)) return a * a;
      if (b == T(-1)) return T(1) / a;
      if (b == T(0.5)) return a == T(0) ? T(0) : a == limits<T>::lowest() ? limits<T>::highest() : m_sqrt(a);
      return m_pow(a, b);
    } else {
      T r = 1, base = a;
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) r = wrap_mul(r, base);
        base = wrap_mul(base, base);
      }
      return r;
    }
  }
};
struct Atan2 { template <typename T> static __device__ T f(T a, T b) { return m_atan2(a, b); } };
struct Copysign {
  template <typename T> static __device__ T f(T a, T b) { return m_copysign(a, b); }
};
struct Hypot { template <typename T> static __device__ T f(T a, T b) { return m_hypot(a, b); } };
struct BitwiseAnd { template <typename T> static __device__ T f(T a, T b) { return a & b; } };
struct BitwiseOr { template <typename T> static __device__ T f(T a, T b) { return a | b; } };
struct BitwiseXor { template <typename T> static __device__ T f(T a, T b) { return a ^ b; } };
// shifts past the width give 0 (or -1 for a negative number shifted right), as on the CPU
struct LeftShift {
  template <typename T> static __device__ T f(T a, T s) {
    if (negative(s) || s >= T(8 * sizeof(T))) return 0;
    return (T)((typename unsigned_of<T>::type)a << s);
  }
};
struct RightShift {
  template <typename T> static __device__ T f(T a, T s) {
    if (negative(s) || s >= T(8 * sizeof(T))) return negative(a) ? T(-1) : T(0);
    return a >> s;
  }
};
struct Eq { template <typename T> static __device__ bool f(T a, T b) { return a == b; } };
struct Ne { template <typename T> static __device__ bool f(T a, T b) { return a != b; } };
struct Lt { template <typename T> static __device__ bool f(T a, T b) { return a < b; } };
struct Le { template <typename T> static __device__ bool f(T a, T b) { return a <= b; } };
struct Gt { template <typename T> static __device__ bool f(T a, T b) { return a > b; } };
struct Ge { template <typename T> static __device__ bool f(T a, T b) { return a >= b; } };
struct LogicalAnd {
  template <typename T> static __device__ bool f(T a, T b) { return a != T(0) && b != T(0); }
};
struct LogicalOr {
  template <typename T> static __device__ bool f(T a, T b) { return a != T(0) || b != T(0); }
};
struct LogicalXor {
  template <typename T> static __device__ bool f(T a, T b) { return (a != T(0)) != (b != T(0)); }
};
