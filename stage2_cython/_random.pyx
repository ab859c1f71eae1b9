"""Random fills: stage 0's PCG32 stream and its derived draws, reproduced bit for bit.

The kernels read the generator's 64-bit state from the Python ``Generator`` object, draw
words in C, and store the advanced state back, all under the generator's lock (so two
threads never draw the same numbers), so a Generator used by any stage stays in one
sequence: ``manual_seed(s)`` then the same calls give the same tensors on stage 0 and
here. The formulas are stage 0's (``stage0_python/random.py``), in the same float64
operations, so the results round identically.
"""
from libc.math cimport M_PI, cos, log, sin, sqrt
from libc.stdint cimport int64_t, uint32_t, uint64_t

from stage2_cython._buffer cimport Buffer, code_of, data_of, new_buffer
from stage2_cython._convert cimport cast_into
from stage2_cython._types cimport FLOAT32, FLOAT64, INT64, float32_t, float64_t, float_t

cdef uint64_t MULT = 6364136223846793005ULL
cdef uint64_t INC = 1442695040888963407ULL


cdef inline uint32_t _next(uint64_t* state) noexcept nogil:
    """PCG-XSH-RR: advance the LCG, output a rotated xorshift of the old state."""
    cdef uint64_t old = state[0]
    state[0] = old * MULT + INC
    cdef uint32_t x = <uint32_t>(((old >> 18) ^ old) >> 27)
    cdef uint32_t rot = <uint32_t>(old >> 59)
    return (x >> rot) | (x << ((-rot) & 31))


cdef inline double _unit(uint64_t* state, bint wide) noexcept nogil:
    """A uniform in [0, 1): 24 bits from one word, or 53 bits from two."""
    cdef uint32_t a, b
    if not wide:
        return (_next(state) >> 8) * (1.0 / 16777216.0)
    a = _next(state)
    b = _next(state)
    return ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)


cdef void _uniform(float_t* out, Py_ssize_t n, double low, double high, bint wide,
                   uint64_t* state) noexcept nogil:
    cdef Py_ssize_t i
    cdef double span = high - low
    cdef bint shift = low != 0.0 or high != 1.0
    for i in range(n):
        out[i] = <float_t>(low + span * _unit(state, wide) if shift else _unit(state, wide))


cdef void _normal(float_t* out, Py_ssize_t n, double mean, double std, uint64_t* state) noexcept nogil:
    # Box-Muller on pairs of 53-bit uniforms; an odd count drops the last sine
    cdef Py_ssize_t i
    cdef double u1, u2, r, t, z0, z1
    cdef bint shift = mean != 0.0 or std != 1.0
    for i in range(0, n, 2):
        u1 = _unit(state, True)
        u2 = _unit(state, True)
        r = sqrt(-2.0 * log(1.0 - u1))
        t = (2.0 * M_PI) * u2
        z0 = r * cos(t)
        z1 = r * sin(t)
        out[i] = <float_t>(mean + std * z0 if shift else z0)
        if i + 1 < n:
            out[i + 1] = <float_t>(mean + std * z1 if shift else z1)


cdef void _randint(int64_t* out, Py_ssize_t n, int64_t low, uint64_t span,
                   uint64_t* state) noexcept nogil:
    # reject the words below 2**bits mod span, so every value is equally likely
    cdef bint wide = span > 0xFFFFFFFFULL
    cdef uint64_t threshold = ((-span) % span) if wide else (((1ULL << 32) - span) % span)
    cdef uint64_t r
    cdef Py_ssize_t i = 0
    while i < n:
        if wide:
            r = (<uint64_t>_next(state)) << 32
            r |= _next(state)
        else:
            r = _next(state)
        if r >= threshold:
            out[i] = low + <int64_t>(r % span)  # wraps back into range when span > 2**63
            i += 1


cdef Buffer _finish(Buffer tmp, dtype):
    cdef Buffer out
    if tmp.code == code_of(dtype):
        return tmp
    out = new_buffer(tmp.shape, dtype, code_of(dtype))
    if out.numel:
        cast_into(out, tmp)
    return out


def uniform(tuple shape, double low, double high, dtype, gen):
    """float64 draws use two words per element, every other dtype one (stage 0's rule)."""
    cdef int code = code_of(dtype)
    cdef Buffer out = new_buffer(shape, dtype if code in (FLOAT32, FLOAT64) else None,
                                 code if code in (FLOAT32, FLOAT64) else FLOAT64)
    cdef uint64_t state
    cdef bint wide = code == FLOAT64
    with gen._lock:
        state = gen._state
        with nogil:
            if out.code == FLOAT32:
                _uniform(<float32_t*>data_of(out), out.numel, low, high, wide, &state)
            else:
                _uniform(<float64_t*>data_of(out), out.numel, low, high, wide, &state)
        gen._state = state
    return _finish(out, dtype)


def normal(tuple shape, double mean, double std, dtype, gen):
    cdef int code = code_of(dtype)
    cdef Buffer out = new_buffer(shape, dtype if code in (FLOAT32, FLOAT64) else None,
                                 code if code in (FLOAT32, FLOAT64) else FLOAT64)
    cdef uint64_t state
    with gen._lock:
        state = gen._state
        with nogil:
            if out.code == FLOAT32:
                _normal(<float32_t*>data_of(out), out.numel, mean, std, &state)
            else:
                _normal(<float64_t*>data_of(out), out.numel, mean, std, &state)
        gen._state = state
    return _finish(out, dtype)


def randint(tuple shape, low, high, dtype, gen):
    """Integers in [low, high); both within int64 (the caller handles wider ranges)."""
    if low >= high:
        raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
    cdef Buffer out = new_buffer(shape, dtype if code_of(dtype) == INT64 else None, INT64)
    cdef uint64_t state
    cdef uint64_t span = high - low
    cdef int64_t lo = low
    with gen._lock:
        state = gen._state
        with nogil:
            _randint(<int64_t*>data_of(out), out.numel, lo, span, &state)
        gen._state = state
    return _finish(out, dtype)
