"""Indexing, convolution's im2col/col2im, sort and scan on a device: each one kernel of
the driver's (``gather``, ``scatter_add``, ``put``, ``unfold``, ``fold``, ``sort``,
``scan``); the design of each is at the top of its kernel file.

Index values are checked before use, as the CPU stages check them: an out-of-range index
raises IndexError instead of reading another tensor's memory. A driver whose kernels check
them on the device (``Driver.checks_indices``: cuda) reports a bad one at the runtime's next
synchronization, so the host does not wait here; for any other (webgpu) the host reads the
index's minimum and maximum back first, and waits there (not while a CUDA graph is
captured: a capture records no read back, ``cuda/graphs.py``).
"""
from ..dtypes import int64
from ..strided import reshape
from .elementwise import run
from .movement import copy
from .reduce import reduce


def _check_range(index, size, axis_name, launched=True):
    """IndexError unless every value of ``index`` is in [0, size). Nothing is read where the
    kernel about to run (``launched``) checks the values on the device, nor while a CUDA
    graph is captured (a capture records no read back)."""
    if not index.numel or (launched and index.driver.checks_indices) or index.driver.capturing():
        return
    axes = range(len(index.shape))
    low = reduce("min", index, axes, False).item()
    high = reduce("max", index, axes, False).item()
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise IndexError(f"index {bad} is out of bounds for {axis_name} with size {size}")


def take(x, index):
    """Flat gather: ``out[i] = x.flat[index[i]]``, shaped like ``index``."""
    _check_range(index, x.numel, "a tensor")
    return _gather(x, index, -1)


def gather(x, axis, index):
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``."""
    _check_range(index, x.shape[axis], f"dimension {axis}")
    return _gather(x, index, axis)


def _gather(x, index, axis):
    out = type(x).empty(index.shape, x.dtype)
    nd = len(index.shape)
    x_strides = list(x.strides) if axis >= 0 else [0] * nd  # take reads x by its own shape
    params = [out.numel, nd, *index.shape, index.offset, *index.strides, x.offset, *x_strides,
              axis, len(x.shape), *x.shape, *x.strides]
    if out.numel:
        x.driver.gather(out, x, index, params)
    return out


def scatter_add(shape, axis, index, src):
    """A zero tensor of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    out = type(src).empty(tuple(shape), src.dtype)
    # no kernel runs into an empty output: then every index value is out of range, found here
    _check_range(index, shape[axis], f"dimension {axis}", launched=bool(out.numel))
    params = [out.numel, len(shape), *shape, *index.shape, index.offset, *index.strides,
              src.offset, *src.strides, axis]
    if out.numel:
        src.driver.scatter_add(out, index, src, params)
    return out


def put(dst, index, src, accumulate=False):
    """``dst.flat[index[i]] = src[i]``, or combined by ``accumulate`` (see stage 0's)."""
    _check_range(index, dst.numel, "a tensor")
    index = copy(index)  # contiguous, as the kernel walks it
    src = _dense(src, index.shape, dst.dtype)
    if index.numel:
        dst.driver.put(dst, index, src, accumulate,
                       [index.numel, len(dst.shape), *dst.shape, dst.offset, *dst.strides])
    dst.storage.version += 1


def _dense(x, shape, dtype):
    """``x`` broadcast to ``shape`` and converted to ``dtype``, in a new contiguous buffer."""
    return run(None, type(x).empty(tuple(shape), dtype), [x])


# ---------------------------------------------------------------- im2col, col2im

def _conv_params(n, channels, spatial, kernel, dilation, padding, stride, out_sp):
    """The 2-D parameters of the unfold and fold kernels (one spatial dim: height 1)."""
    if len(spatial) == 1:
        spatial, kernel, dilation = (1, *spatial), (1, *kernel), (1, *dilation)
        padding, stride, out_sp = (0, *padding), (1, *stride), (1, *out_sp)
    return [n, channels, *spatial, *kernel, *dilation, *padding, *stride, *out_sp]


def _out_spatial(spatial, kernel, dilation, padding, stride):
    return [(s + 2 * p - d * (k - 1) - 1) // st + 1
            for s, k, d, p, st in zip(spatial, kernel, dilation, padding, stride)]


def _product(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def unfold(x, kernel, dilation, padding, stride):
    """im2col: (N, C, *spatial) to (N, C * prod(kernel), L), one column per output position."""
    N, C, *sp = x.shape
    out_sp = _out_spatial(sp, kernel, dilation, padding, stride)
    out = type(x).empty((N, C * _product(kernel), _product(out_sp)), x.dtype)
    # x's (n, c, h, w) strides, with a height of 1 for one spatial dim
    four = list(x.strides) if len(x.shape) == 4 else [x.strides[0], x.strides[1], 0, x.strides[2]]
    params = _conv_params(out.numel, C, sp, kernel, dilation, padding, stride, out_sp)
    if out.numel:
        x.driver.unfold(out, x, params + [x.offset, *four])
    return out


def fold(cols, output_size, kernel, dilation, padding, stride):
    """col2im: the columns of ``unfold`` summed back into (N, C, *output_size)."""
    N, CK, _ = cols.shape
    C = CK // _product(kernel)
    out_sp = _out_spatial(output_size, kernel, dilation, padding, stride)
    out = type(cols).empty((N, C, *output_size), cols.dtype)
    params = _conv_params(out.numel, C, list(output_size), kernel, dilation, padding, stride, out_sp)
    if out.numel:
        cols.driver.fold(out, cols, params + [cols.offset, *cols.strides])
    return out


# ---------------------------------------------------------------- sort, scan

def rows_params(x, axis, count):
    """The sort and scan kernels' parameters: rows along ``axis`` of x, written to
    contiguous outputs of x's shape."""
    others = [d for d in range(len(x.shape)) if d != axis]
    out_strides = []
    s = 1
    for n in reversed(x.shape):
        out_strides.append(s)
        s *= n
    out_strides.reverse()
    return ([count, x.shape[axis], len(others), *(x.shape[d] for d in others), x.offset,
             *(x.strides[d] for d in others), x.strides[axis],
             *(out_strides[d] for d in others), out_strides[axis]])


def sort(x, axis, descending):
    """Stable sort along ``axis`` (NaN largest): values and int64 positions."""
    if not x.shape:  # a zero-dim tensor sorts as one element
        vals, order = sort(reshape(x, (1,)), 0, descending)
        return reshape(vals, ()), reshape(order, ())
    vals, order = type(x).empty(x.shape, x.dtype), type(x).empty(x.shape, int64)
    if vals.numel:
        x.driver.sort(vals, order, x, axis, descending)
    return vals, order


def scan(op, x, axis):
    """Running ``op`` along ``axis``: values, and for max/min the int64 positions."""
    if not x.shape:  # a zero-dim tensor scans as one element
        vals, order = scan(op, reshape(x, (1,)), 0)
        return reshape(vals, ()), None if order is None else reshape(order, ())
    vals, order = type(x).empty(x.shape, x.dtype), type(x).empty(x.shape, int64)
    n = x.shape[axis]
    rows = x.numel // n if n else 0
    if rows:
        x.driver.scan(op, vals, order, x, rows_params(x, axis, rows), rows)
    return vals, (order if op in ("max", "min") else None)
