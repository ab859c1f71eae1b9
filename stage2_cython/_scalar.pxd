# Scalar semantics of the elementwise kernels, one inline function per operation: the
# loops in _elementwise are generated around these. NaN and inf behave as in NumPy
# (and in stage 0): comparisons with NaN are false except ``!=``; maximum/minimum
# propagate NaN; float division by zero gives +-inf or NaN. Transcendental functions of
# float32 are evaluated in double and rounded once, as stage 0 does.
#
# Integers wrap on overflow (two's complement: the extensions are compiled with
# -fwrapv), as PyTorch's and NumPy's integer tensors do: int32 2**31 - 1 + 1 is -2**31.
from libc.math cimport (INFINITY, atan2, ceil, copysign, cos, erf, erfc, exp, fabs, floor, fmod, hypot, log,
                        log1p, pow, rint, sin, sqrt, tanh, trunc)

from stage2_cython._types cimport (any_t, bool_t, float32_t, float64_t, float_t, int64_t, int_t, is_nan, num_t,
                                   uint64_t)

# ---------------------------------------------------------------- binary, arithmetic


cdef inline num_t b_add(num_t x, num_t y) noexcept nogil:
    return x + y


cdef inline num_t b_sub(num_t x, num_t y) noexcept nogil:
    return x - y


cdef inline num_t b_mul(num_t x, num_t y) noexcept nogil:
    return x * y


cdef inline float_t b_div(float_t x, float_t y) noexcept nogil:
    return x / y


cdef inline num_t b_maximum(num_t x, num_t y) noexcept nogil:
    return x if (x > y or is_nan(x)) else y


cdef inline num_t b_minimum(num_t x, num_t y) noexcept nogil:
    return x if (x < y or is_nan(x)) else y


cdef inline int64_t _ipow(int64_t base, int64_t e) noexcept nogil:
    # by squaring; the frontend rejects negative exponents, defined here as trunc(base**e)
    cdef int64_t r = 1
    if e < 0:
        return 1 if base == 1 else ((-1 if e & 1 else 1) if base == -1 else 0)
    while e:
        if e & 1:
            r *= base
        base *= base
        e >>= 1
    return r


cdef inline num_t b_pow(num_t x, num_t y) noexcept nogil:
    if num_t is float32_t or num_t is float64_t:
        return <num_t>pow(<double>x, <double>y)
    else:
        return <num_t>_ipow(x, y)


cdef inline double _fdivmod(double a, double b, double* mod) noexcept nogil:
    # Python's and NumPy's float floor division: the quotient that goes with fmod's remainder
    cdef double m, div, q
    m = fmod(a, b)
    if b == 0:
        mod[0] = m  # NaN
        return a / b
    div = (a - m) / b
    if m:
        if (b < 0) != (m < 0):
            m += b
            div -= 1.0
    else:
        m = copysign(0.0, b)
    if div:
        q = floor(div)
        if div - q > 0.5:
            q += 1.0
    else:
        q = copysign(0.0, a / b)
    mod[0] = m
    return q


cdef inline num_t b_floordiv(num_t x, num_t y) noexcept nogil:
    # integer divisors of 0 are rejected before the loop runs
    cdef double m
    cdef num_t q
    if num_t is float32_t or num_t is float64_t:
        return <num_t>_fdivmod(x, y, &m)
    else:
        if y == -1:
            return -x  # INT_MIN // -1 wraps (the division instruction would trap)
        q = x // y  # C truncates; floor instead
        if (x % y != 0) and ((x < 0) != (y < 0)):
            q -= 1
        return q


cdef inline num_t b_remainder(num_t x, num_t y) noexcept nogil:
    cdef double m
    cdef num_t r
    if num_t is float32_t or num_t is float64_t:
        _fdivmod(x, y, &m)
        return <num_t>m
    else:
        if y == -1:
            return 0
        r = x % y  # C's sign follows x; Python's follows y
        if r != 0 and ((r < 0) != (y < 0)):
            r += y
        return r


cdef inline num_t b_fmod(num_t x, num_t y) noexcept nogil:
    # the sign of the dividend (C's %, with cdivision); integer divisors of 0 are
    # rejected before the loop runs
    if num_t is float32_t or num_t is float64_t:
        return <num_t>fmod(x, y)
    else:
        if y == -1:
            return 0  # INT_MIN % -1 would trap
        return x % y


# ---------------------------------------------------------------- binary, floating only

cdef inline float_t b_atan2(float_t x, float_t y) noexcept nogil:
    return <float_t>atan2(x, y)


cdef inline float_t b_copysign(float_t x, float_t y) noexcept nogil:
    return <float_t>copysign(x, y)


cdef inline float_t b_hypot(float_t x, float_t y) noexcept nogil:
    return <float_t>hypot(x, y)


# ---------------------------------------------------------------- binary, integers only

cdef inline int_t b_bitwise_and(int_t x, int_t y) noexcept nogil:
    return x & y


cdef inline int_t b_bitwise_or(int_t x, int_t y) noexcept nogil:
    return x | y


cdef inline int_t b_bitwise_xor(int_t x, int_t y) noexcept nogil:
    return x ^ y


cdef inline int_t b_left_shift(int_t x, int_t s) noexcept nogil:
    # a count outside [0, width) is undefined in C: PyTorch gives 0. Shifted as unsigned,
    # since shifting a negative signed value left is undefined too; the cast back wraps
    if s < 0 or s >= <int_t>(8 * sizeof(int_t)):
        return 0
    return <int_t>((<uint64_t>x) << s)


cdef inline int_t b_right_shift(int_t x, int_t s) noexcept nogil:
    # every bit shifted out: the sign fills the result, as PyTorch gives
    if s < 0 or s >= <int_t>(8 * sizeof(int_t)):
        return -1 if x < 0 else 0
    return x >> s  # arithmetic for signed values (GCC and Clang define it so)


# ---------------------------------------------------------------- binary, to bool

cdef inline bool_t b_eq(any_t x, any_t y) noexcept nogil:
    return x == y


cdef inline bool_t b_ne(any_t x, any_t y) noexcept nogil:
    return x != y


cdef inline bool_t b_lt(any_t x, any_t y) noexcept nogil:
    return x < y


cdef inline bool_t b_le(any_t x, any_t y) noexcept nogil:
    return x <= y


cdef inline bool_t b_gt(any_t x, any_t y) noexcept nogil:
    return x > y


cdef inline bool_t b_ge(any_t x, any_t y) noexcept nogil:
    return x >= y


cdef inline bool_t b_logical_and(any_t x, any_t y) noexcept nogil:
    return x != 0 and y != 0


cdef inline bool_t b_logical_or(any_t x, any_t y) noexcept nogil:
    return x != 0 or y != 0


cdef inline bool_t b_logical_xor(any_t x, any_t y) noexcept nogil:
    return (x != 0) != (y != 0)


# ---------------------------------------------------------------- unary, any number

cdef inline num_t u_neg(num_t x) noexcept nogil:
    return -x


cdef inline num_t u_abs(num_t x) noexcept nogil:
    if num_t is float32_t or num_t is float64_t:
        return fabs(x)
    else:
        return -x if x < 0 else x


cdef inline num_t u_sign(num_t x) noexcept nogil:
    if is_nan(x):
        return x
    return <num_t>((x > 0) - (x < 0))


cdef inline num_t u_relu(num_t x) noexcept nogil:
    if x >= 0 or is_nan(x):  # -0.0 and NaN pass through, as in PyTorch
        return x
    return 0


cdef inline num_t u_floor(num_t x) noexcept nogil:
    if num_t is float32_t or num_t is float64_t:
        return floor(x)
    else:
        return x


cdef inline num_t u_ceil(num_t x) noexcept nogil:
    if num_t is float32_t or num_t is float64_t:
        return ceil(x)
    else:
        return x


cdef inline num_t u_trunc(num_t x) noexcept nogil:
    if num_t is float32_t or num_t is float64_t:
        return trunc(x)
    else:
        return x


cdef inline num_t u_round(num_t x) noexcept nogil:
    # half to even, as Python's round, NumPy and PyTorch
    if num_t is float32_t or num_t is float64_t:
        return rint(x)
    else:
        return x


# ---------------------------------------------------------------- unary, floating only

cdef inline float_t u_exp(float_t x) noexcept nogil:
    return <float_t>exp(x)


cdef inline float_t u_log(float_t x) noexcept nogil:
    return <float_t>log(x)


cdef inline float_t u_log1p(float_t x) noexcept nogil:
    return <float_t>log1p(x)


cdef inline float_t u_sqrt(float_t x) noexcept nogil:
    return <float_t>sqrt(x)


cdef inline float_t u_rsqrt(float_t x) noexcept nogil:
    return <float_t>(1.0 / sqrt(x))


cdef inline float_t u_sin(float_t x) noexcept nogil:
    return <float_t>sin(x)


cdef inline float_t u_cos(float_t x) noexcept nogil:
    return <float_t>cos(x)


cdef inline float_t u_tanh(float_t x) noexcept nogil:
    return <float_t>tanh(x)


cdef inline double _sigmoid(double x) noexcept nogil:
    cdef double z
    if x >= 0:
        return 1.0 / (1.0 + exp(-x))
    z = exp(x)  # never overflows here
    return z / (1.0 + z)


cdef inline float_t u_sigmoid(float_t x) noexcept nogil:
    return <float_t>_sigmoid(x)


cdef inline float_t u_silu(float_t x) noexcept nogil:
    return <float_t>(x * _sigmoid(x))


cdef inline float_t u_gelu(float_t x) noexcept nogil:
    # x * Phi(x), Phi from erfc: 1 + erf(x) would cancel to 0 for x well below 0
    return <float_t>(0.5 * x * erfc(-x * 0.7071067811865476))


cdef inline float_t u_erf(float_t x) noexcept nogil:
    return <float_t>erf(x)


cdef inline float_t u_reciprocal(float_t x) noexcept nogil:
    return 1 / x


# ---------------------------------------------------------------- unary, integers only

cdef inline int_t u_bitwise_not(int_t x) noexcept nogil:
    return ~x


# ---------------------------------------------------------------- unary, to bool

cdef inline bool_t u_isnan(any_t x) noexcept nogil:
    return is_nan(x)


cdef inline bool_t u_isinf(any_t x) noexcept nogil:
    if any_t is float32_t or any_t is float64_t:
        return x == INFINITY or x == -INFINITY
    else:
        return False


cdef inline bool_t u_isfinite(any_t x) noexcept nogil:
    if any_t is float32_t or any_t is float64_t:
        return x - x == 0  # nan for inf and nan (fast math would break this; see DESIGN.md)
    else:
        return True


cdef inline bool_t u_isposinf(any_t x) noexcept nogil:
    if any_t is float32_t or any_t is float64_t:
        return x == INFINITY
    else:
        return False


cdef inline bool_t u_isneginf(any_t x) noexcept nogil:
    if any_t is float32_t or any_t is float64_t:
        return x == -INFINITY
    else:
        return False


cdef inline bool_t u_logical_not(any_t x) noexcept nogil:
    return x == 0
