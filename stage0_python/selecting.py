"""Selecting elements: by index along a dim (``gather``, ``index_select``), by mask
(``masked_select``, and ``nonzero``, the positions a mask holds), and by position (``tril``,
``triu``, a triangle of a matrix).

``gather`` and ``index_select`` are the ``Gather`` Function, whose gradient scatters back;
the rest compose indexing and ``where``. The methods are ``SelectingMethods``, a base of
``Tensor``; ``scatter.py`` holds the writing side, whose index rules are ``gather``'s
(``_axis_index``).
"""
from . import backend as B
from . import dtypes as D
from . import ops
from .device import place
from .dtypes import int32, int64
from .method_forms import accepts_axis
from .ops import where
from .shapes import IndexRangeError, ShapeError
from .tensor_core import TensorCore

wrap = TensorCore._make


def check_index_tensor(index, op):
    """TypeError naming ``op`` unless ``index`` is an int64 or int32 tensor."""
    if not isinstance(index, TensorCore):
        raise TypeError(f"{op}: index must be a Tensor, got {type(index).__name__}")
    if index.dtype not in (int64, int32):
        raise TypeError(f"{op}: index must be an int64 or int32 tensor, got {index.dtype.name}")


def _arange(n, device):
    """``0, 1, ..., n - 1`` as an int64 tensor on ``device`` (tril's and triu's positions)."""
    return wrap(place(B.arange(0, n, 1, int64), device))


class SelectingMethods:
    """Tensor's methods that select elements by index, mask or position."""

    __slots__ = ()

    def _axis_index(self, op, dim, index, src=None):
        """PyTorch's rules for gather and scatter: ``index`` has the input's number of dims
        (a 0-d tensor counts as 1-d) and ``src``'s, is no larger than ``src`` anywhere and
        no larger than the input apart from ``dim``; an empty index is never checked.
        Returns the dim, normalised."""
        d = self._dim(dim, op)
        check_index_tensor(index, op)
        if isinstance(src, TensorCore) and src.dtype is not self.dtype:  # in PyTorch's words
            raise D.DTypeMismatchError(f"scatter(): Expected self.dtype to be equal to src.dtype ({op}: "
                                       f"self is {self.dtype.name}, src {src.dtype.name})")
        operands = (("input", self), ("src", src)) if src is not None else (("input", self),)
        ishape = tuple(index.shape) or (1,)
        for name, t in operands:
            if not isinstance(t, TensorCore):
                raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
            if not index.numel():
                continue
            tshape = tuple(t.shape) or (1,)
            if len(tshape) != len(ishape):
                raise ShapeError(f"{op}: index of shape {list(index.shape)} must have as many dims as "
                                 f"{name} of shape {list(t.shape)}")
            for i, (a, b) in enumerate(zip(ishape, tshape)):
                if a > b and (i != d or name == "src"):
                    raise ShapeError(f"{op}: index of shape {list(index.shape)} is larger than {name} "
                                     f"of shape {list(t.shape)} at dim {i}")
        return d

    @accepts_axis
    def gather(self, dim, index):
        """Values along ``dim`` at ``index``; see torch.gather."""
        d = self._axis_index("gather", dim, index)
        try:  # the kernels check the range, so the success path pays nothing here
            if not index.ndim or not self.ndim or not index.numel():  # as a 1-d gather
                return ops.Gather.apply(self.reshape(-1), 0, index.reshape(-1)).reshape(index.shape)
            return ops.Gather.apply(self, d, index)
        except IndexError as e:
            raise IndexRangeError(f"gather: {e}") from None

    @accepts_axis
    def index_select(self, dim, index):
        """The entries of ``index`` along ``dim``; see torch.index_select."""
        d = self._dim(dim, "index_select")
        check_index_tensor(index, "index_select")
        if index.ndim > 1:
            raise ShapeError(f"index_select: index must be 1-D, got shape {list(index.shape)}")
        index = index.reshape(-1)
        shape = [1] * self.ndim
        shape[d] = index.numel()
        full = list(self.shape)
        full[d] = index.numel()
        try:
            return ops.Gather.apply(self, d, index.reshape(shape).expand(full))
        except IndexError as e:
            raise IndexRangeError(f"index_select: {e}") from None

    def nonzero(self, as_tuple=False):
        """The indices of the nonzero elements (a tuple of 1-D tensors with ``as_tuple``); see
        torch.nonzero."""
        vals = self._data.values()
        flat = [i for i, v in enumerate(vals) if v]
        coords = []
        strides = B.contiguous_strides(self.shape)
        for i in flat:
            c = []
            for s, n in zip(strides, self.shape):
                c.append((i // s) % n)
            coords.append(c)
        out = wrap(place(B.from_list([v for c in coords for v in c], (len(flat), self.ndim), int64),
                                 self.device))
        if as_tuple:
            return tuple(out[:, k] for k in range(self.ndim))
        return out

    def masked_select(self, mask):
        """The elements where ``mask`` is True, as a 1-D tensor; see torch.masked_select."""
        return self[mask.expand(self.shape) if mask.shape != self.shape else mask]

    def tril(self, diagonal=0):
        """The lower triangle from ``diagonal`` down, zeros above; see torch.tril."""
        r, c = self.shape[-2:]
        keep = _arange(r, self.device).unsqueeze(1) + diagonal >= _arange(c, self.device).unsqueeze(0)
        return where(keep, self, self.new_zeros(()))

    def triu(self, diagonal=0):
        """The upper triangle from ``diagonal`` up, zeros below; see torch.triu."""
        r, c = self.shape[-2:]
        keep = _arange(r, self.device).unsqueeze(1) + diagonal <= _arange(c, self.device).unsqueeze(0)
        return where(keep, self, self.new_zeros(()))

