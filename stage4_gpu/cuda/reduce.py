"""The CUDA driver's reduction kernels: ``reduce`` (sum prod max min any all) and
``arg_reduce`` (argmax argmin), one block tree per output element (``kernels/reduce.cu``).

Before a launch the reduction's dimensions are merged where one follows another in memory
(stage 1's ``merged_dims``), so that a contiguous run is one dimension the kernel reads without dividing;
and where there are too few outputs to fill the GPU (``splits``) each run is split over
several blocks, whose partial results a second launch folds.
"""
from stage1_strides.backend import merged_dims as merged

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


# each accumulator's NumPy type, for a split reduction's partial results
_NUMPY = {"bool": "bool", "int": "int32", "long long": "int64", "float": "float32", "double": "float64",
          "half_t": "float16", "bf16_t": "uint16", "unsigned char": "uint8", "signed char": "int8",
          "short": "int16"}
SPLIT_RUN = 16 * _THREADS  # the fewest elements of a run one block of a split reduction takes
SHORT_RUN = 32  # reduce.cu's: runs up to this long take a thread each, not a block


def _blocks(rt, nout, inner):
    """The grid of a reduction of ``nout`` runs of ``inner``: a thread per short run, else
    a block per run, at most a wave either way."""
    return rt.grid(nout) if inner <= SHORT_RUN else rt.grid(nout, 1)


def splits(nout, inner, resident, least=SPLIT_RUN):
    """Parts to split each of ``nout`` runs of ``inner`` elements into: enough blocks for
    the ``resident`` the GPU holds at once, each part at least ``least`` long; 1 (no split)
    where the outputs fill the GPU alone. (A convolution's tiles split their depth so too.)"""
    if 2 * nout >= resident or inner < 2 * least:
        return 1
    return max(1, min(-(-resident // nout), inner // least))


class ReduceKernels:
    """The CUDA driver's reduction hooks (see ``gpu.driver.Driver``)."""

    def reduce(self, op, out, x, params):
        """reduce.cu's ``reduce`` for the op's struct and the three types: over the merged
        dimensions, in one launch, or split (``splits``) in two."""
        nout, inner, nk, nr, offset = params[:5]
        kept = merged(params[5:5 + nk], params[5 + nk:5 + 2 * nk])
        red = merged(params[5 + 2 * nk:5 + 2 * nk + nr], params[5 + 2 * nk + nr:5 + 2 * nk + 2 * nr])
        rt = runtime()
        o, a, struct = out.ctype, _accumulator(op, out.ctype), _OPS[op]
        parts = splits(nout, inner, rt.resident_blocks)
        layout = [nout, inner, len(kept[0]), len(red[0]), offset, *kept[0], *kept[1], *red[0], *red[1], parts]
        if parts == 1:
            rt.launch("reduce", f"reduce<{o}, {a}, {x.ctype}, {struct}>", _blocks(rt, nout, inner), _THREADS,
                      [layout, out.storage.ptr, x.storage.ptr])
            return
        partial = rt.allocator().allocate(nout * parts, rt.np.dtype(_NUMPY[a]))
        rt.launch("reduce", f"reduce<{a}, {a}, {x.ctype}, {struct}>", rt.grid(nout * parts, 1), _THREADS,
                  [layout, partial.ptr, x.storage.ptr])
        # each output's parts, one after another: a run of one dimension
        rt.launch("reduce", f"reduce<{o}, {a}, {a}, {struct}>", _blocks(rt, nout, parts), _THREADS,
                  [[nout, parts, 1, 1, 0, nout, parts, parts, 1, 1], out.storage.ptr, partial.ptr])

    def arg_reduce(self, op, out, x, params):
        """reduce.cu's ``arg_reduce``: the first extreme wins."""
        rt = runtime()
        rt.launch("arg_reduce", f"arg_reduce<{x.ctype}, {'ArgMax' if op == 'argmax' else 'ArgMin'}>",
                  _blocks(rt, out.numel, params[1]), _THREADS, [params, out.storage.ptr, x.storage.ptr])


# the 1- and 2-byte integers: the frontend sums and multiplies them as int64 (cast first, as
# PyTorch widens them) or in the explicit dtype asked for (cast first too), so their own
# reductions keep their dtype
_SMALL = ("uint8", "int8", "int16")


def instances():
    """Every reduction this module can launch: each op over each input and output type the
    frontend asks for (a sum may widen: int32 to int64, bool to int64; a small integer's
    sum or product keeps its dtype, see _SMALL), and a split one's two passes (into the
    accumulator's type, then from it)."""
    out = {}
    names = list(CTYPE)
    wide = [n for n in names if n not in _SMALL]
    for op, struct in _OPS.items():
        for i in names:
            sums = [i] if i in _SMALL else wide
            outs = {"any": ["bool"], "all": ["bool"], "max": [i], "min": [i]}.get(op, sums)
            for o in outs:
                t_in, t_out = CTYPE[i], CTYPE[o]
                a = _accumulator(op, t_out)
                for inst in (f"reduce<{t_out}, {a}, {t_in}, {struct}>", f"reduce<{a}, {a}, {t_in}, {struct}>",
                             f"reduce<{t_out}, {a}, {a}, {struct}>"):
                    out[inst] = None
    out = [("reduce", inst) for inst in out]
    for i in names:
        out += [("arg_reduce", f"arg_reduce<{CTYPE[i]}, {s}>") for s in ("ArgMax", "ArgMin")]
    return out
