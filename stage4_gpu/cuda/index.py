"""The CUDA driver's indexing, im2col/col2im, sort and scan kernels (``kernels/``:
``gather.cu``, ``scatter_add.cu``, ``put.cu``, ``unfold.cu``, ``fold.cu``, ``sort.cu``,
``scan.cu``), each instantiated for its element types and, for ``put`` and ``scan``, the
op's struct. The parameters are the shared layer's (``gpu/index.py``), in int64.

``gather``, ``scatter_add`` and ``put`` check their index values on the device (the driver's
``checks_indices``): each takes the runtime's error words last (``Runtime.checked``), where a
bad value is recorded for the runtime to raise at its next synchronization.
"""
from ..gpu.index import rows_params
from .kernels import CTYPE
from .runtime import BLOCK, runtime

_INDEX_TYPES = ("int32", "int64")
_PUT = {False: "Store", True: "Accumulate", "sum": "Accumulate", "prod": "Multiply",
        "amax": "Amax", "amin": "Amin"}
_SCANS = {"sum": "CumSum", "prod": "CumProd", "logsumexp": "LogCumSumExp"}
SORT_MAX = 2048  # sort.cu's: rows up to this length sort in shared memory


def _blocks(n):
    return -(-n // BLOCK)


def _launch(kernel, instance, blocks, threads, params, bufs, checked=False):
    """Launch with ``bufs``' storages, and the runtime's error words last where ``checked``."""
    rt = runtime()
    args = [params] + [b.storage.ptr for b in bufs]
    if checked:
        args.append(rt.checked())
    rt.launch(kernel, instance, blocks, threads, args)


class IndexKernels:
    """The CUDA driver's indexing hooks (see ``gpu.driver.Driver``)."""

    def gather(self, out, x, index, params):
        """gather.cu, one thread per output element."""
        _launch("gather", f"gather<{x.ctype}, {index.ctype}>", _blocks(out.numel), BLOCK, params,
                [out, x, index], checked=True)

    def scatter_add(self, out, index, src, params):
        """scatter_add.cu, one thread per output element gathering what lands on it."""
        _launch("scatter_add", f"scatter_add<{src.ctype}, {index.ctype}>", _blocks(out.numel), BLOCK,
                params, [out, index, src], checked=True)

    def put(self, dst, index, src, accumulate, params):
        """put.cu, one thread walking the indices in order."""
        _launch("put", f"put<{dst.ctype}, {index.ctype}, {_PUT[accumulate]}>", 1, 1, params,
                [dst, index, src], checked=True)

    def unfold(self, out, x, params):
        """unfold.cu, one thread per column element."""
        _launch("unfold", f"unfold<{x.ctype}>", _blocks(out.numel), BLOCK, params, [out, x])

    def fold(self, out, cols, params):
        """fold.cu, one thread per output element summing the columns over it."""
        _launch("fold", f"fold<{cols.ctype}>", _blocks(out.numel), BLOCK, params, [out, cols])

    def sort(self, vals, order, x, axis, descending):
        """sort.cu: a bitonic sort in shared memory, one block per row, for rows up to
        SORT_MAX; past it, each element's rank, one thread per element."""
        n = x.shape[axis]
        rows = x.numel // n
        desc = "true" if descending else "false"
        params = rows_params(x, axis, rows)
        if n <= SORT_MAX:
            _launch("sort_bitonic", f"sort_bitonic<{x.ctype}, {desc}>", rows, 1024, params, [vals, order, x])
        else:
            _launch("sort_rank", f"sort_rank<{x.ctype}, {desc}>", _blocks(x.numel), BLOCK, params,
                    [vals, order, x])

    def scan(self, op, vals, order, x, params, rows):
        """scan.cu, one thread per row (a float32 cumsum runs in double)."""
        if op in ("max", "min"):
            instance = f"scan_extreme<{x.ctype}, {'CumMax' if op == 'max' else 'CumMin'}>"
            _launch("scan_extreme", instance, _blocks(rows), BLOCK, params, [vals, order, x])
        else:
            acc = "double" if op == "sum" and x.ctype == "float" else x.ctype
            _launch("scan", f"scan<{x.ctype}, {acc}, {_SCANS[op]}>", _blocks(rows), BLOCK, params,
                    [vals, order, x])


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
    for n in ("int32", "int64", "float32", "float64", "uint8", "int8", "int16"):
        t = CTYPE[n]
        for op, struct in _SCANS.items():
            if op == "logsumexp" and not n.startswith("float"):
                continue
            acc = "double" if op == "sum" and t == "float" else t
            out.append(("scan", f"scan<{t}, {acc}, {struct}>"))
        out += [("scan_extreme", f"scan_extreme<{t}, {s}>") for s in ("CumMax", "CumMin")]
    return out
