"""The tensor's core: its fields, construction and metadata, and the arithmetic and
comparison operators with their dtype promotion.

This is the path every operation of a program runs (``a + b``: promote, check, apply a
Function, wrap the result), kept apart from the rich API in ``tensor.py`` so that a stage
can compile it. ``Tensor`` subclasses ``TensorCore``; ``bind`` hands the core the classes
it builds on, which are defined later (``Tensor``, the ``ops`` Functions).
"""
from . import backend as B
from . import dtypes as D
from . import shapes
from .dtypes import bool_

_new = object.__new__
_Tensor = ops = None  # set by bind()

_NO_BOOL = ("sub", "div", "pow", "floordiv", "remainder")  # undefined on two bools


def bind(tensor_class, ops_module):
    """Tell the core which class ``_make`` builds and where the Functions are."""
    global _Tensor, ops
    _Tensor, ops = tensor_class, ops_module


class Size(tuple):
    """A tensor's shape: a tuple of ints, as ``torch.Size``."""

    def __repr__(self):
        return f"stagegrad.Size({list(self)})"

    def numel(self):
        """The number of elements a tensor of this shape holds."""
        return B.prod(self)


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

    @staticmethod
    def _make(buf):
        """A new leaf Tensor on backend buffer ``buf`` (no copy, no checks)."""
        t = _new(_Tensor)
        t._data = buf
        t.requires_grad = False
        t.grad = None
        t.grad_fn = None
        t._output_nr = 0
        t._accumulator = None
        t._view = None
        return t

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
        return _Tensor._make(B.full((), value, dtype))

    def _binary(self, other, op, fn, reverse=False):
        """``op`` of self and ``other`` (a Tensor or a Python scalar; operands swapped when
        ``reverse``), promoted to their result dtype, through Function ``fn`` (None: not
        differentiable)."""
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
        ta = a.to(dtype) if isinstance(a, TensorCore) else self._scalar(a, dtype)
        tb = b.to(dtype) if isinstance(b, TensorCore) else self._scalar(b, dtype)
        if op == "pow" and not dtype.is_floating_point and (tb < 0).any():
            raise D.IntegerPowerError("pow: integers to negative integer powers are not allowed")
        if fn is None:  # not differentiable
            return _Tensor._make(B.binary(op, ta._data, tb._data, dtype))
        return fn.apply(ta, tb)

    def _compare(self, other, op):
        if not isinstance(other, (TensorCore, bool, int, float)):
            return NotImplemented
        return self._binary(other, op, None)

    def __add__(self, o):
        return self._binary(o, "add", ops.Add)

    def __radd__(self, o):
        return self._binary(o, "add", ops.Add, True)

    def __sub__(self, o):
        return self._binary(o, "sub", ops.Sub)

    def __rsub__(self, o):
        return self._binary(o, "sub", ops.Sub, True)

    def __mul__(self, o):
        return self._binary(o, "mul", ops.Mul)

    def __rmul__(self, o):
        return self._binary(o, "mul", ops.Mul, True)

    def __truediv__(self, o):
        return self._binary(o, "div", ops.Div)

    def __rtruediv__(self, o):
        return self._binary(o, "div", ops.Div, True)

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
