"""The WebGPU driver's reduction kernels: ``reduce`` (sum prod max min any all) and
``arg_reduce`` (argmax argmin), one workgroup tree per output element
(``kernels/reduce.wgsl``), filled in with the accumulator's type and its steps."""
from ..dtypes import int64
from .elementwise import cast_expr
from .kernels import MATH, WGSL, kernel_source, launch

_READ = "x[base + offset_of(j, nr, 5 + 2 * nk)]"
_LOWEST = {"f32": "-inf_f()", "i32": "i32(-2147483647) - 1", "i64": "i64(-9223372036854775807) - 1",
           "u32": "0u"}
_HIGHEST = {"f32": "inf_f()", "i32": "i32(2147483647)", "i64": "i64(9223372036854775807)",
            "u32": "1u"}


def _combine(op, t, a, b):
    if op in ("max", "min"):
        return f"{op}_f({a}, {b})" if t == "f32" else f"{op}({a}, {b})"
    return {"sum": "{} + {}", "prod": "{} * {}", "any": "{} | {}", "all": "{} & {}"}[op].format(a, b)


def _better(op, t, a, b):
    """Whether value ``a`` beats ``b``."""
    cmp = ">" if op == "argmax" else "<"
    if t == "f32":  # NaN counts as the extreme, the first one found wins
        return f"((is_nan({a}) && !is_nan({b})) || {a} {cmp} {b})"
    return f"({a} {cmp} {b})"


def _launch(out, x, params, acc, out_t, load, init, step, merge, result, floats):
    src = kernel_source("reduce", HELPERS=MATH if floats else "", LOAD=load, STEP=step, MERGE=merge,
                        RESULT=result, INIT=init, A=acc, O=out_t, T=x.wgsl)
    launch(src, [out, x], params, out.numel)


class ReduceKernels:
    """The WebGPU driver's reduction hooks (see ``gpu.driver.Driver``)."""

    def reduce(self, op, out, x, params):
        """reduce.wgsl accumulating in out's type (a float32 sum in double-float)."""
        acc = out.wgsl
        init = {"sum": f"{acc}(0)", "prod": f"{acc}(1)", "any": "0u", "all": "1u",
                "max": _LOWEST[acc], "min": _HIGHEST[acc]}[op]
        step, merge, result = (f"acc = {_combine(op, acc, 'acc', 'v')};",
                               f"vals[t] = {_combine(op, acc, 'a', 'b')};", "vals[0]")
        if op == "sum" and acc == "f32":  # compensated, in double-float
            acc, init = "vec2<f32>", "vec2<f32>(0.0)"
            step, merge, result = "acc = sum_ff(acc, ff(v));", "vals[t] = sum_ff(a, b);", "ff_f(vals[0])"
        _launch(out, x, params, acc, out.wgsl, cast_expr(_READ, x.dtype, out.dtype), init, step, merge,
                result, "f32" in (acc, x.wgsl) or acc == "vec2<f32>")

    def arg_reduce(self, op, out, x, params):
        """reduce.wgsl carrying each partial's position; the first extreme wins."""
        t = x.wgsl
        step = f"if (best < 0 || {_better(op, t, 'v', 'acc')}) {{ acc = v; best = j; }}"
        # the other partial wins when it is better, or as good and earlier
        merge = (f"let ia = idx[t]; let ib = idx[t + half]; "
                 f"if (ib >= 0 && (ia < 0 || {_better(op, t, 'b', 'a')} "
                 f"|| (!{_better(op, t, 'a', 'b')} && ib < ia))) {{ vals[t] = b; idx[t] = ib; }}")
        _launch(out, x, params, t, WGSL[int64.name][0], _READ, _LOWEST[t], step, merge, "i64(idx[0])",
                t == "f32")
