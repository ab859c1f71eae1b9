"""Stage 0's layout library: shapes, strides and index arithmetic, with no element touched.

Stage 0 stores every tensor contiguously, but it keeps the rules of the strided stages
(which views exist and how they are laid out, as PyTorch lays them out) so that it knows
which of its copies stand for views. Those stages import the rules from here by full name
(``stage0_python.layout``, one module in the process, as the vocabulary is), as do stage 0's
backend and the frontend's shape checks: one definition of each rule for every stage. The
last section is what a strided view written in Python (stage 1's buffer, stage 4's device
views) answers from its fields alone.
"""


# ---------------------------------------------------------------- shapes and strides

def prod(shape):
    """The element count of ``shape`` (exact: Python integers never wrap)."""
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape):
    """Row-major strides of ``shape``, in elements."""
    # a size-0 dim counts as 1, as in PyTorch (no element is addressed either way)
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * max(shape[i + 1], 1)
    return tuple(strides)


def strided_indices(shape, strides, offset=0):
    """Flat positions of every element of a strided view, in row-major order."""
    idx = [offset]
    for n, s in zip(shape, strides):
        if n == 1:
            continue
        steps = [j * s for j in range(n)]
        idx = [b + t for b in idx for t in steps]
    if prod(shape) == 0:
        return []
    return idx


def broadcast_shapes(*shapes):
    """The shape NumPy's broadcasting rule gives ``shapes`` (dims align from the right;
    each is 1 or the common size), or None when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            d = s[i] if -i <= len(s) else 1
            if d != 1:
                if size not in (1, d):
                    return None
                size = d
        out.append(size)
    return tuple(out)


def reduced_shape(shape, axes, keepdim):
    """The shape left after reducing ``shape`` over ``axes``."""
    if keepdim:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def axis_positions(shape, axis, index):
    """For every element of ``index`` the flat position in a tensor of ``shape`` that
    it selects along ``axis`` (other coordinates taken from the element's own)."""
    strides = contiguous_strides(shape)
    base = strided_indices(index.shape, [s if d != axis else 0 for d, s in enumerate(strides)])
    st = strides[axis]
    n = shape[axis]
    out = []
    for b, i in zip(base, index.data):
        if not 0 <= i < n:  # negative indices are refused, as PyTorch refuses them here
            raise IndexError(f"index {i} is out of bounds for dimension {axis} with size {n}")
        out.append(b + i * st)
    return out


def nested(values, shape):
    """Row-major ``values`` as nested lists of ``shape`` (``tolist``): the one value when
    ``shape`` has no dims."""
    if not shape:
        return values[0]

    def build(off, dims):
        if len(dims) == 1:
            return values[off:off + dims[0]]
        step = prod(dims[1:])
        return [build(off + i * step, dims[1:]) for i in range(dims[0])]
    return build(0, tuple(shape))


# ---------------------------------------------------------------- views

def view_strides(shape, strides, new_shape):
    """Strides that lay ``new_shape`` over the same elements, or None when the layout
    does not allow it (PyTorch's rule, so views get PyTorch's strides)."""
    if prod(shape) == 0:
        return contiguous_strides(new_shape)
    if not shape:
        return (1,) * len(new_shape)
    new = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = strides[-1] if strides else 1
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        # a chunk ends where the next dim out does not continue it in memory
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base = strides[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(new)


def view_layout(layout, op, args):
    """The (shape, strides, offset) that movement ``op`` (with the Function's ``args``)
    gives a view of a tensor laid out as ``layout``, as the strided stages and PyTorch
    lay it out; None where they copy instead (a reshape the strides do not allow). Stage
    0 copies every time and keeps this to know which of its copies stand for views."""
    shape, strides, offset = layout
    if op == "reshape":
        new_shape = tuple(args[0])
        new = view_strides(shape, strides, new_shape)
        return None if new is None else (new_shape, new, offset)
    if op == "permute":
        dims = args[0]
        return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims), offset
    if op == "expand":
        new_shape = tuple(args[0])
        pad = len(new_shape) - len(shape)
        new = [0] * len(new_shape)
        for i in range(len(new_shape) - 1, -1, -1):
            d = i - pad
            size = shape[d] if d >= 0 else 1
            if d >= 0:
                stride = strides[d]
            else:
                stride = new_shape[i + 1] * new[i + 1] if i + 1 < len(new_shape) else 1
            new[i] = 0 if size != new_shape[i] else stride
        return new_shape, tuple(new), offset
    if op == "slice":
        starts, steps, counts = args
        return (tuple(counts), tuple(st * sp for st, sp in zip(strides, steps)),
                offset + sum(s * st for s, st in zip(starts, strides)))
    if op == "diagonal":
        return diagonal_layout(shape, strides, offset, *args)
    if op == "windows":
        return (*windows_layout(shape, strides, *args), offset)
    raise ValueError(f"view_layout: unknown movement op {op!r}")


def diagonal_layout(shape, strides, start, offset, dim1, dim2):
    """(shape, strides, start) of the diagonal of dims ``dim1``/``dim2`` (``offset``
    above it when positive, below when negative), appended as the last dim, as in
    ``torch.diagonal``."""
    n1, n2 = shape[dim1], shape[dim2]
    size = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    if size:
        start += offset * strides[dim2] if offset >= 0 else -offset * strides[dim1]
    keep = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    return ((*(shape[d] for d in keep), size), (*(strides[d] for d in keep), strides[dim1] + strides[dim2]),
            start)


def windows_layout(shape, strides, dim, size, step):
    """(shape, strides) of the windows of ``size`` every ``step`` along ``dim`` (a new
    last dim indexes within a window), as in ``torch.Tensor.unfold``."""
    shape, strides = list(shape), list(strides)
    st = strides[dim] if shape else 1
    if shape:
        shape[dim] = (shape[dim] - size) // step + 1
        strides[dim] = st * step
    return (*shape, size), (*strides, st)


# ---------------------------------------------------------------- writes through a view

def overlaps(x):
    """Whether two of x's elements share memory through a broadcast (stride 0) dim."""
    return any(s == 0 and n > 1 for n, s in zip(x.shape, x.strides))


def refuse_overlapping_write(region):
    """The strided stages' refusal to write into a region whose elements share memory:
    which of the writes would win is not defined (stage 0 has no strides, so no such region)."""
    if overlaps(region):
        raise RuntimeError(f"setitem: more than one element of the written-to region (shape "
                           f"{list(region.shape)}, stride {list(region.strides)}) refers to a single "
                           f"memory location; clone() the tensor first")


# ---------------------------------------------------------------- a strided view
#
# What the strided buffers written in Python (stage 1's, and stage 4's views of a device's
# storage) answer alike, from their ``shape``, ``strides``, ``offset`` and ``storage``.
# Stage 2's compiled Buffer answers the same from C fields (``_buffer.pyx``).

def row_major(shape, strides):
    """Whether ``strides`` lay ``shape`` out in row-major order, without gaps (the stride of
    a size-1 dim aside): PyTorch's ``is_contiguous``."""
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def strides(x):
    """The strides of the view ``x``, in elements."""
    return x.strides


def storage_offset(x):
    """Where the view ``x`` starts in its storage, in elements."""
    return x.offset


def storage_id(x):
    """An id of ``x``'s storage: the same for every view of it."""
    return id(x.storage)


class VersionOnStorage:
    """A view's ``version`` (its in-place writes so far, which autograd checks) kept on its
    storage: a write through any view of a storage is seen through all of them."""
    __slots__ = ()

    @property
    def version(self):
        return self.storage.version

    @version.setter
    def version(self, value):
        self.storage.version = value
