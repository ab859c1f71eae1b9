"""Fused kernels on the WebGPU device: softmax and log_softmax with their backwards,
cross-entropy and layer norm with their backwards, and the Adam, SGD and RMSprop steps, each
one launch where the composite makes several (``kernels/softmax.wgsl``,
``cross_entropy*.wgsl``, ``layer_norm.wgsl``, ``optim.wgsl``). The signatures are stage 3's
(``stage3_simd/backend.py``); the frontend uses them where ``FUSED`` names them and the
operands are float32.
"""
import struct

from ..dtypes import bool_, float32
from .buffer import empty
from .elementwise import MATH, _read, kernel_source, run
from .movement import copy, permute, reshape
from .reduce import reduce
from .runtime import WORKGROUP, runtime

# what the row kernels include: math.wgsl and their workgroup trees
_ROWS = MATH + "\n" + _read("rows.wgsl")
FUSED = frozenset({"softmax", "log_softmax", "cross_entropy", "layer_norm", "adam", "sgd", "rmsprop"})
def _bits(v):
    """A float32 value as the int32 a parameter buffer carries."""
    return struct.unpack("<i", struct.pack("<f", v))[0]


def _whole(x):
    """``x`` contiguous from its storage's first element: a kernel here binds whole storages
    and indexes them from 0 (a WebGPU binding can start only at a 256-byte boundary), so a
    view that starts inside its storage, a row slice, is copied."""
    return x if x.offset == 0 and x.is_contiguous() else copy(x)


def _rows_last(x, dim):
    if dim != len(x.shape) - 1:
        x = permute(x, tuple(d for d in range(len(x.shape)) if d != dim) + (dim,))
    return _whole(x)


def _from_rows(y, dim, ndim):
    if dim == ndim - 1:
        return y
    order = list(range(ndim - 1))
    order.insert(dim, ndim - 1)
    return _whole(permute(y, tuple(order)))


def _rows(x, y, dim, needs_max, term, out):
    """softmax.wgsl along ``dim`` of x (and y, in the backward)."""
    if not x.shape:  # a zero-dim tensor is one row of one element
        return reshape(_rows(reshape(x, (1,)), reshape(y, (1,)), 0, needs_max, term, out), ())
    xr, yr = _rows_last(x, dim), _rows_last(y, dim)
    cols = x.shape[dim]
    rows = xr.numel // cols if cols else 0
    result = empty(xr.shape, float32)
    src = kernel_source("softmax", HELPERS=_ROWS, NEEDS_MAX="true" if needs_max else "false", SUM=term,
                        OUT=out)
    runtime().launch(src, [result.storage.gbuf, xr.storage.gbuf, yr.storage.gbuf], [rows, cols], rows)
    return _from_rows(result, dim, len(x.shape))


_LOG_SUM = "ff_f(ff_add(log_ff(s.x), ff(s.y / s.x)))"


def softmax(x, dim):
    return _rows(x, x, dim, True, "exp_f(v - m)", "exp_f(v - m) / ff_f(s)")


def log_softmax(x, dim):
    return _rows(x, x, dim, True, "exp_f(v - m)", f"(v - m) - {_LOG_SUM}")


def softmax_backward(g, y, dim, log):
    """The input's gradient from the output ``y`` and its gradient ``g``."""
    if log:
        return _rows(g, y, dim, False, "v", "v - exp_f(u) * ff_f(s)")
    return _rows(g, y, dim, False, "v * u", "u * (v - ff_f(s))")


def _check_targets(target, cols, ignore_index):
    """IndexError naming the first target outside [0, cols) (ignore_index aside), as the
    CPU's kernel raises; a kernel on the device cannot."""
    t = target.wgsl
    bad = run(f"select(0u, 1u, v1 != {t}({ignore_index}) && (v1 < {t}(0) || v1 >= {t}({cols})))",
              empty(target.shape, bool_), [target])
    if reduce("any", bad, set(range(len(bad.shape))), False).item():
        from .buffer import to_host_array
        values, flags = to_host_array(target).tolist(), to_host_array(bad).tolist()
        first = values[flags.index(1)]
        raise IndexError(f"cross_entropy: target {first} is out of bounds for {cols} classes")


def _weights(weight, cols):
    """The class weights, contiguous: ones where there are none."""
    from .backend import full
    return full((cols,), 1.0, float32) if weight is None else _whole(weight)


def cross_entropy(x, target, weight, ignore_index, label_smoothing):
    """Logits (N, C), class indices (N,): (each row's loss, each row's weight in a mean,
    the probabilities for the backward)."""
    rows, cols = x.shape
    x, target = _whole(x), _whole(target)
    _check_targets(target, cols, ignore_index)
    weight = _weights(weight, cols)
    loss, wrow, probs = empty((rows,), float32), empty((rows,), float32), empty((rows, cols), float32)
    src = kernel_source("cross_entropy", HELPERS=_ROWS, I=target.wgsl)
    runtime().launch(src, [loss.storage.gbuf, wrow.storage.gbuf, probs.storage.gbuf, x.storage.gbuf,
                           target.storage.gbuf, weight.storage.gbuf],
                     [rows, cols, ignore_index, _bits(label_smoothing)], rows)
    return loss, wrow, probs


def cross_entropy_backward(probs, target, weight, scale, ignore_index, label_smoothing):
    """The logits' gradient, each row's scaled by ``scale`` (N,)."""
    rows, cols = probs.shape
    probs, target, scale = _whole(probs), _whole(target), _whole(scale)
    weight = _weights(weight, cols)
    wsum = reshape(reduce("sum", weight, {0}, False), (1,))
    gx = empty((rows, cols), float32)
    src = kernel_source("cross_entropy_backward", I=target.wgsl)
    runtime().launch(src, [gx.storage.gbuf, probs.storage.gbuf, target.storage.gbuf, weight.storage.gbuf,
                           scale.storage.gbuf, wsum.storage.gbuf],
                     [rows, cols, ignore_index, _bits(label_smoothing)], -(-rows * cols // WORKGROUP))
    return gx


# ---------------------------------------------------------------- optimizer steps

def _fits(*lists):
    """Whether every buffer is a whole float32 tensor of its own: contiguous from its
    storage's first element (see ``_whole``)."""
    from .movement import storage_id
    bufs = [b for lst in lists if lst for b in lst]
    return (all(b.dtype is float32 and b.offset == 0 and b.is_contiguous() for b in bufs)
            and len({storage_id(b) for b in bufs}) == len(bufs))


def _step(update, names, param, grad, states, hyper, ints=()):
    """Launch optim.wgsl on one parameter: ``states`` bound as ``names``, the float32
    ``hyper`` values as h[0], h[1], ..."""
    lines = [f"@group(0) @binding({k}) var<storage, read_write> {name}: array<f32>;"
             for k, name in enumerate(names, 2)]
    lines.append(f"@group(0) @binding({len(names) + 2}) var<storage, read> p: array<i32>;")
    consts = "\n  ".join(f"let h{k} = bitcast<f32>(p[{1 + len(ints) + k}]);" for k in range(len(hyper)))
    src = kernel_source("optim", HELPERS=MATH, BINDINGS="\n".join(lines), UPDATE=consts + "\n  " + update)
    n = param.numel
    runtime().launch(src, [param.storage.gbuf, grad.storage.gbuf] + [s.storage.gbuf for s in states],
                     [n, *ints, *(_bits(v) for v in hyper)], -(-n // WORKGROUP))
    for b in (param, *states):
        b.storage.version += 1


def _decayed(maximize, weight_decay, h):
    g = "var g = grad[i];\n  let pv = param[i];\n  "
    if maximize:
        g += "g = -g;\n  "
    if weight_decay != 0:
        g += f"g = g + pv * {h};\n  "
    return g


def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, betas, eps, weight_decay,
              decoupled, maximize):
    """Adam (AdamW when ``decoupled``) on every buffer of ``params``, as stage 3's."""
    if not _fits(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
        return False
    beta1, beta2 = betas
    w = 1 - beta1
    amsgrad = max_exp_avg_sqs is not None
    update = "var g = grad[i];\n  var pv = param[i];\n  "
    if maximize:
        update += "g = -g;\n  "
    if weight_decay != 0:
        update += "pv = pv * h6;\n  " if decoupled else "g = g + pv * h7;\n  "
    update += ("let mv = lerp_f(m[i], g, h0, h1);\n  var vv = v[i] * h2;\n  vv = vv + g * g * h3;\n  "
               "var second = vv;\n  ")
    if amsgrad:
        update += "second = max_f(vmax[i], vv);\n  vmax[i] = second;\n  "
    update += ("let denom = sqrt(second) / h5 + h4;\n  param[i] = pv + mv / denom * -h8;\n  "
               "m[i] = mv;\n  v[i] = vv;")
    names = ("m", "v", "vmax") if amsgrad else ("m", "v")
    for k, (p, g, m, v) in enumerate(zip(params, grads, exp_avgs, exp_avg_sqs)):
        s = steps[k]
        hyper = [w, 1 - w, beta2, 1 - beta2, eps, (1 - beta2 ** s) ** 0.5, 1 - lr * weight_decay,
                 weight_decay, lr / (1 - beta1 ** s)]
        _step(update, names, p, g, (m, v) + ((max_exp_avg_sqs[k],) if amsgrad else ()), hyper)
    return True


def sgd_step(params, grads, momentum_buffers, first, lr, momentum, dampening, weight_decay, nesterov,
             maximize):
    """SGD on every buffer of ``params``, as stage 3's; ``first[i]`` says buffer i starts
    this step (it becomes the gradient)."""
    if not _fits(params, grads, momentum_buffers):
        return False
    update = _decayed(maximize, weight_decay, "h1")
    if momentum_buffers is not None:
        update += "var b = g;\n  if (p[1] == 0) {\n    b = buf[i] * h2;\n    "
        update += "b = b + g * h3;\n  }\n  " if dampening != 0 else "b = b + g;\n  }\n  "
        update += "buf[i] = b;\n  " + ("g = g + b * h2;\n  " if nesterov else "g = b;\n  ")
    update += "param[i] = pv + g * -h0;"
    hyper = [lr, weight_decay, momentum, 1 - dampening]
    for k, (p, g) in enumerate(zip(params, grads)):
        if momentum_buffers is None:
            _step(update, (), p, g, (), hyper, ints=(0,))
        else:
            _step(update, ("buf",), p, g, (momentum_buffers[k],), hyper, ints=(int(first[k]),))
    return True


def rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps, weight_decay,
                 momentum, maximize):
    """RMSprop on every buffer of ``params``, as stage 3's; ``grad_avgs`` is None unless
    centered, ``momentum_buffers`` None without momentum."""
    if not _fits(params, grads, square_avgs, grad_avgs, momentum_buffers):
        return False
    w = 1 - alpha
    update = _decayed(maximize, weight_decay, "h1")
    update += "var s = sq[i] * h2;\n  s = s + g * g * h3;\n  sq[i] = s;\n  "
    if grad_avgs is not None:
        update += "let ga = lerp_f(gavg[i], g, h4, h5);\n  gavg[i] = ga;\n  var avg = sqrt(s - ga * ga);\n  "
    else:
        update += "var avg = sqrt(s);\n  "
    update += "avg = avg + h6;\n  "
    if momentum_buffers is not None:
        update += "let b = buf[i] * h7 + g / avg;\n  buf[i] = b;\n  param[i] = pv + b * -h0;"
    else:
        update += "param[i] = pv + g / avg * -h0;"
    names = ("sq",) + ("gavg",) * (grad_avgs is not None) + ("buf",) * (momentum_buffers is not None)
    hyper = [lr, weight_decay, alpha, 1 - alpha, w, 1 - w, eps, momentum]
    for k, (p, g) in enumerate(zip(params, grads)):
        states = [square_avgs[k]] + [lst[k] for lst in (grad_avgs, momentum_buffers) if lst is not None]
        _step(update, names, p, g, states, hyper)
    return True


# ---------------------------------------------------------------- layer norm

def _layer_norm(backward, out, mean, rstd, x, g, w, b, rows, cols, eps):
    src = kernel_source("layer_norm", HELPERS=_ROWS, BACKWARD="true" if backward else "false")
    runtime().launch(src, [out.storage.gbuf, mean.storage.gbuf, rstd.storage.gbuf, x.storage.gbuf,
                           g.storage.gbuf, (w or x).storage.gbuf, (b or x).storage.gbuf],
                     [rows, cols, int(w is not None), int(b is not None), _bits(eps)], rows)


def layer_norm(x, cols, w, b, eps):
    """Normalise each run of ``cols`` trailing elements: (y, mean, rstd)."""
    x = _whole(x)
    w, b = (None if t is None else _whole(t) for t in (w, b))
    rows = x.numel // cols if cols else 0
    y, mean, rstd = empty(x.shape, float32), empty((rows,), float32), empty((rows,), float32)
    _layer_norm(False, y, mean, rstd, x, x, w, b, rows, cols, eps)
    return y, mean, rstd


def layer_norm_backward(g, x, mean, rstd, w, shape, need_x, need_w, need_b):
    """(grad x, grad weight, grad bias) of ``layer_norm`` over trailing ``shape``: the input's
    in one launch per row, the weight's and bias's as sums down the columns."""
    cols = 1
    for n in shape:
        cols *= n
    x, g, mean, rstd = _whole(x), _whole(g), _whole(mean), _whole(rstd)
    w = None if w is None else _whole(w)
    rows = x.numel // cols if cols else 0
    gx = gw = gb = None
    if need_x:
        gx = empty(x.shape, float32)
        _layer_norm(True, gx, mean, rstd, x, g, w, None, rows, cols, 0.0)
    g2, x2 = reshape(g, (rows, cols)), reshape(x, (rows, cols))
    if need_w:
        gxhat = run("v1 * ((v2 - v3) * v4)", empty((rows, cols), float32),
                    [g2, x2, reshape(mean, (rows, 1)), reshape(rstd, (rows, 1))])
        gw = reshape(reduce("sum", gxhat, {0}, False), tuple(shape))
    if need_b:
        gb = reshape(reduce("sum", g2, {0}, False), tuple(shape))
    return gx, gw, gb
