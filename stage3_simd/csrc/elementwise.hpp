// Elementwise kernels: unary, binary (broadcast through strides) and where.
//
// Design: each operation is a functor written once over a register type B (an
// xsimd::batch of float or double): ``Tanh{}(x)`` is ``xsimd::tanh(x)``. A row kernel
// streams whole registers where the operands are contiguous (or one is a broadcast
// scalar: the row and column broadcasts of training, a bias added to every row, land
// here after the loop merges dims) and sends the rest through the same functor via a
// small buffer. NaN, inf and -0.0 behave as in stage 2 (NumPy's rules). Transcendental
// functions are xsimd's, except exp (math.hpp: xsimd's gives up early at both ends of
// the range), each held to a stated ulp bound by the suite. Where a register formula is
// not accurate enough, float32 is evaluated in float64 registers (pow as exp(y log|x|)
// with C's special cases, gelu's erfc) and float64 by the C library per element (pow,
// erf, gelu).
// Comparisons (bool output) and where are plain loops that the compiler vectorises for
// each ISA.
#pragma once

#include <cmath>
#include <cstdint>

#include "half.hpp"
#include "kernels.h"
#include "loops.hpp"
#include "math.hpp"
#include "simd.hpp"

namespace sg3 {

// ------------------------------------------------------------------ unary functors

struct Neg {  // -0.0 - x flips the sign of a zero too (0 - x would give +0.0 for 0.0)
    template <class B> B operator()(const B& x) const { return B(-0.0) - x; }
};
struct Abs { template <class B> B operator()(const B& x) const { return xsimd::abs(x); } };
struct Sign {
    template <class B> B operator()(const B& x) const {
        const B one(1), zero(0);
        const B s = xsimd::select(x > zero, one, xsimd::select(x < zero, -one, zero));
        return xsimd::select(isnan(x), x, s);
    }
};
struct Relu {  // -0.0 and NaN pass through, as in PyTorch
    template <class B> B operator()(const B& x) const { return xsimd::select((x >= B(0)) | isnan(x), x, B(0)); }
};
// The sign of a rounded zero is x's (floor(-0.0) and ceil(-0.5) are -0.0), and x's sign
// is the result's whenever it is not zero: or-ing x's sign bit in is always right, and
// restores it where an ISA's emulation (SSE2 has no rounding instruction) drops it.
template <class B>
inline B with_sign_of(const B& r, const B& x) { return xsimd::bitwise_or(r, xsimd::bitwise_and(x, B(-0.0))); }
struct Floor { template <class B> B operator()(const B& x) const { return with_sign_of(xsimd::floor(x), x); } };
struct Ceil { template <class B> B operator()(const B& x) const { return with_sign_of(xsimd::ceil(x), x); } };
struct Round {  // half to even
    template <class B> B operator()(const B& x) const { return with_sign_of(xsimd::nearbyint(x), x); }
};
struct Exp { template <class B> B operator()(const B& x) const { return exp_full(x); } };
struct Log { template <class B> B operator()(const B& x) const { return xsimd::log(x); } };
struct Log1p {  // log1p(-0.0) is -0.0 (xsimd's gives +0.0)
    template <class B> B operator()(const B& x) const { return xsimd::select(x == B(0), x, xsimd::log1p(x)); }
};
struct Sqrt { template <class B> B operator()(const B& x) const { return xsimd::sqrt(x); } };
struct Rsqrt { template <class B> B operator()(const B& x) const { return B(1) / xsimd::sqrt(x); } };
struct Sin { template <class B> B operator()(const B& x) const { return xsimd::sin(x); } };
struct Cos { template <class B> B operator()(const B& x) const { return xsimd::cos(x); } };
struct Tanh { template <class B> B operator()(const B& x) const { return xsimd::tanh(x); } };
struct Sigmoid {  // from e = exp(-|x|), which never overflows: 1 / (1 + e), or e / (1 + e) below 0
    template <class B> B operator()(const B& x) const {
        const B e = exp_full(-xsimd::abs(x));
        return xsimd::select(x >= B(0), B(1), e) / (B(1) + e);
    }
};
struct Silu { template <class B> B operator()(const B& x) const { return x * Sigmoid{}(x); } };
struct Gelu {  // exact: x * Phi(x), Phi from erfc (1 + erf(x) would cancel for x well below 0)
    template <class B> B operator()(const B& x) const {
        return B(0.5) * x * xsimd::erfc(x * B(-0.70710678118654752440));
    }
};
struct GeluTanh {  // PyTorch's approximate="tanh": 0.5 x (1 + tanh(k (x + c x^3))), its formula
    static constexpr double k = 0.79788456080286535588, c = 0.044715;  // sqrt(2 / pi)
    template <class B> B operator()(const B& x) const {
        return B(0.5) * x * (B(1) + Tanh{}(B(k) * (x + B(c) * x * x * x)));
    }
};
struct Erf { template <class B> B operator()(const B& x) const { return xsimd::erf(x); } };
struct Reciprocal { template <class B> B operator()(const B& x) const { return B(1) / x; } };

// ------------------------------------------------------------------ binary functors

struct Add { template <class B> B operator()(const B& a, const B& b) const { return a + b; } };
struct Sub { template <class B> B operator()(const B& a, const B& b) const { return a - b; } };
struct Mul { template <class B> B operator()(const B& a, const B& b) const { return a * b; } };
struct Div { template <class B> B operator()(const B& a, const B& b) const { return a / b; } };
struct Maximum {  // a NaN on either side wins
    template <class B> B operator()(const B& a, const B& b) const { return xsimd::select((a > b) | isnan(a), a, b); }
};
struct Minimum {
    template <class B> B operator()(const B& a, const B& b) const { return xsimd::select((a < b) | isnan(a), a, b); }
};

// x ** y for float64 registers: exp(y * log|x|) and C99's special cases (Annex F).
// Accurate to well under a float32 ULP, which is what it is used for.
struct PowWide {
    template <class B> B operator()(const B& x, const B& y) const {
        const B zero(0), one(1), inf(INFINITY);
        const B ax = xsimd::abs(x);
        B r = xsimd::exp(y * xsimd::log(ax));
        const auto y_int = xsimd::floor(y) == y;
        const auto y_odd = y_int & (y - B(2) * xsimd::floor(y * B(0.5)) == one);
        const auto neg = x < zero;
        r = xsimd::select(neg & y_odd, -r, r);                               // (-x)**odd
        r = xsimd::select(neg & ~y_int & (ax != inf), B(NAN), r);            // (-x)**fraction
        r = xsimd::select((x == zero) & y_odd, xsimd::select(y < zero, one / x, x), r);  // +-0**odd
        r = xsimd::select((x == -inf) & y_odd, xsimd::select(y < zero, B(-0.0), x), r);  // -inf**odd
        r = xsimd::select((ax == one) & (xsimd::abs(y) == inf), one, r);     // (+-1)**(+-inf)
        return xsimd::select((y == zero) | (x == one), one, r);              // x**0, 1**y
    }
};

// ------------------------------------------------------------------ row kernels

template <class A, class T, class Op>
void unary_row(char** p, int64_t n, const int64_t* ist, const Op& op) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const int64_t so = ist[0], sx = ist[1];
    int64_t i = 0;
    if (so == 1 && sx == 1)
        for (; i + W <= n; i += W) op(B::load_unaligned(x + i)).store_unaligned(o + i);
    for (; i < n; i += W) {
        const int64_t m = n - i < W ? n - i : W;
        store_part(o + i * so, m, so, op(load_part<B>(x + i * sx, m, sx)));
    }
}

template <class A, class T, class Op>
void binary_row(char** p, int64_t n, const int64_t* ist, const Op& op) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    T* o = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    const int64_t so = ist[0], sa = ist[1], sb = ist[2];
    int64_t i = 0;
    if (so == 1 && sa == 1 && sb == 1) {
        for (; i + W <= n; i += W) op(B::load_unaligned(a + i), B::load_unaligned(b + i)).store_unaligned(o + i);
    } else if (so == 1 && sa == 1 && sb == 0) {  // a row plus a scalar (or a column's element)
        const B vb(b[0]);
        for (; i + W <= n; i += W) op(B::load_unaligned(a + i), vb).store_unaligned(o + i);
    } else if (so == 1 && sa == 0 && sb == 1) {
        const B va(a[0]);
        for (; i + W <= n; i += W) op(va, B::load_unaligned(b + i)).store_unaligned(o + i);
    }
    for (; i < n; i += W) {
        const int64_t m = n - i < W ? n - i : W;
        store_part(o + i * so, m, so, op(load_part<B>(a + i * sa, m, sa), load_part<B>(b + i * sb, m, sb)));
    }
}

// A float32 operation evaluated in float64 registers (half as many elements each), where
// the float32 formula loses accuracy: pow, and gelu's erfc far out in the tail.
template <class A, int NIN, class Op>
void wide_row(char** p, int64_t n, const int64_t* ist, const Op& op) {
    using D = vec<double, A>;
    constexpr int64_t W = D::size;
    float* o = reinterpret_cast<float*>(p[0]);
    alignas(64) double in[NIN][W], r[W];
    for (int64_t i = 0; i < n; i += W) {
        const int64_t m = n - i < W ? n - i : W;
        for (int k = 0; k < NIN; ++k) {
            const float* x = reinterpret_cast<const float*>(p[k + 1]);
            for (int64_t j = 0; j < W; ++j) in[k][j] = j < m ? x[(i + j) * ist[k + 1]] : 1.0;
        }
        if constexpr (NIN == 1)
            op(D::load_aligned(in[0])).store_aligned(r);
        else
            op(D::load_aligned(in[0]), D::load_aligned(in[1])).store_aligned(r);
        for (int64_t j = 0; j < m; ++j) o[(i + j) * ist[0]] = static_cast<float>(r[j]);
    }
}

// A float64 operation by the C library, element by element, where no register version is
// as accurate: pow, erf and gelu's erfc.
template <int NIN, class F>
void libm_row(char** p, int64_t n, const int64_t* ist, F f) {
    double* o = reinterpret_cast<double*>(p[0]);
    const double* a = reinterpret_cast<const double*>(p[1]);
    const double* b = reinterpret_cast<const double*>(p[NIN]);
    for (int64_t i = 0; i < n; ++i) {
        if constexpr (NIN == 1)
            o[i * ist[0]] = f(a[i * ist[1]]);
        else
            o[i * ist[0]] = f(a[i * ist[1]], b[i * ist[2]]);
    }
}

template <class T, class Cmp>
void compare_row(char** p, int64_t n, const int64_t* ist, Cmp cmp) {
    uint8_t* o = reinterpret_cast<uint8_t*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    const int64_t so = ist[0], sa = ist[1], sb = ist[2];
    if (so == 1 && sa == 1 && sb == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = cmp(a[i], b[i]);
    } else {
        for (int64_t i = 0; i < n; ++i) o[i * so] = cmp(a[i * sa], b[i * sb]);
    }
}

template <class T>
void where_row(char** p, int64_t n, const int64_t* ist) {
    T* o = reinterpret_cast<T*>(p[0]);
    const uint8_t* c = reinterpret_cast<const uint8_t*>(p[1]);
    const T* a = reinterpret_cast<const T*>(p[2]);
    const T* b = reinterpret_cast<const T*>(p[3]);
    const int64_t so = ist[0], sc = ist[1], sa = ist[2], sb = ist[3];
    if (so == 1 && sc == 1 && sa == 1 && sb == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];
    } else if (so == 1 && sc == 1 && sa == 0 && sb == 1) {  // where(cond, scalar, x): a common mask
        const T av = *a;
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? av : b[i];
    } else if (so == 1 && sc == 1 && sa == 1 && sb == 0) {
        const T bv = *b;
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : bv;
    } else {
        for (int64_t i = 0; i < n; ++i) o[i * so] = c[i * sc] ? a[i * sa] : b[i * sb];
    }
}

// ------------------------------------------------------------------ dispatch

// rough cost per element relative to an add, for the decision to use threads
inline int64_t unary_cost(int op) {
    return op >= SG3_EXP && op != SG3_SQRT && op != SG3_RECIPROCAL ? 16 : 1;
}

template <class A, class T>
int run_unary(int op, const sg3_operands& o, int nthreads) {
    const int64_t item[2] = {sizeof(T), sizeof(T)};
    const Loop L = make_loop(o, item);
    auto go = [&](auto f) {
        for_rows(L, unary_cost(op), nthreads, [&L, f](char** p, int64_t n) { unary_row<A, T>(p, n, L.ist, f); });
        return SG3_OK;
    };
    auto accurate = [&](auto f, auto libm) {  // float32 in float64 registers, float64 by libm
        for_rows(L, 32, nthreads, [&L, f, libm](char** p, int64_t n) {
            if constexpr (sizeof(T) == 4) wide_row<A, 1>(p, n, L.ist, f); else libm_row<1>(p, n, L.ist, libm);
        });
        return SG3_OK;
    };
    switch (op) {
        case SG3_NEG: return go(Neg{});
        case SG3_ABS: return go(Abs{});
        case SG3_SIGN: return go(Sign{});
        case SG3_RELU: return go(Relu{});
        case SG3_FLOOR: return go(Floor{});
        case SG3_CEIL: return go(Ceil{});
        case SG3_ROUND: return go(Round{});
        case SG3_EXP: return go(Exp{});
        case SG3_LOG: return go(Log{});
        case SG3_LOG1P: return go(Log1p{});
        case SG3_SQRT: return go(Sqrt{});
        case SG3_RSQRT: return go(Rsqrt{});
        case SG3_SIN: return go(Sin{});
        case SG3_COS: return go(Cos{});
        case SG3_TANH: return go(Tanh{});
        case SG3_SIGMOID: return go(Sigmoid{});
        case SG3_SILU: return go(Silu{});
        case SG3_GELU: return accurate(Gelu{}, [](double x) { return 0.5 * x * std::erfc(-x * 0.70710678118654752440); });
        case SG3_ERF:
            if constexpr (sizeof(T) == 8) return accurate(Erf{}, [](double x) { return std::erf(x); });
            return go(Erf{});
        case SG3_RECIPROCAL: return go(Reciprocal{});
        default: return SG3_EUNSUPPORTED;
    }
}

template <class A, class T>
int run_binary(int op, const sg3_operands& o, int nthreads) {
    const bool to_bool = op >= SG3_EQ;
    const int64_t item[3] = {to_bool ? 1 : int64_t(sizeof(T)), sizeof(T), sizeof(T)};
    const Loop L = make_loop(o, item);
    auto go = [&](auto f) {
        for_rows(L, 1, nthreads, [&L, f](char** p, int64_t n) { binary_row<A, T>(p, n, L.ist, f); });
        return SG3_OK;
    };
    auto cmp = [&](auto f) {
        for_rows(L, 1, nthreads, [&L, f](char** p, int64_t n) { compare_row<T>(p, n, L.ist, f); });
        return SG3_OK;
    };
    switch (op) {
        case SG3_ADD: return go(Add{});
        case SG3_SUB: return go(Sub{});
        case SG3_MUL: return go(Mul{});
        case SG3_DIV: return go(Div{});
        case SG3_MAXIMUM: return go(Maximum{});
        case SG3_MINIMUM: return go(Minimum{});
        case SG3_POW:
            for_rows(L, 32, nthreads, [&L](char** p, int64_t n) {
                if constexpr (sizeof(T) == 4)
                    wide_row<A, 2>(p, n, L.ist, PowWide{});
                else
                    libm_row<2>(p, n, L.ist, [](double a, double b) { return std::pow(a, b); });
            });
            return SG3_OK;
        case SG3_EQ: return cmp([](T a, T b) { return uint8_t(a == b); });
        case SG3_NE: return cmp([](T a, T b) { return uint8_t(a != b); });
        case SG3_LT: return cmp([](T a, T b) { return uint8_t(a < b); });
        case SG3_LE: return cmp([](T a, T b) { return uint8_t(a <= b); });
        case SG3_GT: return cmp([](T a, T b) { return uint8_t(a > b); });
        case SG3_GE: return cmp([](T a, T b) { return uint8_t(a >= b); });
        default: return SG3_EUNSUPPORTED;
    }
}

template <class T>
int run_where(const sg3_operands& o, int nthreads) {
    const int64_t item[4] = {sizeof(T), 1, sizeof(T), sizeof(T)};
    const Loop L = make_loop(o, item);
    for_rows(L, 1, nthreads, [&L](char** p, int64_t n) { where_row<T>(p, n, L.ist); });
    return SG3_OK;
}

// integer arithmetic: the same functors on integer registers (a NaN test is always false;
// overflow wraps, as in two's complement)
template <class A, class T>
int run_int_unary(int op, const sg3_operands& o, int nthreads) {
    const int64_t item[2] = {sizeof(T), sizeof(T)};
    const Loop L = make_loop(o, item);
    auto go = [&](auto f) {
        for_rows(L, 1, nthreads, [&L, f](char** p, int64_t n) { unary_row<A, T>(p, n, L.ist, f); });
        return SG3_OK;
    };
    switch (op) {
        case SG3_NEG: return go(Neg{});
        case SG3_ABS: return go(Abs{});
        case SG3_SIGN: return go(Sign{});
        case SG3_RELU: return go(Relu{});
        default: return SG3_EUNSUPPORTED;
    }
}

template <class A, class T>
int run_int_binary(int op, const sg3_operands& o, int nthreads) {
    const int64_t item[3] = {op >= SG3_EQ ? 1 : int64_t(sizeof(T)), sizeof(T), sizeof(T)};
    const Loop L = make_loop(o, item);
    auto go = [&](auto f) {
        for_rows(L, 1, nthreads, [&L, f](char** p, int64_t n) { binary_row<A, T>(p, n, L.ist, f); });
        return SG3_OK;
    };
    auto cmp = [&](auto f) {
        for_rows(L, 1, nthreads, [&L, f](char** p, int64_t n) { compare_row<T>(p, n, L.ist, f); });
        return SG3_OK;
    };
    switch (op) {
        case SG3_ADD: return go(Add{});
        case SG3_SUB: return go(Sub{});
        case SG3_MUL: return go(Mul{});
        case SG3_MAXIMUM: return go(Maximum{});
        case SG3_MINIMUM: return go(Minimum{});
        case SG3_EQ: return cmp([](T a, T b) { return uint8_t(a == b); });
        case SG3_NE: return cmp([](T a, T b) { return uint8_t(a != b); });
        case SG3_LT: return cmp([](T a, T b) { return uint8_t(a < b); });
        case SG3_LE: return cmp([](T a, T b) { return uint8_t(a <= b); });
        case SG3_GT: return cmp([](T a, T b) { return uint8_t(a > b); });
        case SG3_GE: return cmp([](T a, T b) { return uint8_t(a >= b); });
        default: return SG3_EUNSUPPORTED;
    }
}

template <class A>
int unary(int op, int dtype, const sg3_operands* o, int nthreads) {
    switch (dtype) {
        case SG3_FLOAT32: return run_unary<A, float>(op, *o, nthreads);
        case SG3_FLOAT64: return run_unary<A, double>(op, *o, nthreads);
        case SG3_INT32: return run_int_unary<A, int32_t>(op, *o, nthreads);
        case SG3_INT64: return run_int_unary<A, int64_t>(op, *o, nthreads);
        case SG3_UINT8: return run_int_unary<A, uint8_t>(op, *o, nthreads);
        case SG3_INT8: return run_int_unary<A, int8_t>(op, *o, nthreads);
        case SG3_INT16: return run_int_unary<A, int16_t>(op, *o, nthreads);
        default: return SG3_EUNSUPPORTED;
    }
}

// The 2-byte floats' arithmetic in the kernel: a contiguous row a register at a time
// (widened, computed and narrowed in registers); any other row a block at a time, the block
// of each operand widened into a float32 buffer that stays in L1 (a broadcast operand's one
// value, once), the float32 row kernel run on the buffers, the result narrowed back with
// one rounding. No whole-array float32 copies, and the same answers as widening first.
constexpr int64_t kHalfBlock = 256;

template <class H>
inline void widen_strided(const H* x, int64_t step, float* out, int64_t n) {
    if (step == 1) return widen_row(x, out, n);
    for (int64_t i = 0; i < n; ++i) out[i] = to_float(x[i * step]);
}

template <class A, class H, class Op>
void half_binary_row(char** p, int64_t n, const int64_t* ist, const Op& op) {
    H* o = reinterpret_cast<H*>(p[0]);
    const H* a = reinterpret_cast<const H*>(p[1]);
    const H* b = reinterpret_cast<const H*>(p[2]);
    if (ist[0] == 1 && ist[1] == 1 && ist[2] == 1) {  // in registers, the block path for the tail
        const int64_t done = half_binary_registers<vec<float, A>>(o, a, b, n, op);
        o += done, a += done, b += done, n -= done;
    }
    alignas(64) float wa[kHalfBlock], wb[kHalfBlock], wo[kHalfBlock];
    const int64_t unit[3] = {1, ist[1] ? 1 : 0, ist[2] ? 1 : 0};  // a broadcast operand stays one value
    if (!ist[1]) wa[0] = to_float(a[0]);
    if (!ist[2]) wb[0] = to_float(b[0]);
    for (int64_t i = 0; i < n; i += kHalfBlock) {
        const int64_t m = n - i < kHalfBlock ? n - i : kHalfBlock;
        if (ist[1]) widen_strided(a + i * ist[1], ist[1], wa, m);
        if (ist[2]) widen_strided(b + i * ist[2], ist[2], wb, m);
        char* q[3] = {reinterpret_cast<char*>(wo), reinterpret_cast<char*>(wa), reinterpret_cast<char*>(wb)};
        binary_row<A, float>(q, m, unit, op);
        if (ist[0] == 1) {
            narrow_row(wo, o + i, m);
        } else {
            for (int64_t j = 0; j < m; ++j) o[(i + j) * ist[0]] = narrow<H>(wo[j]);
        }
    }
}

template <class A, class H>
int run_half_binary(int op, const sg3_operands& o, int nthreads) {
    const int64_t item[3] = {2, 2, 2};
    const Loop L = make_loop(o, item);
    auto go = [&](auto f) {
        for_rows(L, 1, nthreads, [&L, f](char** p, int64_t n) { half_binary_row<A, H>(p, n, L.ist, f); });
        return SG3_OK;
    };
    switch (op) {
        case SG3_ADD: return go(Add{});
        case SG3_SUB: return go(Sub{});
        case SG3_MUL: return go(Mul{});
        case SG3_DIV: return go(Div{});
        case SG3_MAXIMUM: return go(Maximum{});
        case SG3_MINIMUM: return go(Minimum{});
        default: return SG3_EUNSUPPORTED;  // the rest widen the whole operands (the backend's fallback)
    }
}

template <class A>
int binary(int op, int dtype, const sg3_operands* o, int nthreads) {
    switch (dtype) {
        case SG3_FLOAT32: return run_binary<A, float>(op, *o, nthreads);
        case SG3_FLOAT64: return run_binary<A, double>(op, *o, nthreads);
        case SG3_FLOAT16: return run_half_binary<A, sg3_half>(op, *o, nthreads);
        case SG3_BFLOAT16: return run_half_binary<A, sg3_bfloat16>(op, *o, nthreads);
        case SG3_INT32: return run_int_binary<A, int32_t>(op, *o, nthreads);
        case SG3_INT64: return run_int_binary<A, int64_t>(op, *o, nthreads);
        case SG3_UINT8: return run_int_binary<A, uint8_t>(op, *o, nthreads);
        case SG3_INT8: return run_int_binary<A, int8_t>(op, *o, nthreads);
        case SG3_INT16: return run_int_binary<A, int16_t>(op, *o, nthreads);
        default: return SG3_EUNSUPPORTED;
    }
}

// ------------------------------------------------------------------ casts

// float to a wrapping integer: truncate toward zero, then reduce modulo 2**64 exactly (a
// double that large is a multiple of 2**11), as stage 2 does
inline int64_t to_int64_wrapped(double v, bool* bad) {
    if (!std::isfinite(v)) {
        *bad = true;
        return 0;
    }
    double t = std::trunc(v);
    if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<int64_t>(t);
    t = std::fmod(t, 18446744073709551616.0);
    if (t < 0) t += 18446744073709551616.0;
    if (t >= 9223372036854775808.0) t -= 18446744073709551616.0;
    return static_cast<int64_t>(t);
}

// ``ToBool``: the target is bool, stored as uint8_t as uint8 is (so the type cannot say it)
template <class From, class To, bool ToBool = false>
inline To convert(From x, bool* bad) {
    // the 2-byte floats go through float32, as PyTorch's do (a float64 is rounded twice)
    if constexpr (is_half<From>::value) {
        return convert<float, To, ToBool>(to_float(x), bad);
    } else if constexpr (std::is_same<To, sg3_half>::value) {
        return to_half(convert<From, float>(x, bad));
    } else if constexpr (std::is_same<To, sg3_bfloat16>::value) {
        return to_bfloat16(convert<From, float>(x, bad));
    } else if constexpr (ToBool) {
        return x != 0;
    } else if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value) {
        return static_cast<To>(to_int64_wrapped(x, bad));  // a narrower integer keeps the low bits
    } else {
        return static_cast<To>(x);  // an integer narrowed keeps its low bits (GCC's definition)
    }
}

template <class From, class To, bool ToBool = false>
int run_cast(const sg3_operands& o, int nthreads) {
    const int64_t item[2] = {sizeof(To), sizeof(From)};
    const Loop L = make_loop(o, item);
    int bad_any = 0;
    for_rows(L, 1, nthreads, [&L, &bad_any](char** p, int64_t n) {
        To* out = reinterpret_cast<To*>(p[0]);
        const From* x = reinterpret_cast<const From*>(p[1]);
        bool bad = false;
        if constexpr (is_half<From>::value && std::is_same<To, float>::value) {
            if (L.ist[0] == 1 && L.ist[1] == 1) return widen_row(x, out, n);  // a vector at a time
        }
        if constexpr (std::is_same<From, float>::value && is_half<To>::value) {
            if (L.ist[0] == 1 && L.ist[1] == 1) return narrow_row(x, out, n);
        }
        if (L.ist[0] == 1 && L.ist[1] == 1) {
            for (int64_t i = 0; i < n; ++i) out[i] = convert<From, To, ToBool>(x[i], &bad);
        } else {
            for (int64_t i = 0; i < n; ++i) out[i * L.ist[0]] = convert<From, To, ToBool>(x[i * L.ist[1]], &bad);
        }
        if (bad) {
#pragma omp atomic write
            bad_any = 1;
        }
    });
    return bad_any ? SG3_ENONFINITE : SG3_OK;
}

template <class From>
int cast_from(int to, const sg3_operands& o, int nthreads) {
    switch (to) {
        case SG3_BOOL: return run_cast<From, uint8_t, true>(o, nthreads);
        case SG3_UINT8: return run_cast<From, uint8_t>(o, nthreads);
        case SG3_INT8: return run_cast<From, int8_t>(o, nthreads);
        case SG3_INT16: return run_cast<From, int16_t>(o, nthreads);
        case SG3_INT32: return run_cast<From, int32_t>(o, nthreads);
        case SG3_INT64: return run_cast<From, int64_t>(o, nthreads);
        case SG3_FLOAT32: return run_cast<From, float>(o, nthreads);
        case SG3_FLOAT64: return run_cast<From, double>(o, nthreads);
        case SG3_FLOAT16: return run_cast<From, sg3_half>(o, nthreads);
        case SG3_BFLOAT16: return run_cast<From, sg3_bfloat16>(o, nthreads);
        default: return SG3_EUNSUPPORTED;
    }
}

template <class A>
int cast(int from, int to, const sg3_operands* o, int nthreads) {
    switch (from) {
        case SG3_BOOL:  // 0 or 1: read as uint8's bytes are
        case SG3_UINT8: return cast_from<uint8_t>(to, *o, nthreads);
        case SG3_INT8: return cast_from<int8_t>(to, *o, nthreads);
        case SG3_INT16: return cast_from<int16_t>(to, *o, nthreads);
        case SG3_INT32: return cast_from<int32_t>(to, *o, nthreads);
        case SG3_INT64: return cast_from<int64_t>(to, *o, nthreads);
        case SG3_FLOAT32: return cast_from<float>(to, *o, nthreads);
        case SG3_FLOAT64: return cast_from<double>(to, *o, nthreads);
        case SG3_FLOAT16: return cast_from<sg3_half>(to, *o, nthreads);
        case SG3_BFLOAT16: return cast_from<sg3_bfloat16>(to, *o, nthreads);
        default: return SG3_EUNSUPPORTED;
    }
}

template <class A>
int where(int dtype, const sg3_operands* o, int nthreads) {
    if (dtype == SG3_FLOAT32) return run_where<float>(*o, nthreads);
    if (dtype == SG3_FLOAT64) return run_where<double>(*o, nthreads);
    return SG3_EUNSUPPORTED;
}

}  // namespace sg3
