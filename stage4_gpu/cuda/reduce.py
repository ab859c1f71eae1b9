"""Reductions on the CUDA device: ``reduce`` (sum prod max min any all over any axes) and
``arg_reduce`` (argmax argmin), one block tree per output element (``kernels/reduce.cu``)."""
from ..dtypes import bool_, int64
from .buffer import empty
from .kernels import CTYPE
from .runtime import runtime

_OPS = {"sum": "Sum", "prod": "Prod", "max": "Max", "min": "Min", "any": "Any", "all": "All"}
_THREADS = 256  # reduce.cu's REDUCE_THREADS


def _accumulator(op, out_ctype):
    """The accumulator's C type: double for a float32 sum or product, as the CPU keeps it."""
    return "double" if op in ("sum", "prod") and out_ctype == "float" else out_ctype


def _axes_layout(x, axes):
    kept = [d for d in range(len(x.shape)) if d not in axes]
    red = [d for d in range(len(x.shape)) if d in axes]
    inner = 1
    for d in red:
        inner *= x.shape[d]
    params = [0, inner, len(kept), len(red), x.offset]
    params += [x.shape[d] for d in kept] + [x.strides[d] for d in kept]
    params += [x.shape[d] for d in red] + [x.strides[d] for d in red]
    return params


def _out_shape(shape, axes, keepdim):
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdim or d not in axes)


def _launch(kernel, instance, out, x, params):
    params[0] = out.numel
    if out.numel:
        rt = runtime()
        rt.launch(kernel, instance, out.numel, _THREADS, [rt.params(params), out.array, x.array])
    return out


def reduce(op, x, axes, keepdim, dtype=None):
    axes = set(axes)
    out_dtype = bool_ if op in ("any", "all") else dtype or x.dtype
    out = empty(_out_shape(x.shape, axes, keepdim), out_dtype)
    o = out.ctype
    instance = f"reduce<{o}, {_accumulator(op, o)}, {x.ctype}, {_OPS[op]}>"
    return _launch("reduce", instance, out, x, _axes_layout(x, axes))


def arg_reduce(op, x, axis, keepdim):
    out = empty(_out_shape(x.shape, {axis}, keepdim), int64)
    instance = f"arg_reduce<{x.ctype}, {'ArgMax' if op == 'argmax' else 'ArgMin'}>"
    return _launch("arg_reduce", instance, out, x, _axes_layout(x, {axis}))


def instances():
    """Every reduction this module can launch: each op over each input and output type the
    frontend asks for (a sum may widen: int32 to int64, bool to int64)."""
    out = []
    names = list(CTYPE)
    for op, struct in _OPS.items():
        for i in names:
            outs = {"any": ["bool"], "all": ["bool"], "max": [i], "min": [i]}.get(op, names)
            for o in outs:
                t_in, t_out = CTYPE[i], CTYPE[o]
                out.append(("reduce", f"reduce<{t_out}, {_accumulator(op, t_out)}, {t_in}, {struct}>"))
    for i in names:
        out += [("arg_reduce", f"arg_reduce<{CTYPE[i]}, {s}>") for s in ("ArgMax", "ArgMin")]
    return out
