"""Data types and PyTorch's type-promotion rules.

A dtype names how a value is stored (``typecode`` is the ``array`` module's code) and
which *category* it belongs to: bool < integer < floating. Promotion picks the
category first and the width second, exactly as ``torch.result_type`` does:
dimensioned tensors decide, a zero-dim tensor only wins with a higher category, and a
Python scalar only lifts the category (to the default dtype of that category).
"""


class DType:
    __slots__ = ("name", "typecode", "itemsize", "category", "is_floating_point")

    def __init__(self, name, typecode, itemsize, category):
        self.name = name
        self.typecode = typecode
        self.itemsize = itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2

    def __repr__(self):
        return f"stagegrad.{self.name}"

    def __reduce__(self):
        # dtypes are singletons: unpickle (and deepcopy) to the module constant
        return (_lookup, (self.name,))

    @property
    def python_type(self):
        return (bool, int, float)[self.category]


bool_ = DType("bool", "B", 1, 0)
int32 = DType("int32", "i", 4, 1)
int64 = DType("int64", "q", 8, 1)
float32 = DType("float32", "f", 4, 2)
float64 = DType("float64", "d", 8, 2)

ALL = (bool_, int32, int64, float32, float64)
BY_NAME = {d.name: d for d in ALL}
BY_NAME.update({"float": float32, "double": float64, "long": int64, "int": int32})
_DEFAULT = {0: bool_, 1: int64, 2: float32}


def _lookup(name):
    return BY_NAME[name]


def get_default_dtype():
    return _DEFAULT[2]


def set_default_dtype(dtype):
    if dtype not in (float32, float64):
        raise TypeError(f"set_default_dtype: only float32 and float64 can be the default, got {dtype}")
    _DEFAULT[2] = dtype


def default_for(category):
    return _DEFAULT[category]


def promote(a, b):
    """The smallest dtype that holds both ``a`` and ``b``."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    return a if a.itemsize >= b.itemsize else b


def scalar_category(value):
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return 1
    if isinstance(value, float):
        return 2
    raise TypeError(f"expected a Tensor or a Python number, got {type(value).__name__}")


def result_type(*operands):
    """Promotion over tensors (anything with ``dtype`` and ``ndim``) and Python scalars."""
    dim = zero = None
    scalar_cat = -1
    for x in operands:
        dt = getattr(x, "dtype", None)
        if dt is None:
            scalar_cat = max(scalar_cat, scalar_category(x))
        elif x.ndim:
            dim = dt if dim is None else promote(dim, dt)
        else:
            zero = dt if zero is None else promote(zero, dt)
    result = dim
    if zero is not None and (result is None or zero.category > result.category):
        result = zero
    if scalar_cat >= 0 and (result is None or scalar_cat > result.category):
        result = _DEFAULT[scalar_cat]
    return result


def infer(value):
    """The dtype torch.tensor() would give a (nested) Python value."""
    cat = 0
    stack = [value]
    seen_any = False
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            seen_any = True
            cat = max(cat, scalar_category(v))
            if cat == 2:
                break
    return _DEFAULT[cat] if seen_any else _DEFAULT[2]
