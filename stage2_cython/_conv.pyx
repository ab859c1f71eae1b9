"""im2col (``unfold``) and its adjoint (``fold``) for inputs with 1 or 2 spatial dims.

``unfold`` turns (N, C, H, W) into (N, C*kh*kw, L): one row per (channel, kernel offset),
one column per output position, so a convolution is one matmul. For each row and output
line the range of positions that fall inside the input is computed once, so the inner
loop is a plain strided copy with no bounds test; padding is written as zeros around it.
``unfold`` only moves elements, so it is specialised by element size; ``fold`` adds
(overlapping windows sum), so it is specialised by numeric type. A 1-D input is the
2-D case with H = 1.
"""
from libc.string cimport memset

from stage2_cython._buffer cimport Buffer, contiguous_layout, copy, data_of, new_buffer
from stage2_cython._types cimport (BOOL, FLOAT32, FLOAT64, INT32, float32_t, float64_t,
                                   int32_t, int64_t, itemsize_of, num_t, uint8_t, uint16_t, uint32_t,
                                   uint64_t, word_t)


cdef struct Geometry:
    Py_ssize_t N, C, H, W, kh, kw, dh, dw, ph, pw, sh, sw, OH, OW
    Py_ssize_t sn, sc, sy, sx  # input (unfold) or output (fold) strides, in elements


cdef inline Py_ssize_t _floordiv(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    return a // b if a >= 0 else -((-a + b - 1) // b)


cdef inline void _span(Geometry* g, Py_ssize_t j, Py_ssize_t* lo, Py_ssize_t* hi) noexcept nogil:
    """Output columns ow whose input column ow*sw - pw + j*dw lies in [0, W)."""
    cdef Py_ssize_t base = j * g.dw - g.pw
    lo[0] = _floordiv(-base + g.sw - 1, g.sw)
    hi[0] = _floordiv(g.W - 1 - base, g.sw) + 1
    if lo[0] < 0:
        lo[0] = 0
    if hi[0] > g.OW:
        hi[0] = g.OW
    if hi[0] < lo[0]:
        hi[0] = lo[0]


cdef void _unfold(word_t* out, word_t* x, Geometry* g) noexcept nogil:
    cdef Py_ssize_t n, c, i, j, oh, ow, h, lo, hi, base
    cdef word_t* dst
    cdef word_t* src
    for n in range(g.N):
        for c in range(g.C):
            for i in range(g.kh):
                for j in range(g.kw):
                    _span(g, j, &lo, &hi)
                    base = j * g.dw - g.pw
                    for oh in range(g.OH):
                        dst = out
                        out += g.OW
                        h = oh * g.sh - g.ph + i * g.dh
                        if h < 0 or h >= g.H:
                            memset(dst, 0, g.OW * sizeof(word_t))
                            continue
                        src = x + n * g.sn + c * g.sc + h * g.sy
                        for ow in range(lo):
                            dst[ow] = 0
                        for ow in range(lo, hi):
                            dst[ow] = src[(ow * g.sw + base) * g.sx]
                        for ow in range(hi, g.OW):
                            dst[ow] = 0


cdef void _fold(num_t* out, num_t* cols, Geometry* g) noexcept nogil:
    cdef Py_ssize_t n, c, i, j, oh, ow, h, lo, hi, base
    cdef num_t* dst
    for n in range(g.N):
        for c in range(g.C):
            for i in range(g.kh):
                for j in range(g.kw):
                    _span(g, j, &lo, &hi)
                    base = j * g.dw - g.pw
                    for oh in range(g.OH):
                        h = oh * g.sh - g.ph + i * g.dh
                        if 0 <= h < g.H:
                            dst = out + n * g.sn + c * g.sc + h * g.sy
                            for ow in range(lo, hi):
                                dst[(ow * g.sw + base) * g.sx] += cols[ow]
                        cols += g.OW


cdef Geometry _geometry(tuple spatial, kernel, dilation, padding, stride):
    cdef Geometry g
    if len(spatial) == 1:  # 1-D: a single row
        g.H, g.kh, g.dh, g.ph, g.sh = 1, 1, 1, 0, 1
        g.W, g.kw, g.dw, g.pw, g.sw = spatial[0], kernel[0], dilation[0], padding[0], stride[0]
    else:
        g.H, g.W = spatial
        g.kh, g.kw = kernel
        g.dh, g.dw = dilation
        g.ph, g.pw = padding
        g.sh, g.sw = stride
    g.OH = (g.H + 2 * g.ph - g.dh * (g.kh - 1) - 1) // g.sh + 1
    g.OW = (g.W + 2 * g.pw - g.dw * (g.kw - 1) - 1) // g.sw + 1
    return g


def unfold(Buffer x, kernel, dilation, padding, stride):
    """(N, C, *spatial) -> (N, C * prod(kernel), L)."""
    cdef Geometry g = _geometry(x.shape[2:], kernel, dilation, padding, stride)
    g.N, g.C = x.shape[0], x.shape[1]
    if x.ndim == 3:
        g.sn, g.sc, g.sy, g.sx = x.strides[0], x.strides[1], 0, x.strides[2]
    else:
        g.sn, g.sc, g.sy, g.sx = x.strides
    cdef Buffer out = new_buffer((g.N, g.C * g.kh * g.kw, g.OH * g.OW), x.dtype, x.code)
    if out.numel == 0:
        return out
    cdef char* po = data_of(out)
    cdef char* px = data_of(x)
    cdef Py_ssize_t size = itemsize_of(x.code)
    with nogil:
        if size == 1:
            _unfold(<uint8_t*>po, <uint8_t*>px, &g)
        elif size == 2:
            _unfold(<uint16_t*>po, <uint16_t*>px, &g)
        elif size == 4:
            _unfold(<uint32_t*>po, <uint32_t*>px, &g)
        else:
            _unfold(<uint64_t*>po, <uint64_t*>px, &g)
    return out


def fold(Buffer cols, output_size, kernel, dilation, padding, stride):
    """The adjoint of ``unfold``: sums (N, C*K, L) columns back into (N, C, *output_size)."""
    if cols.code == BOOL:
        raise TypeError("fold: not implemented for bool")
    cdef Geometry g = _geometry(tuple(output_size), kernel, dilation, padding, stride)
    g.N = cols.shape[0]
    g.C = cols.shape[1] // (g.kh * g.kw)
    cdef Buffer out = new_buffer((g.N, g.C, *output_size), cols.dtype, cols.code)
    if out.numel == 0:
        return out
    memset(data_of(out), 0, out.nbytes())
    if len(output_size) == 1:
        g.sn, g.sc, g.sy, g.sx = g.C * g.W, g.W, 0, 1
    else:
        g.sn, g.sc, g.sy, g.sx = g.C * g.H * g.W, g.H * g.W, g.W, 1
    cdef Buffer src = cols if contiguous_layout(cols) else copy(cols)
    cdef char* po = data_of(out)
    cdef char* pc = data_of(src)
    cdef int code = cols.code
    with nogil:
        if code == FLOAT32:
            _fold(<float32_t*>po, <float32_t*>pc, &g)
        elif code == FLOAT64:
            _fold(<float64_t*>po, <float64_t*>pc, &g)
        elif code == INT32:
            _fold(<int32_t*>po, <int32_t*>pc, &g)
        else:
            _fold(<int64_t*>po, <int64_t*>pc, &g)
    return out
