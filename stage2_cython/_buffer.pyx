"""Buffer: a strided view over a Storage, and what only needs its layout.

Views (``reshape`` where the strides allow, ``permute expand slice diagonal windows
alias``) share the storage and touch no element, as in stage 1. A Buffer exports the
buffer protocol with its own shape and byte strides, so ``np.asarray(buf)`` and
``memoryview(buf)`` see the tensor's elements in place, transposed and broadcast views
included. ``copy_into`` is the strided copy every kernel module uses to materialise.
"""
cimport cython
from cpython.buffer cimport PyBUF_STRIDES
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy

from stage2_cython._iter cimport NdIter, iter_next, iter_prepare
from stage2_cython._storage cimport Storage, describe_elements, foreign_storage, new_storage
from stage2_cython._types cimport (BFLOAT16, BOOL, FLOAT16, FLOAT32, FLOAT64, INT8, INT16, INT32, INT64,
                                   MAXDIM, PY_SSIZE_T_MAX, UINT8, bfloat16_to_float, float32_t,
                                   float64_t, half_to_float, int8_t, int16_t, itemsize_of, uint16_t,
                                   word_t)

cdef dict _CODES = {"bool": BOOL, "int32": INT32, "int64": INT64, "float32": FLOAT32, "float64": FLOAT64,
                    "float16": FLOAT16, "bfloat16": BFLOAT16, "uint8": UINT8, "int8": INT8, "int16": INT16}
cdef dict _BY_DTYPE = {}  # DType object -> code, filled on first sight


cdef int code_of(object dtype) except -1:
    code = _BY_DTYPE.get(dtype)
    if code is None:
        code = _BY_DTYPE[dtype] = _CODES[dtype.name]
    return code


cdef tuple _ONE = (1,)


cdef tuple c_strides(tuple shape):
    # a size-0 dim counts as 1, as in PyTorch (no element is addressed either way)
    cdef Py_ssize_t n = len(shape), s = 1, i, d
    if n <= 1:
        return _ONE if n else ()  # the commonest cases, without building anything
    cdef Py_ssize_t out[MAXDIM]
    for i in range(n - 1, -1, -1):
        out[i] = s
        d = <Py_ssize_t>shape[i]
        s *= d if d > 1 else 1
    return tuple([out[i] for i in range(n)])


cdef void read_ints(tuple t, Py_ssize_t* out) noexcept:
    cdef Py_ssize_t i
    for i in range(len(t)):
        out[i] = <Py_ssize_t>t[i]


cdef Py_ssize_t checked_numel(tuple shape) except -1:
    """The element count of ``shape``. A negative size, or sizes other than 0 whose product
    (and so some stride) does not fit a Py_ssize_t, raise ValueError: the frontend
    refuses these first (shapes.check), and this keeps a wrapped count from ever
    describing a tensor."""
    cdef Py_ssize_t n = 1, span = 1, s
    if len(shape) > MAXDIM:
        raise ValueError(f"tensors have at most {MAXDIM} dims, got shape {list(shape)}")
    for item in shape:
        s = item
        if s < 0:
            raise ValueError(f"negative dimension {s} in shape {list(shape)}")
        if s > 1:
            if span > PY_SSIZE_T_MAX // s:
                raise ValueError(f"shape {list(shape)} has more elements than an int64 can count")
            span *= s
        n *= s
    return n


cdef int _check_bounds(Storage storage, tuple shape, tuple strides, Py_ssize_t offset, int code) except -1:
    """ValueError unless every element of the (non-empty) view, of dtype ``code``, lies
    inside ``storage`` (whose elements may be of another size: a dtype view)."""
    cdef Py_ssize_t lo = offset, hi = offset, i, n, st, reach
    cdef bint inside = offset >= 0
    for i in range(len(shape)):
        n = <Py_ssize_t>shape[i] - 1
        st = strides[i]
        if not inside or n == 0 or st == 0:
            continue
        if st < -PY_SSIZE_T_MAX or n > PY_SSIZE_T_MAX // (st if st > 0 else -st):
            inside = False  # the reach itself overflows
            continue
        reach = n * st
        if reach > 0:
            inside = hi <= PY_SSIZE_T_MAX - reach
            hi += reach if inside else 0
        else:
            lo += reach  # no overflow: lo >= 0 and reach >= -PY_SSIZE_T_MAX
            inside = lo >= 0
    cdef Py_ssize_t length = storage.length
    if code != storage.code:
        length = storage.length * itemsize_of(storage.code) // itemsize_of(code)
    if not inside or hi >= length:
        raise ValueError(f"a view of shape {list(shape)}, strides {list(strides)} and offset {offset} "
                         f"would reach outside its storage of {length} elements")
    return 0


cdef Buffer make_view(Storage storage, tuple shape, tuple strides, Py_ssize_t offset, object dtype,
                      int code):
    cdef Buffer b = Buffer.__new__(Buffer)
    cdef Py_ssize_t n = checked_numel(shape)
    if len(strides) != len(shape):
        raise ValueError(f"a view needs one stride per dim, got shape {list(shape)} and strides "
                         f"{list(strides)}")
    if n:
        _check_bounds(storage, shape, strides, offset, code)
    b.storage = storage
    b.shape = shape
    b.strides = strides
    b.offset = offset
    b.dtype = dtype
    b.code = code
    b.ndim = len(shape)
    b.numel = n
    return b


cdef Buffer new_buffer(tuple shape, object dtype, int code):
    """A contiguous buffer whose contents are undefined (every kernel overwrites them)."""
    cdef Py_ssize_t n = checked_numel(shape)
    cdef Buffer b = Buffer.__new__(Buffer)
    b.storage = new_storage(n, code)  # a fresh storage of n elements: no bounds to check
    b.shape = shape
    b.strides = c_strides(shape)
    b.offset = 0
    b.dtype = dtype
    b.code = code
    b.ndim = len(shape)
    b.numel = n
    return b


cdef int load_operand(Buffer b, int ndim, Py_ssize_t* shape, Py_ssize_t* st) except -1:
    """``b``'s strides broadcast to ``shape`` (``ndim`` dims): 0 where it repeats."""
    cdef int pad = ndim - b.ndim, i
    cdef Py_ssize_t n
    for i in range(ndim):
        if i < pad:
            st[i] = 0
            continue
        n = <Py_ssize_t>b.shape[i - pad]
        st[i] = 0 if n == 1 and shape[i] != 1 else <Py_ssize_t>b.strides[i - pad]
    return 0


cdef char* data_of(Buffer b) noexcept nogil:
    return b.storage.ptr + b.offset * itemsize_of(b.code)


cdef bint contiguous_layout(Buffer b) noexcept:
    cdef Py_ssize_t expected = 1, n, i
    if b.numel == 0:
        return True
    for i in range(b.ndim - 1, -1, -1):
        n = <Py_ssize_t>b.shape[i]
        if n != 1 and <Py_ssize_t>b.strides[i] != expected:
            return False
        expected *= n
    return True


cdef object _element(char* p, int code):
    if code == BOOL:
        return (<uint8_t*>p)[0] != 0
    if code == INT32:
        return (<int32_t*>p)[0]
    if code == INT64:
        return (<int64_t*>p)[0]
    if code == FLOAT32:
        return (<float32_t*>p)[0]
    if code == UINT8:
        return (<uint8_t*>p)[0]
    if code == INT8:
        return (<int8_t*>p)[0]
    if code == INT16:
        return (<int16_t*>p)[0]
    if code == FLOAT16:
        return half_to_float((<uint16_t*>p)[0])
    if code == BFLOAT16:
        return bfloat16_to_float((<uint16_t*>p)[0])
    return (<float64_t*>p)[0]


cdef list _elements(Buffer c):
    # memoryview reads no 2-byte float; read those one by one
    cdef char* p = data_of(c)
    return [_element(p + 2 * i, c.code) for i in range(c.numel)]


def _nest(list flat, tuple shape):
    """Row-major ``flat`` as nested lists of ``shape`` (at least one dim)."""
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


@cython.auto_pickle(False)
cdef class BufferCore:
    """The shape and dtype every device's buffer has. A host ``Buffer`` is made by the
    backend's functions; a device's view (stage 4's ``_strided.StridedCore``) subclasses
    this one and sets them in compiled code."""


cdef class Buffer(BufferCore):
    """Made by the backend's functions (``new_buffer``, ``make_view``), never directly."""

    def __reduce__(self):
        # views pickled together keep sharing one storage (pickle's and deepcopy's memo)
        return _rebuild, (self.storage, self.shape, self.strides, self.offset, self.dtype)

    @property
    def version(self):
        return self.storage.version

    @version.setter
    def version(self, value):
        self.storage.version = value

    def values(self):
        """The elements as Python numbers, row-major."""
        cdef Buffer c = self if contiguous_layout(self) else copy(self)
        if itemsize_of(c.code) == 2:
            return _elements(c)
        return memoryview(c.storage)[c.offset:c.offset + c.numel].tolist()

    def item(self):
        return _element(data_of(self), self.code)

    def tolist(self):
        if self.ndim == 0:
            return self.item()
        cdef Buffer c = self if contiguous_layout(self) else copy(self)
        if itemsize_of(c.code) == 2:
            return _nest(_elements(c), c.shape)
        return memoryview(c).tolist()

    def nbytes(self):
        return self.numel * itemsize_of(self.code)

    def __repr__(self):
        return f"Buffer(shape={self.shape}, strides={self.strides}, offset={self.offset}, {self.dtype!r})"

    def __getbuffer__(self, Py_buffer* view, int flags):
        cdef Py_ssize_t item = itemsize_of(self.code), i
        cdef Py_ssize_t* dims
        if (flags & PyBUF_STRIDES) != PyBUF_STRIDES and not contiguous_layout(self):
            raise BufferError("this view is not contiguous: request strides (NumPy and memoryview do)")
        dims = <Py_ssize_t*>PyMem_Malloc((2 * self.ndim + 1) * sizeof(Py_ssize_t))
        if dims == NULL:
            raise MemoryError()
        for i in range(self.ndim):
            dims[i] = <Py_ssize_t>self.shape[i]
            dims[self.ndim + i] = <Py_ssize_t>self.strides[i] * item
        view.obj = self
        describe_elements(view, data_of(self), self.numel * item, self.code, flags, self.ndim, dims,
                          dims + self.ndim, dims)

    def __releasebuffer__(self, Py_buffer* view):
        PyMem_Free(view.internal)


# ---------------------------------------------------------------- strided copy

cdef void _copy_rows(word_t* dst, word_t* src, NdIter* it) noexcept nogil:
    cdef Py_ssize_t _row, i, n = it.inner, sd = it.ist[0], ss = it.ist[1]
    cdef word_t* d
    cdef word_t* s
    for _row in range(it.rows):
        d = dst + it.off[0]
        s = src + it.off[1]
        if sd == 1 and ss == 1:
            memcpy(d, s, n * sizeof(word_t))
        elif ss == 0:
            for i in range(n):
                d[i * sd] = s[0]
        else:
            for i in range(n):
                d[i * sd] = s[i * ss]
        iter_next(it)


cdef int copy_into(Buffer dst, Buffer src) except -1:
    """Write ``src`` (same dtype, broadcast to ``dst``'s shape) into ``dst``'s elements."""
    cdef NdIter it
    cdef Py_ssize_t shape[MAXDIM]
    cdef char* d = data_of(dst)
    cdef char* s = data_of(src)
    read_ints(dst.shape, it.size)
    read_ints(dst.shape, shape)
    read_ints(dst.strides, it.st[0])
    load_operand(src, dst.ndim, shape, it.st[1])
    it.nops = 2
    it.off[0] = it.off[1] = 0
    iter_prepare(&it, dst.ndim)
    cdef Py_ssize_t size = itemsize_of(dst.code)
    with nogil:
        if size == 1:
            _copy_rows(<uint8_t*>d, <uint8_t*>s, &it)
        elif size == 2:
            _copy_rows(<uint16_t*>d, <uint16_t*>s, &it)
        elif size == 4:
            _copy_rows(<uint32_t*>d, <uint32_t*>s, &it)
        else:
            _copy_rows(<uint64_t*>d, <uint64_t*>s, &it)
    return 0


cpdef Buffer copy(Buffer x):
    cdef Buffer out = new_buffer(x.shape, x.dtype, x.code)
    if x.numel:
        copy_into(out, x)
    return out


# ---------------------------------------------------------------- shapes

def prod(shape):
    return checked_numel(tuple(shape))


def contiguous_strides(shape):
    return c_strides(tuple(shape))


def broadcast_shapes(*shapes):
    """NumPy's rule: dims align from the right; each is 1 or the common size. None when
    the shapes do not broadcast."""
    cdef Py_ssize_t ndim = 0, i, size, d, k
    for s in shapes:
        if len(s) > ndim:
            ndim = len(s)
    if len(shapes) == 2 and shapes[0] == shapes[1]:  # the common case: nothing to do
        return tuple(shapes[0])
    out = [1] * ndim
    for i in range(ndim):
        size = 1
        for s in shapes:
            k = i - ndim + len(s)
            if k < 0:
                continue
            d = <Py_ssize_t>s[k]
            if d != 1:
                if size != 1 and size != d:
                    return None
                size = d
        out[i] = size
    return tuple(out)


# ---------------------------------------------------------------- views

def _view_strides(tuple shape, tuple strides, tuple new_shape):
    """Strides that lay ``new_shape`` over the same elements, or None when the layout does
    not allow a view (PyTorch's rule, so views get PyTorch's strides)."""
    cdef Py_ssize_t n_old = len(shape), n_new = len(new_shape), d, view_d, base
    cdef Py_ssize_t tensor_numel, view_numel, total = 1
    for d in range(n_old):
        total *= <Py_ssize_t>shape[d]
    if total == 0:
        return c_strides(new_shape)
    if n_old == 0:
        return (1,) * n_new
    new = [0] * n_new
    view_d = n_new - 1
    base = <Py_ssize_t>strides[n_old - 1]
    tensor_numel = view_numel = 1
    for d in range(n_old - 1, -1, -1):
        tensor_numel *= <Py_ssize_t>shape[d]
        # a chunk ends where the next dim out does not continue it in memory
        if d == 0 or (shape[d - 1] != 1 and <Py_ssize_t>strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new[view_d] = view_numel * base
                view_numel *= <Py_ssize_t>new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base = <Py_ssize_t>strides[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(new)


def reshape(Buffer x, shape):
    """A view when the strides allow one, else a contiguous copy."""
    shape = tuple(shape)
    if contiguous_layout(x):
        return make_view(x.storage, shape, c_strides(shape), x.offset, x.dtype, x.code)
    st = _view_strides(x.shape, x.strides, shape)
    if st is None:
        x = copy(x)
        st = c_strides(shape)
    return make_view(x.storage, shape, st, x.offset, x.dtype, x.code)


def permute(Buffer x, dims):
    shape = tuple([x.shape[d] for d in dims])
    strides = tuple([x.strides[d] for d in dims])
    return make_view(x.storage, shape, strides, x.offset, x.dtype, x.code)


cpdef Buffer expand(Buffer x, tuple shape):
    """Broadcast to ``shape``: expanded dims get stride 0 (PyTorch's strides)."""
    cdef Py_ssize_t n = len(shape), pad = n - x.ndim, i, d, size, stride
    out = [0] * n
    for i in range(n - 1, -1, -1):
        d = i - pad
        size = <Py_ssize_t>x.shape[d] if d >= 0 else 1
        if d >= 0:
            stride = <Py_ssize_t>x.strides[d]
        else:
            stride = <Py_ssize_t>shape[i + 1] * <Py_ssize_t>out[i + 1] if i + 1 < n else 1
        out[i] = 0 if size != <Py_ssize_t>shape[i] else stride
    return make_view(x.storage, shape, tuple(out), x.offset, x.dtype, x.code)


def slice(Buffer x, starts, steps, counts):  # noqa: A001  (the primitive's name at every stage)
    cdef Py_ssize_t offset = x.offset, d
    strides = []
    for d in range(x.ndim):
        offset += <Py_ssize_t>starts[d] * <Py_ssize_t>x.strides[d]
        strides.append(<Py_ssize_t>x.strides[d] * <Py_ssize_t>steps[d])
    return make_view(x.storage, tuple(counts), tuple(strides), offset, x.dtype, x.code)


def alias(Buffer x):
    return make_view(x.storage, x.shape, x.strides, x.offset, x.dtype, x.code)


def is_contiguous(Buffer x):
    return contiguous_layout(x)


def contiguous(Buffer x):
    return x if contiguous_layout(x) else copy(x)


def strides(Buffer x):
    return x.strides


def storage_offset(Buffer x):
    return x.offset


def storage_id(Buffer x):
    return id(x.storage)


def data_ptr(Buffer x):
    """The address of element 0, as PyTorch reports it."""
    return <uintptr_t>data_of(x)


def shares_storage(Buffer a, Buffer b):
    return a.storage is b.storage


def view(Buffer x, shape, strides, Py_ssize_t offset):
    """A view of ``x``'s storage with the given layout (``diagonal``, ``windows``)."""
    return make_view(x.storage, tuple(shape), tuple(strides), offset, x.dtype, x.code)


def reinterpret(Buffer x, tuple shape, tuple strides, Py_ssize_t offset, dtype):
    """A view of ``x``'s bytes read as ``dtype``, with a layout counted in its elements."""
    return make_view(x.storage, shape, strides, offset, dtype, code_of(dtype))


def from_memory(object obj, dtype):
    """A 1-d buffer of ``dtype`` over the memory of ``obj`` (a writable, C-contiguous object
    with the buffer protocol, its length a whole number of elements), without a copy:
    ``obj`` is kept alive by the storage, and writes through either side are seen by both."""
    cdef unsigned char[::1] raw = memoryview(obj).cast("B")
    cdef int code = code_of(dtype)
    cdef Py_ssize_t n = raw.shape[0] // itemsize_of(code)
    if n == 0:
        return new_buffer((0,), dtype, code)
    return make_view(foreign_storage(<char*>&raw[0], n, code, raw), (n,), (1,), 0, dtype, code)


def empty(shape, dtype):
    """A contiguous buffer of ``shape`` whose contents are undefined."""
    return new_buffer(tuple(shape), dtype, code_of(dtype))


def write(Buffer dst, Buffer src):
    """Copy ``src`` (dst's dtype, broadcastable to dst's shape) into ``dst``'s elements."""
    if src.code != dst.code:
        raise TypeError(f"write: {src.dtype} values into a {dst.dtype} buffer")
    if broadcast_shapes(dst.shape, src.shape) != dst.shape:
        raise ValueError(f"write: shape {list(src.shape)} does not broadcast to {list(dst.shape)}")
    copy_into(dst, src)


def _rebuild(Storage storage, tuple shape, tuple strides, Py_ssize_t offset, dtype):
    return make_view(storage, shape, strides, offset, dtype, code_of(dtype))
