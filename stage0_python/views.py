"""Views and in-place writes: how a tensor that shares another's memory keeps a true place
in the autograd graph.

A view (``t[1:]``, ``t.T``, ``t.view(...)``) reads its base's memory. When either is changed
in place, the other's values change too, so its history must change with them, or backward
gives wrong gradients. PyTorch's rule, kept here: every view remembers its root base and the
movement ops that made it (a ``ViewRecord`` in its ``_view`` field); an in-place write
through a view rewrites the base's history (``write_through``), and a view whose memory or
base changed since it was made re-derives its own from the base before it is used
(``sync``). An in-place write is computed out of place and then copied into the tensor's
elements (``inplace``), so every backward rule stays the out-of-place one.

It builds on ``Tensor``'s base and the graph, not on ``Tensor``: ``ops`` and the method
mixins use it while the class is being made.
"""
from . import backend as B
from .capabilities import lacking
from .device import place
from .dtypes import int64
from .graph import is_grad_enabled
from .shapes import ShapeError
from .tensor_core import TensorCore

wrap = TensorCore._make


class ViewRecord:
    """What a tensor aliases, kept in its ``_view`` field (None for a tensor that aliases
    nothing). One of three kinds, made by the class methods:

    - ``ViewRecord.view(base, steps, stamp)``: a view of ``base`` (its root) made by
      ``steps``, the movement ops as (Function, args) pairs; ``stamp`` is
      (storage version, base.grad_fn, base.requires_grad) when it was last synced, or None
      when it must be re-derived;
    - ``ViewRecord.returned(x)``: an input a custom Function handed back as its output; it
      has no steps to replay, so an in-place write into it is refused;
    - ``ViewRecord.copy(layout)``: on a stage without views, a copy standing for what
      PyTorch makes a view, with the (shape, strides, offset) that view would have.
    """
    __slots__ = ("base", "steps", "stamp", "layout")

    def __init__(self, base, steps, stamp, layout):
        self.base, self.steps, self.stamp, self.layout = base, steps, stamp, layout

    def __deepcopy__(self, memo):
        # a deep copy of a tensor owns its memory and is no view, as PyTorch's: no record
        return None

    @classmethod
    def view(cls, base, steps, stamp):
        """A view of ``base`` made by ``steps``."""
        return cls(base, steps, stamp, None)

    @classmethod
    def returned(cls, x):
        """An input that a custom Function returned as-is."""
        return cls(x, None, None, None)

    @classmethod
    def copy(cls, layout):
        """A copy standing for a view whose layout would be ``layout``."""
        return cls(None, None, None, layout)


def copied(t):
    """The record of ``t`` when it is a copy standing for a view, else None."""
    v = t._view
    return v if v is not None and v.base is None else None


def view_of(x, buf, fn, args):
    """Wrap the result ``buf`` of movement op ``fn(x, *args)``. When it aliases ``x``'s
    storage (a stage with views), record its root base and the ops that made it from
    there; on a stage without views, mark the copy with the layout PyTorch's view would
    have, so that writing into it (the write could not reach ``x``) or a ``view`` PyTorch
    could not make is refused, as PyTorch would."""
    out = wrap(buf)
    v = x._view
    if B.shares_storage(buf, x._data):
        base, steps = (x, ()) if v is None or v.steps is None else (v.base, v.steps)
        out._view = ViewRecord.view(base, steps + ((fn, args),),
                                    (buf.version, base.grad_fn, base.requires_grad))
    elif not B.VIEWS:
        layout = B.view_layout(layout_of(x), fn.__name__.lower(), args)
        if layout is not None:
            out._view = ViewRecord.copy(layout)
    return out


def layout_of(x):
    """The (shape, strides, offset) ``x`` has in PyTorch: on a stage without views, its
    record's when it is a copy standing for a view, else the contiguous layout."""
    v = copied(x)
    return v.layout if v is not None else (tuple(x.shape), B.contiguous_strides(x.shape), 0)


def replay(t, steps):
    """Apply a view's recorded movement ops to ``t``."""
    for fn, args in steps:
        t = fn.apply(t, *args)
    return t


def inplace(t, compute, op, fill=False):
    """Compute ``compute(old t)`` out of place, then write the result into ``t``'s elements
    and give ``t`` its place in the graph. Where storage is shared the write is seen through
    every view of it, so writing through a view also rewrites its base's history.
    ``fill``: every element gets the same value, so elements sharing memory are fine."""
    grad_mode = is_grad_enabled()
    base = None
    if t._view is not None:
        base = t._view.base
        if grad_mode:
            sync(t)
    if grad_mode and t.requires_grad and t.is_leaf:
        raise RuntimeError(f"{op}: a leaf tensor that requires grad is being used in an "
                           f"in-place operation (wrap it in no_grad())")
    if grad_mode and base is not None and base.requires_grad and base.is_leaf:
        raise RuntimeError(f"{op}: a view of a leaf tensor that requires grad is being used in "
                           f"an in-place operation (wrap it in no_grad())")
    if grad_mode and base is not None and t._view.steps is None:
        raise RuntimeError(f"{op}: this tensor is an input that a custom Function returned "
                           f"as-is; changing it in place would bypass that Function's backward "
                           f"and give wrong gradients: clone() it first")
    if not fill and any(s == 0 and n > 1 for s, n in zip(t.stride(), t.shape)):
        raise RuntimeError(f"{op}: more than one element of the written-to tensor (shape "
                           f"{list(t.shape)}, stride {list(t.stride())}) refers to a single "
                           f"memory location; clone() it first")
    # the graph records the old contents, not this tensor object, whose place in the
    # graph is about to change; where it records anything they are copied, since a saved
    # alias would see the write below (stage 0's alias keeps its values, a view's does not).
    # Nothing is recorded unless the result requires grad: an alias is tried first, and the
    # rare write of a grad-requiring operand into a plain tensor computes again from a copy
    result = compute(_old(t, copy=grad_mode and t.requires_grad))
    if grad_mode and result.requires_grad and not t.requires_grad:
        result = compute(_old(t, copy=True))
    if tuple(result.shape) != tuple(t.shape):
        raise ShapeError(f"{op}: output of shape {list(t.shape)} doesn't match the broadcast "
                         f"shape {list(result.shape)}")
    if result.dtype is not t.dtype:
        if result.dtype.category > t.dtype.category:
            raise TypeError(f"{op}: result type {result.dtype.name} can't be cast to the "
                            f"in-place output type {t.dtype.name}")
        result = result.to(t.dtype)
    refuse_copied_view(t, op)  # after the checks PyTorch makes too
    if base is not None and grad_mode and (base.requires_grad or result.requires_grad):
        write_through(t, base, result, op)
        return t
    B.set_data(t._data, result._data)
    if result.requires_grad:
        t.requires_grad, t.grad_fn, t._output_nr = True, result.grad_fn, result._output_nr
    return t


def _old(t, copy):
    """``t``'s current contents as a tensor in ``t``'s place in the graph: a copy, or an alias."""
    src = wrap(B.copy(t._data) if copy else B.alias(t._data))
    src.requires_grad, src.grad_fn, src._output_nr = t.requires_grad, t.grad_fn, t._output_nr
    src._accumulator = t._accumulator
    return src


def refuse_copied_view(t, op):
    """Refuse to write into a copy that stands for a view (a stage without views): in
    PyTorch the write would reach the tensor it was taken from; here it could not."""
    if copied(t) is not None:
        # with views, the only copies marked so are reinterpretations of the bits
        raise lacking(__name__, "views" if not B.VIEWS else "dtype_views",
                      f"{op}: this tensor (shape {list(t.shape)}) would be a view of another "
                      f"in PyTorch; it is a copy here, so an in-place write could not reach the "
                      f"tensor it was taken from. Write through indexing on that tensor "
                      f"(t[...] = ...), or clone() this one first")


def write_through(t, base, result, op):
    """An in-place change of view ``t`` whose base is in the graph (PyTorch's CopySlices):
    the base becomes "old base with the view's elements replaced by ``result``", a
    differentiable IndexPut, and the view is re-derived from the new base."""
    from .ops import IndexPut  # here: ops builds on this module
    steps = t._view.steps
    positions = wrap(place(B.arange(0, base.numel(), 1, int64), base.device))
    positions = replay(positions.reshape(base.shape), steps)
    base._inplace(lambda b: IndexPut.apply(b, positions, result), op)
    t._view = ViewRecord.view(base, steps, None)
    sync(t)


def sync(t):
    """Re-derive view ``t``'s place in the graph from its base when their storage was
    written in place, or the base's history changed, since it was made: the old place
    would give wrong gradients."""
    v = t._view
    if v.base is None or v.steps is None:  # a copy, or an input handed back: nothing to follow
        return
    now = (t._data.version, v.base.grad_fn, v.base.requires_grad)
    if v.stamp == now:
        return
    if v.base.requires_grad and is_grad_enabled():
        fresh = replay(v.base, v.steps)
        t.requires_grad, t.grad_fn, t._output_nr = True, fresh.grad_fn, fresh._output_nr
    t._view = ViewRecord.view(v.base, v.steps, now)
