"""The CUDA device's kernels as the Python side sees them: one table, ``KERNELS``, naming
every kernel a module of this folder launches, the ``.cu`` file that defines it and the
kind of each argument, and ``source``, a file's text as NVRTC compiles it.

The table is what makes the launch layer checkable without a GPU: the compiled launcher
(``_launch.Kernel``) converts each argument to the C type its kind names (a launch
argument's bytes are read as the kernel's parameter type, so a wrong type is corrupted,
not refused), and the test suite parses the ``__global__`` signatures in the ``.cu``
files and compares them with it. Argument kinds: ``ptr`` (a device address), ``i64``
(``long long``), ``f64`` (``double``), ``params`` (common.cuh's ``Params``: the launch's
sizes, strides and offsets, up to PARAMS_MAX int64 words, by value), ``hyper``
(common.cuh's ``Hyper``: an optimizer's float32 constants, by value), ``tensors``
(common.cuh's ``TensorList``: the tensors of a multi-tensor launch, one ``(elements, end
block, addresses, constants)`` row each, by value). Templated kernels
are launched by name expression (``unary<float, float, Exp>``); ``instances()`` lists
every one the modules can launch, so the suite compiles each with NVRTC (no GPU needed).
"""
import os
import re
from collections import namedtuple

from stage0_python.op_table import FUNCTIONS

DIR = os.path.join(os.path.dirname(__file__), "kernels")

Kernel = namedtuple("Kernel", "file args")
_P = ("params",)  # every kernel but the ladder's and fill takes its Params first

KERNELS = {
    # elementwise.cu
    "unary": Kernel("elementwise", _P + ("ptr", "ptr")),
    "binary": Kernel("elementwise", _P + ("ptr", "ptr", "ptr")),
    "where": Kernel("elementwise", _P + ("ptr", "ptr", "ptr", "ptr")),
    "fill": Kernel("elementwise", ("ptr", "i64", "i64")),
    # reduce.cu
    "reduce": Kernel("reduce", _P + ("ptr", "ptr")),
    "arg_reduce": Kernel("reduce", _P + ("ptr", "ptr")),
    # scan.cu, sort.cu
    "scan": Kernel("scan", _P + ("ptr", "ptr", "ptr")),
    "scan_extreme": Kernel("scan", _P + ("ptr", "ptr", "ptr")),
    "sort_bitonic": Kernel("sort", _P + ("ptr", "ptr", "ptr")),
    "sort_rank": Kernel("sort", _P + ("ptr", "ptr", "ptr")),
    # gather.cu, scatter_add.cu, put.cu (each checking its index values: the last pointer is
    # the runtime's error words), unfold.cu, fold.cu
    "gather": Kernel("gather", _P + ("ptr", "ptr", "ptr", "ptr")),
    "scatter_add": Kernel("scatter_add", _P + ("ptr", "ptr", "ptr", "ptr")),
    "put": Kernel("put", _P + ("ptr", "ptr", "ptr", "ptr")),
    "unfold": Kernel("unfold", _P + ("ptr", "ptr")),
    "fold": Kernel("fold", _P + ("ptr", "ptr")),
    # matmul.cu (any dtype, strided), hgemm.cu and hgemm_ladder.cu (the 2-byte floats'
    # tensor-core tiers) and the float32 ladder
    "matmul": Kernel("matmul", _P + ("ptr", "ptr", "ptr")),
    "hgemm": Kernel("hgemm", _P + ("ptr", "ptr", "ptr")),
    **{name: Kernel("hgemm_ladder", _P + ("ptr", "ptr", "ptr"))
       for name in ("hgemm_ldmatrix", "hgemm_cp_async", "hgemm_wide", "hgemm_wgmma")},
    **{name: Kernel("sgemm_ladder", ("i64", "i64", "i64", "ptr", "ptr", "ptr"))
       for name in ("sgemm_naive", "sgemm_coalesced", "sgemm_shared", "sgemm_blocktile_1d",
                    "sgemm_blocktile_2d", "sgemm_vectorized", "sgemm_warptile", "sgemm_double_buffer",
                    "sgemm_swizzled", "sgemm_autotuned")},
    # the fused kernels
    "softmax": Kernel("softmax", _P + ("ptr", "ptr", "ptr")),
    "cross_entropy": Kernel("cross_entropy", _P + ("ptr",) * 7 + ("i64", "f64")),  # 7th: error words
    "cross_entropy_backward": Kernel("cross_entropy_backward", _P + ("ptr",) * 6 + ("i64", "f64")),
    "layer_norm_forward": Kernel("layer_norm", _P + ("ptr",) * 6 + ("f64",)),
    "layer_norm_backward": Kernel("layer_norm", _P + ("ptr",) * 6),
    "attention_forward": Kernel("attention", _P + ("ptr",) * 6 + ("f64",)),  # the mask: last pointer
    "attention_backward_dq": Kernel("attention", _P + ("ptr",) * 9 + ("f64",)),
    "attention_backward_dkdv": Kernel("attention", _P + ("ptr",) * 9 + ("f64",)),
    **{name: Kernel("optim", _P + ("hyper", "tensors"))
       for name in ("adam_step", "sgd_step", "rmsprop_step")},
    # conv.cu: groups 1 as implicit GEMM, depthwise direct (out, then the two operands; the
    # forward's fourth pointer is the bias; an implicit GEMM's last, a split K's workspace)
    "conv2d_forward": Kernel("conv", _P + ("ptr",) * 5),
    "conv2d_input_grad": Kernel("conv", _P + ("ptr",) * 4),
    "conv2d_weight_grad": Kernel("conv", _P + ("ptr",) * 4),
    "depthwise_forward": Kernel("conv", _P + ("ptr",) * 4),
    "depthwise_input_grad": Kernel("conv", _P + ("ptr",) * 3),
    "depthwise_weight_grad": Kernel("conv", _P + ("ptr",) * 3),
    "recurrent_forward": Kernel("recurrent", _P + ("ptr",) * 11),
    "recurrent_backward": Kernel("recurrent", _P + ("ptr",) * 12),
}

# the kernels only an arch-specific target compiles (wgmma: sm_90a), each with NVRTC's
# architecture for it and the compute capability that runs it; the runtime compiles them
# for that architecture, the ladder refuses them on any other GPU (``ladder.refusal``)
ARCH = {"hgemm_wgmma": ("90a", (9, 0))}

# dtype name -> the C type of its elements on the device (a bool and the 1- and 2-byte
# integers take their own size, as on the host; the 2-byte floats are common.cuh's structs
# over their bits)
CTYPE = {"bool": "bool", "int32": "int", "int64": "long long", "float32": "float",
         "float64": "double", "float16": "half_t", "bfloat16": "bf16_t", "uint8": "unsigned char",
         "int8": "signed char", "int16": "short"}

_INCLUDE = re.compile(r'^#include "([^"]+)"\s*(?://.*)?$', re.M)  # a trailing comment allowed
_SOURCES = {}


def function_struct(name):
    """The struct that computes the op table's float function ``name`` (``logit``: ``Logit``)."""
    return name[0].upper() + name[1:]


def _op_table_header():
    """``op_table.cuh``, a header written from the op table (``stage0_python/op_table.py``):
    one math.cuh ``FLOAT_OP`` struct per float function, from its CUDA expression."""
    return "// written by kernels.py from stage0_python/op_table.py\n" + "".join(
        f"FLOAT_OP({function_struct(f.name)}, {f.cuda})\n" for f in FUNCTIONS)


GENERATED = {"op_table.cuh": _op_table_header}  # headers with no file: written from tables


def source(name):
    """``kernels/<name>.cu`` with each ``#include "x.cuh"`` replaced by that file's text
    (once per file), so that NVRTC needs no include path and CuPy's on-disk cache, keyed
    by the source, sees a header's change."""
    src = _SOURCES.get(name)
    if src is None:
        seen = set()

        def expand(text):
            def one(m):
                header = m.group(1)
                if header in seen:
                    return ""
                seen.add(header)
                if header in GENERATED:
                    return GENERATED[header]()
                with open(os.path.join(DIR, header), encoding="utf-8") as f:
                    return expand(f.read().replace("#pragma once", ""))
            return _INCLUDE.sub(one, text)

        with open(os.path.join(DIR, name + ".cu"), encoding="utf-8") as f:
            src = _SOURCES[name] = expand(f.read())
    return src


def instances():
    """Every (kernel, name expression) this folder's modules can launch."""
    from . import conv, elementwise, fused, index, ladder, matmul, reduce
    out = []
    for module in (elementwise, reduce, index, matmul, fused, ladder, conv):
        out.extend(module.instances())
    return out
