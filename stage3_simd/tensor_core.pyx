# cython: language_level=3, c_api_binop_methods=True
"""The tensor's core, compiled: stage 3's rewrite of ``stage0_python/tensor_core.py``.

Design: stage 0's core is the reference for every rule here. ``a + b`` there runs some
thirty Python calls before and after the kernel: promotion over both operands, ``to``
twice, ``Function.apply``, ``Tensor._make``. Here ``TensorCore`` is an extension type
(its fields are C slots; making one is an allocation), its operators are C functions,
and the common cases take a short path: two tensors of one dtype, or a tensor and a
Python number of a kind that cannot change its dtype, go straight to the backend (no
grad needed) or to the compiled ``Function.apply``. Everything else, including every
error, takes the general path, a line-for-line translation of stage 0's ``_binary``.
"""
from cpython.object cimport PyObject, PyTypeObject

from stage2_cython._buffer cimport Buffer
from stage2_cython._types cimport BOOL, is_float_code

from .graph cimport apply_function, grad_enabled

from . import backend as B
from . import dtypes as D
from . import shapes
from .dtypes import bool_

cdef type _Tensor = None
cdef tuple _EMPTY = ()
cdef object ops = None, _binary_kernel = None, _full = None
cdef object _Add = None, _Sub = None, _Mul = None, _Div = None, _Unary = None

_NO_BOOL = ("sub", "div", "pow", "floordiv", "remainder")  # undefined on two bools


def bind(tensor_class, ops_module):
    """Tell the core which class ``_make`` builds and where the Functions are."""
    global _Tensor, ops, _binary_kernel, _full, _Add, _Sub, _Mul, _Div, _Unary
    if _Tensor is not None and _Tensor is not tensor_class:  # one compiled module, one stage
        raise ImportError(f"{__name__} already serves {_Tensor.__module__}'s Tensor: a stage that "
                          f"inherits stage 3's frontend must compile its own tensor_core")
    _Tensor, ops = tensor_class, ops_module
    _Add, _Sub, _Mul, _Div, _Unary = ops.Add, ops.Sub, ops.Mul, ops.Div, ops.Unary
    _binary_kernel, _full = B.binary, B.full


class Size(tuple):
    """A tensor's shape: a tuple of ints, as ``torch.Size``."""

    def __repr__(self):
        return f"stagegrad.Size({list(self)})"

    def numel(self):
        """The number of elements a tensor of this shape holds."""
        return B.prod(self)


cdef TensorCore make(Buffer buf):
    """A new leaf Tensor on ``buf`` (the other fields start as None, False and 0)."""
    cdef TensorCore t = (<PyTypeObject*>_Tensor).tp_new(_Tensor, <PyObject*>_EMPTY, NULL)
    t._data = buf
    return t


cdef class TensorCore:
    """The fields of a Tensor and its per-operation path (see the module's docstring)."""

    def __reduce__(self):
        # the fields, as copy and pickle take a Python class's __slots__
        return _restore, (type(self), self._data, self.requires_grad, self.grad, self.grad_fn,
                          self._output_nr, self._accumulator, self._view)

    @staticmethod
    def _make(Buffer buf):
        """A new leaf Tensor on backend buffer ``buf`` (no copy, no checks)."""
        return make(buf)

    # ------------------------------------------------------------ metadata

    @property
    def shape(self):
        """The sizes of the dimensions, a ``Size``."""
        return Size(self._data.shape)

    @property
    def dtype(self):
        """The element type."""
        return self._data.dtype

    @property
    def ndim(self):
        """The number of dimensions."""
        return self._data.ndim

    @property
    def is_leaf(self):
        """True for a tensor no recorded operation produced (its gradient accumulates)."""
        return self.grad_fn is None

    @property
    def _version(self):
        return self._data.storage.version

    def __hash__(self):
        return id(self)

    # ------------------------------------------------------------ operators

    def _scalar(self, value, dtype):
        return make(_full((), value, dtype))

    def _binary(self, other, op, fn, reverse=False):
        """``op`` of self and ``other`` (a Tensor or a Python scalar; operands swapped when
        ``reverse``), promoted to their result dtype, through Function ``fn`` (None: not
        differentiable)."""
        return binary(self, other, op, fn, reverse)

    def _compare(self, other, op):
        if not isinstance(other, (TensorCore, bool, int, float)):
            return NotImplemented
        return binary(self, other, op, None, False)

    # C-API binary slots (c_api_binop_methods): ``x + y`` calls __add__(x, y) whichever
    # of the two is the tensor, with no method lookup in between
    def __add__(x, y):
        return binary(x, y, "add", _Add, False) if isinstance(x, TensorCore) else binary(y, x, "add", _Add, True)

    def __sub__(x, y):
        return binary(x, y, "sub", _Sub, False) if isinstance(x, TensorCore) else binary(y, x, "sub", _Sub, True)

    def __mul__(x, y):
        return binary(x, y, "mul", _Mul, False) if isinstance(x, TensorCore) else binary(y, x, "mul", _Mul, True)

    def __truediv__(x, y):
        return binary(x, y, "div", _Div, False) if isinstance(x, TensorCore) else binary(y, x, "div", _Div, True)

    def __neg__(self):
        if self._data.dtype is bool_:
            raise TypeError("neg: negation, the `-` operator, on a bool tensor is not supported; "
                            "use logical_not() or ~")
        return apply_function(_Unary, (self, "neg"), None)

    def __eq__(self, o):
        return self._compare(o, "eq")

    def __ne__(self, o):
        return self._compare(o, "ne")

    def __lt__(self, o):
        return self._compare(o, "lt")

    def __le__(self, o):
        return self._compare(o, "le")

    def __gt__(self, o):
        return self._compare(o, "gt")

    def __ge__(self, o):
        return self._compare(o, "ge")


def _restore(cls, data, requires_grad, grad, grad_fn, output_nr, accumulator, view):
    cdef TensorCore t = TensorCore.__new__(cls)
    t._data, t.requires_grad, t.grad, t.grad_fn = data, requires_grad, grad, grad_fn
    t._output_nr, t._accumulator, t._view = output_nr, accumulator, view
    return t


cdef inline bint _keeps_dtype(int code, str op) noexcept:
    """Whether ``op`` of two operands of dtype ``code`` has that dtype (float, or an
    integer op other than true division): no promotion to work out."""
    return is_float_code(code) or (code != BOOL and op != "div")


cdef object binary(TensorCore self, object other, str op, object fn, bint reverse):
    cdef TensorCore a, b
    cdef Buffer x = self._data
    if op == "pow" and not is_float_code(x.code):  # an integer power: the reference's check of the exponent
        return _general(self, other, op, fn, reverse)
    if isinstance(other, TensorCore):
        if (<TensorCore>other)._data.dtype is x.dtype and _keeps_dtype(x.code, op):
            a, b = (other, self) if reverse else (self, other)
            if a._data.shape != b._data.shape and a._data.ndim and b._data.ndim:
                shapes.broadcast(op, a._data.shape, b._data.shape, dtype=x.dtype)
            return _run(op, fn, a, b)
    elif (type(other) is float and is_float_code(x.code)) or (type(other) is int and _keeps_dtype(x.code, op)):
        # a Python number never changes a float tensor's dtype, nor an int an int tensor's
        s = make(_full((), other, x.dtype))
        a, b = (s, self) if reverse else (self, s)
        return _run(op, fn, a, b)
    return _general(self, other, op, fn, reverse)


cdef inline object _run(str op, object fn, TensorCore a, TensorCore b):
    if fn is None:  # not differentiable
        return make(_binary_kernel(op, a._data, b._data, a._data.dtype))
    if ((fn is _Add or fn is _Sub or fn is _Mul or fn is _Div)
            and not (a.requires_grad or b.requires_grad or a._view is not None or b._view is not None)):
        # nothing to record (no gradient wanted, no view to re-derive): the kernel alone, which
        # is all these Functions' forward runs
        return make(_binary_kernel(op, a._data, b._data, a._data.dtype))
    return apply_function(fn, (a, b), None)


cdef object _general(TensorCore self, object other, str op, object fn, bint reverse):
    """Stage 0's ``_binary``, for what the short path does not take."""
    a, b = (other, self) if reverse else (self, other)
    try:
        dtype = D.result_type(a, b)
    except TypeError:
        return NotImplemented
    if op == "div" and not dtype.is_floating_point:
        dtype = D.get_default_dtype()
    D.refuse_bool_subtraction(op, a, b)
    if dtype is bool_ and op in _NO_BOOL:
        raise TypeError(f"{op}: not supported for two bool tensors (use logical ops)")
    sa = a._data.shape if isinstance(a, TensorCore) else ()
    sb = b._data.shape if isinstance(b, TensorCore) else ()
    if sa != sb and sa and sb:  # otherwise the result has the shape of an operand
        shapes.broadcast(op, sa, sb, dtype=dtype)
    ta = a.to(dtype) if isinstance(a, TensorCore) else make(_full((), a, dtype))
    tb = b.to(dtype) if isinstance(b, TensorCore) else make(_full((), b, dtype))
    if op == "pow" and not dtype.is_floating_point and (tb < 0).any():
        raise D.IntegerPowerError("pow: integers to negative integer powers are not allowed")
    return _run(op, fn, ta, tb)
