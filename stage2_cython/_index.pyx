"""Indexing kernels: ``take``/``put`` (flat positions in row-major order) and
``gather``/``scatter_add`` along an axis.

Flat positions (``take``/``put``) may be negative (counted from the end, as in Python);
``gather``/``scatter_add`` take indices in [0, size) only, as PyTorch does. Every index
is checked before anything is written, so a bad one raises IndexError and leaves the
destination as it was, and the shapes are checked here too (the frontend checks them
first, with PyTorch's messages): a kernel never reads or writes outside its operands. Index tensors of int32 are widened to int64 first. Moving elements (take,
gather, put without accumulation) is specialised by element size; adding (scatter_add,
put with accumulation) by numeric type, with bool accumulation meaning "or".
"""
from libc.string cimport memset

from stage2_cython._buffer cimport (Buffer, contiguous_layout, copy, data_of, load_operand, new_buffer,
                                    read_ints)
from stage2_cython._convert cimport cast_into
from stage2_cython._iter cimport NdIter, iter_next, iter_prepare
from stage2_cython._types cimport (BOOL, FLOAT32, INT32, INT64, MAXDIM, any_t, bool_t, float32_t,
                                   float64_t, int32_t, int64_t, itemsize_of, uint8_t, uint16_t, uint32_t,
                                   uint64_t, word_t)


cdef Buffer _as_int64(Buffer index):
    if index.code == INT64:
        return index
    if index.code != INT32:
        raise TypeError(f"index must be an int64 or int32 tensor, got {index.dtype}")
    cdef Buffer out = new_buffer(index.shape, None, INT64)
    if out.numel:
        cast_into(out, index)
    return out


cdef bint _check(int64_t* idx, NdIter* it, Py_ssize_t lo, Py_ssize_t n, int64_t* bad) noexcept nogil:
    """True when every index lies in [lo, n); else the first bad one goes to ``bad``."""
    cdef Py_ssize_t r, i
    cdef int64_t v
    for r in range(it.rows):
        for i in range(it.inner):
            v = idx[it.off[0] + i * it.ist[0]]
            if v < lo or v >= n:
                bad[0] = v
                return False
        iter_next(it)
    return True


cdef int _validate(Buffer index, Py_ssize_t n, str what, bint negative=True) except -1:
    """IndexError unless every index lies in [-n, n) (``negative``) or [0, n)."""
    cdef NdIter it
    cdef int64_t bad = 0
    it.nops = 1
    it.off[0] = 0
    read_ints(index.shape, it.size)
    read_ints(index.strides, it.st[0])
    iter_prepare(&it, index.ndim)
    cdef int64_t* p = <int64_t*>data_of(index)
    cdef bint ok
    with nogil:
        ok = _check(p, &it, -n if negative else 0, n, &bad)
    if not ok:
        raise IndexError(f"index {bad} is out of bounds for {what} with size {n}")
    return 0


# ---------------------------------------------------------------- take, put

cdef void _take(word_t* out, word_t* x, int64_t* idx, NdIter* it, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t r, i, k = 0
    cdef int64_t v
    for r in range(it.rows):
        for i in range(it.inner):
            v = idx[it.off[0] + i * it.ist[0]]
            out[k] = x[v + n if v < 0 else v]
            k += 1
        iter_next(it)


def take(Buffer x, Buffer index):
    """``out[i] = x.flat[index[i]]`` (x's row-major order), shaped like ``index``."""
    index = _as_int64(index)
    _validate(index, x.numel, "a tensor")
    cdef Buffer src = x if contiguous_layout(x) else copy(x)
    cdef Buffer out = new_buffer(index.shape, x.dtype, x.code)
    if out.numel == 0:
        return out
    cdef NdIter it
    it.nops = 1
    it.off[0] = 0
    read_ints(index.shape, it.size)
    read_ints(index.strides, it.st[0])
    iter_prepare(&it, index.ndim)
    cdef char* po = data_of(out)
    cdef char* px = data_of(src)
    cdef int64_t* pi = <int64_t*>data_of(index)
    cdef Py_ssize_t size = itemsize_of(x.code), n = x.numel
    with nogil:
        if size == 1:
            _take(<uint8_t*>po, <uint8_t*>px, pi, &it, n)
        elif size == 2:
            _take(<uint16_t*>po, <uint16_t*>px, pi, &it, n)
        elif size == 4:
            _take(<uint32_t*>po, <uint32_t*>px, pi, &it, n)
        else:
            _take(<uint64_t*>po, <uint64_t*>px, pi, &it, n)
    return out


cdef inline Py_ssize_t _position(int64_t v, Py_ssize_t n, int ndim, Py_ssize_t* shape,
                                 Py_ssize_t* strides, bint contiguous) noexcept nogil:
    """Storage position (from the view's start) of row-major element ``v``."""
    cdef Py_ssize_t p = v + n if v < 0 else v, off = 0, d
    if contiguous:
        return p
    for d in range(ndim - 1, -1, -1):
        off += (p % shape[d]) * strides[d]
        p //= shape[d]
    return off


# how put combines a value with the element it lands on
cdef enum PutMode:
    PUT_SET, PUT_SUM, PUT_PROD, PUT_AMAX, PUT_AMIN

_PUT_MODES = {False: PUT_SET, True: PUT_SUM, "sum": PUT_SUM, "prod": PUT_PROD, "amax": PUT_AMAX,
              "amin": PUT_AMIN}


cdef void _put(any_t* dst, int64_t* idx, any_t* src, NdIter* it, Py_ssize_t n, int ndim,
               Py_ssize_t* shape, Py_ssize_t* strides, bint contiguous, int mode) noexcept nogil:
    cdef Py_ssize_t r, i, p
    cdef any_t v
    for r in range(it.rows):
        for i in range(it.inner):
            p = _position(idx[it.off[0] + i * it.ist[0]], n, ndim, shape, strides, contiguous)
            v = src[it.off[1] + i * it.ist[1]]
            if mode == PUT_SET:
                dst[p] = v
            elif any_t is bool_t:  # sum and amax are "or", prod and amin "and"
                dst[p] = (dst[p] | v) if mode == PUT_SUM or mode == PUT_AMAX else (dst[p] & v)
            elif mode == PUT_SUM:
                dst[p] = dst[p] + v
            elif mode == PUT_PROD:
                dst[p] = dst[p] * v
            elif mode == PUT_AMAX:
                if v > dst[p] or (any_t is float32_t or any_t is float64_t) and v != v:  # NaN wins, stays
                    dst[p] = v
            elif v < dst[p] or (any_t is float32_t or any_t is float64_t) and v != v:
                dst[p] = v
        iter_next(it)


def put(Buffer dst, Buffer index, Buffer src, accumulate):
    """``dst.flat[index[i]] = src[i]``, ``flat`` being dst's row-major order whatever its
    strides; ``accumulate`` combines instead of overwriting: True or "sum" (repeated
    indices add up), "prod", "amax", "amin" (NaN propagates). ``src`` has dst's dtype and
    broadcasts to ``index``'s shape."""
    cdef int mode = _PUT_MODES[accumulate]
    index = _as_int64(index)
    _validate(index, dst.numel, "a tensor")
    if src.storage is dst.storage:  # read every value before the first write
        src = copy(src)
    cdef NdIter it
    cdef Py_ssize_t shape[MAXDIM]
    cdef Py_ssize_t strides[MAXDIM]
    read_ints(dst.shape, shape)
    read_ints(dst.strides, strides)
    it.nops = 2
    it.off[0] = it.off[1] = 0
    read_ints(index.shape, it.size)
    read_ints(index.strides, it.st[0])
    load_operand(src, index.ndim, it.size, it.st[1])
    iter_prepare(&it, index.ndim)
    cdef char* pd = data_of(dst)
    cdef char* ps = data_of(src)
    cdef int64_t* pi = <int64_t*>data_of(index)
    cdef Py_ssize_t n = dst.numel
    cdef int nd = dst.ndim, code = dst.code
    cdef bint contiguous = contiguous_layout(dst)
    with nogil:
        if code == BOOL:
            _put(<bool_t*>pd, pi, <bool_t*>ps, &it, n, nd, shape, strides, contiguous, mode)
        elif code == INT32:
            _put(<int32_t*>pd, pi, <int32_t*>ps, &it, n, nd, shape, strides, contiguous, mode)
        elif code == INT64:
            _put(<int64_t*>pd, pi, <int64_t*>ps, &it, n, nd, shape, strides, contiguous, mode)
        elif code == FLOAT32:
            _put(<float32_t*>pd, pi, <float32_t*>ps, &it, n, nd, shape, strides, contiguous, mode)
        else:
            _put(<float64_t*>pd, pi, <float64_t*>ps, &it, n, nd, shape, strides, contiguous, mode)


# ---------------------------------------------------------------- gather, scatter_add

cdef void _gather(word_t* out, word_t* x, int64_t* idx, NdIter* it, Py_ssize_t step) noexcept nogil:
    cdef Py_ssize_t r, i
    cdef int64_t v
    for r in range(it.rows):
        for i in range(it.inner):
            v = idx[it.off[1] + i * it.ist[1]]  # validated: 0 <= v < n
            out[it.off[0] + i * it.ist[0]] = x[it.off[2] + i * it.ist[2] + v * step]
        iter_next(it)


cdef void _axis_iter(NdIter* it, Buffer out, Buffer index, tuple other_strides, int axis):
    """Walk ``index``'s shape: operand 0 ``out`` (contiguous), 1 the index, 2 the other
    tensor at the same coordinates with the ``axis`` coordinate left out."""
    it.nops = 3
    it.off[0] = it.off[1] = it.off[2] = 0
    read_ints(index.shape, it.size)
    read_ints(out.strides, it.st[0])
    read_ints(index.strides, it.st[1])
    read_ints(other_strides, it.st[2])
    it.st[2][axis] = 0
    iter_prepare(it, index.ndim)


cdef int _check_along(str op, tuple shape, int axis, Buffer index, Buffer other) except -1:
    """``index`` has the dims of a tensor of ``shape`` and fits it apart from ``axis``, and
    fits ``other`` (the tensor read or written at the same coordinates) everywhere."""
    cdef int d
    if index.ndim != len(shape) or index.ndim != other.ndim or not 0 <= axis < index.ndim:
        raise ValueError(f"{op}: index of shape {list(index.shape)} does not match shapes "
                         f"{list(shape)} and {list(other.shape)} along dim {axis}")
    for d in range(index.ndim):
        if index.shape[d] > other.shape[d] or (d != axis and index.shape[d] > shape[d]):
            raise ValueError(f"{op}: index of shape {list(index.shape)} is larger than shapes "
                             f"{list(shape)} and {list(other.shape)} allow (dim {d}, axis {axis})")
    return 0


def gather(Buffer x, int axis, Buffer index):
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``."""
    index = _as_int64(index)
    _check_along("gather", x.shape, axis, index, index)
    cdef Py_ssize_t n = x.shape[axis]
    _validate(index, n, f"dimension {axis}", False)
    cdef Buffer out = new_buffer(index.shape, x.dtype, x.code)
    if out.numel == 0:
        return out
    cdef NdIter it
    _axis_iter(&it, out, index, x.strides, axis)
    cdef char* po = data_of(out)
    cdef char* px = data_of(x)
    cdef int64_t* pi = <int64_t*>data_of(index)
    cdef Py_ssize_t size = itemsize_of(x.code), step = x.strides[axis]
    with nogil:
        if size == 1:
            _gather(<uint8_t*>po, <uint8_t*>px, pi, &it, step)
        elif size == 2:
            _gather(<uint16_t*>po, <uint16_t*>px, pi, &it, step)
        elif size == 4:
            _gather(<uint32_t*>po, <uint32_t*>px, pi, &it, step)
        else:
            _gather(<uint64_t*>po, <uint64_t*>px, pi, &it, step)
    return out


cdef void _scatter_add(any_t* out, any_t* src, int64_t* idx, NdIter* it, Py_ssize_t step) noexcept nogil:
    # operand 0 walks the source, 2 the output base: see scatter_add
    cdef Py_ssize_t r, i, p
    cdef int64_t v
    for r in range(it.rows):
        for i in range(it.inner):
            v = idx[it.off[1] + i * it.ist[1]]  # validated: 0 <= v < n
            p = it.off[2] + i * it.ist[2] + v * step
            if any_t is bool_t:
                out[p] = out[p] | src[it.off[0] + i * it.ist[0]]
            else:
                out[p] = out[p] + src[it.off[0] + i * it.ist[0]]
        iter_next(it)


def scatter_add(tuple shape, int axis, Buffer index, Buffer src):
    """A zero tensor of ``shape`` with ``src[..., i, ...]`` added at
    ``[..., index[..., i, ...], ...]`` along ``axis``; repeated indices add up."""
    index = _as_int64(index)
    _check_along("scatter_add", shape, axis, index, src)
    cdef Py_ssize_t n = shape[axis]
    _validate(index, n, f"dimension {axis}", False)
    cdef Buffer out = new_buffer(shape, src.dtype, src.code)
    memset(data_of(out), 0, out.nbytes())
    if index.numel == 0:
        return out
    cdef NdIter it
    _axis_iter(&it, src, index, out.strides, axis)  # src read through its own strides
    cdef char* po = data_of(out)
    cdef char* ps = data_of(src)
    cdef int64_t* pi = <int64_t*>data_of(index)
    cdef Py_ssize_t step = out.strides[axis]
    cdef int code = src.code
    with nogil:
        if code == BOOL:
            _scatter_add(<bool_t*>po, <bool_t*>ps, pi, &it, step)
        elif code == INT32:
            _scatter_add(<int32_t*>po, <int32_t*>ps, pi, &it, step)
        elif code == INT64:
            _scatter_add(<int64_t*>po, <int64_t*>ps, pi, &it, step)
        elif code == FLOAT32:
            _scatter_add(<float32_t*>po, <float32_t*>ps, pi, &it, step)
        else:
            _scatter_add(<float64_t*>po, <float64_t*>ps, pi, &it, step)
    return out
