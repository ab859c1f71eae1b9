"""The public names of a stage: what ``import <stage> as sg`` gives ``sg``.

Every stage's ``__init__`` imports them from here (``from .api import *``); this file is
stage 0's, and through the ``__path__`` chain (``stages.py``) each later stage loads its own
copy, whose relative imports reach that stage's modules. So every stage has the same names
by construction, each bound to its own stage's objects.
"""
# ruff: noqa: F401  (what this module imports is the stage's public names)
import importlib

from stage0_python import stages as _stages  # by absolute name: one loader for every stage

from . import autograd, dtypes, random
from .autocast import autocast, get_autocast_dtype, is_autocast_enabled
from .autograd import (
    Function,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .capabilities import CapabilityError
from .contractions import addbmm, addmm, addmv, addr, baddbmm, cdist, einsum
from .creation import (
    arange,
    as_tensor,
    cat,
    concat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    frombuffer,
    full,
    full_like,
    linspace,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    stack,
    tensor,
    zeros,
    zeros_like,
)
from .device import get_default_device, set_default_device
from .dtypes import (
    bfloat16,
    bool_,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from .legacy import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from .math_ops import (  # noqa: A004
    acos,
    acosh,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    copysign,
    cosh,
    erfc,
    exp2,
    expm1,
    fix,
    floor_divide,
    fmod,
    hypot,
    isfinite,
    isinf,
    isneginf,
    isposinf,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logit,
    pow,
    remainder,
    sinh,
    tan,
    true_divide,
    trunc,
)
from .method_forms import ValuesIndices
from .ops import where
from .printing import get_printoptions, printoptions, set_printoptions
from .random import Generator, initial_seed, manual_seed, seed
from .rearranging import diag, diag_embed, equal, ger, outer, repeat_interleave, roll, unique, unique_consecutive
from .sampling import multinomial
from .scans import cummax, cummin, cumprod, cumsum, logcumsumexp
from .shapes import IndexRangeError, ShapeError
from .sorting import argsort, bucketize, kthvalue, msort, searchsorted, sort, topk
from .tensor import Size, Tensor, device
from .threads import get_num_threads, set_num_threads

bool = bool_  # noqa: A001  (torch.bool)
float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
half = float16
short = int16
DType = dtypes.DType
dtype = dtypes.DType


_T = Tensor
exp, log, log1p, sqrt, rsqrt, sin, cos, tanh, sigmoid = (
    _T.exp, _T.log, _T.log1p, _T.sqrt, _T.rsqrt, _T.sin, _T.cos, _T.tanh, _T.sigmoid)
relu, abs, sign, reciprocal, erf, floor, ceil, round, square, neg = (  # noqa: A001
    _T.relu, _T.abs, _T.sign, _T.reciprocal, _T.erf, _T.floor, _T.ceil, _T.round, _T.square, _T.neg)
maximum, minimum, clamp, clip, add, sub, mul, div = (
    _T.maximum, _T.minimum, _T.clamp, _T.clamp, _T.add, _T.sub, _T.mul, _T.div)
matmul, mm, bmm, dot = _T.matmul, _T.mm, _T.bmm, _T.dot
sum, mean, prod, max, min, amax, amin, argmax, argmin = (  # noqa: A001
    _T.sum, _T.mean, _T.prod, _T.max, _T.min, _T.amax, _T.amin, _T.argmax, _T.argmin)
var, std, logsumexp, norm, any, all = _T.var, _T.std, _T.logsumexp, _T.norm, _T.any, _T.all  # noqa: A001
reshape, permute, transpose, squeeze, unsqueeze, flatten, broadcast_to, flip = (
    _T.reshape, _T.permute, _T.transpose, _T.squeeze, _T.unsqueeze, _T.flatten, _T.broadcast_to, _T.flip)
softmax, log_softmax = _T.softmax, _T.log_softmax
split, chunk, narrow, gather, index_select, masked_fill = (
    _T.split, _T.chunk, _T.narrow, _T.gather, _T.index_select, _T.masked_fill)
nonzero, isnan, logical_not, logical_and, logical_or, logical_xor, tril, triu, unbind = (
    _T.nonzero, _T.isnan, _T.logical_not, _T.logical_and, _T.logical_or, _T.logical_xor, _T.tril, _T.triu,
    _T.unbind)
eq, ne, lt, le, gt, ge = _T.eq, _T.ne, _T.lt, _T.le, _T.gt, _T.ge
clamp_min, clamp_max, trace, select, count_nonzero = _T.clamp_min, _T.clamp_max, _T.trace, _T.select, _T.count_nonzero
scatter, scatter_add, scatter_reduce, index_add, index_copy, index_fill, masked_scatter = (
    _T.scatter, _T.scatter_add, _T.scatter_reduce, _T.index_add, _T.index_copy, _T.index_fill,
    _T.masked_scatter)
del _T


def std_mean(input, dim=None, *, correction=None, keepdim=False, unbiased=None, axis=None):
    """``(std, mean)`` over ``dim`` in one call (see torch.std_mean)."""
    dim = dim if axis is None else axis
    return input.std(dim, unbiased, keepdim, correction), input.mean(dim, keepdim)


def var_mean(input, dim=None, *, correction=None, keepdim=False, unbiased=None, axis=None):
    """``(var, mean)`` over ``dim`` in one call (see torch.var_mean)."""
    dim = dim if axis is None else axis
    return input.var(dim, unbiased, keepdim, correction), input.mean(dim, keepdim)


def is_tensor(obj):
    """True when ``obj`` is a Tensor of this stage."""
    return isinstance(obj, Tensor)


def numel(t):
    """The number of elements of tensor ``t``."""
    return t.numel()


def _both_tensors(op, a, b):
    for name, t in (("input", a), ("other", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected a Tensor as {name}, got {type(t).__name__}")


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element of ``a`` is close to ``b``'s (see ``isclose``)."""
    _both_tensors("allclose", a, b)
    return a.allclose(b, rtol, atol, equal_nan)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|``; equal infinities are close, NaN only
    with ``equal_nan``, as ``torch.isclose`` (see ``Tensor.isclose``)."""
    _both_tensors("isclose", a, b)
    return a.isclose(b, rtol, atol, equal_nan)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """See torch.compile: a documented pass-through that returns ``model`` as it is (and,
    called without one, a decorator that does). Every stage runs eagerly: the stages are
    this project's compilers, each a rewrite of the one before, and none traces a graph."""
    if model is None:
        return lambda m: m
    return model


_SUBMODULES = ("functional", "nn", "onnx", "optim", "data", "datasets", "serialization", "utils", "memory",
               "backends", "cuda", "viz", "amp", "distributed")


def __getattr__(name):
    # subpackages load on first use: ``import stage0_python`` stays quick
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __package__)
    if name in ("save", "load"):
        return getattr(importlib.import_module(".serialization", __package__), name)
    if name in ("save_safetensors", "load_safetensors", "safetensors_metadata"):
        return getattr(importlib.import_module(".safetensors_io", __package__), name)
    from .missing_names import no_attribute
    raise no_attribute(__package__, name)


def provenance():
    """Where each module of this stage comes from: ``{name: file}``, the first folder of the
    stage's ``__path__`` that has it (see ``stages.py``)."""
    return _stages.provenance(__package__)
