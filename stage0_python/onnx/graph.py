"""``Graph``: the ONNX graph being written, with the helpers every mapping uses.

Values are referred to by name. Integer lists an operator takes as an input (a shape, a
slice's bounds) go through ``ints``: a constant when every entry is a plain int, else a
small computation of the dynamic axes' sizes (``Shape`` of the input holding the axis,
then ``Mul``/``Add``/``Concat``), cached so each size is computed once.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from .errors import ExportError
from .sizes import Sym

ONNX_DTYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "int32": TensorProto.INT32,
               "int64": TensorProto.INT64, "bool": TensorProto.BOOL, "uint8": TensorProto.UINT8,
               "int8": TensorProto.INT8, "int16": TensorProto.INT16}
NP_DTYPES = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16, "float32": np.float32,
             "float64": np.float64, "int32": np.int32, "int64": np.int64, "bool": np.bool_}


# operators newer than the oldest opset export supports
_SINCE = {"BitwiseAnd": 18, "BitwiseOr": 18, "BitwiseXor": 18, "BitwiseNot": 18}


class Graph:
    """Nodes and initializers of one ONNX graph. ``axes[i]`` is ``(input name, dim)``
    where dynamic axis ``i`` can be read at run time."""

    def __init__(self, opset, axes):
        self.opset = opset
        self.axes = axes
        self.shapes = {}  # value name -> shape (ints and Syms), filled by the exporter
        self.nodes = []
        self.initializers = []
        self._names = set()
        self._cache = {}

    def fresh(self, hint):
        """A new internal name (``sg/`` first, as the trace's: never a user's name)."""
        n = len(self._names)
        while f"sg/{hint}_{n}" in self._names:
            n += 1
        self._names.add(f"sg/{hint}_{n}")
        return f"sg/{hint}_{n}"

    def node(self, op, inputs, outputs=None, n_out=1, **attrs):
        """Add ``op``; return its output name (a list when it has several)."""
        if self.opset < _SINCE.get(op, 0):
            raise ExportError(f"{op} needs opset {_SINCE[op]} or later (exporting {self.opset})")
        if outputs is None:
            outputs = [self.fresh(op.lower()) for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op, list(inputs), list(outputs), **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def initializer(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def const(self, values, dtype_name, shape=None):
        """A constant tensor of ``values`` (cached by value)."""
        arr = np.array(values, dtype=NP_DTYPES[dtype_name])
        if shape is not None:
            arr = arr.reshape(shape)
        key = ("const", dtype_name, arr.shape, arr.tobytes())
        if key not in self._cache:
            self._cache[key] = self.initializer(self.fresh("c"), arr)
        return self._cache[key]

    # ------------------------------------------------------------ sizes

    def static(self, value, what):
        """``value`` as a plain int; a size that changes with a dynamic axis is refused."""
        if isinstance(value, Sym):
            raise ExportError(f"{what} changes with a dynamic axis, which ONNX takes only as a constant here")
        return value

    def _dim(self, axis):
        key = ("dim", axis)
        if key not in self._cache:
            name, dim = self.axes[axis]
            self._cache[key] = self.node("Shape", [name], start=dim, end=dim + 1)
        return self._cache[key]

    def _sym(self, s):
        key = ("sym", repr(s))
        if key not in self._cache:
            total = None
            for monomial, coeff in sorted(s.terms.items()):
                if monomial:
                    term = self._dim(monomial[0])
                    for axis in monomial[1:]:
                        term = self.node("Mul", [term, self._dim(axis)])
                    if coeff != 1:
                        term = self.node("Mul", [term, self.const([coeff], "int64")])
                else:
                    term = self.const([coeff], "int64")
                total = term if total is None else self.node("Add", [total, term])
            self._cache[key] = total
        return self._cache[key]

    def ints(self, values):
        """A 1-D int64 tensor of ``values`` (ints and Syms)."""
        values = list(values)
        if not any(isinstance(v, Sym) for v in values):
            return self.const(values, "int64")
        parts = [self._sym(v) if isinstance(v, Sym) else self.const([v], "int64") for v in values]
        return parts[0] if len(parts) == 1 else self.node("Concat", parts, axis=0)

    def scalar(self, value, dtype_name):
        """A 0-d tensor of ``value`` (a number or a Sym) in ``dtype_name``."""
        if not isinstance(value, Sym):
            return self.const(value, dtype_name)
        s = self.node("Squeeze", [self._sym(value), self.const([0], "int64")])
        return s if dtype_name == "int64" else self.node("Cast", [s], to=ONNX_DTYPES[dtype_name])

    # ------------------------------------------------------------ dtypes

    def cast(self, name, from_dtype, to_dtype):
        """``name`` converted from one dtype (a stage dtype or its name) to another;
        nothing is added when they match."""
        to_name = getattr(to_dtype, "name", to_dtype)
        if getattr(from_dtype, "name", from_dtype) == to_name:
            return name
        return self.node("Cast", [name], to=ONNX_DTYPES[to_name])

    def reduce(self, op, x, axes, keepdims):
        """``Reduce<op>`` over ``axes``: an input from opset 18 (13 for ReduceSum), an
        attribute before."""
        if op == "Sum" or self.opset >= 18:
            return self.node(f"Reduce{op}", [x, self.const(list(axes), "int64")], keepdims=int(keepdims))
        return self.node(f"Reduce{op}", [x], axes=list(axes), keepdims=int(keepdims))
