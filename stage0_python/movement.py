"""Movement: the methods that change how a tensor's elements are laid out, not their
values: ``reshape view flatten unflatten squeeze unsqueeze``, ``permute transpose t T mT``,
``expand broadcast_to repeat flip``, ``diagonal unfold``, ``select narrow split chunk
unbind``, ``contiguous``, and ``view(dtype)``, which reads the same bytes as another dtype.

Most are one ``ops`` Function each (``Reshape``, ``Permute``, ``Expand``, ``Diagonal``,
``Windows``) or basic indexing, and a view of their input on the stages that have views;
stage 0 copies, and ``views.py`` keeps the layout PyTorch's view would have. The methods
are ``MovementMethods``, a base of ``Tensor``.
"""
import operator

from stage0_python.layout import row_major
from stage0_python.vocabulary import ArgumentError

from . import backend as B
from . import dtypes as D
from . import ops, shapes, views
from .arguments import shape_arg, to_dtype
from .device import place
from .dtypes import bool_, int64
from .method_forms import accepts_axis
from .shapes import ShapeError
from .tensor_core import TensorCore

wrap = TensorCore._make


def _dense(shape, strides):
    """Whether ``strides`` lay ``shape`` out row-major (size-1 dims count as any, as in
    PyTorch's is_contiguous); an empty shape is dense whatever its strides."""
    return B.prod(shape) == 0 or row_major(shape, strides)


class MovementMethods:
    """Tensor's views, reshapes and the rest of its layout changes."""

    __slots__ = ()

    @property
    def T(self):
        """The tensor with its dims reversed; see torch.Tensor.T (a view on stages that have ``views``;
        stage 0 copies, see ``LACKS``)."""
        return self.permute(tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The last two dims swapped; see torch.Tensor.mT (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``)."""
        return self.transpose(-2, -1)

    def reshape(self, *shape):
        """The same elements in ``shape`` (one dim may be -1); see torch.reshape (a view on stages that
        have ``views``; stage 0 copies, see ``LACKS``)."""
        shape = shape_arg(shape, "reshape")
        n = self.numel()
        if shape.count(-1) > 1:
            raise ShapeError(f"reshape: only one dimension can be inferred, got {list(shape)}")
        if -1 in shape:
            known = shapes.numel(s for s in shape if s != -1)
            if known == 0 or n % known:
                raise ShapeError(f"reshape: shape {list(shape)} is invalid for input of size {n}")
            shape = tuple(n // known if s == -1 else s for s in shape)
        if any(s < 0 for s in shape) or shapes.numel(shape) != n:
            raise ShapeError(f"reshape: shape {list(shape)} is invalid for input of size {n} "
                             f"(shape {list(self.shape)})")
        if not n:  # the count matches trivially; the strides must still fit
            shapes.check(shape, "reshape")
        if shape == tuple(self.shape):
            return self
        return ops.Reshape.apply(self, shape)

    def view(self, *shape):
        """``reshape`` that must not copy: an error where the strides do not allow it.
        ``view(dtype)`` reinterprets the bits, as PyTorch's (see ``view_dtype``)."""
        if len(shape) == 1 and (isinstance(shape[0], D.DType)
                                or (isinstance(shape[0], str) and shape[0] in D.BY_NAME)):  # not a list
            return self._view_dtype(to_dtype(shape[0], "view"))
        out = self.reshape(*shape)
        # a copy standing for a view (stage 0) is viewable exactly where PyTorch's view is
        copied = views.copied(self)
        if out is not self and (B.storage_id(out._data) != B.storage_id(self._data)
                                or (copied and out._view is None)):
            strides = copied.layout[1] if copied else self.stride()
            raise ShapeError(f"view: size {list(out.shape)} is not compatible with the input's size "
                             f"{list(self.shape)} and stride {list(strides)} (at least one "
                             f"dimension spans two contiguous subspaces); use .reshape(...) instead")
        return out

    def _view_dtype(self, dtype):
        """The same bytes read as ``dtype``: the last dim scales by the ratio of the element
        sizes, as in PyTorch. Where the backend aliases storage across dtypes the result
        shares ``self``'s memory; elsewhere (the LACKS names ``dtype_views``) it is a copy,
        and an in-place write into it is refused rather than lost. Not differentiable. bool is
        refused: a byte other than 0 or 1 is no bool."""
        if dtype is self.dtype:
            return self
        if bool_ in (self.dtype, dtype):
            raise TypeError(f"view: reinterpreting {self.dtype.name} as {dtype.name} is not supported "
                            f"(bool holds only 0 and 1)")
        old, new = self.dtype.itemsize, dtype.itemsize
        shape = list(self.shape)
        if old != new:
            # on a stage without views, the strides the PyTorch view would have
            copied = views.copied(self)
            strides, offset = copied.layout[1:] if copied else (self.stride(), self.storage_offset())
            if not shape or (shape[-1] * old) % new or (strides[-1] != 1 and shape[-1] != 1):
                raise ShapeError(f"view: a tensor of shape {shape} and dtype {self.dtype.name} cannot be "
                                 f"read as {dtype.name}: the last dim must be contiguous and hold a whole "
                                 f"number of {dtype.name} elements")
            if any((s * old) % new for s in (offset, *strides[:-1])):
                raise ShapeError(f"view: the storage offset {offset} and strides {list(strides)} of a "
                                 f"{self.dtype.name} tensor must be whole numbers of {dtype.name} elements")
            shape[-1] = shape[-1] * old // new
        out = wrap(B.view_dtype(self._data, dtype))
        if not B.shares_storage(out._data, self._data):  # a copy: a write into it could not reach self
            out._view = views.ViewRecord.copy((tuple(shape), B.contiguous_strides(shape), 0))
        return out

    def view_as(self, other):
        """``self.reshape(other.shape)``; see torch.Tensor.view_as. ``reshape_as`` is the same function."""
        return self.reshape(other.shape)

    reshape_as = view_as

    def flatten(self, start_dim=0, end_dim=-1):
        """Merge dims ``start_dim`` to ``end_dim`` into one; see torch.flatten."""
        if not self.ndim:
            return self.reshape(1)
        s, e = self._dim(start_dim, "flatten"), self._dim(end_dim, "flatten")
        if s > e:
            raise ShapeError(f"flatten: start_dim {start_dim} cannot come after end_dim {end_dim}")
        shape = self.shape
        return self.reshape(*shape[:s], B.prod(shape[s:e + 1]), *shape[e + 1:])

    def unflatten(self, dim, sizes):
        """Split dim ``dim`` into ``sizes``; see torch.unflatten."""
        d = self._dim(dim, "unflatten")
        return self.reshape(*self.shape[:d], *sizes, *self.shape[d + 1:])

    @accepts_axis
    def squeeze(self, dim=None):
        """Remove dims of size 1 (all, or those in ``dim``); see torch.squeeze (a view on stages that have
        ``views``; stage 0 copies, see ``LACKS``)."""
        if dim is None:
            axes = [d for d, n in enumerate(self.shape) if n == 1]
        else:
            axes = [d for d in self._dims(dim, "squeeze") if self.shape[d] == 1]
        if not axes:
            return self
        return self.reshape(*(n for d, n in enumerate(self.shape) if d not in axes))

    @accepts_axis
    def unsqueeze(self, dim):
        """Insert a dim of size 1 at ``dim``; see torch.unsqueeze (a view on stages that have ``views``;
        stage 0 copies, see ``LACKS``)."""
        d = self._dim(dim, "unsqueeze", self.ndim + 1)
        shape = list(self.shape)
        shape.insert(d, 1)
        return self.reshape(shape)

    def permute(self, *dims):
        """The dims reordered as ``dims``; see torch.permute (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``)."""
        dims = shape_arg(dims, "permute")
        if len(dims) != self.ndim:
            raise ShapeError(f"permute: number of dims {len(dims)} does not match the tensor's "
                             f"{self.ndim} (shape {list(self.shape)})")
        dims = tuple(self._dim(d, "permute") for d in dims)
        if len(set(dims)) != len(dims):
            raise ShapeError(f"permute: repeated dim in {list(dims)}")
        if dims == tuple(range(self.ndim)):
            return self
        return ops.Permute.apply(self, dims)

    def transpose(self, dim0, dim1):
        """Swap ``dim0`` and ``dim1``; see torch.transpose (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``). ``swapaxes`` is the same function."""
        d0, d1 = self._dim(dim0, "transpose"), self._dim(dim1, "transpose")
        dims = list(range(self.ndim))
        dims[d0], dims[d1] = dims[d1], dims[d0]
        return self.permute(dims)

    swapaxes = transpose

    def t(self):
        """Transpose a tensor of at most 2 dims; see torch.t (a view on stages that have ``views``; stage 0
        copies, see ``LACKS``)."""
        if self.ndim > 2:
            raise ShapeError(f"t: expects a tensor with <= 2 dimensions, got {self.ndim}")
        return self.T

    def expand(self, *sizes):
        """The tensor broadcast to ``sizes`` (-1 keeps a dim); see torch.Tensor.expand (a view on stages
        that have ``views``; stage 0 copies, see ``LACKS``)."""
        sizes = shape_arg(sizes, "expand")
        if len(sizes) < self.ndim:
            raise ShapeError(f"expand: the number of sizes ({len(sizes)}) must be at least the "
                             f"number of dims ({self.ndim}), shape {list(self.shape)}")
        pad = len(sizes) - self.ndim
        shape = []
        for i, s in enumerate(sizes):
            cur = self.shape[i - pad] if i >= pad else None
            if s == -1:
                if cur is None:
                    raise ShapeError("expand: -1 is not allowed for a new leading dimension")
                s = cur
            elif s < 0:
                raise ShapeError(f"expand: negative size {s} in {list(sizes)} (shape {list(self.shape)})")
            elif cur is not None and cur != 1 and cur != s:
                raise ShapeError(f"expand: the size of dim {i - pad} ({cur}) must match the "
                                 f"expanded size {s} (shape {list(self.shape)} to {list(sizes)})")
            shape.append(s)
        shape = shapes.check(shape, "expand")
        if shape == tuple(self.shape):
            return self
        return ops.Expand.apply(self, shape)

    def expand_as(self, other):
        """``self.expand(other.shape)``; see torch.Tensor.expand_as."""
        return self.expand(other.shape)

    def broadcast_to(self, shape):
        """The tensor broadcast to ``shape``; see torch.broadcast_to (a view on stages that have ``views``;
        stage 0 copies, see ``LACKS``)."""
        return self.expand(shape)

    def contiguous(self):
        """This tensor if its elements lie in row-major order, else a row-major copy."""
        if not B.is_contiguous(self._data):
            return ops.Contiguous.apply(self)
        copied = views.copied(self)
        if copied is not None and not _dense(*copied.layout[:2]):
            return self.clone()  # PyTorch copies this layout, so the result is no view
        return self

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal at ``offset`` between ``dim1`` and ``dim2``, as the last dim; see torch.diagonal (a
        view on stages that have ``views``; stage 0 copies, see ``LACKS``)."""
        d1, d2 = self._dim(dim1, "diagonal"), self._dim(dim2, "diagonal")
        if d1 == d2:
            raise ShapeError(f"diagonal: dim1 and dim2 cannot be the same dimension, got {dim1} and "
                             f"{dim2} (shape {list(self.shape)})")
        return ops.Diagonal.apply(self, operator.index(offset), d1, d2)

    def unfold(self, dimension, size, step):
        """Every window of ``size`` elements, ``step`` apart, along ``dimension``, as a new
        last dim (convolution and pooling as a view)."""
        d = self._dim(dimension, "unfold")
        n = self.shape[d] if self.ndim else 1
        if not 0 <= size <= n:
            raise ShapeError(f"unfold: size {size} exceeds dimension {d} of size {n} "
                             f"(shape {list(self.shape)})")
        if step <= 0:
            raise ArgumentError(f"unfold: step must be positive, got {step}")
        return ops.Windows.apply(self, d, size, step)

    @accepts_axis
    def select(self, dim, index):
        """The slice at ``index`` along ``dim``, which it removes (see torch.Tensor.select)."""
        d = self._dim(dim, "select")
        return self[(slice(None),) * d + (index,)]

    @accepts_axis
    def narrow(self, dim, start, length):
        """``length`` entries of ``dim`` from ``start``; see torch.narrow (a view on stages that have
        ``views``; stage 0 copies, see ``LACKS``)."""
        d = self._dim(dim, "narrow")
        n = self.shape[d]
        if start < 0:
            start += n
        if not (0 <= start and length >= 0 and start + length <= n):
            raise IndexError(f"narrow: start {start} + length {length} exceeds dimension {d} of "
                             f"size {n}")
        key = [slice(None)] * self.ndim
        key[d] = slice(start, start + length)
        return self[tuple(key)]

    def split(self, split_size_or_sections, dim=0):
        """Split along ``dim`` into pieces of one size or of the listed sizes; see torch.split (a view on
        stages that have ``views``; stage 0 copies, see ``LACKS``)."""
        d = self._dim(dim, "split")
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            if step <= 0:
                raise ShapeError(f"split: split_size must be positive, got {step}")
            sizes = [min(step, n - i) for i in range(0, n, step)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ShapeError(f"split: sections {sizes} do not sum to dim {d} of size {n}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return tuple(out)

    @accepts_axis
    def chunk(self, chunks, dim=0):
        """Split into ``chunks`` pieces along ``dim``; see torch.chunk (a view on stages that have
        ``views``; stage 0 copies, see ``LACKS``)."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be positive, got {chunks}")
        n = self.shape[self._dim(dim, "chunk")]
        return self.split(max(1, -(-n // chunks)), dim)

    @accepts_axis
    def unbind(self, dim=0):
        """The slices along ``dim``, as a tuple with that dim removed; see torch.unbind."""
        d = self._dim(dim, "unbind")
        return tuple(t.squeeze(d) for t in self.split(1, d))

    def repeat(self, *sizes):
        """The tensor tiled ``sizes`` times along each dim; see torch.Tensor.repeat."""
        sizes = shape_arg(sizes, "repeat")
        if len(sizes) < self.ndim:
            raise ShapeError(f"repeat: {len(sizes)} repeats for a {self.ndim}-d tensor")
        if any(r < 0 for r in sizes):
            raise ShapeError(f"repeat: negative repeat count in {list(sizes)}")
        shape = (1,) * (len(sizes) - self.ndim) + tuple(self.shape)
        shapes.check([r * n for r, n in zip(sizes, shape)], "repeat", self.dtype)
        # interleave a size-1 axis before each dim, broadcast it to the repeat count
        x = self.reshape([v for n in shape for v in (1, n)])
        x = x.expand([v for r, n in zip(sizes, shape) for v in (r, n)])
        return x.reshape([r * n for r, n in zip(sizes, shape)])

    def flip(self, *dims, **kwargs):
        """See torch.flip: ``x.flip(0, 1)``, ``x.flip((0, 1))`` or ``x.flip(dims=(0, 1))``."""
        if kwargs:
            if set(kwargs) != {"dims"} or dims:
                raise TypeError(f"flip: takes dims as arguments or as dims=, got {sorted(kwargs)}")
            dims = (kwargs["dims"],)
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        # a reversed index is a gather (positive-step slices only, as in PyTorch)
        x = self
        for d in self._dims(dims, "flip"):
            n = x.shape[d]
            x = x.index_select(d, wrap(place(B.arange(n - 1, -1, -1, int64), self.device)))
        return x
