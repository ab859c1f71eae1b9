"""Stage 3's backend: stage 2's routing, with the hot primitives sent to the SIMD kernels.

The primitive set is stage 0's (see ``stage0_python/backend.py``), on stage 2's storage.
What stage 3 rewrites:

- ``unary``, ``binary`` (with broadcasting), ``where`` and ``cast``: xsimd kernels, one
  module per ISA, for float32 and float64 and for the integer arithmetic of int32 and
  int64; integer division, powers and bool logic keep stage 2's typed loops;
- ``reduce`` (sum, prod, max, min) and ``arg_reduce``: registers across rows or down
  columns, pairwise float32 sums;
- float16 and bfloat16: stored in 2 bytes, computed in float32 (see the last section);
- ``matmul``: OpenBLAS or our own GEMM (``GEMMS``; ``sg.backends.gemm`` chooses, and by
  default each product goes to the faster for its shape), batched on one thread with each
  product threaded; convolution and pooling reach them through
  ``unfold`` and the reductions.

Stage 2's ``backend.py`` is run here as this module's first part, so its relative
imports reach this stage's dtypes; the definitions below replace what stage 3 rewrites.
"""
import importlib.util as _util
import os as _os

_STAGE3_DOC = __doc__
with open(_util.find_spec("stage2_cython.backend").origin, encoding="utf-8") as _f:
    exec(compile(_f.read(), _f.name, "exec"))  # noqa: S102
del _f
__doc__ = _STAGE3_DOC  # the source run above set stage 2's

from stage3_simd import _kernels as K  # noqa: E402

_s2_unary, _s2_binary, _s2_where = unary, binary, where  # noqa: F821  (stage 2's, from the run above)
_s2_reduce, _s2_arg_reduce, _s2_matmul = reduce, arg_reduce, matmul  # noqa: F821

_FLOATS = (3, 4)  # the Buffer codes of float32 and float64
_INTS = (1, 2)  # int32 and int64
GEMMS = ("blas", "own")  # the two GEMMs; the default, "auto", sends each product to the faster
_gemm = [_os.environ.get("STAGEGRAD_GEMM") or "auto"]
if _gemm[0] not in GEMMS + ("auto",):
    raise ImportError(f"stage3_simd: STAGEGRAD_GEMM={_gemm[0]!r}; expected auto, blas or own")
# "auto" sends a product to our GEMM when every side is at least this: there its cache
# blocking pays off and it matches or beats OpenBLAS (the journey and `stagegrad
# gemm-ladder` measure both); below, packing costs more than it saves, and OpenBLAS's
# kernels for small and skinny shapes win. A fixed rule, not a timing at import: the
# results of a program must not depend on which GEMM a noisy measurement picked.
OWN_FROM = 512

set_num_threads = K.set_num_threads
get_num_threads = K.get_num_threads


# ---------------------------------------------------------------- which GEMM

def get_gemm():
    """``auto`` (the default: each product on the faster GEMM for its shape), ``blas`` or
    ``own``: ``STAGEGRAD_GEMM``, or the last ``set_gemm``."""
    return _gemm[0]


def set_gemm(name):
    if name not in GEMMS + ("auto",):
        raise ValueError(f"set_gemm: expected auto, blas or own, got {name!r}")
    _gemm[0] = name


def gemm_for(n, k, m):
    """The GEMM a product of (n x k) by (k x m) runs on."""
    if _gemm[0] != "auto":
        return _gemm[0]
    return "own" if min(n, k, m) >= OWN_FROM else "blas"


# ---------------------------------------------------------------- elementwise

def cast(x, dtype):
    return alias(x) if dtype is x.dtype else K.cast(x, dtype)  # noqa: F821


# unary and binary: the compiled entry points themselves (see _kernels.pyx), which hand
# what no SIMD kernel covers to stage 2's
K.set_fallbacks(lambda op, x, dtype=None: _half_unary(op, x, dtype),
                lambda op, a, b, dtype: _half_binary(op, a, b, dtype), bool_)  # noqa: F821
unary, binary = K.unary, K.binary


def where(cond, a, b):
    """``a`` where ``cond`` (bool) holds, else ``b`` (``a``'s dtype), all broadcast."""
    if a.code not in _FLOATS or b.code != a.code or cond.dtype is not bool_:  # noqa: F821
        return _wide_where(cond, a, b) if a.code in _HALF else _s2_where(cond, a, b)
    shape = broadcast_shapes(cond.shape, a.shape, b.shape)  # noqa: F821
    if shape is None:
        raise ValueError(f"where: shapes {list(cond.shape)}, {list(a.shape)} and {list(b.shape)} "
                         f"cannot be broadcast")
    return K.where(cond, a, b, shape)


# ---------------------------------------------------------------- reductions

def reduce(op, x, axes, keepdim, dtype=None):
    """Reduce over ``axes`` (non-negative ints); an empty group gives 0 for sum, 1 for
    prod (max/min of one are rejected by the frontend)."""
    out = dtype or (bool_ if op in ("any", "all") else x.dtype)  # noqa: F821
    if x.code not in _FLOATS or op not in K.REDUCE_OPS or not out.is_floating_point:
        if x.code in _HALF or out.name in _HALF_NAMES:
            return _wide_reduce(op, x, axes, keepdim, dtype)
        return _s2_reduce(op, x, axes, keepdim, dtype)
    acc, shape = K.reduce(op, x, axes, keepdim)
    if acc.dtype is not out:
        acc = cast(acc, out)  # noqa: F821
    return reshape(acc, shape)  # noqa: F821


def arg_reduce(op, x, axis, keepdim):
    if x.code not in _FLOATS:
        return _wide_arg_reduce(op, x, axis, keepdim) if x.code in _HALF else _s2_arg_reduce(op, x, axis, keepdim)
    return K.arg_reduce(op, x, axis, keepdim, int64)  # noqa: F821


# ---------------------------------------------------------------- matmul

def matmul(a, b):
    """``a`` (..., n, k) @ ``b`` (..., k, m); the batch dims of both are equal."""
    if a.code not in _FLOATS or b.code != a.code:
        return _wide_matmul(a, b) if a.code in _HALF else _s2_matmul(a, b)
    return K.matmul(a, b, gemm_for(a.shape[-2], a.shape[-1], b.shape[-1]))


# ---------------------------------------------------------------- fused kernels
#
# Each replaces a composite of several primitives with one pass over the data (see
# csrc/fused.hpp); the frontend uses one where its name is in FUSED and its operands
# fit (float32 or float64, one dtype), and the composite otherwise.

FUSED = frozenset({"softmax", "log_softmax", "cross_entropy", "linear", "layer_norm", "adam", "sgd",
                   "rmsprop"})


def _fits(*bufs):
    """Whether the fused kernels take these operands: float32 or float64, one dtype."""
    code = bufs[0].code
    return code in _FLOATS and all(b is None or b.code == code for b in bufs)


def _rows_last(x, dim):
    """``x`` with ``dim`` moved last, contiguous: rows for a kernel working along ``dim``."""
    if dim != x.ndim - 1:
        x = permute(x, tuple(d for d in range(x.ndim) if d != dim) + (dim,))  # noqa: F821
    return contiguous(x)  # noqa: F821


def _from_rows(y, dim, ndim):
    """Undo ``_rows_last``: the result in the input's dim order, contiguous."""
    if dim == ndim - 1:
        return y
    order = list(range(ndim - 1))
    order.insert(dim, ndim - 1)
    return contiguous(permute(y, tuple(order)))  # noqa: F821


def softmax(x, dim):
    return _from_rows(K.softmax(_rows_last(x, dim), False), dim, x.ndim)


def log_softmax(x, dim):
    return _from_rows(K.softmax(_rows_last(x, dim), True), dim, x.ndim)


def softmax_backward(g, y, dim, log):
    """The input's gradient from the output ``y`` and its gradient ``g``."""
    gx = K.softmax_backward(_rows_last(g, dim), _rows_last(y, dim), log)
    return _from_rows(gx, dim, y.ndim)


def cross_entropy(x, target, weight, ignore_index, label_smoothing):
    """Logits (N, C), class indices (N,): (each row's loss, each row's weight in a mean,
    the probabilities for the backward)."""
    if target.dtype is not int64:  # noqa: F821
        target = cast(target, int64)  # noqa: F821
    weight = None if weight is None else contiguous(weight)  # noqa: F821
    return K.cross_entropy(contiguous(x), contiguous(target), weight, ignore_index,  # noqa: F821
                           label_smoothing)


def cross_entropy_backward(probs, target, weight, scale, ignore_index, label_smoothing):
    """The logits' gradient, each row's scaled by ``scale`` (N,)."""
    if target.dtype is not int64:  # noqa: F821
        target = cast(target, int64)  # noqa: F821
    weight = None if weight is None else contiguous(weight)  # noqa: F821
    return K.cross_entropy_backward(probs, contiguous(target), weight, contiguous(scale),  # noqa: F821
                                    ignore_index, label_smoothing)


def _matrix(x):
    """(..., k) as a (rows, k) buffer: a view when ``x`` is contiguous."""
    return reshape(contiguous(x), (prod(x.shape[:-1]), x.shape[-1]))  # noqa: F821


def linear(x, w, b, act):
    """``act(x @ w.T + b)`` (act: None, "relu" or "gelu"), the bias and activation applied
    in the GEMM's output while it is in cache: (y, the values before gelu, else None)."""
    x2 = _matrix(x)
    y = K.matmul(x2, permute(w, (1, 0)), gemm_for(x2.shape[0], x2.shape[1], w.shape[0]))  # noqa: F821
    pre = None
    if b is not None or act:
        pre = K.bias_act(y, None if b is None else contiguous(b), act, act == "gelu")  # noqa: F821
    return reshape(y, x.shape[:-1] + (w.shape[0],)), pre  # noqa: F821


def linear_backward(g, x, w, saved, act, need_x, need_w, need_b):
    """(grad x, grad w, grad b) of ``linear``, each None unless asked for (``x`` is only
    read for grad w, ``w`` for grad x): the activation's derivative from ``saved`` (relu's
    output, gelu's input), two GEMMs on transposed views, and the bias's column sum."""
    if act:
        g = K.act_backward(contiguous(g), contiguous(saved), act)  # noqa: F821
    g2, gx, gw, gb = _matrix(g), None, None, None
    if need_x:
        gx = K.matmul(g2, w, gemm_for(g2.shape[0], g2.shape[1], w.shape[1]))
        gx = reshape(gx, g.shape[:-1] + (w.shape[1],))  # noqa: F821
    if need_w:
        x2 = _matrix(x)
        gw = K.matmul(permute(g2, (1, 0)), x2, gemm_for(g2.shape[1], g2.shape[0], x2.shape[1]))  # noqa: F821
    if need_b:
        gb = reduce("sum", g2, (0,), False)
    return gx, gw, gb


def layer_norm(x, cols, w, b, eps):
    """Normalise each run of ``cols`` trailing elements: (y, mean, rstd)."""
    return K.layer_norm(contiguous(x), cols, None if w is None else contiguous(w),  # noqa: F821
                        None if b is None else contiguous(b), eps)  # noqa: F821


def layer_norm_backward(g, x, mean, rstd, w, shape, need_x, need_w, need_b):
    """(grad x, grad weight, grad bias) of ``layer_norm`` over trailing ``shape``."""
    x = contiguous(x)  # noqa: F821
    gx, gw, gb = K.layer_norm_backward(contiguous(g), x, mean, rstd, None if w is None else contiguous(w),  # noqa: F821
                                       prod(shape), need_x, need_w, need_b)  # noqa: F821
    gw = None if gw is None else reshape(cast(gw, x.dtype), shape)  # noqa: F821
    gb = None if gb is None else reshape(cast(gb, x.dtype), shape)  # noqa: F821
    return gx, gw, gb


# ---------------------------------------------------------------- multi-tensor optimizer steps
#
# One call updates every parameter of a group, in the composite's order of float
# operations (the same bits). Each returns False, touching nothing, when the buffers do
# not fit: not all contiguous, not one float dtype, or two sharing memory (the composite
# then runs, tensor by tensor).

def _step_fits(*lists):
    bufs = [b for lst in lists if lst for b in lst]
    return (_fits(*bufs) and all(is_contiguous(b) for b in bufs)  # noqa: F821
            and len({storage_id(b) for b in bufs}) == len(bufs))  # noqa: F821


def _written(*lists):
    for lst in lists:
        for b in lst or ():
            b.version += 1


def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, betas, eps, weight_decay,
              decoupled, maximize):
    """Adam (AdamW when ``decoupled``) on every buffer of ``params``; ``steps`` are the
    step counts after this one; ``max_exp_avg_sqs`` is None without amsgrad."""
    if not _step_fits(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
        return False
    beta1, beta2 = betas
    w = 1 - beta1
    K.adam_step(params[0].code, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                [lr / (1 - beta1 ** s) for s in steps], [(1 - beta2 ** s) ** 0.5 for s in steps],
                lr, weight_decay, w, 1 - w, beta2, eps, decoupled, maximize)
    _written(params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    return True


def sgd_step(params, grads, momentum_buffers, first, lr, momentum, dampening, weight_decay, nesterov,
             maximize):
    """SGD on every buffer of ``params``; ``momentum_buffers`` is None without momentum, and
    ``first[i]`` says that buffer i starts this step (it becomes the gradient)."""
    if not _step_fits(params, grads, momentum_buffers):
        return False
    K.sgd_step(params[0].code, params, grads, momentum_buffers, bytes(first or len(params)), lr, weight_decay, momentum,
               dampening, nesterov, maximize)
    _written(params, momentum_buffers)
    return True


def rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps, weight_decay,
                 momentum, maximize):
    """RMSprop on every buffer of ``params``; ``grad_avgs`` is None unless centered,
    ``momentum_buffers`` None without momentum."""
    if not _step_fits(params, grads, square_avgs, grad_avgs, momentum_buffers):
        return False
    w = 1 - alpha
    K.rmsprop_step(params[0].code, params, grads, square_avgs, grad_avgs, momentum_buffers, lr, weight_decay,
                   alpha, eps, momentum, w, 1 - w, maximize)
    _written(params, square_avgs, grad_avgs, momentum_buffers)
    return True


# ---------------------------------------------------------------- 2-byte floats
#
# float16 and bfloat16 are stored, not computed in: a primitive given one widens it to
# float32 (exact: every 2-byte value is a float32), runs the float32 kernel, and narrows a
# floating result back with one rounding (csrc/half.hpp), as PyTorch's CPU kernels do.
# Movement, indexing and copies move the 2-byte words themselves and need none of this.
# The fused optimizer steps refuse 2-byte parameters (``_fits``); their composite runs.

from .dtypes import float32  # noqa: E402

_HALF = (5, 6)  # the Buffer codes of float16 and bfloat16
_HALF_NAMES = ("float16", "bfloat16")


def _widened(fn, at=0, dtype_at=None):
    """``fn`` taking 2-byte float buffers: each widened to float32, and each float32 result
    narrowed to the 2-byte dtype asked for (argument ``dtype_at``, when given and not None)
    or else to the inputs' own. Argument ``at`` decides whether there is anything to do:
    the frontend hands a primitive operands of one dtype."""
    def primitive(*args):
        target = args[dtype_at] if dtype_at is not None and dtype_at < len(args) else None
        if args[at].code not in _HALF and (target is None or target.name not in _HALF_NAMES):
            return fn(*args)
        half = target if target is not None and target.name in _HALF_NAMES else args[at].dtype
        args = [cast(a, float32) if type(a) is Buffer and a.code in _HALF else a for a in args]  # noqa: F821
        if target is not None:
            args[dtype_at] = float32 if target is half else target
            if target is not half:  # an explicit dtype that is not a 2-byte one: keep the result
                return fn(*args)
        return _narrowed(fn(*args), half)
    primitive.__name__, primitive.__doc__ = fn.__name__, fn.__doc__
    return primitive


def _narrowed(result, dtype):
    if type(result) is tuple:
        return tuple(_narrowed(r, dtype) for r in result)
    if type(result) is Buffer and result.code == 3:  # noqa: F821
        return cast(result, dtype)  # noqa: F821
    return result


_wide_unary, _wide_binary = _widened(K.unary, 1, 2), _widened(K.binary, 1, 3)
# the hot primitives above call these from their fallback branch, so float32 pays nothing
_wide_where = _widened(lambda cond, a, b: where(cond, a, b), 1)
_wide_reduce = _widened(lambda *args: reduce(*args), 1, 4)
_wide_arg_reduce = _widened(lambda *args: arg_reduce(*args), 1)
_wide_matmul = _widened(lambda a, b: matmul(a, b))


def _half_unary(op, x, dtype=None):
    """What the SIMD unary leaves over: 2-byte floats through float32, the rest to stage 2."""
    if x.code in _HALF or (dtype is not None and dtype.name in _HALF_NAMES):
        return _wide_unary(op, x, dtype)
    return _s2_unary(op, x, dtype)


def _half_binary(op, a, b, dtype):
    """What the SIMD binary leaves over: 2-byte floats through float32, the rest to stage 2."""
    if dtype.name in _HALF_NAMES:
        return _wide_binary(op, a, b, dtype)
    return _s2_binary(op, a, b, dtype)


def _creation(fn, dtype_at):
    """A creation primitive that makes a 2-byte float tensor as float32, then narrows it."""
    def primitive(*args):
        dtype = args[dtype_at]
        if dtype.name not in _HALF_NAMES:
            return fn(*args)
        return cast(fn(*args[:dtype_at], float32, *args[dtype_at + 1:]), dtype)  # noqa: F821
    primitive.__name__, primitive.__doc__ = fn.__name__, fn.__doc__
    return primitive


from_list, full, arange = _creation(from_list, 2), _creation(full, 2), _creation(arange, 3)  # noqa: F821
uniform, normal, randint = _creation(uniform, 3), _creation(normal, 3), _creation(randint, 3)  # noqa: F821


def _half_put(put):
    def primitive(dst, index, src, accumulate=False):
        if dst.code not in _HALF:
            return put(dst, index, src, accumulate)
        wide = cast(dst, float32)  # noqa: F821
        put(wide, index, src, accumulate)
        set_data(dst, cast(wide, dst.dtype))  # noqa: F821
    primitive.__name__, primitive.__doc__ = put.__name__, put.__doc__
    return primitive


put = _half_put(put)  # noqa: F821
sort, scan, scatter_add = _widened(sort), _widened(scan, 1), _widened(scatter_add, 3)  # noqa: F821
fold, softmax, log_softmax, softmax_backward = map(_widened, (fold, softmax, log_softmax, softmax_backward))  # noqa: F821
cross_entropy, cross_entropy_backward, linear, linear_backward, layer_norm, layer_norm_backward = map(
    _widened, (cross_entropy, cross_entropy_backward, linear, linear_backward, layer_norm,
               layer_norm_backward))
