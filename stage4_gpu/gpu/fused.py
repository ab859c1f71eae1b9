"""Fused kernels on a device: softmax and log_softmax with their backwards, cross-entropy
and layer norm with their backwards, scaled dot-product attention with its backward and a
recurrent layer's time loop with its backward through time (CUDA only), and the Adam, SGD
and RMSprop steps, each one launch where the composite makes several (an optimizer's, one
per parameter or one per group: the driver's ``optimizer_steps``). The signatures are stage 3's
(``stage3_simd/backend.py``); the frontend uses them where ``takes`` says the kernel is
written for the operands' dtypes (float32; the driver may name more).

Every fused kernel reads contiguous operands indexed from their first element: ``whole``
copies a view that is not, or, where the driver cannot start a binding at a view's
offset (WebGPU), one that starts inside its storage.
"""
import array

from ..dtypes import bool_, float32, int64
from ..strided import permute, reshape, slice
from .elementwise import binary
from .matmul import matmul
from .movement import copy
from .reduce import reduce

# the fused kernels of the vocabulary's FUSED_KERNELS that the devices have (stage 4's backend
# routes their functions at the buffer positions declared there)
FUSED = frozenset({"softmax", "log_softmax", "cross_entropy", "layer_norm", "adam", "sgd", "rmsprop",
                   "attention", "conv2d", "recurrent"})
# the fused kernels a driver has only where its ``fused_dtypes`` names them (WebGPU has none)
NAMED_ONLY = frozenset({"attention", "conv2d", "recurrent"})


def takes(name, driver, bufs):
    """Whether ``driver``'s fused kernel ``name`` takes these buffers: the dtypes it is
    written for (``Driver.fused_dtypes``), float32 where the driver names none (none at all
    for a kernel in ``NAMED_ONLY``)."""
    dtypes = driver.fused_dtypes.get(name, () if name in NAMED_ONLY else ("float32",))
    return name in FUSED and all(b.dtype.name in dtypes for b in bufs)


def _is_whole(x):
    return x.is_contiguous() and (x.offset == 0 or x.driver.offsets)


def whole(x):
    """``x`` contiguous, from its storage's first element where the driver binds whole
    storages: itself when it is, else a copy."""
    return x if _is_whole(x) else copy(x)


# ---------------------------------------------------------------- softmax

def _rows_last(x, dim):
    if dim != len(x.shape) - 1:
        x = permute(x, tuple(d for d in range(len(x.shape)) if d != dim) + (dim,))
    return whole(x)


def _from_rows(y, dim, ndim):
    if dim == ndim - 1:
        return y
    order = list(range(ndim - 1))
    order.insert(dim, ndim - 1)
    return whole(permute(y, tuple(order)))


def _rows(mode, x, y, dim):
    """The driver's softmax kernel in ``mode`` along ``dim`` of x (and y, in the backward)."""
    if not x.shape:  # a zero-dim tensor is one row of one element
        return reshape(_rows(mode, reshape(x, (1,)), reshape(y, (1,)), 0), ())
    xr, yr = _rows_last(x, dim), _rows_last(y, dim)
    cols = x.shape[dim]
    rows = xr.numel // cols if cols else 0
    result = type(x).empty(xr.shape, x.dtype)
    if rows:
        x.driver.rows(mode, result, xr, yr, rows, cols)
    return _from_rows(result, dim, len(x.shape))


def softmax(x, dim):
    """exp(x) / sum(exp(x)) along ``dim``, from the row's maximum."""
    return _rows("softmax", x, x, dim)


def log_softmax(x, dim):
    """x - logsumexp(x) along ``dim``."""
    return _rows("log_softmax", x, x, dim)


def softmax_backward(g, y, dim, log):
    """The input's gradient from the output ``y`` and its gradient ``g``."""
    return _rows("log_softmax_backward" if log else "softmax_backward", g, y, dim)


# ---------------------------------------------------------------- cross-entropy

def _check_targets(target, cols, ignore_index):
    """IndexError naming the first target outside [0, cols) (ignore_index aside), as the
    CPU's kernel raises; a kernel on the device cannot. Read back here (the host waits) only
    where the driver's kernel does not check the targets on the device and report a bad one
    at the next synchronization (``Driver.checks_indices``), and not while a CUDA graph is
    captured: a capture records no read back (``cuda/graphs.py``)."""
    if target.driver.checks_indices or target.driver.capturing():
        return
    t = target.dtype

    def scalar(v):
        return type(target).full((), v, t)
    outside = binary("logical_or", binary("lt", target, scalar(0), t), binary("ge", target, scalar(cols), t),
                     bool_)
    bad = binary("logical_and", outside, binary("ne", target, scalar(ignore_index), t), bool_)
    if reduce("any", bad, set(range(len(bad.shape))), False).item():
        values, flags = target.values(), bad.values()
        raise IndexError(f"cross_entropy: target {values[flags.index(True)]} is out of bounds "
                         f"for {cols} classes")


def _weights(like, weight, cols):
    """The class weights, whole: ones where there are none."""
    return type(like).full((cols,), 1.0, float32) if weight is None else whole(weight)


def cross_entropy(x, target, weight, ignore_index, label_smoothing):
    """Logits (N, C), class indices (N,): (each row's loss, each row's weight in a mean,
    the probabilities for the backward)."""
    rows, cols = x.shape
    x, target = whole(x), whole(target)
    _check_targets(target, cols, ignore_index)
    weight = _weights(x, weight, cols)
    new = type(x).empty
    loss, wrow, probs = new((rows,), float32), new((rows,), float32), new((rows, cols), float32)
    if rows:
        x.driver.cross_entropy(loss, wrow, probs, x, target, weight, ignore_index, label_smoothing)
    return loss, wrow, probs


def cross_entropy_backward(probs, target, weight, scale, ignore_index, label_smoothing):
    """The logits' gradient, each row's scaled by ``scale`` (N,)."""
    rows, cols = probs.shape
    probs, target, scale = whole(probs), whole(target), whole(scale)
    weight = _weights(probs, weight, cols)
    wsum = whole(reshape(reduce("sum", weight, {0}, False), (1,)))
    gx = type(probs).empty((rows, cols), float32)
    if rows * cols:
        probs.driver.cross_entropy_backward(gx, probs, target, weight, scale, wsum, ignore_index,
                                            label_smoothing)
    return gx


# ---------------------------------------------------------------- optimizer steps

def _fits(*lists):
    """Whether every buffer is a whole float32 tensor of its own (see ``whole``)."""
    bufs = [b for lst in lists if lst for b in lst]
    return (all(b.dtype is float32 and _is_whole(b) for b in bufs)
            and len({id(b.storage) for b in bufs}) == len(bufs))


# the hyperparameters (by index) and flags (by name) of each rule that are each tensor's
# own, the rest being the group's: a multi-tensor kernel takes them per tensor
OWN = {"adam": ((5, 8), ()), "sgd": ((), ("first",)), "rmsprop": ((), ())}


def _steps(rule, steps):
    """``rule``'s step on every parameter of a group, each ``(param, grad, states, hyper,
    flags)`` in ``steps``: the driver's ``optimizer_steps`` (one launch per parameter, or
    one for them all); every buffer it writes is a new version."""
    nonempty = [s for s in steps if s[0].numel]
    if nonempty:
        nonempty[0][0].driver.optimizer_steps(rule, nonempty)
    for param, _, states, _, _ in steps:
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
    flags = {"amsgrad": int(amsgrad), "maximize": int(bool(maximize)),
             "decay": 0 if weight_decay == 0 else (2 if decoupled else 1)}  # 2: decoupled
    group = []
    for k, (p, g, m, v) in enumerate(zip(params, grads, exp_avgs, exp_avg_sqs)):
        s = steps[k]
        hyper = [w, 1 - w, beta2, 1 - beta2, eps, (1 - beta2 ** s) ** 0.5, 1 - lr * weight_decay,
                 weight_decay, lr / (1 - beta1 ** s)]
        group.append((p, g, (m, v, max_exp_avg_sqs[k] if amsgrad else None), hyper, flags))
    _steps("adam", group)
    return True


def sgd_step(params, grads, momentum_buffers, first, lr, momentum, dampening, weight_decay, nesterov,
             maximize):
    """SGD on every buffer of ``params``, as stage 3's; ``first[i]`` says buffer i starts
    this step (it becomes the gradient)."""
    if not _fits(params, grads, momentum_buffers):
        return False
    hyper = [lr, weight_decay, momentum, 1 - dampening]
    group = []
    for k, (p, g) in enumerate(zip(params, grads)):
        buf = None if momentum_buffers is None else momentum_buffers[k]
        flags = {"momentum": int(buf is not None), "first": int(bool(buf is not None and first[k])),
                 "maximize": int(bool(maximize)), "decay": int(weight_decay != 0),
                 "nesterov": int(bool(nesterov)), "dampening": int(dampening != 0)}
        group.append((p, g, (buf,), hyper, flags))
    _steps("sgd", group)
    return True


def rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps, weight_decay,
                 momentum, maximize):
    """RMSprop on every buffer of ``params``, as stage 3's; ``grad_avgs`` is None unless
    centered, ``momentum_buffers`` None without momentum."""
    if not _fits(params, grads, square_avgs, grad_avgs, momentum_buffers):
        return False
    w = 1 - alpha
    hyper = [lr, weight_decay, alpha, 1 - alpha, w, 1 - w, eps, momentum]
    flags = {"centered": int(grad_avgs is not None), "momentum": int(momentum_buffers is not None),
             "maximize": int(bool(maximize)), "decay": int(weight_decay != 0)}
    group = []
    for k, (p, g) in enumerate(zip(params, grads)):
        states = (square_avgs[k], None if grad_avgs is None else grad_avgs[k],
                  None if momentum_buffers is None else momentum_buffers[k])
        group.append((p, g, states, hyper, flags))
    _steps("rmsprop", group)
    return True


# ---------------------------------------------------------------- layer norm

def layer_norm(x, cols, w, b, eps):
    """Normalise each run of ``cols`` trailing elements: (y, mean, rstd)."""
    x = whole(x)
    w, b = (None if t is None else whole(t) for t in (w, b))
    rows = x.numel // cols if cols else 0
    new = type(x).empty
    y, mean, rstd = new(x.shape, float32), new((rows,), float32), new((rows,), float32)
    if rows:
        x.driver.layer_norm(y, mean, rstd, x, w, b, rows, cols, eps)
    return y, mean, rstd


def layer_norm_backward(g, x, mean, rstd, w, shape, need_x, need_w, need_b):
    """(grad x, grad weight, grad bias) of ``layer_norm`` over trailing ``shape``: the input's
    in one launch per row, the weight's and bias's as sums down the columns."""
    cols = 1
    for n in shape:
        cols *= n
    x, g, mean, rstd = whole(x), whole(g), whole(mean), whole(rstd)
    w = None if w is None else whole(w)
    rows = x.numel // cols if cols else 0
    gx = gw = gb = None
    if need_x:
        gx = type(x).empty(x.shape, float32)
        if rows:
            x.driver.layer_norm_backward(gx, mean, rstd, x, g, w, rows, cols)
    g2, x2 = reshape(g, (rows, cols)), reshape(x, (rows, cols))
    if need_w:
        xhat = binary("mul", binary("sub", x2, reshape(mean, (rows, 1)), float32), reshape(rstd, (rows, 1)),
                      float32)
        gw = reshape(reduce("sum", binary("mul", g2, xhat, float32), {0}, False), tuple(shape))
    if need_b:
        gb = reshape(reduce("sum", g2, {0}, False), tuple(shape))
    return gx, gw, gb


# ---------------------------------------------------------------- attention

def attention(q, k, v, mask, causal, scale):
    """Scaled dot-product attention of q (n, L, E), k (n / group, S, E), v (n / group, S, Ev)
    with a (1 or n, L, S) bool or additive mask, or None: (out (n, L, Ev), each row's
    log-sum-exp (n, L)), without the L x S scores in memory."""
    q, k, v = whole(q), whole(k), whole(v)
    mask = None if mask is None else whole(mask)
    n, L, Ev = q.shape[0], q.shape[1], v.shape[2]
    new = type(q).empty
    out, lse = new((n, L, Ev), q.dtype), new((n, L), q.dtype)
    if n * L:
        q.driver.attention(out, lse, q, k, v, mask, causal, scale)
    return out, lse


def attention_backward(g, q, k, v, out, lse, mask, causal, scale):
    """(grad q, grad k, grad v) of ``attention``, from the output's gradient g (n, L, Ev) and
    the forward's out and lse; a key/value head's gradients sum over its group's query heads."""
    g, q, k, v, out, lse = (whole(x) for x in (g, q, k, v, out, lse))
    mask = None if mask is None else whole(mask)
    new = type(q).empty
    gq, gk, gv = new(q.shape, q.dtype), new(k.shape, k.dtype), new(v.shape, v.dtype)
    if gk.numel or gv.numel or gq.numel:
        q.driver.attention_backward(gq, gk, gv, g, q, k, v, out, lse, mask, causal, scale)
    return gq, gk, gv


# ---------------------------------------------------------------- a recurrent layer's time loop

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _saved_width(mode, hidden, proj):
    """Elements the backward keeps per row: stage 3's ``recurrent_saved`` (recurrent.cu's)."""
    return {"LSTM": 7 if proj else 6, "GRU": 4}.get(mode, 1) * hidden


def recurrent(mode, reverse, batch_sizes, gi, h0, c0, w, b, w_hr):
    """One layer and direction over packed rows, its whole time loop one launch of the
    driver's kernel: (output rows, final h, final c or None, what ``recurrent_backward``
    needs), as stage 3's."""
    gi, w = whole(gi), whole(w)
    b, w_hr = (None if t is None else whole(t) for t in (b, w_hr))
    new, dtype = type(gi).empty, gi.dtype
    rows, batch, gates = gi.shape[0], batch_sizes[0], w.shape[0]
    hidden, width = gates // _GATES[mode], w.shape[1]  # width: h's, the projection's or hidden
    sizes = _int64s(gi, batch_sizes)
    out, hprev = new((rows, width), dtype), new((rows, width), dtype)
    saved = new((rows, _saved_width(mode, hidden, w_hr is not None)), dtype)
    pre = new((batch, gates), dtype)
    h, c = copy(h0), None if c0 is None else copy(c0)
    gi.driver.recurrent(mode, reverse, sizes, out, h, c, saved, hprev, pre, gi, w, b, w_hr)
    return out, h, c, (saved, hprev, sizes)


def recurrent_backward(mode, reverse, batch_sizes, gout, gh, gc, saved, w, bias, w_hr):
    """(grad of gi, h0, c0 or None, w, b or None, w_hr or None) of ``recurrent``: the time
    loop backwards in one launch, then the weights' gradients as products over every row."""
    saved, hprev, sizes = saved
    gout, w = whole(gout), whole(w)
    w_hr = None if w_hr is None else whole(w_hr)
    new, dtype = type(w).empty, w.dtype
    rows, gates, hidden = saved.shape[0], w.shape[0], w.shape[0] // _GATES[mode]
    ggi = new((rows, gates), dtype)
    gp = new((rows, gates), dtype) if mode == "GRU" else ggi  # W_hh's share of the gates' gradient
    gproj = dhc = None
    if w_hr is not None:
        gproj, dhc = new((rows, w_hr.shape[0]), dtype), new((batch_sizes[0], hidden), dtype)
    gh, gc = copy(gh), None if gc is None else copy(gc)
    w.driver.recurrent_backward(mode, reverse, sizes, ggi, gh, gc, gp, gproj, dhc, gout, saved, hprev, w,
                                w_hr)
    gw = matmul(permute(gp, (1, 0)), hprev)  # dgates^T @ the previous states
    gb = reduce("sum", gp, {0}, False) if bias else None
    gw_hr = None
    if w_hr is not None:  # the projection's: its output gradient^T @ o tanh(c')
        projected = slice(saved, [0, 6 * hidden], [1, 1], [rows, hidden])
        gw_hr = matmul(permute(gproj, (1, 0)), projected)
    return ggi, gh, gc, gw, gb, gw_hr


def _int64s(like, values):
    """A new buffer on ``like``'s device holding the int64 ``values`` (the step sizes the
    kernel reads), copied from the host."""
    storage = like.driver.upload(array.array("q", values).tobytes(), int64)
    return type(like)(storage, (len(values),), (1,), 0, int64)
