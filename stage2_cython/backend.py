"""Stage 2's backend: storage and kernels compiled from Cython.

The primitive set is stage 0's, under the same names and signatures (see
``stage0_python/backend.py``); the semantics of views, aliasing and in-place writes are
stage 1's. What changes is where the work happens:

- ``Buffer`` (``_buffer.pyx``) is a Cython type: shape, strides and offset over a
  ``Storage`` (``_storage.pyx``), 64-byte-aligned memory from a pool of size classes,
  with the version counter. Both export the buffer protocol: ``np.asarray(buf)`` and
  ``memoryview(buf)`` see the elements in place.
- ``to_dlpack``/``from_dlpack`` (``_dlpack.pyx``) share a storage with NumPy, PyTorch or
  any DLPack library without a copy, both ways; an imported one wraps foreign memory
  that the pool never takes.
- every primitive is a typed C loop over strides (``_elementwise``, ``_convert``,
  ``_reduce``, ``_matmul``, ``_conv``, ``_index``, ``_random``, ``_sort``) that runs without the GIL
  and touches no Python object per element.

This module only routes: it picks result dtypes and converts arguments, then calls the
compiled kernel. The primitives are the methods of ``Backend``, so that stage 3's backend
can subclass it and replace one by name: a primitive here that calls another (``binary``
casts its operands) calls ``self``'s, which may be stage 3's. The module's names, written
out at its end, are an instance's methods under the primitives' names, which is how the
frontend reaches every stage's backend: ``B.binary(...)``. The compiled modules never import the
frontend (a compiled module is shared by every stage that reaches it); they receive the
vocabulary's dtype objects and carry them along.
"""
import functools
import math

from stage0_python import backend as _s0
from stage0_python.backend import BOOL_LOGIC, to_int, wrap_int
from stage0_python.layout import diagonal_layout, refuse_overlapping_write, windows_layout
from stage0_python.vocabulary import BOOL_RESULT, SMALL_INT_CODES, int32
from stage2_cython import _buffer, _conv, _convert, _dlpack, _elementwise, _index, _matmul, _random, _reduce, _sort

from . import dtypes
from .capabilities import lacking
from .dtypes import bool_, int64


def widening(codes, wide):
    """A decorator for primitives whose kernels do not compute in the dtypes of ``codes``
    (stored, not computed in), which run them in ``wide`` instead: ``widened(fn, at,
    dtype_at)`` is the method ``fn`` with each such buffer argument cast to ``wide``, and each
    ``wide`` result cast back to the dtype asked for (argument ``dtype_at``, when given and
    not None) or else to the inputs' own. Argument ``at`` decides whether there is anything
    to do: the frontend hands a primitive operands of one dtype. Stage 2 runs uint8, int8
    and int16 in int32 so (exact: every value fits, and the low bytes of an int32 sum,
    product, shift or quotient are those of the narrow one's, which is how PyTorch wraps);
    stage 3 runs the 2-byte floats in float32 so."""
    def widened(fn, at=0, dtype_at=None):
        def primitive(self, *args):
            target = args[dtype_at] if dtype_at is not None and dtype_at < len(args) else None
            if args[at].code not in codes and (target is None or target.code not in codes):
                return fn(self, *args)
            narrow = target if target is not None and target.code in codes else args[at].dtype
            args = [self.cast(a, wide) if type(a) is self.Buffer and a.code in codes else a for a in args]
            if target is not None:
                args[dtype_at] = wide if target is narrow else target
                if target is not narrow:  # an explicit dtype of another kind: keep the result
                    return fn(self, *args)
            return _narrowed(self, fn(self, *args), narrow, wide)
        primitive.__name__, primitive.__doc__ = fn.__name__, fn.__doc__
        return primitive
    return widened


def _narrowed(backend, result, dtype, wide):
    if type(result) is tuple:
        return tuple(_narrowed(backend, r, dtype, wide) for r in result)
    if type(result) is backend.Buffer and result.dtype is wide:
        return backend.cast(result, dtype)
    return result


_in_int32 = widening(SMALL_INT_CODES, int32)


class Backend:
    """Stage 2's primitive set (see the module's docstring)."""
    dtypes = dtypes  # the stage's own: which dtypes it computes in, for its refusals
    FUSED = frozenset()
    VIEWS = True  # movement results alias their input

    # ------------------------------------------------------------ the compiled functions themselves
    Buffer = _buffer.Buffer
    alias, broadcast_shapes, contiguous, contiguous_strides, copy, data_ptr = map(staticmethod, (
        _buffer.alias, _buffer.broadcast_shapes, _buffer.contiguous, _buffer.contiguous_strides,
        _buffer.copy, _buffer.data_ptr))
    is_contiguous, permute, prod, reshape, shares_storage, slice = map(staticmethod, (
        _buffer.is_contiguous, _buffer.permute, _buffer.prod, _buffer.reshape, _buffer.shares_storage,
        _buffer.slice))
    storage_id, storage_offset, strides = map(staticmethod, (
        _buffer.storage_id, _buffer.storage_offset, _buffer.strides))
    take, gather = staticmethod(_index.take), staticmethod(_index.gather)  # move elements by size
    where = _in_int32(lambda self, *args: _elementwise.where(*args), 1)
    matmul = _in_int32(lambda self, *args: _matmul.matmul(*args))
    unfold = _in_int32(lambda self, *args: _conv.unfold(*args))
    fold = _in_int32(lambda self, *args: _conv.fold(*args))

    # ------------------------------------------------------------ creation

    def from_list(self, values, shape, dtype):
        return _convert.from_array(_s0.pack_values(values, dtype), tuple(shape), dtype)

    def full(self, shape, value, dtype):
        if dtype is bool_:
            value = bool(value)
        elif dtype.is_floating_point:
            value = float(value)
        else:
            value = wrap_int(to_int(value), dtype)
        return _convert.full(tuple(shape), value, dtype)

    def arange(self, start, stop, step, dtype):
        n = max(0, math.ceil((stop - start) / step))
        return _convert.arange(start, step, n, dtype)

    def uniform(self, shape, low, high, dtype, generator):
        return _random.uniform(tuple(shape), low, high, dtype, generator)

    def normal(self, shape, mean, std, dtype, generator):
        return _random.normal(tuple(shape), mean, std, dtype, generator)

    def randint(self, shape, low, high, dtype, generator):
        if -2**63 <= low < high <= 2**63:
            return _random.randint(tuple(shape), low, high, dtype, generator)
        # beyond int64 the draws are still stage 0's; only the kernel's arithmetic is 64-bit
        return self.from_list(generator.randint(low, high, self.prod(shape)), shape, dtype)

    def cast(self, x, dtype):
        return self.alias(x) if dtype is x.dtype else _convert.cast(x, dtype)

    # ------------------------------------------------------------ elementwise

    @functools.partial(_in_int32, at=1, dtype_at=2)
    def unary(self, op, x, dtype=None):
        out = _elementwise.unary(op, x, bool_ if op in BOOL_RESULT else x.dtype)
        return out if dtype is None or dtype is out.dtype else self.cast(out, dtype)

    @functools.partial(_in_int32, at=1, dtype_at=3)
    def binary(self, op, a, b, dtype):
        """``op`` elementwise over broadcast ``a`` and ``b``, which hold ``dtype``
        (comparisons return bool)."""
        if dtype is bool_ and op in BOOL_LOGIC:  # on bool operands arithmetic is logic, as in stage 0
            op = BOOL_LOGIC[op]
        if a.dtype is not dtype:
            a = self.cast(a, dtype)
        if b.dtype is not dtype:
            b = self.cast(b, dtype)
        return _elementwise.binary(op, a, b, bool_ if op in BOOL_RESULT else dtype)

    # ------------------------------------------------------------ reductions

    @functools.partial(_in_int32, at=1, dtype_at=4)
    def reduce(self, op, x, axes, keepdim, dtype=None):
        """Reduce over ``axes`` (non-negative ints); an empty group gives 0 for sum, 1 for
        prod (max/min of one are rejected by the frontend)."""
        out = dtype or (bool_ if op in ("any", "all") else x.dtype)
        return _reduce.reduce(op, x, axes, keepdim, out)

    @functools.partial(_in_int32, at=1)
    def arg_reduce(self, op, x, axis, keepdim):
        return _reduce.arg_reduce(op, x, axis, keepdim, int64)

    # ------------------------------------------------------------ sort and scan along an axis

    @functools.partial(_in_int32, at=0)
    def sort(self, x, axis, descending):
        """(values, int64 indices) along ``axis``: a stable merge sort, NaN largest."""
        return _sort.sort(x, axis, descending, int64)

    @functools.partial(_in_int32, at=1)
    def scan(self, op, x, axis):
        """Running sum, prod, max, min or logsumexp along ``axis``: (values, indices of the
        running extreme for max/min, else None)."""
        return _sort.scan(op, x, axis, int64)

    # ------------------------------------------------------------ movement: views and copies

    def expand(self, x, shape):
        """Broadcast to ``shape``: expanded dims get stride 0 (PyTorch's strides)."""
        return _buffer.expand(x, tuple(shape))

    def diagonal(self, x, offset, dim1, dim2):
        return _buffer.view(x, *diagonal_layout(x.shape, x.strides, x.offset, offset, dim1, dim2))

    def windows(self, x, dim, size, step):
        shape, strides_ = windows_layout(x.shape, x.strides, dim, size, step)
        return _buffer.view(x, shape, strides_, x.offset)

    def view_dtype(self, x, dtype):
        """``x``'s bytes read as ``dtype``, sharing its storage: the last dim and every
        stride scale by the ratio of the element sizes (the frontend checks that they
        divide, as PyTorch does)."""
        old, new = x.dtype.itemsize, dtype.itemsize
        shape, strides, offset = x.shape, x.strides, x.offset
        if old != new:
            shape = shape[:-1] + (shape[-1] * old // new,)
            strides = tuple(s * old // new for s in strides[:-1]) + (1,)
            offset = offset * old // new
        return _buffer.reinterpret(x, shape, strides, offset, dtype)

    def from_buffer(self, obj, dtype):
        """A 1-d buffer of ``dtype`` over the memory of ``obj`` (writable, with the buffer
        protocol), shared: see ``sg.frombuffer``."""
        return _buffer.from_memory(obj, dtype)

    def cat(self, xs, axis):
        shape = list(xs[0].shape)
        shape[axis] = sum(x.shape[axis] for x in xs)
        out = _buffer.empty(shape, xs[0].dtype)
        ndim = len(shape)
        start = 0
        for x in xs:
            n = x.shape[axis]
            if n and x.numel:
                starts = [start if d == axis else 0 for d in range(ndim)]
                counts = [n if d == axis else shape[d] for d in range(ndim)]
                _buffer.write(self.slice(out, starts, [1] * ndim, counts), x)
            start += n
        return out

    # ------------------------------------------------------------ indexing

    @functools.partial(_in_int32, at=3)
    def scatter_add(self, shape, axis, index, src):
        """A zero tensor of ``shape`` with ``src`` added at ``index`` along ``axis``."""
        return _index.scatter_add(tuple(shape), axis, index, src)

    # ------------------------------------------------------------ in-place

    def _source(self, src, dst_dtype):
        src = self.cast(src, dst_dtype)
        return self.reshape(src, ()) if src.numel == 1 and src.ndim else src

    def _write(self, dst, src):
        """Store ``src`` (broadcast to ``dst``'s shape) into ``dst``'s elements, in row-major
        order: where elements share memory the last write wins, as in stage 1 (callers refuse
        writes where that matters)."""
        if src.storage is dst.storage:  # overlapping source: read it all before writing
            src = self.copy(src)
        if dst.numel:
            _buffer.write(dst, src)

    def assign(self, dst, starts, steps, counts, src):
        """Write ``src`` (broadcast to ``counts``) into the basic-slice region of ``dst``."""
        region = self.slice(dst, starts, steps, counts)
        refuse_overlapping_write(region)
        self._write(region, self._source(src, dst.dtype))
        dst.version += 1

    def put(self, dst, index, src, accumulate=False):
        """``dst.flat[index[i]] = src[i]``, ``flat`` being dst's row-major order whatever its
        strides; ``accumulate`` as stage 0's (True or "sum", "prod", "amax", "amin"); ``src`` is
        broadcast to ``index``'s shape. Into a 1- or 2-byte integer ``dst`` through an int32
        copy of it."""
        if dst.code in SMALL_INT_CODES:
            wide = self.cast(dst, int32)
            Backend.put(self, wide, index, src, accumulate)
            self.set_data(dst, self.cast(wide, dst.dtype))
            return
        _index.put(dst, index, self._source(src, dst.dtype), accumulate)
        dst.version += 1

    def set_data(self, dst, src):
        """Write the contents of ``src`` (same shape and dtype) into ``dst``'s elements."""
        self._write(dst, src)
        dst.version += 1

    # ------------------------------------------------------------ DLPack (_dlpack.pyx)

    def to_dlpack(self, x, versioned=False):
        """A DLPack capsule over ``x``'s elements in place (its strides, its offset): DLPack
        1.0's ``"dltensor_versioned"`` when ``versioned``, else the legacy ``"dltensor"``;
        ``x``'s storage lives until the consumer is done with it."""
        return _dlpack.to_capsule(x, versioned)

    def from_dlpack(self, obj):
        """A buffer over the memory of ``obj`` (an object with ``__dlpack__``, or a
        ``"dltensor"`` capsule), without a copy: the producer frees it when our storage dies."""
        capsule = obj
        if hasattr(obj, "__dlpack__"):
            try:
                capsule = obj.__dlpack__()  # no max_version: the legacy capsule, which we read
            except BufferError as e:
                # NumPy refuses a read-only array here: the legacy capsule cannot mark it so
                raise BufferError(f"from_dlpack: {type(obj).__name__} would not share its memory ({e}); "
                                  f"stagegrad tensors are always writable, so a read-only array cannot "
                                  f"be shared: pass a writable copy (NumPy: arr.copy())") from e
        name = _dlpack.capsule_dtype_name(capsule)
        dtypes = self.dtypes
        if name in dtypes.LACKING:
            raise lacking(type(self).__module__, name, f"from_dlpack: cannot import a tensor of dtype "
                          f"{name}; this stage computes in {', '.join(d.name for d in dtypes.ALL)}")
        dtype = {d.name: d for d in dtypes.ALL}.get(name)
        if dtype is None:
            raise TypeError(f"from_dlpack: unsupported dtype {name}; stagegrad computes in "
                            f"{', '.join(d.name for d in dtypes.ALL)}")
        return _dlpack.from_capsule(capsule, dtype)


_BACKEND = Backend()

# The primitive set as this module's names, which is how the frontend reaches it
# (``B.binary(...)``): each one the instance's bound method or the compiled function itself,
# so that a call costs what a call on the instance does. In the groups of stage 0's contract.
Buffer, FUSED, VIEWS = Backend.Buffer, Backend.FUSED, Backend.VIEWS
from_list, full, arange = _BACKEND.from_list, _BACKEND.full, _BACKEND.arange
uniform, normal, randint = _BACKEND.uniform, _BACKEND.normal, _BACKEND.randint
cast = _BACKEND.cast
unary, binary, where = _BACKEND.unary, _BACKEND.binary, _BACKEND.where
reduce, arg_reduce = _BACKEND.reduce, _BACKEND.arg_reduce
sort, scan = _BACKEND.sort, _BACKEND.scan
reshape, permute, expand, slice = _BACKEND.reshape, _BACKEND.permute, _BACKEND.expand, _BACKEND.slice
diagonal, windows, contiguous = _BACKEND.diagonal, _BACKEND.windows, _BACKEND.contiguous
alias, copy, cat = _BACKEND.alias, _BACKEND.copy, _BACKEND.cat
is_contiguous, strides, storage_offset = _BACKEND.is_contiguous, _BACKEND.strides, _BACKEND.storage_offset
data_ptr, storage_id, shares_storage = _BACKEND.data_ptr, _BACKEND.storage_id, _BACKEND.shares_storage
take, gather, scatter_add = _BACKEND.take, _BACKEND.gather, _BACKEND.scatter_add
matmul = _BACKEND.matmul
unfold, fold = _BACKEND.unfold, _BACKEND.fold
assign, put, set_data = _BACKEND.assign, _BACKEND.put, _BACKEND.set_data
view_dtype, from_buffer = _BACKEND.view_dtype, _BACKEND.from_buffer
to_dlpack, from_dlpack = _BACKEND.to_dlpack, _BACKEND.from_dlpack
prod, broadcast_shapes, contiguous_strides = _BACKEND.prod, _BACKEND.broadcast_shapes, _BACKEND.contiguous_strides
