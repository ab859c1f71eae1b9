from stage2_cython._buffer cimport Buffer


cdef int cast_into(Buffer out, Buffer x) except -1
