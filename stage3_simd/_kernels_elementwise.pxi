# Elementwise operations, casts, where and reductions: operands described once (sg3_operands);
# included by _kernels.pyx (csrc/table.hpp's entries, through T).

# ---------------------------------------------------------------- operands

cdef inline int _code(Buffer b):
    return b.code


cdef void _operands(sg3_operands* o, tuple shape, list bufs) except *:
    """Fill ``o`` for ``bufs`` (output first) over ``shape``: inputs broadcast by stride 0."""
    cdef Py_ssize_t sizes[MAXDIM]
    cdef Py_ssize_t st[MAXDIM]
    cdef int k, d, nd = len(shape)
    cdef Buffer b
    read_ints(shape, sizes)
    o.nops = len(bufs)
    o.ndim = nd
    for d in range(nd):
        o.shape[d] = sizes[d]
    for k in range(o.nops):
        b = bufs[k]
        o.data[k] = data_of(b)
        load_operand(b, nd, sizes, st)
        for d in range(nd):
            o.strides[k][d] = st[d]


# The backend's elementwise entry points: backend.py exports these functions themselves,
# since a layer of Python between the frontend and a small kernel costs more than the
# kernel. What the SIMD kernels do not cover goes to stage 2's routing (set_fallbacks).

# a stage's DType class -> its (unary, binary, bool dtype): stage 4 runs stage 3's backend
# as its own cpu device, and this one compiled module serves both stages
cdef dict _FALLBACKS = {}
# Below this many elements a kernel keeps the GIL: releasing and taking it back costs
# more than the work, and no other thread could do much in the meantime
cdef enum:
    GIL_FREE_FROM = 4096


cdef inline int _op_code(dict codes, str op):
    cdef PyObject* found = PyDict_GetItem(codes, op)
    return -1 if found == NULL else <int><object>found


def set_fallbacks(unary, binary, bool_dtype):
    """Stage 2's ``unary`` and ``binary``, for what no SIMD kernel covers, and the dtype
    comparisons return, for the stage whose dtypes are of ``bool_dtype``'s class."""
    _FALLBACKS[type(bool_dtype)] = (unary, binary, bool_dtype)


cdef void _elementwise(sg3_operands* o, tuple shape, Buffer out, Buffer a, Buffer b) except *:
    """Operands for ``out = f(a[, b])``: one flat run when every operand is contiguous and of
    ``out``'s shape (the common case, and the kernel's fastest loop), else strided."""
    if a.shape is out.shape or a.shape == shape:
        if contiguous_layout(a) and (b is None or ((b.shape is a.shape or b.shape == shape)
                                                   and contiguous_layout(b))):
            o.nops = 2 if b is None else 3
            o.ndim = 1
            o.shape[0] = out.numel
            o.data[0], o.data[1] = data_of(out), data_of(a)
            o.strides[0][0] = o.strides[1][0] = 1
            if b is not None:
                o.data[2] = data_of(b)
                o.strides[2][0] = 1
            return
    _operands(o, shape, [out, a] if b is None else [out, a, b])


def unary(str op, Buffer x, dtype=None):
    """``op`` of every element (stage 0's primitive); the result cast to ``dtype`` if given."""
    cdef int rc, opc = _op_code(UNARY_OPS, op)
    if (opc < 0 or x.code == BOOL or x.code == FLOAT16 or x.code == BFLOAT16
            or not is_float_code(x.code) and opc > LAST_INT_UNARY):
        return (<tuple>_FALLBACKS[type(x.dtype)])[0](op, x, dtype)
    cdef Buffer out = new_buffer(x.shape, x.dtype, x.code)
    cdef sg3_operands o
    if out.numel:
        _elementwise(&o, x.shape, out, x, None)
        if out.numel < GIL_FREE_FROM:
            rc = T.unary(opc, x.code, &o, NTHREADS)
        else:
            with nogil:
                rc = T.unary(opc, x.code, &o, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"{op}: no stage 3 kernel for {x.dtype}")
    return out if dtype is None or dtype is out.dtype else cast(out, dtype)


def binary(str op, Buffer a, Buffer b, dtype):
    """``op`` elementwise over broadcast ``a`` and ``b``, which hold ``dtype`` (cast first
    where they do not); comparisons return bool (stage 0's primitive)."""
    cdef int code = a.code if a.dtype is dtype else code_of(dtype), rc, opc = _op_code(BINARY_OPS, op)
    # the 2-byte floats' arithmetic (add to minimum) widens a block at a time in the kernel
    cdef bint half_arithmetic = (code == FLOAT16 or code == BFLOAT16) and 0 <= opc < POW
    if (opc < 0 or code == BOOL or (code == FLOAT16 or code == BFLOAT16) and not half_arithmetic
            or not is_float_code(code) and (opc == DIV or opc == POW)):
        return (<tuple>_FALLBACKS[type(dtype)])[1](op, a, b, dtype)
    if a.dtype is not dtype:
        a = cast(a, dtype)
    if b.dtype is not dtype:
        b = cast(b, dtype)
    shape = a.shape if a.shape is b.shape or a.shape == b.shape else broadcast_shapes(a.shape, b.shape)
    if shape is None:
        raise ValueError(f"{op}: shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast")
    cdef Buffer out
    if opc >= FIRST_COMPARISON:
        out = new_buffer(shape, (<tuple>_FALLBACKS[type(dtype)])[2], BOOL)
    else:
        out = new_buffer(shape, dtype, code)
    cdef sg3_operands o
    if out.numel:
        _elementwise(&o, shape, out, a, b)
        if out.numel < GIL_FREE_FROM:
            rc = T.binary(opc, code, &o, NTHREADS)
        else:
            with nogil:
                rc = T.binary(opc, code, &o, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"{op}: no stage 3 kernel for {dtype}")
    return out


def cast(Buffer x, dtype):
    """``x`` converted to ``dtype`` (a new contiguous buffer)."""
    cdef int src = x.code, dst = code_of(dtype), rc = SG3_OK
    cdef Buffer out = new_buffer(x.shape, dtype, dst)
    cdef sg3_operands o
    if out.numel:
        _operands(&o, x.shape, [out, x])
        with nogil:
            rc = T.cast(src, dst, &o, NTHREADS)
    if rc == SG3_ENONFINITE:
        raise ValueError(f"cast: cannot convert nan or inf to an integer dtype ({x.dtype} to {dtype})")
    if rc != SG3_OK:
        raise TypeError(f"cast: no stage 3 kernel from {x.dtype} to {dtype}")
    return out


def where(Buffer cond, Buffer a, Buffer b, tuple shape):
    cdef Buffer out = new_buffer(shape, a.dtype, a.code)
    cdef sg3_operands o
    cdef int dtype = a.code, rc
    if out.numel:
        _operands(&o, shape, [out, cond, a, b])
        with nogil:
            rc = T.where(dtype, &o, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"where: no stage 3 kernel for {a.dtype}")
    return out


# ---------------------------------------------------------------- reductions

cdef void _fill(Buffer acc, double value):
    cdef Py_ssize_t i, n = acc.numel
    cdef char* p = data_of(acc)
    if acc.code == FLOAT64:
        for i in range(n):
            (<double*>p)[i] = value
    else:
        for i in range(n):
            (<float*>p)[i] = <float>value


def reduce(str op, Buffer x, axes, bint keepdim):
    """Sum, prod, max or min of a float buffer over ``axes``: (accumulator, kept shape,
    result shape). Sums and products accumulate in float64 (the caller casts back)."""
    cdef int opc = REDUCE_OPS[op], d, rc, dtype = x.code
    cdef bint reduced[MAXDIM]
    for d in range(x.ndim):
        reduced[d] = False
    for d in axes:
        reduced[d] = True
    kept = tuple([x.shape[d] for d in range(x.ndim) if not reduced[d]])
    out_shape = tuple([1 if reduced[d] else x.shape[d] for d in range(x.ndim)]) if keepdim else kept
    cdef int acc_code = FLOAT64 if op in ("sum", "prod") else x.code
    cdef Buffer acc = new_buffer(kept, x.dtype if acc_code == x.code else None, acc_code)
    _fill(acc, 0.0 if op == "sum" else 1.0 if op == "prod" else float("-inf") if op == "max" else float("inf"))
    cdef sg3_operands o
    cdef Py_ssize_t s = 1
    o.nops = 2
    o.ndim = x.ndim
    o.data[0] = data_of(acc)
    o.data[1] = data_of(x)
    for d in range(x.ndim - 1, -1, -1):  # the accumulator: contiguous over the kept dims
        o.shape[d] = x.shape[d]
        o.strides[1][d] = x.strides[d]
        o.strides[0][d] = 0 if reduced[d] else s
        if not reduced[d]:
            s *= x.shape[d]
    if x.numel:
        with nogil:
            rc = T.reduce(opc, dtype, &o, -1, NTHREADS)
        if rc != SG3_OK:
            raise TypeError(f"{op}: no stage 3 kernel for {x.dtype}")
    return acc, out_shape


def arg_reduce(str op, Buffer x, int axis, bint keepdim, out_dtype):
    """Index (int64) of the first max/min (or first NaN) along ``axis`` of a float buffer."""
    cdef int d, rc, dtype = x.code
    cdef int opc = SG3_ARGMAX if op == "argmax" else SG3_ARGMIN
    keep_shape = tuple([1 if d == axis else x.shape[d] for d in range(x.ndim)])
    out_shape = keep_shape if keepdim else tuple([x.shape[d] for d in range(x.ndim) if d != axis])
    cdef Buffer out = new_buffer(out_shape, out_dtype, INT64)
    if out.numel == 0:
        return out
    cdef sg3_operands o
    cdef tuple ost = c_strides(keep_shape)
    o.nops = 2
    o.ndim = x.ndim
    o.data[0] = data_of(out)
    o.data[1] = data_of(x)
    for d in range(x.ndim):
        o.shape[d] = x.shape[d]
        o.strides[0][d] = 0 if d == axis else <Py_ssize_t>ost[d]
        o.strides[1][d] = x.strides[d]
    with nogil:
        rc = T.reduce(opc, dtype, &o, axis, NTHREADS)
    if rc != SG3_OK:
        raise TypeError(f"{op}: no stage 3 kernel for {x.dtype}")
    return out
