"""Stage 1's backend: strided storage, zero-copy views, a buffer pool.

A ``Buffer`` is a view: ``shape``, ``strides`` and ``offset`` (in elements) over a
``Storage``, a flat ``array.array`` shared by every view of it. ``version`` lives on the
storage, so an in-place write through any view is seen by autograd through all of them.

The primitive set is stage 0's, under the same names and signatures (see
``stage0_python/backend.py``). What changes:

- movement (``reshape`` where the strides allow, ``permute expand slice diagonal
  windows alias``) returns views: O(1), no element is touched;
- kernels read operands through their strides: a contiguous operand is used as it lies,
  a strided one is gathered a row at a time with C-level extended slices;
- results are packed (``struct``) into arrays from the pool (``pool.py``);
- the in-place primitives write into the storage, through the destination's strides.

Stage 0's pure helpers are imported, not copied: the scalar functions and value
computations from its backend, the shape, stride and view rules from its layout library
(``stage0_python/layout.py``). What stage 1 rewrites is only how elements are found and
stored.
"""
import operator
import struct
from array import array
from collections import namedtuple
from itertools import repeat

from stage0_python import backend as _s0
from stage0_python import layout
from stage0_python.backend import (
    BOOL_RESULT,
    UNARY,
    argmax_of,
    argmin_of,
    binary_op,
    creation_from_values,
    fill_value,
    fold_values,
    map_safe,
    to_int,
    unfold_values,
)
from stage0_python.layout import (
    VersionOnStorage,
    axis_positions,
    broadcast_shapes,
    contiguous_strides,
    diagonal_layout,
    overlaps,
    prod,
    reduced_shape,
    refuse_overlapping_write,
    row_major,
    strided_indices,
    view_strides,
    windows_layout,
)

from .capabilities import refusal
from .dtypes import bool_, int64
from .pool import POOL

FUSED = frozenset()
VIEWS = True  # movement results alias their input


class Storage:
    """A flat array shared by every view of it. When the last view dies, the array goes
    back to the pool."""
    __slots__ = ("data", "version")

    def __init__(self, data):
        self.data = data
        self.version = 0

    def __del__(self, _give=POOL.give):  # bound now: still callable at interpreter exit
        _give(self.data)

    # copies and unpickled storages take their array from the pool like any other, so
    # the bytes they give back when they die were counted when they were made
    def __deepcopy__(self, memo):
        return _storage_of(self.data.typecode, self.data)

    def __reduce__(self):
        return _storage_of, (self.data.typecode, self.data.tobytes())


def _storage_of(typecode, contents):
    """A new storage holding a copy of ``contents`` (an array or its bytes)."""
    src = contents if isinstance(contents, array) else array(typecode, contents)
    arr = POOL.take(typecode, len(src), src.itemsize)
    arr[:] = src
    return Storage(arr)


class Buffer(VersionOnStorage):
    """``dense``: the view is its whole storage in row-major order, so a kernel can use
    the storage's array as it lies (the common case, tested once here). ``version`` is
    the storage's."""
    __slots__ = ("storage", "shape", "strides", "offset", "dtype", "numel", "dense")

    def __init__(self, storage, shape, strides, offset, dtype):
        self.storage = storage
        self.shape = shape = tuple(shape)
        self.strides = strides = tuple(strides)
        self.offset = offset
        self.dtype = dtype
        self.numel = n = prod(shape)
        self.dense = offset == 0 and n == len(storage.data) and strides == _contig(shape)

    def values(self):
        """The elements as Python numbers, row-major."""
        if self.dtype is bool_:
            return [bool(v) for v in _flat(self)]
        return _flat(self).tolist()

    def item(self):
        v = self.storage.data[self.offset]
        return bool(v) if self.dtype is bool_ else v

    tolist = _s0.Buffer.tolist  # built from values(): layout-independent
    nbytes = _s0.Buffer.nbytes


# ---------------------------------------------------------------- layout

_CONTIG = {}


def _contig(shape):
    """Row-major strides of ``shape`` (cached: every result asks)."""
    st = _CONTIG.get(shape)
    if st is None:
        if len(_CONTIG) > 4096:
            _CONTIG.clear()
        st = _CONTIG[shape] = contiguous_strides(shape)
    return st


def _fresh(arr, shape, dtype):
    """A new contiguous buffer owning ``arr``."""
    b = _alloc_buffer(Buffer)
    b.storage = Storage(arr)
    b.shape = shape
    b.strides = _contig(shape)
    b.offset = 0
    b.dtype = dtype
    b.numel = len(arr)
    b.dense = True
    return b


_alloc_buffer = object.__new__


def merged_dims(shape, strides):
    """Sizes and strides with size-1 dims dropped and each run of dims that steps
    through memory as one dim merged: the fewest loops that visit the view."""
    sizes, sts = [], []
    for n, s in zip(shape, strides):
        if n == 1:
            continue
        if sizes and sts[-1] == s * n:
            sizes[-1] *= n
            sts[-1] = s
        else:
            sizes.append(n)
            sts.append(s)
    return sizes, sts


def _rows(x):
    """(start of each row, row length, step between elements): the view as runs that
    one extended slice reads or writes."""
    sizes, sts = merged_dims(x.shape, x.strides)
    if not sizes:
        return [x.offset], 1, 1
    return strided_indices(sizes[:-1], sts[:-1], x.offset), sizes[-1], sts[-1]


def _flat(x):
    """x's elements in row-major order as an array of its typecode. When x is its whole
    storage, laid out in order, this is the storage's own array: read it, never write it."""
    data = x.storage.data
    if x.dense:
        return data
    if x.numel == 0:
        return array(data.typecode)
    starts, length, step = _rows(x)
    if step == 0:  # an expanded (broadcast) innermost dim
        out = array(data.typecode)
        for o in starts:
            out += array(data.typecode, (data[o],)) * length
        return out
    if len(starts) == 1:
        o = starts[0]
        if step == 1 and o == 0 and length == len(data):
            return data
        return data[o:o + (length - 1) * step + 1:step]
    if len(set(starts)) == 1:  # every row the same (expanded outer dims): repeat one row
        o = starts[0]
        return data[o:o + (length - 1) * step + 1:step] * len(starts)
    out = array(data.typecode)
    span = (length - 1) * step + 1
    for o in starts:
        out += data[o:o + span:step]
    return out


def _write(x, vals):
    """Store ``vals`` (an array of x's typecode, row-major) into x's elements. Where
    elements share memory the last write wins: callers refuse writes where that matters."""
    data = x.storage.data
    if not x.numel:
        return
    if vals is data:  # the source is this storage laid out in order: read a copy
        vals = array(vals.typecode, vals)
    if overlaps(x):
        # keep the last index of each broadcast dim, in the target and in the values
        starts = [n - 1 if s == 0 else 0 for n, s in zip(x.shape, x.strides)]
        counts = [1 if s == 0 else n for n, s in zip(x.shape, x.strides)]
        ones = [1] * len(counts)
        src = Buffer(_Borrowed(vals), x.shape, _contig(x.shape), 0, x.dtype)
        x, vals = slice(x, starts, ones, counts), _flat(slice(src, starts, ones, counts))
    starts, length, step = _rows(x)
    span = (length - 1) * step + 1
    if len(starts) == 1:
        o = starts[0]
        data[o:o + span:step] = vals
        return
    for k, o in enumerate(starts):
        data[o:o + span:step] = vals[k * length:(k + 1) * length]


_Borrowed = namedtuple("_Borrowed", "data")  # an array viewed as a storage it does not own


def _view(x, shape, strides, offset):
    return Buffer(x.storage, shape, strides, offset, x.dtype)


# ---------------------------------------------------------------- allocation

_PACKERS = {}


def _packer(typecode, n):
    key = (typecode, n)
    p = _PACKERS.get(key)
    if p is None:
        if len(_PACKERS) > 4096:
            _PACKERS.clear()
        p = _PACKERS[key] = struct.Struct(f"{n}{typecode}")
    return p


def _new(dtype, shape, values):
    """A contiguous buffer of ``values`` (a list or tuple, row-major) in an array from the
    pool. ``struct`` packs straight into it: faster than building an array from a list."""
    shape = tuple(shape)
    n = prod(shape)
    tc = dtype.typecode
    arr = POOL.take(tc, n, dtype.itemsize)
    if n:
        try:
            _packer(tc, n).pack_into(arr, 0, *values)
        except (struct.error, OverflowError, TypeError):
            # conversions struct does not make (float to int, integer wrap-around):
            # stage 0's rules, then copied in
            arr[:] = _s0.pack_values(list(values), dtype)
    return _fresh(arr, shape, dtype)


def _fill(arr, n):
    """Repeat arr[0] over arr[:n] by doubling copies inside the array (no allocation)."""
    mv = memoryview(arr)
    k = 1
    while k < n:
        c = min(k, n - k)
        mv[k:k + c] = mv[:c]
        k += c


# ---------------------------------------------------------------- creation

def from_list(values, shape, dtype):
    if dtype is bool_:
        values = [1 if v else 0 for v in values]
    return _new(dtype, shape, values)


def full(shape, value, dtype):
    n = prod(shape)
    value = fill_value(value, dtype)
    try:
        one = array(dtype.typecode, (value,))
    except OverflowError:  # an int beyond the dtype: wraps, as stage 0 does
        return from_list([value] * n, shape, dtype)
    arr = POOL.take(dtype.typecode, n, dtype.itemsize)
    if n:
        arr[0] = one[0]
        _fill(arr, n)
    return _fresh(arr, tuple(shape), dtype)


arange, uniform, normal, randint = creation_from_values(from_list)  # stage 0's values, stored here


def cast(x, dtype):
    if dtype is x.dtype:
        return alias(x)
    vals = _flat(x)
    if dtype is bool_:
        vals = [1 if v else 0 for v in vals]
    elif not dtype.is_floating_point and x.dtype.is_floating_point:
        vals = [to_int(v) for v in vals]
    else:
        vals = vals.tolist()
    return _new(dtype, x.shape, vals)


# ---------------------------------------------------------------- elementwise

def unary(op, x, dtype=None):
    f = UNARY[op]
    out = dtype or (bool_ if op in BOOL_RESULT else x.dtype)
    vals = x.values() if x.dtype is bool_ else _flat(x)
    if op in ("sign", "abs", "neg") and not out.is_floating_point:
        f = {"sign": lambda v: (v > 0) - (v < 0), "abs": abs, "neg": lambda v: -v}[op]
    return _new(out, x.shape, list(map(f, vals)))


def _values_as(x, shape):
    """x's elements broadcast to ``shape``, row-major."""
    return _flat(x) if x.shape == shape else _flat(expand(x, shape))


def binary(op, a, b, dtype):
    shape = broadcast_shapes(a.shape, b.shape)
    out = bool_ if op in BOOL_RESULT else dtype
    op, f = binary_op(op, dtype)
    na, nb = a.numel, b.numel
    if nb == 1 and na != 1:
        xs, y = _values_as(a, shape), b.storage.data[b.offset]
        vals = map_safe(op, f, lambda g: list(map(g, xs, repeat(y))))
    elif na == 1 and nb != 1:
        x, ys = a.storage.data[a.offset], _values_as(b, shape)
        vals = map_safe(op, f, lambda g: list(map(g, repeat(x), ys)))
    else:
        xs, ys = _values_as(a, shape), _values_as(b, shape)
        vals = map_safe(op, f, lambda g: list(map(g, xs, ys)))
    return _new(out, shape, vals)


def where(cond, a, b):
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)
    cs, xs, ys = _values_as(cond, shape), _values_as(a, shape), _values_as(b, shape)
    return _new(a.dtype, shape, [x if c else y for c, x, y in zip(cs, xs, ys)])


# ---------------------------------------------------------------- reductions

def _group_last(x, axes):
    """x's elements with ``axes`` moved last (a permuted view, read through its strides)
    and the size of each group that one output element reduces."""
    keep = [d for d in range(len(x.shape)) if d not in axes]
    order = keep + sorted(axes)
    return _flat(permute(x, order)), prod(x.shape[d] for d in axes)


def reduce(op, x, axes, keepdim, dtype=None):
    out = dtype or (bool_ if op in ("any", "all") else x.dtype)
    vals, group = _group_last(x, axes)
    res = _s0.reduce_groups(op, vals, group, x, axes)
    return _new(out, reduced_shape(x.shape, axes, keepdim), res)


def arg_reduce(op, x, axis, keepdim):
    f = argmax_of if op == "argmax" else argmin_of
    vals, group = _group_last(x, (axis,))
    vals = vals.tolist()
    res = [f(vals[i:i + group]) for i in range(0, len(vals), group)]
    return _new(int64, reduced_shape(x.shape, (axis,), keepdim), res)


# ---------------------------------------------------------------- sort and scan along an axis

def _along_last(x, axis):
    """x's elements with ``axis`` moved last (read through a permuted view), that shape,
    and the order that moves it back."""
    order = [d for d in range(len(x.shape)) if d != axis] + [axis]
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return _flat(permute(x, order)).tolist(), tuple(x.shape[d] for d in order), inverse


def _back(dtype, pshape, vals, inverse):
    return copy(permute(_new(dtype, pshape, vals), inverse))


def sort(x, axis, descending):
    vals, pshape, inverse = _along_last(x, axis)
    v, i = _s0.sort_rows(vals, x.shape[axis], descending) if vals else ([], [])
    return _back(x.dtype, pshape, v, inverse), _back(int64, pshape, i, inverse)


def scan(op, x, axis):
    vals, pshape, inverse = _along_last(x, axis)
    v, i = _s0.scan_rows(op, vals, x.shape[axis]) if vals else ([], [])
    if op in ("max", "min"):
        return _back(x.dtype, pshape, v, inverse), _back(int64, pshape, i, inverse)
    return _back(x.dtype, pshape, v, inverse), None


# ---------------------------------------------------------------- movement: views

def reshape(x, shape):
    """A view when the strides allow one, else a contiguous copy."""
    shape = tuple(shape)
    st = _contig(shape) if x.dense else view_strides(x.shape, x.strides, shape)
    if st is None:
        x = copy(x)
        st = _contig(shape)
    return _view(x, shape, st, x.offset)


def permute(x, dims):
    return _view(x, [x.shape[d] for d in dims], [x.strides[d] for d in dims], x.offset)


def expand(x, shape):
    """Broadcast to ``shape``: expanded dims get stride 0 (PyTorch's strides)."""
    shape = tuple(shape)
    pad = len(shape) - len(x.shape)
    out = [0] * len(shape)
    for i in range(len(shape) - 1, -1, -1):
        d = i - pad
        size = x.shape[d] if d >= 0 else 1
        stride = x.strides[d] if d >= 0 else (shape[i + 1] * out[i + 1] if i + 1 < len(shape) else 1)
        out[i] = 0 if size != shape[i] else stride
    return _view(x, shape, out, x.offset)


def slice(x, starts, steps, counts):  # noqa: A001  (the primitive's name at every stage)
    offset = x.offset + sum(s * st for s, st in zip(starts, x.strides))
    return _view(x, counts, [st * sp for st, sp in zip(x.strides, steps)], offset)


def diagonal(x, offset, dim1, dim2):
    return _view(x, *diagonal_layout(x.shape, x.strides, x.offset, offset, dim1, dim2))


def windows(x, dim, size, step):
    shape, strides = windows_layout(x.shape, x.strides, dim, size, step)
    return _view(x, shape, strides, x.offset)


def alias(x):
    return _view(x, x.shape, x.strides, x.offset)


def contiguous(x):
    return x if is_contiguous(x) else copy(x)


def copy(x):
    n = x.numel
    arr = POOL.take(x.dtype.typecode, n, x.dtype.itemsize)
    if n:
        arr[:] = _flat(x)
    return _fresh(arr, x.shape, x.dtype)


def cat(xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    dtype = xs[0].dtype
    arr = POOL.take(dtype.typecode, prod(shape), dtype.itemsize)
    blocks = [(_flat(x), prod(x.shape[axis:])) for x in xs]
    outer = prod(shape[:axis])
    pos = 0
    for o in range(outer):
        for vals, n in blocks:
            arr[pos:pos + n] = vals if outer == 1 else vals[o * n:(o + 1) * n]
            pos += n
    return _fresh(arr, tuple(shape), dtype)


# ---------------------------------------------------------------- layout queries

def is_contiguous(x):
    return x.dense or x.numel == 0 or row_major(x.shape, x.strides)


strides, storage_offset, storage_id = layout.strides, layout.storage_offset, layout.storage_id  # read off the view


def data_ptr(x):
    """The address of element 0, as PyTorch reports it."""
    return x.storage.data.buffer_info()[0] + x.offset * x.dtype.itemsize


def shares_storage(a, b):
    return a.storage is b.storage


# ---------------------------------------------------------------- indexing, matmul, convolution

_Index = namedtuple("_Index", "shape data")  # what stage 0's position helper reads


def take(x, index):
    """Flat gather: ``out[i] = x.flat[index[i]]`` (x's row-major order), shaped like ``index``."""
    src = _flat(x)
    return _new(x.dtype, index.shape, [src[i] for i in _flat(index)])


def gather(x, axis, index):
    src = _flat(x)
    pos = axis_positions(x.shape, axis, _Index(index.shape, _flat(index)))
    return _new(x.dtype, index.shape, [src[p] for p in pos])


def scatter_add(shape, axis, index, src):
    """A zero tensor of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    out = [0] * prod(shape)
    for p, v in zip(axis_positions(shape, axis, _Index(index.shape, _flat(index))), _flat(src)):
        out[p] += v
    return _new(src.dtype, shape, out)


def unfold(x, kernel, dilation, padding, stride):
    vals, shape = unfold_values(_flat(x), x.shape, kernel, dilation, padding, stride)
    return _new(x.dtype, shape, vals)


def fold(cols, output_size, kernel, dilation, padding, stride):
    vals, shape = fold_values(_flat(cols), cols.shape, output_size, kernel, dilation, padding, stride)
    return _new(cols.dtype, shape, vals)


def _lanes(data, starts, count, step):
    """One list per start: ``count`` elements ``step`` apart."""
    if count == 0:
        return [[] for _ in starts]
    if step == 0:
        return [[data[o]] * count for o in starts]
    span = (count - 1) * step + 1
    return [data[o:o + span:step].tolist() for o in starts]


def matmul(a, b):
    """``a`` (..., n, k) @ ``b`` (..., k, m), batch dims equal. Rows of ``a`` and columns
    of ``b`` are read straight through their strides: ``x @ w.T`` never copies ``w``."""
    *batch, n, k = a.shape
    m = b.shape[-1]
    san, sak = a.strides[-2:]
    sbk, sbm = b.strides[-2:]
    a_starts = strided_indices(batch, a.strides[:-2], a.offset)
    b_starts = strided_indices(batch, b.strides[:-2], b.offset)
    mul = operator.mul
    out = []
    ad, bd = a.storage.data, b.storage.data
    for oa, ob in zip(a_starts, b_starts):
        rows = _lanes(ad, [oa + i * san for i in range(n)], k, sak)
        cols = _lanes(bd, [ob + j * sbm for j in range(m)], k, sbk)
        for row in rows:
            out.extend([sum(map(mul, row, col)) for col in cols])
    return _new(a.dtype, (*batch, n, m), out)


# ---------------------------------------------------------------- in-place

def assign(dst, starts, steps, counts, src):
    """Write ``src`` (broadcast to ``counts``) into the basic-slice region of ``dst``."""
    region = slice(dst, starts, steps, counts)
    refuse_overlapping_write(region)
    _write(region, _values_as(cast(src, dst.dtype), tuple(counts)))
    dst.version += 1


def put(dst, index, src, accumulate=False):
    """``dst.flat[index[i]] = src[i]``, ``flat`` being dst's row-major order whatever its
    strides; ``accumulate`` as stage 0's (True or "sum", "prod", "amax", "amin"); ``src`` is
    broadcast to ``index``'s shape."""
    vals = _values_as(cast(src, dst.dtype), index.shape)
    positions = _flat(index)
    current = _flat(dst).tolist()
    if accumulate:
        combine = _s0.PUT_COMBINE[accumulate]
        for i, v in zip(positions, vals):
            current[i] = combine(current[i], v)
    else:
        for i, v in zip(positions, vals):
            current[i] = v
    _write(dst, _s0.pack_values(current, dst.dtype))
    dst.version += 1


def set_data(dst, src):
    """Write the contents of ``src`` (same shape and dtype) into ``dst``'s elements (the
    frontend refuses a write into elements sharing memory unless it is a fill)."""
    _write(dst, _flat(src))
    dst.version += 1


# ---------------------------------------------------------------- DLPack

# An array.array can lend its memory but never adopt another library's, so an import
# could only copy; and an export would need DLPack's C structs and a C-callable deleter
# built through ctypes (stage 1 exports no memory at all: it lacks buffer_protocol too).
_NO_DLPACK = ("stage 1's storage is an array.array, which owns its memory and cannot wrap another "
              "library's, so tensors cannot be shared both ways without a copy; stage 2 shares "
              "them (sg.tensor(np_array) and t.numpy() copy here)")


def view_dtype(x, dtype):
    """``x``'s bytes read as ``dtype``: a copy, since an array holds one type (``dtype_views``
    in the stage's LACKS)."""
    values = _s0.bytes_as(array(x.dtype.typecode, x.values()).tobytes(), dtype)
    return from_list(values, x.shape[:-1] + (x.shape[-1] * x.dtype.itemsize // dtype.itemsize,), dtype)


def from_buffer(obj, dtype):
    """The bytes of ``obj`` (with the buffer protocol) as a 1-d buffer of ``dtype``: a copy,
    since an array cannot wrap another object's memory."""
    values = _s0.bytes_as(obj, dtype)
    return from_list(values, (len(values),), dtype)


to_dlpack = refusal(__name__, "dlpack", "__dlpack__", _NO_DLPACK)
from_dlpack = refusal(__name__, "dlpack", "from_dlpack", _NO_DLPACK)
