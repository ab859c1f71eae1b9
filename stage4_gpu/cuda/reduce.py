"""The CUDA driver's reduction kernels: ``reduce`` (sum prod max min any all) and
``arg_reduce`` (argmax argmin), one block tree per output element (``kernels/reduce.cu``)."""
from .kernels import CTYPE
from .runtime import runtime

_OPS = {"sum": "Sum", "prod": "Prod", "max": "Max", "min": "Min", "any": "Any", "all": "All"}
_THREADS = 256  # reduce.cu's REDUCE_THREADS


# a sum's or product's accumulator where wider than the element: double for float32, as the
# CPU stages keep it; float for the 2-byte floats, as PyTorch
_WIDER = {"float": "double", "half_t": "float", "bf16_t": "float"}


def _accumulator(op, out_ctype):
    """The accumulator's C type (``_WIDER``'s for a sum or a product)."""
    return _WIDER.get(out_ctype, out_ctype) if op in ("sum", "prod") else out_ctype


class ReduceKernels:
    """The CUDA driver's reduction hooks (see ``gpu.driver.Driver``)."""

    def reduce(self, op, out, x, params):
        """reduce.cu's ``reduce`` for the op's struct and the three types."""
        o = out.ctype
        rt = runtime()
        rt.launch("reduce", f"reduce<{o}, {_accumulator(op, o)}, {x.ctype}, {_OPS[op]}>", out.numel,
                  _THREADS, [params, out.storage.ptr, x.storage.ptr])

    def arg_reduce(self, op, out, x, params):
        """reduce.cu's ``arg_reduce``: the first extreme wins."""
        rt = runtime()
        rt.launch("arg_reduce", f"arg_reduce<{x.ctype}, {'ArgMax' if op == 'argmax' else 'ArgMin'}>",
                  out.numel, _THREADS, [params, out.storage.ptr, x.storage.ptr])


# the 1- and 2-byte integers: the frontend sums and multiplies them as int64 (cast first, as
# PyTorch widens them) or in the explicit dtype asked for (cast first too), so their own
# reductions keep their dtype
_SMALL = ("uint8", "int8", "int16")


def instances():
    """Every reduction this module can launch: each op over each input and output type the
    frontend asks for (a sum may widen: int32 to int64, bool to int64; a small integer's
    sum or product keeps its dtype, see _SMALL)."""
    out = []
    names = list(CTYPE)
    wide = [n for n in names if n not in _SMALL]
    for op, struct in _OPS.items():
        for i in names:
            sums = [i] if i in _SMALL else wide
            outs = {"any": ["bool"], "all": ["bool"], "max": [i], "min": [i]}.get(op, sums)
            for o in outs:
                t_in, t_out = CTYPE[i], CTYPE[o]
                out.append(("reduce", f"reduce<{t_out}, {_accumulator(op, t_out)}, {t_in}, {struct}>"))
    for i in names:
        out += [("arg_reduce", f"arg_reduce<{CTYPE[i]}, {s}>") for s in ("ArgMax", "ArgMin")]
    return out
