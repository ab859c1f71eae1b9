"""Reductions on the WebGPU device: ``reduce`` (sum prod max min any all over any axes)
and ``arg_reduce`` (argmax argmin), one workgroup tree per output element
(``kernels/reduce.wgsl``)."""
from ..dtypes import bool_, int64
from .buffer import WGSL, empty
from .elementwise import MATH, cast_expr, kernel_source
from .runtime import runtime

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


def _axes_layout(x, axes):
    kept = [d for d in range(len(x.shape)) if d not in axes]
    red = [d for d in range(len(x.shape)) if d in axes]
    inner = 1
    for d in red:
        inner *= x.shape[d]
    params = [0, inner, len(kept), len(red), x.offset]
    params += [x.shape[d] for d in kept] + [x.strides[d] for d in kept]
    params += [x.shape[d] for d in red] + [x.strides[d] for d in red]
    return params, kept


def _launch(src, out, x, params):
    params[0] = out.numel
    if out.numel:
        runtime().launch(src, [out.storage.gbuf, x.storage.gbuf], params, out.numel)
    return out


def _source(acc, out_t, in_t, load, init, step, merge, result, floats):
    return kernel_source("reduce", HELPERS=MATH if floats else "", LOAD=load, STEP=step, MERGE=merge,
                  RESULT=result, INIT=init, A=acc, O=out_t, T=in_t)


def _out_shape(shape, axes, keepdim):
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdim or d not in axes)


def reduce(op, x, axes, keepdim, dtype=None):
    axes = set(axes)
    out_dtype = bool_ if op in ("any", "all") else dtype or x.dtype
    acc_dtype = out_dtype
    acc = WGSL[acc_dtype.name][0]
    init = {"sum": f"{acc}(0)", "prod": f"{acc}(1)", "any": "0u", "all": "1u",
            "max": _LOWEST[acc], "min": _HIGHEST[acc]}[op]
    step, merge, result = (f"acc = {_combine(op, acc, 'acc', 'v')};",
                           f"vals[t] = {_combine(op, acc, 'a', 'b')};", "vals[0]")
    if op == "sum" and acc == "f32":  # compensated, in double-float
        acc, init = "vec2<f32>", "vec2<f32>(0.0)"
        step, merge, result = "acc = sum_ff(acc, ff(v));", "vals[t] = sum_ff(a, b);", "ff_f(vals[0])"
    src = _source(acc, WGSL[out_dtype.name][0], x.wgsl, cast_expr(_READ, x.dtype, acc_dtype),
                  init, step, merge, result, "f32" in (acc, x.wgsl) or acc == "vec2<f32>")
    params, _ = _axes_layout(x, axes)
    return _launch(src, empty(_out_shape(x.shape, axes, keepdim), out_dtype), x, params)


def arg_reduce(op, x, axis, keepdim):
    t = x.wgsl
    step = f"if (best < 0 || {_better(op, t, 'v', 'acc')}) {{ acc = v; best = j; }}"
    # the other partial wins when it is better, or as good and earlier
    merge = (f"let ia = idx[t]; let ib = idx[t + half]; "
             f"if (ib >= 0 && (ia < 0 || {_better(op, t, 'b', 'a')} "
             f"|| (!{_better(op, t, 'a', 'b')} && ib < ia))) {{ vals[t] = b; idx[t] = ib; }}")
    src = _source(t, WGSL[int64.name][0], t, _READ, _LOWEST[t], step, merge,
                  "i64(idx[0])", t == "f32")
    params, _ = _axes_layout(x, {axis})
    return _launch(src, empty(_out_shape(x.shape, {axis}, keepdim), int64), x, params)
