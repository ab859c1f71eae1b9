"""Indexing, convolution's im2col/col2im, sort and scan on the CUDA device: each a kernel
of ``kernels/`` (``gather.cu``, ``scatter_add.cu``, ``put.cu``, ``unfold.cu``,
``fold.cu``, ``sort.cu``, ``scan.cu``); the design of each is at the top of its file.
The parameters are the webgpu device's (``webgpu/index.py``), in int64.

Index values are checked on the device before use, as the CPU stages check them: an
out-of-range index raises IndexError instead of reading another tensor's memory. The
check reads two numbers back, so the host waits there.
"""
from ..dtypes import int64
from ..webgpu.index import _conv_params, _four_strides, _out_spatial, _rows_params
from .buffer import empty
from .elementwise import unary_into
from .kernels import CTYPE
from .reduce import reduce
from .runtime import BLOCK, runtime

_INDEX_TYPES = ("int32", "int64")
_PUT = {False: "Store", True: "Accumulate", "sum": "Accumulate", "prod": "Multiply",
        "amax": "Amax", "amin": "Amin"}
SORT_MAX = 2048  # sort.cu's: rows up to this length sort in shared memory


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


def _blocks(n):
    return -(-n // BLOCK)


def _launch(kernel, instance, blocks, threads, params, arrays):
    rt = runtime()
    rt.launch(kernel, instance, blocks, threads, [rt.params(params)] + arrays)


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
        _launch("gather", f"gather<{x.ctype}, {index.ctype}>", _blocks(out.numel), BLOCK, params,
                [out.array, x.array, index.array])
    return out


def scatter_add(shape, axis, index, src):
    """A zero tensor of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    _check_range(index, shape[axis], f"dimension {axis}")
    out = empty(tuple(shape), src.dtype)
    nd = len(shape)
    params = [out.numel, nd, *shape, *index.shape, index.offset, *index.strides,
              src.offset, *src.strides, axis]
    if out.numel:
        _launch("scatter_add", f"scatter_add<{src.ctype}, {index.ctype}>", _blocks(out.numel), BLOCK,
                params, [out.array, index.array, src.array])
    return out


def put(dst, index, src, accumulate=False):
    """``dst.flat[index[i]] = src[i]``, or combined by ``accumulate`` (see stage 0's), in
    order, by one thread (put.cu)."""
    _check_range(index, dst.numel, "a tensor")
    index = _dense(index, index.shape, index.dtype)
    src = _dense(src, index.shape, dst.dtype)
    nd = len(dst.shape)
    if index.numel:
        _launch("put", f"put<{dst.ctype}, {index.ctype}, {_PUT[accumulate]}>", 1, 1,
                [index.numel, nd, *dst.shape, dst.offset, *dst.strides],
                [dst.array, index.array, src.array])
    dst.storage.version += 1


def _dense(x, shape, dtype):
    """``x`` broadcast to ``shape`` and converted to ``dtype``, in a new contiguous buffer."""
    return unary_into("Identity", empty(tuple(shape), dtype), x)


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
        _launch("unfold", f"unfold<{x.ctype}>", _blocks(out.numel), BLOCK, params, [out.array, x.array])
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
        _launch("fold", f"fold<{cols.ctype}>", _blocks(out.numel), BLOCK, params,
                [out.array, cols.array])
    return out


def sort(x, axis, descending):
    """Stable sort along ``axis`` (NaN largest): values and int64 positions."""
    if not x.shape:  # a zero-dim tensor sorts as one element
        from .movement import reshape
        vals, order = sort(reshape(x, (1,)), 0, descending)
        return reshape(vals, ()), reshape(order, ())
    vals, order = empty(x.shape, x.dtype), empty(x.shape, int64)
    n = x.shape[axis]
    rows = x.numel // n if n else 0
    if rows:
        desc = "true" if descending else "false"
        params = _rows_params(x, axis, rows)
        arrays = [vals.array, order.array, x.array]
        if n <= SORT_MAX:  # one block per row, the row in shared memory
            _launch("sort_bitonic", f"sort_bitonic<{x.ctype}, {desc}>", rows, 1024, params, arrays)
        else:
            _launch("sort_rank", f"sort_rank<{x.ctype}, {desc}>", _blocks(x.numel), BLOCK, params,
                    arrays)
    return vals, order


_SCANS = {"sum": "CumSum", "prod": "CumProd", "logsumexp": "LogCumSumExp"}


def scan(op, x, axis):
    """Running ``op`` along ``axis``: values, and for max/min the int64 positions."""
    if not x.shape:  # a zero-dim tensor scans as one element
        from .movement import reshape
        vals, order = scan(op, reshape(x, (1,)), 0)
        return reshape(vals, ()), None if order is None else reshape(order, ())
    vals, order = empty(x.shape, x.dtype), empty(x.shape, int64)
    n = x.shape[axis]
    rows = x.numel // n if n else 0
    if rows:
        params = _rows_params(x, axis, rows)
        arrays = [vals.array, order.array, x.array]
        if op in ("max", "min"):
            instance = f"scan_extreme<{x.ctype}, {'CumMax' if op == 'max' else 'CumMin'}>"
            _launch("scan_extreme", instance, _blocks(rows), BLOCK, params, arrays)
        else:
            acc = "double" if op == "sum" and x.ctype == "float" else x.ctype
            _launch("scan", f"scan<{x.ctype}, {acc}, {_SCANS[op]}>", _blocks(rows), BLOCK, params,
                    arrays)
    return vals, (order if op in ("max", "min") else None)


def instances():
    """Every indexing, sort and scan instantiation this module can launch."""
    out = []
    names = list(CTYPE)
    for t in (CTYPE[n] for n in names):
        for i in (CTYPE[n] for n in _INDEX_TYPES):
            out += [("gather", f"gather<{t}, {i}>"), ("scatter_add", f"scatter_add<{t}, {i}>")]
            out += [("put", f"put<{t}, {i}, {op}>") for op in sorted(set(_PUT.values()))]
        out += [("unfold", f"unfold<{t}>"), ("fold", f"fold<{t}>")]
        for desc in ("true", "false"):
            out += [("sort_bitonic", f"sort_bitonic<{t}, {desc}>"), ("sort_rank", f"sort_rank<{t}, {desc}>")]
    for n in ("int32", "int64", "float32", "float64"):
        t = CTYPE[n]
        for op, struct in _SCANS.items():
            if op == "logsumexp" and n.startswith("int"):
                continue
            acc = "double" if op == "sum" and t == "float" else t
            out.append(("scan", f"scan<{t}, {acc}, {struct}>"))
        out += [("scan_extreme", f"scan_extreme<{t}, {s}>") for s in ("CumMax", "CumMin")]
    return out
