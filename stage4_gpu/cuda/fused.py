"""Fused kernels on the CUDA device: softmax and log_softmax with their backwards,
cross-entropy and layer norm with their backwards, and the Adam, SGD and RMSprop steps, each
one launch where the composite makes several (``kernels/softmax.cu``,
``cross_entropy*.cu``, ``layer_norm.cu``, ``optim.cu``). The signatures are stage 3's
(``stage3_simd/backend.py``); the frontend uses them where ``FUSED`` names them and the
operands are float32.
"""
from ..dtypes import float32
from .buffer import empty
from .elementwise import binary_into, fill_contiguous
from .movement import contiguous, permute, reshape
from .reduce import reduce
from .runtime import BLOCK, runtime

FUSED = frozenset({"softmax", "log_softmax", "cross_entropy", "layer_norm", "adam", "sgd", "rmsprop"})
# the dtypes each fused kernel is written for; other dtypes (float64 layer norm, say) take
# the composite, which runs on this device too
_DTYPES = {"softmax": ("float32", "float64"), "log_softmax": ("float32", "float64")}


def takes(name, bufs):
    """Whether the fused kernel ``name`` takes these buffers (its dtypes: float32, and
    float64 for the softmaxes)."""
    return name in FUSED and all(b.dtype.name in _DTYPES.get(name, ("float32",)) for b in bufs)
ROW_THREADS = 256  # rows.cuh's: one block of this many threads per row


def _rows_last(x, dim):
    if dim != len(x.shape) - 1:
        x = permute(x, tuple(d for d in range(len(x.shape)) if d != dim) + (dim,))
    return contiguous(x)


def _from_rows(y, dim, ndim):
    if dim == ndim - 1:
        return y
    order = list(range(ndim - 1))
    order.insert(dim, ndim - 1)
    return contiguous(permute(y, tuple(order)))


def _rows(x, y, dim, mode):
    """softmax.cu's ``mode`` along ``dim`` of x (and y, in the backward)."""
    if not x.shape:  # a zero-dim tensor is one row of one element
        return reshape(_rows(reshape(x, (1,)), reshape(y, (1,)), 0, mode), ())
    xr, yr = _rows_last(x, dim), _rows_last(y, dim)
    cols = x.shape[dim]
    rows = xr.numel // cols if cols else 0
    result = empty(xr.shape, x.dtype)
    if rows:
        rt = runtime()
        rt.launch("softmax", f"softmax<{x.ctype}, {mode}>", rows, ROW_THREADS,
                  [rt.params([rows, cols]), result.array, _at(xr), _at(yr)])
    return _from_rows(result, dim, len(x.shape))


def _at(x):
    """A contiguous buffer's elements from its offset (a CuPy view: the kernel indexes from 0)."""
    return x.array[x.offset:]


def softmax(x, dim):
    return _rows(x, x, dim, 0)


def log_softmax(x, dim):
    return _rows(x, x, dim, 1)


def softmax_backward(g, y, dim, log):
    """The input's gradient from the output ``y`` and its gradient ``g``."""
    return _rows(g, y, dim, 3 if log else 2)


def _check_targets(target, cols, ignore_index):
    """IndexError naming the first target outside [0, cols) (ignore_index aside), as the
    CPU's kernel raises; a kernel on the device cannot."""
    from ..dtypes import bool_

    def scalar(v):
        return fill_contiguous(empty((), target.dtype), v)
    low, high, ignored = scalar(0), scalar(cols), scalar(ignore_index)
    below = binary_into("Lt", empty(target.shape, bool_), target, low)
    above = binary_into("Ge", empty(target.shape, bool_), target, high)
    outside = binary_into("LogicalOr", empty(target.shape, bool_), below, above)
    kept = binary_into("Ne", empty(target.shape, bool_), target, ignored)
    bad = binary_into("LogicalAnd", empty(target.shape, bool_), outside, kept)
    if reduce("any", bad, set(range(len(bad.shape))), False).item():
        values, flags = target.values(), bad.values()
        raise IndexError(f"cross_entropy: target {values[flags.index(True)]} is out of bounds "
                         f"for {cols} classes")


def _weights(weight, cols):
    """The class weights, contiguous: ones where there are none."""
    if weight is None:
        return fill_contiguous(empty((cols,), float32), 1.0)
    return contiguous(weight)


def cross_entropy(x, target, weight, ignore_index, label_smoothing):
    """Logits (N, C), class indices (N,): (each row's loss, each row's weight in a mean,
    the probabilities for the backward)."""
    rows, cols = x.shape
    x, target = contiguous(x), contiguous(target)
    _check_targets(target, cols, ignore_index)
    weight = _weights(weight, cols)
    loss, wrow, probs = empty((rows,), float32), empty((rows,), float32), empty((rows, cols), float32)
    if rows:
        rt = runtime()
        rt.launch("cross_entropy", f"cross_entropy<{target.ctype}>", rows, ROW_THREADS,
                  [rt.params([rows, cols]), loss.array, wrow.array, probs.array, _at(x), _at(target),
                   _at(weight), ignore_index, label_smoothing])
    return loss, wrow, probs


def cross_entropy_backward(probs, target, weight, scale, ignore_index, label_smoothing):
    """The logits' gradient, each row's scaled by ``scale`` (N,)."""
    rows, cols = probs.shape
    probs, target, scale = contiguous(probs), contiguous(target), contiguous(scale)
    weight = _weights(weight, cols)
    wsum = contiguous(reshape(reduce("sum", weight, {0}, False), (1,)))
    gx = empty((rows, cols), float32)
    if rows * cols:
        rt = runtime()
        rt.launch("cross_entropy_backward", f"cross_entropy_backward<{target.ctype}>",
                  -(-rows * cols // BLOCK), BLOCK,
                  [rt.params([rows, cols]), gx.array, _at(probs), _at(target), _at(weight), _at(scale),
                   _at(wsum), ignore_index, label_smoothing])
    return gx


# ---------------------------------------------------------------- optimizer steps

def _fits(*lists):
    """Whether every buffer is a whole float32 tensor of its own, contiguous."""
    bufs = [b for lst in lists if lst for b in lst]
    return (all(b.dtype is float32 and b.is_contiguous() for b in bufs)
            and len({id(b.storage) for b in bufs}) == len(bufs))


def _step(kernel, flags, hyper, param, grad, states):
    """One launch of ``kernel`` (optim.cu) on one parameter; a missing state is the
    parameter itself, which the kernel does not touch."""
    rt = runtime()
    n = param.numel
    if n:
        h = rt.upload(rt.np.array(hyper, dtype=rt.np.float32), rt.np.float32)
        rt.launch(kernel, kernel, -(-n // BLOCK), BLOCK,
                  [rt.params([n, *flags]), h, _at(param), _at(grad)]
                  + [_at(s if s is not None else param) for s in states])
    for b in (param, *states):
        if b is not None:
            b.storage.version += 1


def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, betas, eps, weight_decay,
              decoupled, maximize):
    """Adam (AdamW when ``decoupled``) on every buffer of ``params``, as stage 3's."""
    if not _fits(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
        return False
    beta1, beta2 = betas
    w = 1 - beta1
    amsgrad = max_exp_avg_sqs is not None
    decay = 0 if weight_decay == 0 else (2 if decoupled else 1)
    for k, (p, g, m, v) in enumerate(zip(params, grads, exp_avgs, exp_avg_sqs)):
        s = steps[k]
        hyper = [w, 1 - w, beta2, 1 - beta2, eps, (1 - beta2 ** s) ** 0.5, 1 - lr * weight_decay,
                 weight_decay, lr / (1 - beta1 ** s)]
        _step("adam_step", [int(amsgrad), int(bool(maximize)), decay], hyper, p, g,
              (m, v, max_exp_avg_sqs[k] if amsgrad else None))
    return True


def sgd_step(params, grads, momentum_buffers, first, lr, momentum, dampening, weight_decay, nesterov,
             maximize):
    """SGD on every buffer of ``params``, as stage 3's; ``first[i]`` says buffer i starts
    this step (it becomes the gradient)."""
    if not _fits(params, grads, momentum_buffers):
        return False
    hyper = [lr, weight_decay, momentum, 1 - dampening]
    for k, (p, g) in enumerate(zip(params, grads)):
        buf = None if momentum_buffers is None else momentum_buffers[k]
        flags = [int(buf is not None), int(bool(buf is not None and first[k])), int(bool(maximize)),
                 int(weight_decay != 0), int(bool(nesterov)), int(dampening != 0)]
        _step("sgd_step", flags, hyper, p, g, (buf,))
    return True


def rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps, weight_decay,
                 momentum, maximize):
    """RMSprop on every buffer of ``params``, as stage 3's; ``grad_avgs`` is None unless
    centered, ``momentum_buffers`` None without momentum."""
    if not _fits(params, grads, square_avgs, grad_avgs, momentum_buffers):
        return False
    w = 1 - alpha
    hyper = [lr, weight_decay, alpha, 1 - alpha, w, 1 - w, eps, momentum]
    flags = [int(grad_avgs is not None), int(momentum_buffers is not None), int(bool(maximize)),
             int(weight_decay != 0)]
    for k, (p, g) in enumerate(zip(params, grads)):
        states = (square_avgs[k], None if grad_avgs is None else grad_avgs[k],
                  None if momentum_buffers is None else momentum_buffers[k])
        _step("rmsprop_step", flags, hyper, p, g, states)
    return True


# ---------------------------------------------------------------- layer norm

def layer_norm(x, cols, w, b, eps):
    """Normalise each run of ``cols`` trailing elements: (y, mean, rstd)."""
    x = contiguous(x)
    w, b = (None if t is None else contiguous(t) for t in (w, b))
    rows = x.numel // cols if cols else 0
    y, mean, rstd = empty(x.shape, float32), empty((rows,), float32), empty((rows,), float32)
    if rows:
        rt = runtime()
        rt.launch("layer_norm_forward", "layer_norm_forward", rows, ROW_THREADS,
                  [rt.params([rows, cols, int(w is not None), int(b is not None)]), y.array, mean.array,
                   rstd.array, _at(x), _at(w or x), _at(b or x), eps])
    return y, mean, rstd


def layer_norm_backward(g, x, mean, rstd, w, shape, need_x, need_w, need_b):
    """(grad x, grad weight, grad bias) of ``layer_norm`` over trailing ``shape``: the input's
    in one launch per row, the weight's and bias's as sums down the columns."""
    cols = 1
    for n in shape:
        cols *= n
    x, g, mean, rstd = contiguous(x), contiguous(g), contiguous(mean), contiguous(rstd)
    w = None if w is None else contiguous(w)
    rows = x.numel // cols if cols else 0
    gx = gw = gb = None
    if need_x:
        gx = empty(x.shape, float32)
        if rows:
            rt = runtime()
            rt.launch("layer_norm_backward", "layer_norm_backward", rows, ROW_THREADS,
                      [rt.params([rows, cols, int(w is not None), 0]), gx.array, _at(mean), _at(rstd),
                       _at(x), _at(g), _at(w or x)])
    g2, x2 = reshape(g, (rows, cols)), reshape(x, (rows, cols))
    if need_w:
        xhat = binary_into("Sub", empty((rows, cols), float32), x2, reshape(mean, (rows, 1)))
        xhat = binary_into("Mul", empty((rows, cols), float32), xhat, reshape(rstd, (rows, 1)))
        gxhat = binary_into("Mul", empty((rows, cols), float32), g2, xhat)
        gw = reshape(reduce("sum", gxhat, {0}, False), tuple(shape))
    if need_b:
        gb = reshape(reduce("sum", g2, {0}, False), tuple(shape))
    return gx, gw, gb


def instances():
    """Every fused instantiation this module can launch."""
    out = [("softmax", f"softmax<{t}, {mode}>") for t in ("float", "double") for mode in range(4)]
    for i in ("int", "long long"):
        out += [("cross_entropy", f"cross_entropy<{i}>"),
                ("cross_entropy_backward", f"cross_entropy_backward<{i}>")]
    out += [(k, k) for k in ("layer_norm_forward", "layer_norm_backward", "adam_step", "sgd_step",
                             "rmsprop_step")]
    return out
