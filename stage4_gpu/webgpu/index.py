"""Indexing, convolution's im2col/col2im, sort and scan on the WebGPU device: each a
kernel of ``kernels/`` (``gather``, ``scatter_add``, ``put``, ``unfold``, ``fold``,
``sort``, ``scan``); the design of each is at the top of its file.

Index values are checked on the device before use, as the CPU stages check them: an
out-of-range index raises IndexError instead of reading another tensor's memory. The
check reads one number back, so the host waits there.
"""
from ..dtypes import bool_, int64
from .buffer import empty
from .elementwise import MATH, kernel_source, run
from .reduce import reduce
from .runtime import WORKGROUP, runtime

_PUT = {False: "b", True: "a + b", "sum": "a + b", "prod": "a * b"}
_NAN_WINS = {"amax": ">", "amin": "<"}  # NaN wins amax and amin, and stays, as on the CPU


def _check_range(index, size, axis_name):
    """IndexError unless every value of ``index`` is in [0, size)."""
    if not index.numel:
        return
    axes = range(len(index.shape))
    low = reduce("min", index, axes, False).item()
    high = reduce("max", index, axes, False).item()
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise IndexError(f"index {bad} is out of bounds for {axis_name} with size {size}")


def _groups(n):
    return -(-n // WORKGROUP)


def take(x, index):
    """Flat gather: ``out[i] = x.flat[index[i]]``, shaped like ``index``."""
    _check_range(index, x.numel, "a tensor")
    return _gather(x, index, -1)


def gather(x, axis, index):
    _check_range(index, x.shape[axis], f"dimension {axis}")
    return _gather(x, index, axis)


def _gather(x, index, axis):
    out = empty(index.shape, x.dtype)
    nd = len(index.shape)
    x_strides = list(x.strides) if axis >= 0 else [0] * nd  # take reads x by its own shape
    params = [out.numel, nd, *index.shape, index.offset, *index.strides, x.offset, *x_strides,
              axis, len(x.shape), *x.shape, *x.strides]
    if out.numel:
        runtime().launch(kernel_source("gather", T=x.wgsl, I=index.wgsl),
                         [out.storage.gbuf, x.storage.gbuf, index.storage.gbuf], params,
                         _groups(out.numel))
    return out


def scatter_add(shape, axis, index, src):
    """A zero tensor of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    _check_range(index, shape[axis], f"dimension {axis}")
    out = empty(tuple(shape), src.dtype)
    nd = len(shape)
    params = [out.numel, nd, *shape, *index.shape, index.offset, *index.strides,
              src.offset, *src.strides, axis]
    if out.numel:
        runtime().launch(kernel_source("scatter_add", T=src.wgsl, I=index.wgsl),
                         [out.storage.gbuf, index.storage.gbuf, src.storage.gbuf], params,
                         _groups(out.numel))
    return out


def put(dst, index, src, accumulate=False):
    """``dst.flat[index[i]] = src[i]``, or combined by ``accumulate`` (see stage 0's)."""
    _check_range(index, dst.numel, "a tensor")
    if accumulate in _NAN_WINS:
        nan = "((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u)" if dst.dtype.is_floating_point else "false"
        combine = f"select(a, b, b {_NAN_WINS[accumulate]} a || {nan})"
    else:
        combine = _PUT[accumulate]
    if dst.dtype is bool_ and accumulate in (True, "sum"):
        combine = "a | b"
    elif dst.dtype is bool_ and accumulate == "prod":
        combine = "a & b"
    index = _dense(index, index.shape, index.dtype)
    src = _dense(src, index.shape, dst.dtype)
    nd = len(dst.shape)
    if index.numel:
        runtime().launch(kernel_source("put", T=dst.wgsl, I=index.wgsl, COMBINE=combine),
                         [dst.storage.gbuf, index.storage.gbuf, src.storage.gbuf],
                         [index.numel, nd, *dst.shape, dst.offset, *dst.strides], 1)
    dst.storage.version += 1


def _dense(x, shape, dtype):
    """``x`` broadcast to ``shape`` and converted to ``dtype``, in a new contiguous buffer."""
    from .elementwise import cast_expr
    return run(cast_expr("v1", x.dtype, dtype), empty(tuple(shape), dtype), [x])


def _conv_params(n, spatial, kernel, dilation, padding, stride, out_sp):
    """The 2-D parameters of unfold.wgsl and fold.wgsl (one spatial dim: height 1)."""
    if len(spatial) == 1:
        spatial, kernel, dilation = (1, *spatial), (1, *kernel), (1, *dilation)
        padding, stride, out_sp = (0, *padding), (1, *stride), (1, *out_sp)
    return [n, 0, *spatial, *kernel, *dilation, *padding, *stride, *out_sp]


def _out_spatial(spatial, kernel, dilation, padding, stride):
    return [(s + 2 * p - d * (k - 1) - 1) // st + 1
            for s, k, d, p, st in zip(spatial, kernel, dilation, padding, stride)]


def _four_strides(x):
    """x's (n, c, h, w) strides, with a height of 1 for one spatial dim."""
    return list(x.strides) if len(x.shape) == 4 else [x.strides[0], x.strides[1], 0, x.strides[2]]


def unfold(x, kernel, dilation, padding, stride):
    N, C, *sp = x.shape
    out_sp = _out_spatial(sp, kernel, dilation, padding, stride)
    K = 1
    for k in kernel:
        K *= k
    L = 1
    for s in out_sp:
        L *= s
    out = empty((N, C * K, L), x.dtype)
    params = _conv_params(out.numel, sp, kernel, dilation, padding, stride, out_sp)
    params[1] = C
    params += [x.offset, *_four_strides(x)]
    if out.numel:
        runtime().launch(kernel_source("unfold", T=x.wgsl), [out.storage.gbuf, x.storage.gbuf],
                         params, _groups(out.numel))
    return out


def fold(cols, output_size, kernel, dilation, padding, stride):
    N, CK, _ = cols.shape
    K = 1
    for k in kernel:
        K *= k
    C = CK // K
    out_sp = _out_spatial(output_size, kernel, dilation, padding, stride)
    out = empty((N, C, *output_size), cols.dtype)
    params = _conv_params(out.numel, list(output_size), kernel, dilation, padding, stride, out_sp)
    params[1] = C
    params += [cols.offset, *cols.strides]
    if out.numel:
        runtime().launch(kernel_source("fold", T=cols.wgsl), [out.storage.gbuf, cols.storage.gbuf],
                         params, _groups(out.numel))
    return out


def _rows_params(x, axis, count):
    """sort.wgsl's and scan.wgsl's parameters: rows along ``axis`` of x, written to
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


def _float_order(descending):
    if descending:
        return "!is_nan(b) && (is_nan(a) || a > b)"
    return "!is_nan(a) && (is_nan(b) || a < b)"


def sort(x, axis, descending):
    """Stable sort along ``axis`` (NaN largest): values and int64 positions."""
    if not x.shape:  # a zero-dim tensor sorts as one element
        from .movement import reshape
        vals, order = sort(reshape(x, (1,)), 0, descending)
        return reshape(vals, ()), reshape(order, ())
    vals, order = empty(x.shape, x.dtype), empty(x.shape, int64)
    floats = x.dtype.is_floating_point
    before = _float_order(descending) if floats else ("a > b" if descending else "a < b")
    equal = "(is_nan(a) && is_nan(b)) || a == b" if floats else "a == b"
    if vals.numel:
        runtime().launch(
            kernel_source("sort", T=x.wgsl, HELPERS=MATH if floats else "", BEFORE=before,
                    EQUAL=equal),
            [vals.storage.gbuf, order.storage.gbuf, x.storage.gbuf],
            _rows_params(x, axis, x.numel), _groups(x.numel))
    return vals, order


_SCAN_STEP = {"sum": "acc = acc + v;", "prod": "acc = acc * v;",
              "sum_f32": "c = sum_ff(c, ff(v)); acc = ff_f(c);",  # compensated, as a double
              "logsumexp": "acc = logaddexp_f(acc, v);"}


def scan(op, x, axis):
    """Running ``op`` along ``axis``: values, and for max/min the int64 positions."""
    if not x.shape:  # a zero-dim tensor scans as one element
        from .movement import reshape
        vals, order = scan(op, reshape(x, (1,)), 0)
        return reshape(vals, ()), None if order is None else reshape(order, ())
    floats = x.dtype.is_floating_point
    if op in ("max", "min"):
        cmp = ">=" if op == "max" else "<="
        cond = f"is_nan(v) || (!is_nan(acc) && v {cmp} acc)" if floats else f"v {cmp} acc"
        step = f"if ({cond}) {{ acc = v; best = j; }}"
    else:
        step = _SCAN_STEP["sum_f32" if op == "sum" and x.wgsl == "f32" else op]
    vals, order = empty(x.shape, x.dtype), empty(x.shape, int64)
    n = x.shape[axis]
    rows = x.numel // n if n else 0
    if rows:
        runtime().launch(kernel_source("scan", T=x.wgsl, HELPERS=MATH if floats else "", STEP=step),
                         [vals.storage.gbuf, order.storage.gbuf, x.storage.gbuf],
                         _rows_params(x, axis, rows), _groups(rows))
    return vals, (order if op in ("max", "min") else None)
