"""The tensor's core: its fields, construction and metadata, and the arithmetic and
comparison operators with their dtype promotion.

This is the path every operation of a program runs (``a + b``: promote, check, apply a
Function, wrap the result), kept apart from the rich API in ``tensor.py``. ``Tensor``
subclasses ``TensorCore``; ``bind`` hands the core the classes it builds on, which are
defined later (``Tensor``, the ``ops`` Functions).

Design: this file is the one source of the core for every stage. Stages 0 to 2 run it as
Python; stages 3 and 4 compile it with Cython's pure-Python mode, their ``tensor_core.pxd``
making ``TensorCore`` an extension type (its fields C slots, typed on the stage's buffers)
and ``binary``, ``_run`` and ``make`` C functions. So the code is written for both: the
common cases take a short path (two tensors of one dtype, or a tensor and a Python number
that cannot change its dtype) that goes straight to the kernel when nothing needs
recording, and everything else, including every error, takes the general path
(``_general``), which is the rule the short path must agree with.
"""
from . import backend as B
from . import dtypes as D
from . import shapes
from .dtypes import bool_

_Tensor = ops = None  # set by bind()
_binary_kernel = _full = _Add = _Sub = _Mul = _Div = None

_NO_BOOL = ("sub", "div", "pow", "floordiv", "remainder")  # undefined on two bools
# the floating dtypes, as a set: a test compiled code makes without an attribute lookup
_FLOATING = frozenset(d for d in D.BY_NAME.values() if d.is_floating_point)


def bind(tensor_class, ops_module):
    """Tell the core which class ``make`` builds and where the Functions are."""
    global _Tensor, ops, _binary_kernel, _full, _Add, _Sub, _Mul, _Div
    if _Tensor is not None and _Tensor is not tensor_class:  # one module, one stage's Tensor
        raise ImportError(f"{__name__} already serves {_Tensor.__module__}'s Tensor: each stage "
                          f"loads its own tensor_core")
    _Tensor, ops = tensor_class, ops_module
    _Add, _Sub, _Mul, _Div = ops.Add, ops.Sub, ops.Mul, ops.Div
    _binary_kernel, _full = B.binary, B.full


class Size(tuple):
    """A tensor's shape: a tuple of ints, as ``torch.Size``."""

    def __repr__(self):
        return f"stagegrad.Size({list(self)})"

    def numel(self):
        """The number of elements a tensor of this shape holds."""
        return B.prod(self)


def make(buf):
    """A new leaf Tensor on backend buffer ``buf`` (no copy, no checks)."""
    t = _Tensor.__new__(_Tensor)
    t._data = buf
    t.requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._accumulator = None
    t._view = None
    return t


class TensorCore:
    """The fields of a Tensor and its per-operation path (see the module's docstring)."""

    # _view: None, or a views.ViewRecord when this tensor aliases another's storage or, on a
    # stage without views, is a copy standing for a view
    # a dict so that the public fields carry docstrings (the reference shows them)
    __slots__ = {"_data": None,
                 "requires_grad": "Whether autograd records operations on this tensor; see "
                                  "torch.Tensor.requires_grad.",
                 "grad": "The gradient accumulated by ``backward()`` (None until then); see torch.Tensor.grad.",
                 "grad_fn": "The Function that made this tensor (None for a leaf); see torch.Tensor.grad_fn.",
                 "_output_nr": None, "_accumulator": None, "_view": None, "__weakref__": None}

    def __reduce__(self):
        # the fields, as copy and pickle take them (a compiled core's are not __slots__)
        return _restore, (type(self), self._data, self.requires_grad, self.grad, self.grad_fn,
                          self._output_nr, self._accumulator, self._view)

    @staticmethod
    def _make(buf):
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
        return len(self._data.shape)

    @property
    def is_leaf(self):
        """True for a tensor no recorded operation produced (its gradient accumulates)."""
        return self.grad_fn is None

    @property
    def _version(self):
        return self._data.version

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

    def __add__(self, o):
        return binary(self, o, "add", _Add, False)

    def __radd__(self, o):
        return binary(self, o, "add", _Add, True)

    def __sub__(self, o):
        return binary(self, o, "sub", _Sub, False)

    def __rsub__(self, o):
        return binary(self, o, "sub", _Sub, True)

    def __mul__(self, o):
        return binary(self, o, "mul", _Mul, False)

    def __rmul__(self, o):
        return binary(self, o, "mul", _Mul, True)

    def __truediv__(self, o):
        return binary(self, o, "div", _Div, False)

    def __rtruediv__(self, o):
        return binary(self, o, "div", _Div, True)

    def __neg__(self):
        if self._data.dtype is bool_:
            raise TypeError("neg: negation, the `-` operator, on a bool tensor is not supported; "
                            "use logical_not() or ~")
        return ops.Unary.apply(self, "neg")

    def __eq__(self, o):
        """See torch.eq (the ``==`` operator)."""
        return self._compare(o, "eq")

    def __ne__(self, o):
        """See torch.ne (the ``!=`` operator)."""
        return self._compare(o, "ne")

    def __lt__(self, o):
        """See torch.lt (the ``<`` operator)."""
        return self._compare(o, "lt")

    def __le__(self, o):
        """See torch.le (the ``<=`` operator)."""
        return self._compare(o, "le")

    def __gt__(self, o):
        """See torch.gt (the ``>`` operator)."""
        return self._compare(o, "gt")

    def __ge__(self, o):
        """See torch.ge (the ``>=`` operator)."""
        return self._compare(o, "ge")


def _restore(cls, data, requires_grad, grad, grad_fn, output_nr, accumulator, view):
    t = TensorCore.__new__(cls)
    t._data, t.requires_grad, t.grad, t.grad_fn = data, requires_grad, grad, grad_fn
    t._output_nr, t._accumulator, t._view = output_nr, accumulator, view
    return t


def _keeps_dtype(dtype, op):
    """Whether ``op`` of two operands of ``dtype`` has that dtype (float, or an integer op
    other than true division): no promotion to work out."""
    return dtype in _FLOATING or (dtype is not bool_ and op != "div")


def binary(self, other, op, fn, reverse):
    """``op`` of tensor ``self`` and ``other`` (see ``TensorCore._binary``): the short path,
    or ``_general``."""
    dtype = self._data.dtype
    if op != "pow" or dtype in _FLOATING:  # an integer power: _general checks the exponent
        if isinstance(other, TensorCore):
            if other._data.dtype is dtype and _keeps_dtype(dtype, op):
                a, b = (other, self) if reverse else (self, other)
                sa, sb = a._data.shape, b._data.shape
                if sa != sb and sa and sb:  # otherwise the result has the shape of an operand
                    shapes.broadcast(op, sa, sb, dtype=dtype)
                return _run(op, fn, a, b)
        elif ((type(other) is float and dtype in _FLOATING)
              or (type(other) is int and _keeps_dtype(dtype, op))):
            # a Python number never changes a float tensor's dtype, nor an int an int tensor's
            s = make(_full((), other, dtype))
            return _run(op, fn, s, self) if reverse else _run(op, fn, self, s)
    return _general(self, other, op, fn, reverse)


def _run(op, fn, a, b):
    """``op`` of ``a`` and ``b``, of one dtype, through ``fn`` when it records anything."""
    if fn is None:  # not differentiable
        return make(_binary_kernel(op, a._data, b._data, a._data.dtype))
    if ((fn is _Add or fn is _Sub or fn is _Mul or fn is _Div)
            and not (a.requires_grad or b.requires_grad or a._view is not None or b._view is not None)):
        # nothing to record (no gradient wanted, no view to re-derive): the kernel alone, which
        # is all these Functions' forward runs
        return make(_binary_kernel(op, a._data, b._data, a._data.dtype))
    return fn.apply(a, b)


def _general(self, other, op, fn, reverse):
    """Promotion to the result dtype, every check and its error: the rule for any operands."""
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
