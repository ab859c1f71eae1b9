"""The WebGPU driver's indexing, im2col/col2im, sort and scan kernels (``kernels/``:
``gather``, ``scatter_add``, ``put``, ``unfold``, ``fold``, ``sort``, ``scan``), each
filled in with its element types and, for ``put``, ``sort`` and ``scan``, its step."""
from ..dtypes import bool_
from ..gpu.index import rows_params
from .kernels import MATH, groups, kernel_source, launch

_PUT = {False: "b", True: "a + b", "sum": "a + b", "prod": "a * b"}
_NAN_WINS = {"amax": ">", "amin": "<"}  # NaN wins amax and amin, and stays, as on the CPU
_SCAN_STEP = {"sum": "acc = acc + v;", "prod": "acc = acc * v;",
              "sum_f32": "c = sum_ff(c, ff(v)); acc = ff_f(c);",  # compensated, as a double
              "logsumexp": "acc = logaddexp_f(acc, v);"}


def _combine(dst, accumulate):
    """put.wgsl's COMBINE: the stored value from the old ``a`` and the new ``b``."""
    if dst.dtype is bool_ and accumulate in (True, "sum", "prod"):
        return "a & b" if accumulate == "prod" else "a | b"
    if accumulate in _NAN_WINS:
        nan = "((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u)" if dst.dtype.is_floating_point else "false"
        return f"select(a, b, b {_NAN_WINS[accumulate]} a || {nan})"
    return _PUT[accumulate]


def _float_order(descending):
    if descending:
        return "!is_nan(b) && (is_nan(a) || a > b)"
    return "!is_nan(a) && (is_nan(b) || a < b)"


class IndexKernels:
    """The WebGPU driver's indexing hooks (see ``gpu.driver.Driver``)."""

    def gather(self, out, x, index, params):
        """gather.wgsl, one thread per output element."""
        launch(kernel_source("gather", T=x.wgsl, I=index.wgsl), [out, x, index], params, groups(out.numel))

    def scatter_add(self, out, index, src, params):
        """scatter_add.wgsl, one thread per output element gathering what lands on it."""
        launch(kernel_source("scatter_add", T=src.wgsl, I=index.wgsl), [out, index, src], params,
               groups(out.numel))

    def put(self, dst, index, src, accumulate, params):
        """put.wgsl, one thread walking the indices in order."""
        launch(kernel_source("put", T=dst.wgsl, I=index.wgsl, COMBINE=_combine(dst, accumulate)),
               [dst, index, src], params, 1)

    def unfold(self, out, x, params):
        """unfold.wgsl, one thread per column element."""
        launch(kernel_source("unfold", T=x.wgsl), [out, x], params, groups(out.numel))

    def fold(self, out, cols, params):
        """fold.wgsl, one thread per output element summing the columns over it."""
        launch(kernel_source("fold", T=cols.wgsl), [out, cols], params, groups(out.numel))

    def sort(self, vals, order, x, axis, descending):
        """sort.wgsl, one thread per element finding its rank in its row."""
        floats = x.dtype.is_floating_point
        before = _float_order(descending) if floats else ("a > b" if descending else "a < b")
        equal = "(is_nan(a) && is_nan(b)) || a == b" if floats else "a == b"
        src = kernel_source("sort", T=x.wgsl, HELPERS=MATH if floats else "", BEFORE=before, EQUAL=equal)
        launch(src, [vals, order, x], rows_params(x, axis, x.numel), groups(x.numel))

    def scan(self, op, vals, order, x, params, rows):
        """scan.wgsl, one thread per row."""
        floats = x.dtype.is_floating_point
        if op in ("max", "min"):
            cmp = ">=" if op == "max" else "<="
            cond = f"is_nan(v) || (!is_nan(acc) && v {cmp} acc)" if floats else f"v {cmp} acc"
            step = f"if ({cond}) {{ acc = v; best = j; }}"
        else:
            step = _SCAN_STEP["sum_f32" if op == "sum" and x.wgsl == "f32" else op]
        src = kernel_source("scan", T=x.wgsl, HELPERS=MATH if floats else "", STEP=step)
        launch(src, [vals, order, x], params, groups(rows))
