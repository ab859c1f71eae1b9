# cython: language_level=3
"""A device buffer's view, in C fields: what every device's buffer (``strided.py``'s
``StridedBuffer``, subclassed by each device) is made of.

Design: a view is a storage, a shape, strides and an offset in elements, fixed when it is
made. Keeping them as C fields of a compiled base, as stage 2's host ``Buffer`` does, makes
a new view cost a C struct's filling, and lets compiled code (stage 4's frontend, the
cuda device's elementwise path) read a view without a Python attribute lookup.
"""


cpdef tuple contiguous_strides(shape):
    """Row-major strides of ``shape`` (a size-0 dim counts as 1, as in PyTorch)."""
    cdef Py_ssize_t k, n = len(shape), s = 1, d
    cdef list out = [0] * n
    for k in range(n - 1, -1, -1):
        out[k] = s
        d = shape[k]
        s *= d if d > 1 else 1
    return tuple(out)


cdef class StridedCore(BufferCore):
    """A strided view of a device storage: ``storage``, ``strides`` and ``offset`` (in
    elements), and ``numel``, beside ``BufferCore``'s shape and dtype."""

    def __init__(self, storage, shape, strides, Py_ssize_t offset, dtype):
        self.set_view(storage, tuple(shape), tuple(strides), offset, dtype)

    cdef void set_view(self, object storage, tuple shape, tuple strides, Py_ssize_t offset,
                       object dtype) noexcept:
        """Fill the view's fields (``numel`` from ``shape``)."""
        cdef Py_ssize_t n = 1, d
        for d in shape:
            n *= d
        self.storage, self.shape, self.strides, self.offset, self.dtype = storage, shape, strides, offset, dtype
        self.numel = n


cdef enum:
    MAX_DIMS = 64  # a launch's Params holds 64 words: no layout of more dimensions fits
    MAX_OPERANDS = 8  # the output and its inputs (``where`` has three)


def elementwise_layout(StridedCore out, list inputs):
    """The elementwise kernels' parameters for writing the view ``out`` from ``inputs``,
    each read at ``out``'s shape (a broadcast dimension has stride 0), and the number of
    elements: ``([n, ndim, sizes..., then per operand, out first: offset, strides...], n)``.
    Size-1 dimensions are dropped and dimensions contiguous in every operand merged, so a
    row-major operation is one dimension, whatever its rank."""
    cdef tuple shape = out.shape
    cdef Py_ssize_t nd = len(shape), nops = 1 + len(inputs), k, d, size, pad, dims = 0, n = 1
    cdef Py_ssize_t sizes[MAX_DIMS]
    cdef Py_ssize_t strides[MAX_OPERANDS][MAX_DIMS]
    cdef Py_ssize_t st[MAX_OPERANDS]
    cdef StridedCore x
    cdef bint merge
    if nd > MAX_DIMS or nops > MAX_OPERANDS:
        raise ValueError(f"an elementwise launch takes at most {MAX_DIMS} dimensions and "
                         f"{MAX_OPERANDS - 1} inputs, not {nd} and {nops - 1}")
    for d in range(nd):
        size = shape[d]
        n *= size
        if size == 1:
            continue
        st[0] = out.strides[d]
        for k in range(1, nops):
            x = inputs[k - 1]
            pad = nd - len(x.shape)
            st[k] = 0 if d < pad or <Py_ssize_t>x.shape[d - pad] == 1 else <Py_ssize_t>x.strides[d - pad]
        merge = dims > 0  # into the last dimension, where each operand steps past this one whole
        for k in range(nops):
            merge = merge and strides[k][dims - 1] == st[k] * size
        if not merge:
            sizes[dims] = 1
            dims += 1
        sizes[dims - 1] *= size
        for k in range(nops):
            strides[k][dims - 1] = st[k]
    cdef list params = [n, dims]
    for d in range(dims):
        params.append(sizes[d])
    for k in range(nops):
        params.append(out.offset if k == 0 else (<StridedCore>inputs[k - 1]).offset)
        for d in range(dims):
            params.append(strides[k][d])
    return params, n
