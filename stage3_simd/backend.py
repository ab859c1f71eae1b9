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
  product threaded;
- fused kernels (``FUSED``): softmax, cross-entropy, linear, layer norm, the optimizer steps,
  on images convolution (an implicit GEMM on our GEMM, and a depthwise kernel), pooling and
  batch norm, which read the image directly instead of unfolding it, and the LSTM cell.

``Backend`` subclasses stage 2's (``stage2_cython/backend.py``) and replaces what stage 3
rewrites; what it does not replace is stage 2's, and a stage 2 primitive that calls
another (``binary`` casts) reaches stage 3's through ``self``.
"""
import os as _os

from stage0_python.vocabulary import FLOAT_CODES, FUSED_KERNELS, HALF_CODES, float32, int64
from stage2_cython import backend as _stage2
from stage3_simd import _kernels as K

from . import dtypes

GEMMS = ("blas", "own")  # the two GEMMs; the default, "auto", sends each product to the faster
_gemm = [_os.environ.get("STAGEGRAD_GEMM") or "auto"]
if _gemm[0] not in GEMMS + ("auto",):
    raise ImportError(f"stage3_simd: STAGEGRAD_GEMM={_gemm[0]!r}; expected auto, blas or own")
# "auto" sends a product to our GEMM when every side is at least OWN_FROM (there its cache
# blocking pays off and it matches or beats OpenBLAS: the journey and `stagegrad
# gemm-ladder` measure both), and also when it has at least OWN_ROWS rows, OWN_COLUMNS
# columns (two of the micro-kernel's widest panels) and OWN_WORK multiply-adds: the linear
# layers of real models (1024 x 128 @ 128 x 384), where ours matches OpenBLAS on one thread
# and, threaded, is up to twice as fast; OpenBLAS's threads, woken per call, lose to its own
# single thread below a few million multiply-adds. Below that (tiny, skinny or narrow
# products), packing costs more than it saves and OpenBLAS's kernels win. A fixed rule, not
# a timing at import: the results of a program must not depend on which GEMM a noisy
# measurement picked.
OWN_FROM, OWN_ROWS, OWN_COLUMNS, OWN_WORK = 512, 64, 128, 1 << 20


# ---------------------------------------------------------------- which GEMM

def get_gemm():
    """``auto`` (the default: each product on the faster GEMM for its shape), ``blas`` or
    ``own``: ``STAGEGRAD_GEMM``, or the last ``set_gemm``."""
    return _gemm[0]


def set_gemm(name):
    """Send every product to GEMM ``name`` (``blas`` or ``own``), or back to ``auto``."""
    if name not in GEMMS + ("auto",):
        raise ValueError(f"set_gemm: expected auto, blas or own, got {name!r}")
    _gemm[0] = name


def gemm_for(n, k, m):
    """The GEMM a product of (n x k) by (k x m) runs on."""
    return _gemm[0] if _gemm[0] != "auto" else auto_gemm(n, k, m)


def auto_gemm(n, k, m):
    """The GEMM ``auto`` picks for a product of (n x k) by (k x m), whatever is forced."""
    if min(n, k, m) >= OWN_FROM or (n >= OWN_ROWS and m >= OWN_COLUMNS and n * k * m >= OWN_WORK):
        return "own"
    return "blas"


# ---------------------------------------------------------------- which convolution

CONVS = ("implicit", "winograd", "direct", "taps")  # by default ("auto") each convolution on the kernel for its shape


def get_conv():
    """``auto`` (the default), ``implicit``, ``winograd``, ``direct`` or ``taps``: the last
    ``set_conv``."""
    return _CONV_NAMES[K.get_conv_algorithm()]


def set_conv(name):
    """Run every convolution (groups 1) as an implicit GEMM, a direct convolution (stride 1,
    dilation 1, padding below the kernel) or Winograd F(2x2, 3x3) (3x3, stride 1, dilation 1,
    padding up to 2), the implicit GEMM where the one chosen does not apply; ``taps``: channels last,
    a filter tap at a time (csrc/taps.hpp; the input gradient where its stride is 1); or back to
    ``auto``: per pass, the one a fixed rule expects to be fastest for the shape
    (``use_direct``, ``use_winograd`` in csrc/conv.hpp)."""
    if name not in _CONV_NAMES:
        raise ValueError(f"set_conv: expected one of {', '.join(_CONV_NAMES)}, got {name!r}")
    K.set_conv_algorithm(_CONV_NAMES.index(name))


_CONV_NAMES = ("auto",) + CONVS  # in the order of sg3_conv_algorithm


# ---------------------------------------------------------------- 2-byte floats
#
# float16 and bfloat16 are stored, not computed in: a primitive given one widens it to
# float32 (exact: every 2-byte value is a float32), runs the float32 kernel, and narrows a
# floating result back with one rounding (csrc/half.hpp), as PyTorch's CPU kernels do.
# Movement, indexing and copies move the 2-byte words themselves and need none of this.
# The fused optimizer steps refuse 2-byte parameters (``_fits``); their composite runs.

_HALF_NAMES = dtypes.HALF_NAMES
_GELU = {"none": "gelu", "tanh": "gelu_tanh"}  # F.gelu's approximate= -> the kernels' activation
_SAVES_INPUT = ("gelu", "gelu_tanh")  # activations whose derivative reads their input


_widened = _stage2.widening(HALF_CODES, float32)
# bfloat16 products on AMX tiles (csrc/amx.hpp) where the CPU and OS allow; False runs them
# through our float32 GEMM (the suite compares the two)
BF16_TILES = True


def _created(fn, dtype_at):
    """The creation method ``fn`` making a 2-byte float tensor as float32, then narrowing it."""
    def primitive(self, *args):
        dtype = args[dtype_at]
        if dtype.name not in _HALF_NAMES:
            return fn(self, *args)
        return self.cast(fn(self, *args[:dtype_at], float32, *args[dtype_at + 1:]), dtype)
    primitive.__name__, primitive.__doc__ = fn.__name__, fn.__doc__
    return primitive


# ---------------------------------------------------------------- fused-kernel helpers

def _fits(*bufs):
    """Whether the fused kernels take these operands: float32 or float64, one dtype."""
    code = bufs[0].code
    return code in FLOAT_CODES and all(b is None or b.code == code for b in bufs)


def _written(*lists):
    for lst in lists:
        for b in lst or ():
            b.version += 1


_S2 = _stage2.Backend


class Backend(_S2):
    """Stage 3's primitive set: stage 2's, with the methods below replacing its own."""
    dtypes = dtypes  # the stage's own: it computes in the 2-byte floats too
    # Each fused kernel replaces a composite of several primitives with one pass over the
    # data (see csrc/fused.hpp); the frontend uses one where its name is in FUSED and its
    # operands fit (float32 or float64, one dtype), and the composite otherwise.
    FUSED = frozenset(FUSED_KERNELS)  # every one the vocabulary declares
    GEMMS = GEMMS
    get_gemm, set_gemm = staticmethod(get_gemm), staticmethod(set_gemm)
    set_num_threads, get_num_threads = staticmethod(K.set_num_threads), staticmethod(K.get_num_threads)
    # unary and binary: the compiled entry points themselves (see _kernels.pyx), which hand
    # what no SIMD kernel covers to ``_half_unary``/``_half_binary`` (set in ``__init__``)
    unary, binary = staticmethod(K.unary), staticmethod(K.binary)

    # ------------------------------------------------------------ elementwise

    def cast(self, x, dtype):
        return self.alias(x) if dtype is x.dtype else K.cast(x, dtype)

    def where(self, cond, a, b):
        """``a`` where ``cond`` (bool) holds, else ``b`` (``a``'s dtype), all broadcast."""
        if a.code not in FLOAT_CODES or b.code != a.code or cond.dtype is not dtypes.bool_:
            return self._wide_where(cond, a, b) if a.code in HALF_CODES else _S2.where(self, cond, a, b)
        shape = self.broadcast_shapes(cond.shape, a.shape, b.shape)
        if shape is None:
            raise ValueError(f"where: shapes {list(cond.shape)}, {list(a.shape)} and {list(b.shape)} "
                             f"cannot be broadcast")
        return K.where(cond, a, b, shape)

    def _half_unary(self, op, x, dtype=None):
        """What the SIMD unary leaves over: 2-byte floats through float32, the rest to stage 2."""
        if x.code in HALF_CODES or (dtype is not None and dtype.name in _HALF_NAMES):
            return self._wide_unary(op, x, dtype)
        return _S2.unary(self, op, x, dtype)

    def _half_binary(self, op, a, b, dtype):
        """What the SIMD binary leaves over: 2-byte floats through float32, the rest to stage 2."""
        if dtype.name in _HALF_NAMES:
            return self._wide_binary(op, a, b, dtype)
        return _S2.binary(self, op, a, b, dtype)

    # ------------------------------------------------------------ reductions

    def reduce(self, op, x, axes, keepdim, dtype=None):
        """Reduce over ``axes`` (non-negative ints); an empty group gives 0 for sum, 1 for
        prod (max/min of one are rejected by the frontend)."""
        out = dtype or (dtypes.bool_ if op in ("any", "all") else x.dtype)
        if x.code not in FLOAT_CODES or op not in K.REDUCE_OPS or not out.is_floating_point:
            if x.code in HALF_CODES or out.name in _HALF_NAMES:
                return self._wide_reduce(op, x, axes, keepdim, dtype)
            return _S2.reduce(self, op, x, axes, keepdim, dtype)
        acc, shape = K.reduce(op, x, axes, keepdim)
        if acc.dtype is not out:
            acc = self.cast(acc, out)
        return self.reshape(acc, shape)

    def arg_reduce(self, op, x, axis, keepdim):
        if x.code not in FLOAT_CODES:
            if x.code in HALF_CODES:
                return self._wide_arg_reduce(op, x, axis, keepdim)
            return _S2.arg_reduce(self, op, x, axis, keepdim)
        return K.arg_reduce(op, x, axis, keepdim, int64)

    # ------------------------------------------------------------ matmul

    def matmul(self, a, b):
        """``a`` (..., n, k) @ ``b`` (..., k, m); the batch dims of both are equal. The 2-byte
        floats are read as they are (bfloat16 on AMX tiles where the machine has them and
        ``BF16_TILES``), accumulated in float32 and rounded once."""
        if a.code not in FLOAT_CODES or b.code != a.code:
            if a.code in HALF_CODES and b.code == a.code:
                return self.cast(K.matmul_half(a, b, float32, BF16_TILES), a.dtype)
            return _S2.matmul(self, a, b)
        return K.matmul(a, b, gemm_for(a.shape[-2], a.shape[-1], b.shape[-1]))

    # ------------------------------------------------------------ fused kernels

    def _rows_last(self, x, dim):
        """``x`` with ``dim`` moved last, contiguous: rows for a kernel working along ``dim``."""
        if dim != x.ndim - 1:
            x = self.permute(x, tuple(d for d in range(x.ndim) if d != dim) + (dim,))
        return self.contiguous(x)

    def _from_rows(self, y, dim, ndim):
        """Undo ``_rows_last``: the result in the input's dim order, contiguous."""
        if dim == ndim - 1:
            return y
        order = list(range(ndim - 1))
        order.insert(dim, ndim - 1)
        return self.contiguous(self.permute(y, tuple(order)))

    @_widened
    def softmax(self, x, dim):
        return self._from_rows(K.softmax(self._rows_last(x, dim), False), dim, x.ndim)

    @_widened
    def log_softmax(self, x, dim):
        return self._from_rows(K.softmax(self._rows_last(x, dim), True), dim, x.ndim)

    @_widened
    def softmax_backward(self, g, y, dim, log):
        """The input's gradient from the output ``y`` and its gradient ``g``."""
        gx = K.softmax_backward(self._rows_last(g, dim), self._rows_last(y, dim), log)
        return self._from_rows(gx, dim, y.ndim)

    @_widened
    def cross_entropy(self, x, target, weight, ignore_index, label_smoothing):
        """Logits (N, C), class indices (N,): (each row's loss, each row's weight in a mean,
        the probabilities for the backward)."""
        if target.dtype is not int64:
            target = self.cast(target, int64)
        weight = None if weight is None else self.contiguous(weight)
        return K.cross_entropy(self.contiguous(x), self.contiguous(target), weight, ignore_index,
                               label_smoothing)

    @_widened
    def cross_entropy_backward(self, probs, target, weight, scale, ignore_index, label_smoothing):
        """The logits' gradient, each row's scaled by ``scale`` (N,)."""
        if target.dtype is not int64:
            target = self.cast(target, int64)
        weight = None if weight is None else self.contiguous(weight)
        return K.cross_entropy_backward(probs, self.contiguous(target), weight, self.contiguous(scale),
                                        ignore_index, label_smoothing)

    def _matrix(self, x):
        """(..., k) as a (rows, k) buffer: a view when ``x`` is contiguous."""
        return self.reshape(self.contiguous(x), (self.prod(x.shape[:-1]), x.shape[-1]))

    @_widened
    def linear(self, x, w, b, act):
        """``act(x @ w.T + b)`` (act: None, "relu", "gelu" or "gelu_tanh"), the bias and
        activation applied in the GEMM's output while it is in cache: (y, the values before a
        gelu, else None)."""
        x2 = self._matrix(x)
        y = K.matmul(x2, self.permute(w, (1, 0)), gemm_for(x2.shape[0], x2.shape[1], w.shape[0]))
        pre = None
        if b is not None or act:
            pre = K.bias_act(y, None if b is None else self.contiguous(b), act, act in _SAVES_INPUT)
        return self.reshape(y, x.shape[:-1] + (w.shape[0],)), pre

    @_widened
    def linear_backward(self, g, x, w, saved, act, need_x, need_w, need_b):
        """(grad x, grad w, grad b) of ``linear``, each None unless asked for (``x`` is only
        read for grad w, ``w`` for grad x): the activation's derivative from ``saved`` (relu's
        output, a gelu's input) with the bias's column sum in the same pass, then two GEMMs on
        transposed views."""
        gb = None
        if act and need_b:
            g, gb = K.act_backward(self.contiguous(g), self.contiguous(saved), act, True)
        elif act:
            g = K.act_backward(self.contiguous(g), self.contiguous(saved), act)
        elif need_b:
            gb = self.reduce("sum", self._matrix(g), (0,), False)
        g2, gx, gw = self._matrix(g), None, None
        if need_x:
            gx = K.matmul(g2, w, gemm_for(g2.shape[0], g2.shape[1], w.shape[1]))
            gx = self.reshape(gx, g.shape[:-1] + (w.shape[1],))
        if need_w:
            x2 = self._matrix(x)
            gw = K.matmul(self.permute(g2, (1, 0)), x2, gemm_for(g2.shape[1], g2.shape[0], x2.shape[1]))
        return gx, gw, gb

    def attention(self, q, k, v, mask, causal, scale):
        """Scaled dot-product attention of q (n, L, E), k (n / group, S, E), v (n / group, S,
        Ev) with a (1 or n, L, S) bool or additive mask, or None: (out, each row's log-sum-exp)."""
        c = self.contiguous
        return K.attention(c(q), c(k), c(v), None if mask is None else c(mask), causal, scale)

    def attention_backward(self, g, q, k, v, out, lse, mask, causal, scale):
        """(grad q, grad k, grad v) of ``attention``."""
        c = self.contiguous
        return K.attention_backward(c(g), c(q), c(k), c(v), out, lse, None if mask is None else c(mask),
                                    causal, scale)

    @_widened
    def gelu(self, x, approximate):
        """GELU (``approximate``: "none" or "tanh") in one pass, computed in x's dtype."""
        return K.activation(self.contiguous(x), _GELU[approximate])

    @_widened
    def gelu_backward(self, g, x, approximate):
        """The gradient of ``gelu``'s input from its output's, in one pass."""
        return K.act_backward(self.contiguous(g), self.contiguous(x), _GELU[approximate])

    @_widened
    def relu_backward(self, g, y):
        """``g * (y > 0)`` in one pass, from ReLU's output ``y`` (positive exactly where the
        input was); the composite is a comparison, a cast and a product."""
        return K.act_backward(self.contiguous(g), self.contiguous(y), "relu")

    @_widened
    def layer_norm(self, x, cols, w, b, eps):
        """Normalise each run of ``cols`` trailing elements: (y, mean, rstd)."""
        c = self.contiguous
        return K.layer_norm(c(x), cols, None if w is None else c(w), None if b is None else c(b), eps)

    @_widened
    def layer_norm_backward(self, g, x, mean, rstd, w, shape, need_x, need_w, need_b):
        """(grad x, grad weight, grad bias) of ``layer_norm`` over trailing ``shape``."""
        x = self.contiguous(x)
        gx, gw, gb = K.layer_norm_backward(self.contiguous(g), x, mean, rstd,
                                           None if w is None else self.contiguous(w),
                                           self.prod(shape), need_x, need_w, need_b)
        gw = None if gw is None else self.reshape(self.cast(gw, x.dtype), shape)
        gb = None if gb is None else self.reshape(self.cast(gb, x.dtype), shape)
        return gx, gw, gb

    # ------------------------------------------------------------ images (csrc/conv.hpp, pool.hpp,
    # batch_norm.hpp): NCHW, made contiguous; a window is (kh, kw, sh, sw, ph, pw, dh, dw)

    @_widened
    def conv2d(self, x, w, b, window, out, groups):
        """The convolution of x (N, C, H, W) by w (O, C/groups, kh, kw) (+ b), groups 1 or C."""
        c = self.contiguous
        kernel = K.conv2d if groups == 1 else K.depthwise
        return kernel(c(x), c(w), None if b is None else c(b), window, out)

    @_widened
    def conv2d_backward(self, g, x, w, window, groups, need_x, need_w, need_b):
        """(grad x, grad w, grad b) of ``conv2d``, each None unless asked for."""
        g, gx, gw = self.contiguous(g), None, None
        if need_x or need_w:
            kernel = K.conv2d_backward if groups == 1 else K.depthwise_backward
            gx, gw = kernel(g, self.contiguous(x), self.contiguous(w), window, need_x, need_w)
        return gx, gw, self.reduce("sum", g, (0, 2, 3), False) if need_b else None

    @_widened
    def max_pool2d(self, x, window, out):
        """(maxima, int64 flat positions h * W + w) of each window over the last two dims."""
        return K.max_pool2d(self.contiguous(x), window, out, int64)

    @_widened
    def max_pool2d_backward(self, g, index, x_shape, window):
        return K.max_pool2d_backward(self.contiguous(g), index, x_shape, window)

    @_widened
    def avg_pool2d(self, x, window, out, include_pad, divisor):
        """Each window's average (``divisor`` (not 0) replaces PyTorch's counts)."""
        return K.avg_pool2d(self.contiguous(x), window, out, include_pad, divisor)

    @_widened
    def avg_pool2d_backward(self, g, x_shape, window, include_pad, divisor):
        return K.avg_pool2d_backward(self.contiguous(g), x_shape, window, include_pad, divisor)

    def batch_norm(self, x, w, b, running_mean, running_var, training, momentum, eps, act):
        """(y, mean, 1/std) per channel of (N, C, ...), y through ``act`` (None, "relu" or
        "relu6"); float32 or float64 alone (the running statistics are updated in place, which
        a widened copy would lose); in training the running statistics, when given, move toward
        the batch's."""
        c = self.contiguous
        w, b = (None if t is None else c(t) for t in (w, b))
        return K.batch_norm(c(x), w, b, running_mean, running_var, training, momentum, eps, act)

    def batch_norm_backward(self, g, x, y, mean, rstd, w, training, act, need_x, need_w, need_b):
        """(grad x, grad weight, grad bias) of ``batch_norm``, each None unless asked for; y
        (the output) is read only through ``act``."""
        c = self.contiguous
        return K.batch_norm_backward(c(g), c(x), None if y is None else c(y), mean, rstd,
                                     None if w is None else c(w), training, act, need_x, need_w, need_b)

    # ------------------------------------------------------------ the LSTM cell (csrc/recurrent.hpp)

    @_widened
    def lstm_cell(self, pre, c):
        """(h', c', the activated gates, tanh(c')) from the gates before activation (rows, 4H)
        and c (rows, H)."""
        return K.lstm_cell(self.contiguous(pre), self.contiguous(c))

    @_widened
    def lstm_cell_backward(self, gh, gc, act, tc, c):
        """(grad of the gates before activation, grad of c) from those of h' and c'."""
        return K.lstm_cell_backward(self.contiguous(gh), self.contiguous(gc), act, tc, self.contiguous(c))

    def recurrent(self, mode, reverse, batch_sizes, gi, h0, c0, w, b, w_hr):
        """One recurrent layer and direction over packed rows, its whole time loop in one call:
        (output rows, final h, final c or None, what ``recurrent_backward`` needs). ``mode``
        is ``RNN_TANH``, ``RNN_RELU``, ``LSTM`` or ``GRU``; gi every row's input projection;
        w_hr the LSTM's projection or None."""
        c = self.contiguous
        return K.recurrent(mode, reverse, batch_sizes, c(gi), h0, c0, c(w), None if b is None else c(b),
                           None if w_hr is None else c(w_hr))

    def recurrent_backward(self, mode, reverse, batch_sizes, gout, gh, gc, saved, w, bias, w_hr):
        """(grad of gi, h0, c0, w, b, w_hr) of ``recurrent``, backpropagated through time in one
        call (c0's None but for the LSTM, b's without a bias, w_hr's without a projection)."""
        c = self.contiguous
        return K.recurrent_backward(mode, reverse, batch_sizes, c(gout), gh, gc, saved, c(w), bias,
                                    None if w_hr is None else c(w_hr))

    # ------------------------------------------------------------ multi-tensor optimizer steps
    #
    # One call updates every parameter of a group, in the composite's order of float
    # operations (the same bits). Each returns False, touching nothing, when the buffers do
    # not fit: not all contiguous, not one float dtype, or two sharing memory (the composite
    # then runs, tensor by tensor).

    def _step_fits(self, *lists):
        bufs = [b for lst in lists if lst for b in lst]
        return (_fits(*bufs) and all(self.is_contiguous(b) for b in bufs)
                and len({self.storage_id(b) for b in bufs}) == len(bufs))

    def adam_step(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, betas, eps,
                  weight_decay, decoupled, maximize):
        """Adam (AdamW when ``decoupled``) on every buffer of ``params``; ``steps`` are the
        step counts after this one; ``max_exp_avg_sqs`` is None without amsgrad."""
        if not self._step_fits(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
            return False
        beta1, beta2 = betas
        w = 1 - beta1
        K.adam_step(params[0].code, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                    [lr / (1 - beta1 ** s) for s in steps], [(1 - beta2 ** s) ** 0.5 for s in steps],
                    lr, weight_decay, w, 1 - w, beta2, eps, decoupled, maximize)
        _written(params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
        return True

    def sgd_step(self, params, grads, momentum_buffers, first, lr, momentum, dampening, weight_decay,
                 nesterov, maximize):
        """SGD on every buffer of ``params``; ``momentum_buffers`` is None without momentum, and
        ``first[i]`` says that buffer i starts this step (it becomes the gradient)."""
        if not self._step_fits(params, grads, momentum_buffers):
            return False
        K.sgd_step(params[0].code, params, grads, momentum_buffers, bytes(first or len(params)), lr,
                   weight_decay, momentum, dampening, nesterov, maximize)
        _written(params, momentum_buffers)
        return True

    def rmsprop_step(self, params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps,
                     weight_decay, momentum, maximize):
        """RMSprop on every buffer of ``params``; ``grad_avgs`` is None unless centered,
        ``momentum_buffers`` None without momentum."""
        if not self._step_fits(params, grads, square_avgs, grad_avgs, momentum_buffers):
            return False
        w = 1 - alpha
        K.rmsprop_step(params[0].code, params, grads, square_avgs, grad_avgs, momentum_buffers, lr,
                       weight_decay, alpha, eps, momentum, w, 1 - w, maximize)
        _written(params, square_avgs, grad_avgs, momentum_buffers)
        return True

    # ------------------------------------------------------------ 2-byte floats through float32

    # the hot primitives above call these from their fallback branch, so float32 pays nothing
    _wide_unary = _widened(lambda self, *args: K.unary(*args), 1, 2)
    _wide_binary = _widened(lambda self, *args: K.binary(*args), 1, 3)
    _wide_where = _widened(lambda self, *args: self.where(*args), 1)
    _wide_reduce = _widened(lambda self, *args: self.reduce(*args), 1, 4)
    _wide_arg_reduce = _widened(lambda self, *args: self.arg_reduce(*args), 1)

    from_list, full = _created(_S2.from_list, 2), _created(_S2.full, 2)
    arange, uniform = _created(_S2.arange, 3), _created(_S2.uniform, 3)
    normal, randint = _created(_S2.normal, 3), _created(_S2.randint, 3)
    sort, scan, scatter_add = _widened(_S2.sort), _widened(_S2.scan, 1), _widened(_S2.scatter_add, 3)
    fold = _widened(_S2.fold)

    def put(self, dst, index, src, accumulate=False):
        """Stage 2's ``put``; into a 2-byte float ``dst`` through a float32 copy of it."""
        if dst.code not in HALF_CODES:
            return _S2.put(self, dst, index, src, accumulate)
        wide = self.cast(dst, float32)
        _S2.put(self, wide, index, src, accumulate)
        self.set_data(dst, self.cast(wide, dst.dtype))


_BACKEND = Backend()
# what no SIMD kernel covers goes back to the backend (see _kernels.pyx)
K.set_fallbacks(_BACKEND._half_unary, _BACKEND._half_binary, dtypes.bool_)

# The primitive set as this module's names, which is how the frontend reaches it
# (``B.linear_backward(...)``): each one the instance's bound method or the compiled entry
# point itself (``unary``, ``binary``), so that a call costs what a call on the instance does.
# Stage 0's groups, then the settings (``get_gemm`` and ``set_gemm`` are the functions above)
# and the fused kernels.
Buffer, FUSED, VIEWS = Backend.Buffer, Backend.FUSED, Backend.VIEWS
from_list, full, arange = _BACKEND.from_list, _BACKEND.full, _BACKEND.arange
uniform, normal, randint = _BACKEND.uniform, _BACKEND.normal, _BACKEND.randint
cast = _BACKEND.cast
unary, binary, where = _BACKEND.unary, _BACKEND.binary, _BACKEND.where
reduce, arg_reduce = _BACKEND.reduce, _BACKEND.arg_reduce
sort, scan = _BACKEND.sort, _BACKEND.scan
reshape, permute, expand, slice = _BACKEND.reshape, _BACKEND.permute, _BACKEND.expand, _BACKEND.slice
diagonal, windows, contiguous = _BACKEND.diagonal, _BACKEND.windows, _BACKEND.contiguous
alias, copy, cat = _BACKEND.alias, _BACKEND.copy, _BACKEND.cat
is_contiguous, strides, storage_offset = _BACKEND.is_contiguous, _BACKEND.strides, _BACKEND.storage_offset
data_ptr, storage_id, shares_storage = _BACKEND.data_ptr, _BACKEND.storage_id, _BACKEND.shares_storage
take, gather, scatter_add = _BACKEND.take, _BACKEND.gather, _BACKEND.scatter_add
matmul = _BACKEND.matmul
unfold, fold = _BACKEND.unfold, _BACKEND.fold
assign, put, set_data = _BACKEND.assign, _BACKEND.put, _BACKEND.set_data
view_dtype, from_buffer = _BACKEND.view_dtype, _BACKEND.from_buffer
to_dlpack, from_dlpack = _BACKEND.to_dlpack, _BACKEND.from_dlpack
prod, broadcast_shapes, contiguous_strides = _BACKEND.prod, _BACKEND.broadcast_shapes, _BACKEND.contiguous_strides
set_num_threads, get_num_threads = Backend.set_num_threads, Backend.get_num_threads
softmax, log_softmax, softmax_backward = _BACKEND.softmax, _BACKEND.log_softmax, _BACKEND.softmax_backward
cross_entropy, cross_entropy_backward = _BACKEND.cross_entropy, _BACKEND.cross_entropy_backward
linear, linear_backward = _BACKEND.linear, _BACKEND.linear_backward
layer_norm, layer_norm_backward = _BACKEND.layer_norm, _BACKEND.layer_norm_backward
adam_step, sgd_step, rmsprop_step = _BACKEND.adam_step, _BACKEND.sgd_step, _BACKEND.rmsprop_step
conv2d, conv2d_backward = _BACKEND.conv2d, _BACKEND.conv2d_backward
max_pool2d, max_pool2d_backward = _BACKEND.max_pool2d, _BACKEND.max_pool2d_backward
avg_pool2d, avg_pool2d_backward = _BACKEND.avg_pool2d, _BACKEND.avg_pool2d_backward
batch_norm, batch_norm_backward = _BACKEND.batch_norm, _BACKEND.batch_norm_backward
lstm_cell, lstm_cell_backward = _BACKEND.lstm_cell, _BACKEND.lstm_cell_backward
recurrent, recurrent_backward = _BACKEND.recurrent, _BACKEND.recurrent_backward
gelu, gelu_backward, relu_backward = _BACKEND.gelu, _BACKEND.gelu_backward, _BACKEND.relu_backward
attention, attention_backward = _BACKEND.attention, _BACKEND.attention_backward
