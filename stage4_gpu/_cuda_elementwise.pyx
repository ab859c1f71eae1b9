# cython: language_level=3
"""The cuda device's ``binary`` and ``unary`` primitives, compiled for the case a training
step makes most: operands of one shape and dtype, each laid out row-major.

Design: such operands need no broadcasting, no promotion, no merging of dimensions and no
check of overlap, so the launch is known at once: one dimension of ``numel`` elements, the
operands' offsets, a new row-major output from the runtime's caching allocator, and the
kernel of the op and dtype, looked up in a dict the runtime empties when its launch mode
changes. Everything else (broadcasting, strided views, a cast, the integer divisions and
powers whose operands the host checks first) goes to the device layer's Python
primitives (``gpu/elementwise.py``), which give the same result for any operands: this is
the cost of a launch, not another meaning of the op. ``kernel_for`` (``cuda/elementwise.py``)
says which (op, dtype) pairs may take this path, and with which kernel.
"""
from ._strided cimport StridedCore, contiguous_strides


cdef class ElementwisePath:
    """``binary(op, a, b, dtype)`` and ``unary(op, x, dtype=None)`` as the device layer's
    (``general_binary``, ``general_unary``), with the common case compiled (see the
    module's design). ``runtime()`` gives the opened runtime; ``kernel_for(op, dtype,
    arity)`` a ``(kernel, output dtype, its NumPy dtype)`` for this path, or None; ``block``
    the threads per block of the one-thread-per-element kernels."""
    cdef object runtime, kernel_for, general_binary, general_unary
    cdef Py_ssize_t block

    def __init__(self, runtime, kernel_for, general_binary, general_unary, Py_ssize_t block):
        self.runtime, self.kernel_for = runtime, kernel_for
        self.general_binary, self.general_unary = general_binary, general_unary
        self.block = block

    cdef tuple _kernel(self, rt, str op, dtype, int arity):
        """``(kernel, output dtype, its NumPy dtype)`` of this path for ``op`` on ``dtype``, or None."""
        cdef dict table = rt.fast_kernels
        key = (op, dtype, arity)
        try:
            return table[key]
        except KeyError:
            found = table[key] = self.kernel_for(op, dtype, arity)
            return found

    cdef object _launch(self, rt, tuple found, StridedCore first, list inputs):
        """A new row-major buffer shaped as ``first``, written by ``found``'s kernel over
        ``inputs`` (each of first's shape, row-major)."""
        kernel, out_dtype, out_numpy = found
        cdef Py_ssize_t n = first.numel
        cdef StridedCore out = type(first).__new__(type(first))
        out.set_view(rt.allocator().allocate(n, out_numpy), first.shape, first.strides, 0, out_dtype)
        if n == 0:
            return out
        cdef list params = [n, 1, n, 0, 1]
        cdef list args = [params, out.storage.ptr]
        cdef StridedCore x
        for x in inputs:
            params += (x.offset, 1)
            args.append(x.storage.ptr)
        block = self.block
        blocks = min((n + block - 1) // block, rt.resident_blocks)  # as Runtime.grid
        try:
            kernel.launch(blocks, block, args)
        except Exception as e:
            rt._retried(e, lambda: kernel.launch(blocks, block, args))
        return out

    def binary(self, str op, a, b, dtype):
        """``op`` over broadcast a and b, computed in ``dtype`` (see gpu/elementwise.binary)."""
        cdef StridedCore x, y
        if type(a) is type(b) and isinstance(a, StridedCore):
            x, y = a, b
            if (x.dtype is dtype and y.dtype is dtype and x.shape == y.shape
                    and x.strides == y.strides and x.strides == contiguous_strides(x.shape)):
                rt = self.runtime()
                found = self._kernel(rt, op, dtype, 2)
                if found is not None:
                    return self._launch(rt, found, x, [x, y])
        return self.general_binary(op, a, b, dtype)

    def unary(self, str op, a, dtype=None):
        """``op`` of each element, in ``dtype`` when given (see gpu/elementwise.unary)."""
        cdef StridedCore x
        if isinstance(a, StridedCore):
            x = a
            if x.strides == contiguous_strides(x.shape):
                rt = self.runtime()
                found = self._kernel(rt, op, x.dtype, 1)
                if found is not None and (dtype is None or dtype is found[1]):
                    return self._launch(rt, found, x, [x])
        return self.general_unary(op, a, dtype)
