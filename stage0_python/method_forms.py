"""The forms of Tensor's methods: a method's in-place twin (``abs_`` of ``abs``), its
``axis=`` spelling of ``dim=``, and the ``(values, indices)`` pair some return.

Its own module, building on nothing: ``Tensor``'s class body and the method mixins it lists
use these while the class is being made, before anything that builds on it can load.
"""
import functools
from collections import namedtuple

ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])
ValuesIndices.__doc__ = """``(values, indices)``: what ``max`` and ``min`` with a ``dim``, ``sort``, ``topk``,
``kthvalue``, ``cummax`` and ``cummin`` return, as PyTorch's ``torch.return_types``."""


def accepts_axis(f):
    """Let ``f`` take ``axis=`` for ``dim=``, as PyTorch does after NumPy."""
    @functools.wraps(f)
    def with_axis(*args, **kwargs):
        if kwargs and "axis" in kwargs:
            if "dim" in kwargs:
                raise TypeError(f"{f.__name__}: got both dim= and axis= (axis is another name for dim)")
            kwargs["dim"] = kwargs.pop("axis")
        return f(*args, **kwargs)
    return with_axis


def inplace_form(name):
    """The in-place twin ``name_`` of the method ``name``: computed out of place, then
    written into the tensor (``Tensor._inplace``)."""
    def method(self, *args, **kwargs):
        return self._inplace(lambda x: getattr(x, name)(*args, **kwargs), name + "_")
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In place: see ``torch.Tensor.{name}_``."
    return method
