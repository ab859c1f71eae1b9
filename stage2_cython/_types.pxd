# The one typedef file: element types, dtype codes and the fused types that kernels
# are written over. Every compiled module of stage 2 cimports its types from here.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

ctypedef float float32_t
ctypedef double float64_t
ctypedef uint8_t bool_t  # one byte, 0 or 1, as NumPy and PyTorch store bool

# A Buffer carries its dtype as a small integer code (the frontend's DType object rides
# along untouched, so compiled code never imports the frontend).
cdef enum DTypeCode:
    BOOL = 0
    INT32 = 1
    INT64 = 2
    FLOAT32 = 3
    FLOAT64 = 4
    # 2-byte floats: storage knows them (copies, views, element reads), stage 2's kernels do
    # not compute in them; stage 3 converts to float32 and back (see its backend)
    FLOAT16 = 5
    BFLOAT16 = 6
    # 1- and 2-byte integers: storage knows them, and casts; the kernels compute in int32
    # (exact: see backend.py), so codes no longer order bool < integers < floats
    UINT8 = 7
    INT8 = 8
    INT16 = 9

cdef enum:
    MAXDIM = 64  # the most dims a tensor may have (NumPy's limit too)

cdef extern from "Python.h":
    const Py_ssize_t PY_SSIZE_T_MAX  # the largest element count, offset or stride

ctypedef fused any_t:
    bool_t
    int32_t
    int64_t
    float32_t
    float64_t

# a second, independent fused type: casts specialise over every (source, target) pair
ctypedef fused any2_t:
    bool_t
    int32_t
    int64_t
    float32_t
    float64_t

ctypedef fused num_t:
    int32_t
    int64_t
    float32_t
    float64_t

ctypedef fused int_t:  # what bitwise ops apply to (bool gets the logical ones)
    int32_t
    int64_t

ctypedef fused intlike_t:  # what integer sums and products accumulate from
    bool_t
    int32_t
    int64_t

ctypedef fused float_t:
    float32_t
    float64_t

ctypedef fused small_t:  # the 1- and 2-byte integers: stored, and widened to compute
    uint8_t
    int8_t
    int16_t

ctypedef fused small_word_t:  # their bytes, for stores that keep the low bits
    uint8_t
    uint16_t

# element types by size, for copies that move bytes without looking at them
ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef inline Py_ssize_t itemsize_of(int code) noexcept nogil:
    if code == BOOL or code == UINT8 or code == INT8:
        return 1
    if code == FLOAT16 or code == BFLOAT16 or code == INT16:
        return 2
    if code == INT32 or code == FLOAT32:
        return 4
    return 8


cdef inline bint is_float_code(int code) noexcept nogil:
    return code == FLOAT32 or code == FLOAT64 or code == FLOAT16 or code == BFLOAT16


cdef inline bint is_small_int_code(int code) noexcept nogil:
    return code == UINT8 or code == INT8 or code == INT16


cdef inline bint is_nan(any_t x) noexcept nogil:
    """x != x, spelled so that integer types (never NaN) compile to a constant."""
    if any_t is float32_t or any_t is float64_t:
        return x != x
    else:
        return False


cdef inline float half_to_float(uint16_t h) noexcept nogil:
    """An IEEE binary16 value, widened exactly."""
    cdef uint32_t sign = (<uint32_t>h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits
    cdef float f
    if e == 0:  # zero or subnormal: m units of 2**-24
        f = <float>m * <float>5.9604644775390625e-08
        return -f if sign else f
    bits = sign | (0x7f800000 | (m << 13) if e == 0x1f else ((e + 112) << 23) | (m << 13))
    memcpy(&f, &bits, 4)
    return f


cdef inline float bfloat16_to_float(uint16_t h) noexcept nogil:
    """A bfloat16 value (float32's top half), widened exactly."""
    cdef uint32_t bits = <uint32_t>h << 16
    cdef float f
    memcpy(&f, &bits, 4)
    return f
