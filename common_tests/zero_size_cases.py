"""Every layer's functional form with a zero-size dimension (batch, channels, spatial,
sequence, heads, features), run forward and backward on a stage and on PyTorch CPU.

Run as ``python -m common_tests.zero_size_cases STAGE [DEVICE]`` (``test_zero_size.py``
does, one interpreter per stage, because a zero-size dimension once divided by zero in
compiled code and killed the interpreter). Each case prints ``START name`` before it runs
and ``DONE ["name", outcome]`` after, outcome "ok" or what differs from PyTorch: a crash
then names the case that was running.

A case is (inputs, fn): inputs are ("f", shape) float32 leaves that require grad, ("c",
shape) float32 constants, ("p", shape) positive constants, ("i", shape, high) int64 in
[0, high); ``fn(lib, *tensors)`` is written once for both libraries (they share PyTorch's
API) and returns a tensor or a tuple. The loss summed for the backward is each float output
times fixed weights, so a gradient of the right shape but wrong values is caught too. Where
PyTorch refuses a call, the stage must raise too (any exception: the point is that it
neither crashes nor answers what PyTorch calls undefined).
"""
import json
import sys

import numpy as np


def _module(lib, cls, *args, **kw):
    """``lib.nn.cls(*args, **kw)`` with every parameter set to values fixed by its name, so
    that the stage's module and PyTorch's compute the same function."""
    m = getattr(lib.nn, cls)(*args, **kw)
    with lib.no_grad():
        for name, p in m.named_parameters():
            rng = np.random.default_rng(sum(map(ord, name)))
            p.copy_(lib.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    return m


def _rnn(cls, **kw):
    def run(lib, x):
        m = _module(lib, cls, 3, 4, **kw)
        out, state = m(x)
        states = state if isinstance(state, tuple) else (state,)
        return (out, *states, *(p for _, p in sorted(m.named_parameters())))
    return run


def _mha(lib, q, k, v):
    m = _module(lib, "MultiheadAttention", 4, 2, batch_first=True)
    out, weights = m(q, k, v)
    return (out, weights, *(p for _, p in sorted(m.named_parameters())))


def F(lib):
    return lib.nn.functional


def _grown(lib, t, dim, n=1):
    """``t`` with ``n`` slices of zeros appended along ``dim``."""
    shape = list(t.shape)
    shape[dim] = n
    return lib.cat([t, lib.zeros(shape)], dim)


def _cut(t, dim):
    """``t`` with ``dim`` cut to size 0."""
    return t[(slice(None),) * dim + (slice(0, 0),)]


def _channels(op, n=1):
    """PyTorch's answer for ``op(x, w, ...)`` with no input channels, which it either
    refuses or answers with the bias dropped: one zero channel added to the input and the
    filters (a product with zeros: the same empty sum), its gradients cut back by ``cat``."""
    return lambda lib, x, w, *rest: op(lib, _grown(lib, x, 1, n), _grown(lib, w, 1), *rest)


def _per_slice(op, dim, grow_dim=None, index=0):
    """PyTorch's answer for ``op`` on an input empty along ``dim``, which it refuses though
    the op works slice by slice: input ``index`` grown by one slice of zeros along
    ``grow_dim`` (``dim`` by default), the output cut back along ``dim``."""
    def run(lib, *args):
        args = list(args)
        args[index] = _grown(lib, args[index], dim if grow_dim is None else grow_dim)
        return _cut(op(lib, *args), dim)
    return run


def _conv(name, **kw):
    """``F.name(x, w[, b], **kw)``."""
    return lambda lib, x, w, *b: getattr(F(lib), name)(x, w, *b, **kw)


def _pool(name, *args, **kw):
    return lambda lib, x: getattr(F(lib), name)(x, *args, **kw)


# Where PyTorch refuses an empty dimension that the operation is well defined on (a sum
# over no input channels is 0, plus the bias; no filters give no output channels; a pool or
# unfold works channel by channel), the third element computes PyTorch's answer with the
# dimension grown by zeros and cut back, and the stage must give that answer.
CASES = {
    # convolutions: no images, no input channels (an empty sum: the bias alone), no filters
    "conv1d batch 0": ([("f", (0, 3, 8)), ("f", (4, 3, 3)), ("f", (4,))], _conv("conv1d")),
    "conv1d channels 0": ([("f", (2, 0, 8)), ("f", (4, 0, 3)), ("f", (4,))], _conv("conv1d"),
                          _channels(_conv("conv1d"))),
    "conv1d filters 0": ([("f", (2, 3, 8)), ("f", (0, 3, 3))], _conv("conv1d"),
                         _per_slice(_conv("conv1d"), 1, 0, index=1)),
    "conv2d batch 0": ([("f", (0, 3, 5, 5)), ("f", (4, 3, 3, 3)), ("f", (4,))], _conv("conv2d")),
    "conv2d channels 0": ([("f", (1, 0, 5, 5)), ("f", (2, 0, 3, 3)), ("f", (2,))], _conv("conv2d"),
                          _channels(_conv("conv2d"))),
    "conv2d channels 0 no bias": ([("f", (2, 0, 5, 5)), ("f", (2, 0, 3, 3))], _conv("conv2d"),
                                  _channels(_conv("conv2d"))),
    "conv2d channels 0 stride 2": ([("f", (3, 0, 7, 7)), ("f", (2, 0, 3, 3)), ("f", (2,))], _conv("conv2d", stride=2),
                                   _channels(_conv("conv2d", stride=2))),
    "conv2d channels 0 pointwise": ([("f", (2, 0, 4, 4)), ("f", (3, 0, 1, 1)), ("f", (3,))], _conv("conv2d"),
                                    _channels(_conv("conv2d"))),
    "conv2d channels 0 padded 5x5": ([("f", (2, 0, 6, 6)), ("f", (3, 0, 5, 5))], _conv("conv2d", padding=2),
                                     _channels(_conv("conv2d", padding=2))),
    "conv2d channels 0 3x3 padded": ([("f", (2, 0, 8, 8)), ("f", (40, 0, 3, 3))], _conv("conv2d", padding=1),
                                     _channels(_conv("conv2d", padding=1))),
    "conv2d filters 0": ([("f", (2, 3, 5, 5)), ("f", (0, 3, 3, 3))], _conv("conv2d"),
                         _per_slice(_conv("conv2d"), 1, 0, index=1)),
    "conv2d filters 0 stride 2": ([("f", (2, 3, 5, 5)), ("f", (0, 3, 3, 3))], _conv("conv2d", stride=2),
                                  _per_slice(_conv("conv2d", stride=2), 1, 0, index=1)),
    "conv2d groups, channels 0": ([("f", (2, 0, 5, 5)), ("f", (4, 0, 3, 3))], _conv("conv2d", groups=2),
                                  _channels(_conv("conv2d", groups=2), n=2)),
    "conv2d depthwise batch 0": ([("f", (0, 4, 5, 5)), ("f", (4, 1, 3, 3))], _conv("conv2d", groups=4)),
    "conv3d batch 0": ([("f", (0, 2, 4, 4, 4)), ("f", (3, 2, 3, 3, 3))], _conv("conv3d")),
    "conv3d channels 0": ([("f", (1, 0, 4, 4, 4)), ("f", (3, 0, 3, 3, 3)), ("f", (3,))], _conv("conv3d"),
                          _channels(_conv("conv3d"))),
    "conv_transpose1d batch 0": ([("f", (0, 3, 5)), ("f", (3, 2, 3))], _conv("conv_transpose1d")),
    "conv_transpose1d channels 0": (
        [("f", (2, 0, 5)), ("f", (0, 2, 3)), ("f", (2,))], _conv("conv_transpose1d", stride=2),
        lambda lib, x, w, b: F(lib).conv_transpose1d(_grown(lib, x, 1), _grown(lib, w, 0), b, stride=2)),
    "conv_transpose2d batch 0": ([("f", (0, 3, 4, 4)), ("f", (3, 2, 3, 3))], _conv("conv_transpose2d", stride=2)),
    "conv_transpose2d channels 0": (
        [("f", (1, 0, 4, 4)), ("f", (0, 2, 3, 3)), ("f", (2,))], _conv("conv_transpose2d"),
        lambda lib, x, w, b: F(lib).conv_transpose2d(_grown(lib, x, 1), _grown(lib, w, 0), b)),
    "conv_transpose2d outputs 0": ([("f", (1, 3, 4, 4)), ("f", (3, 0, 3, 3))], _conv("conv_transpose2d"),
                                   _per_slice(_conv("conv_transpose2d"), 1, index=1)),
    "unfold batch 0": ([("f", (0, 2, 4, 4))], _pool("unfold", 2)),
    "unfold channels 0": ([("f", (2, 0, 4, 4))], _pool("unfold", 2), _per_slice(_pool("unfold", 2), 1)),
    # products
    "linear batch 0": ([("f", (0, 4)), ("f", (3, 4)), ("f", (3,))], lambda lib, x, w, b: F(lib).linear(x, w, b)),
    "linear in 0": ([("f", (5, 0)), ("f", (3, 0)), ("f", (3,))], lambda lib, x, w, b: F(lib).linear(x, w, b)),
    "linear out 0": ([("f", (5, 4)), ("f", (0, 4)), ("f", (0,))], lambda lib, x, w, b: F(lib).linear(x, w, b)),
    "linear sequence 0": ([("f", (2, 0, 4)), ("f", (3, 4))], lambda lib, x, w: F(lib).linear(x, w)),
    "matmul inner 0": ([("f", (3, 0)), ("f", (0, 4))], lambda lib, a, b: a @ b),
    "bmm batch 0": ([("f", (0, 2, 3)), ("f", (0, 3, 4))], lambda lib, a, b: lib.bmm(a, b)),
    "bmm inner 0": ([("f", (2, 3, 0)), ("f", (2, 0, 4))], lambda lib, a, b: lib.bmm(a, b)),
    "bilinear in 0": ([("f", (3, 0)), ("f", (3, 2)), ("f", (4, 0, 2)), ("f", (4,))],
                      lambda lib, a, b, w, bias: F(lib).bilinear(a, b, w, bias),
                      lambda lib, a, b, w, bias: F(lib).bilinear(_grown(lib, a, 1), b, _grown(lib, w, 1), bias)),
    # pooling
    "max_pool1d batch 0": ([("f", (0, 2, 6))], lambda lib, x: F(lib).max_pool1d(x, 2)),
    "max_pool2d batch 0": ([("f", (0, 3, 6, 6))], lambda lib, x: F(lib).max_pool2d(x, 2)),
    "max_pool2d channels 0": ([("f", (2, 0, 6, 6))], _pool("max_pool2d", 3, stride=2, padding=1),
                              _per_slice(_pool("max_pool2d", 3, stride=2, padding=1), 1)),
    "max_pool3d channels 0": ([("f", (1, 0, 4, 4, 4))], _pool("max_pool3d", 2), _per_slice(_pool("max_pool3d", 2), 1)),
    "avg_pool1d channels 0": ([("f", (2, 0, 6))], _pool("avg_pool1d", 3), _per_slice(_pool("avg_pool1d", 3), 1)),
    "avg_pool2d batch 0": ([("f", (0, 3, 6, 6))], lambda lib, x: F(lib).avg_pool2d(x, 2)),
    "avg_pool2d channels 0": ([("f", (2, 0, 6, 6))], _pool("avg_pool2d", 3, padding=1),
                              _per_slice(_pool("avg_pool2d", 3, padding=1), 1)),
    "avg_pool3d batch 0": ([("f", (0, 2, 4, 4, 4))], lambda lib, x: F(lib).avg_pool3d(x, 2)),
    "adaptive_avg_pool2d channels 0": ([("f", (2, 0, 5, 5))], _pool("adaptive_avg_pool2d", 2),
                                       _per_slice(_pool("adaptive_avg_pool2d", 2), 1)),
    "adaptive_avg_pool1d batch 0": ([("f", (0, 3, 5))], lambda lib, x: F(lib).adaptive_avg_pool1d(x, 2)),
    "adaptive_max_pool2d batch 0": ([("f", (0, 3, 5, 5))], lambda lib, x: F(lib).adaptive_max_pool2d(x, 2)),
    "adaptive_max_pool1d channels 0": ([("f", (2, 0, 5))], _pool("adaptive_max_pool1d", 2),
                                       _per_slice(_pool("adaptive_max_pool1d", 2), 1)),
    "interpolate batch 0": ([("f", (0, 2, 3, 3))], lambda lib, x: F(lib).interpolate(x, scale_factor=2)),
    "interpolate bilinear channels 0": ([("f", (1, 0, 3, 3))], _pool("interpolate", size=(5, 4), mode="bilinear"),
                                        _per_slice(_pool("interpolate", size=(5, 4), mode="bilinear"), 1)),
    "pad batch 0": ([("f", (0, 2, 3))], lambda lib, x: F(lib).pad(x, (1, 2))),
    "pixel_shuffle batch 0": ([("f", (0, 4, 2, 2))], _pool("pixel_shuffle", 2),
                              _per_slice(_pool("pixel_shuffle", 2), 0)),
    # normalization
    "batch_norm batch 0 eval": ([("f", (0, 3, 4)), ("c", (3,)), ("p", (3,)), ("f", (3,)), ("f", (3,))],
                                lambda lib, x, m, v, w, b: F(lib).batch_norm(x, m, v, w, b, training=False)),
    "batch_norm batch 0 training": ([("f", (0, 3, 4)), ("c", (3,)), ("p", (3,)), ("f", (3,)), ("f", (3,))],
                                    lambda lib, x, m, v, w, b: (F(lib).batch_norm(x, m, v, w, b, training=True), m, v)),
    # PyTorch fails inside its kernel here (index 0 out of range): per channel, as with one
    "batch_norm channels 0": ([("f", (2, 0, 4)), ("c", (0,)), ("p", (0,)), ("f", (0,)), ("f", (0,))],
                              lambda lib, x, m, v, w, b: F(lib).batch_norm(x, m, v, w, b, training=True),
                              lambda lib, x, *per_channel: _cut(F(lib).batch_norm(
                                  _grown(lib, x, 1), *(_grown(lib, t, 0) for t in per_channel), training=True), 1)),
    "batch_norm2d channels 0": ([("f", (2, 0, 3, 3)), ("f", (0,)), ("f", (0,))],
                                lambda lib, x, w, b: F(lib).batch_norm(x, None, None, w, b, training=True),
                                lambda lib, x, w, b: _cut(F(lib).batch_norm(
                                    _grown(lib, x, 1), None, None, _grown(lib, w, 0), _grown(lib, b, 0),
                                    training=True), 1)),
    "layer_norm batch 0": ([("f", (0, 5)), ("f", (5,)), ("f", (5,))],
                           lambda lib, x, w, b: F(lib).layer_norm(x, (5,), w, b)),
    "layer_norm sequence 0": ([("f", (2, 0, 5)), ("f", (5,)), ("f", (5,))],
                              lambda lib, x, w, b: F(lib).layer_norm(x, (5,), w, b)),
    "rms_norm batch 0": ([("f", (0, 5)), ("f", (5,))], lambda lib, x, w: F(lib).rms_norm(x, (5,), w)),
    "group_norm batch 0": ([("f", (0, 4, 3)), ("f", (4,)), ("f", (4,))],
                           lambda lib, x, w, b: F(lib).group_norm(x, 2, w, b)),
    # PyTorch's weight gradient here is NaN (0 times the mean of nothing); a sum over no
    # elements is 0
    "group_norm spatial 0": ([("f", (2, 4, 0)), ("f", (4,)), ("f", (4,))],
                             lambda lib, x, w, b: F(lib).group_norm(x, 2, w, b),
                             _per_slice(lambda lib, x, w, b: F(lib).group_norm(x, 2, w, b), 2)),
    "instance_norm batch 0": ([("f", (0, 3, 4))], lambda lib, x: F(lib).instance_norm(x)),
    # embeddings
    "embedding no indices": ([("i", (0,), 10), ("f", (10, 3))], lambda lib, i, w: F(lib).embedding(i, w)),
    "embedding sequence 0": ([("i", (2, 0), 10), ("f", (10, 3))], lambda lib, i, w: F(lib).embedding(i, w)),
    "embedding width 0": ([("i", (4,), 10), ("f", (10, 0))], lambda lib, i, w: F(lib).embedding(i, w)),
    "one_hot no indices": ([("i", (0,), 4)], lambda lib, i: F(lib).one_hot(i, 4)),
    # recurrent layers (PyTorch refuses an empty sequence; the stage must raise too)
    "lstm batch 0": ([("f", (5, 0, 3))], _rnn("LSTM")),
    "lstm sequence 0": ([("f", (0, 2, 3))], _rnn("LSTM")),
    "gru batch 0": ([("f", (5, 0, 3))], _rnn("GRU")),
    "gru sequence 0 batch_first": ([("f", (2, 0, 3))], _rnn("GRU", batch_first=True)),
    "rnn batch 0": ([("f", (5, 0, 3))], _rnn("RNN")),
    # attention
    "sdpa batch 0": ([("f", (0, 2, 4, 8)), ("f", (0, 2, 5, 8)), ("f", (0, 2, 5, 8))],
                     lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v)),
    "sdpa heads 0": ([("f", (2, 0, 4, 8)), ("f", (2, 0, 5, 8)), ("f", (2, 0, 5, 8))],
                     lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v)),
    "sdpa queries 0": ([("f", (2, 2, 0, 8)), ("f", (2, 2, 5, 8)), ("f", (2, 2, 5, 8))],
                       lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v)),
    "sdpa queries 0 causal": ([("f", (2, 2, 0, 8)), ("f", (2, 2, 5, 8)), ("f", (2, 2, 5, 8))],
                              lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v, is_causal=True)),
    "sdpa head dim 0": ([("f", (2, 2, 4, 0)), ("f", (2, 2, 5, 0)), ("f", (2, 2, 5, 3))],
                        lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v)),
    "sdpa value dim 0": ([("f", (2, 2, 4, 8)), ("f", (2, 2, 5, 8)), ("f", (2, 2, 5, 0))],
                         lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v)),
    "multihead attention batch 0": ([("f", (0, 3, 4)), ("f", (0, 5, 4)), ("f", (0, 5, 4))], _mha),
    "multihead attention target 0": ([("f", (2, 0, 4)), ("f", (2, 5, 4)), ("f", (2, 5, 4))], _mha),
    # softmax, losses and reductions over and beside an empty dimension
    "softmax over 0": ([("f", (3, 0))], lambda lib, x: F(lib).softmax(x, dim=1)),
    "softmax beside 0": ([("f", (0, 4))], lambda lib, x: F(lib).softmax(x, dim=1)),
    "log_softmax over 0": ([("f", (2, 0, 3))], lambda lib, x: F(lib).log_softmax(x, dim=1)),
    "cross_entropy batch 0 sum": ([("f", (0, 5)), ("i", (0,), 5)],
                                  lambda lib, x, t: F(lib).cross_entropy(x, t, reduction="sum")),
    "cross_entropy batch 0 mean": ([("f", (0, 5)), ("i", (0,), 5)], lambda lib, x, t: F(lib).cross_entropy(x, t)),
    "cross_entropy batch 0 none": ([("f", (0, 5)), ("i", (0,), 5)],
                                   lambda lib, x, t: F(lib).cross_entropy(x, t, reduction="none")),
    "cross_entropy spatial 0": ([("f", (2, 5, 0)), ("i", (2, 0), 5)],
                                lambda lib, x, t: F(lib).cross_entropy(x, t, reduction="sum")),
    "nll_loss batch 0": ([("f", (0, 5)), ("i", (0,), 5)], lambda lib, x, t: F(lib).nll_loss(x, t, reduction="sum")),
    "mse_loss empty": ([("f", (0, 3)), ("c", (0, 3))], lambda lib, x, t: F(lib).mse_loss(x, t, reduction="sum")),
    "mse_loss empty mean": ([("f", (0, 3)), ("c", (0, 3))], lambda lib, x, t: F(lib).mse_loss(x, t)),
    "binary_cross_entropy_with_logits empty": ([("f", (0,)), ("c", (0,))],
                                               lambda lib, x, t: F(lib).binary_cross_entropy_with_logits(x, t)),
    "sum over 0": ([("f", (3, 0))], lambda lib, x: x.sum(1)),
    "mean over 0": ([("f", (3, 0))], lambda lib, x: x.mean(1)),
    "logsumexp over 0": ([("f", (3, 0))], lambda lib, x: x.logsumexp(1)),
    "max over 0": ([("f", (3, 0))], lambda lib, x: x.max(1)),
    "max beside 0": ([("f", (0, 3))], lambda lib, x: x.max(1)),
    "cumsum beside 0": ([("f", (0, 3))], lambda lib, x: x.cumsum(1)),
    "relu and gelu empty": ([("f", (0, 3))], lambda lib, x: (F(lib).relu(x), F(lib).gelu(x))),
    "dropout eval empty": ([("f", (2, 0))], lambda lib, x: F(lib).dropout(x, 0.5, training=False)),
}


def _inputs(lib, specs, device):
    """The case's tensors in ``lib``, made from the same NumPy values for both libraries."""
    out = []
    for n, spec in enumerate(specs):
        kind, shape = spec[0], spec[1]
        rng = np.random.default_rng(n)
        if kind == "i":
            a = rng.integers(0, spec[2], shape).astype(np.int64)
        elif kind == "p":
            a = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        else:
            a = rng.uniform(-1, 1, shape).astype(np.float32)
        kw = {"device": device} if device else {}
        out.append(lib.tensor(a, requires_grad=kind == "f", **kw))
    return out


def _as_tuple(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t.detach(), "cpu") else t.detach().numpy()


def _differs(label, got, want):
    """What differs between a stage's array and PyTorch's, or None."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"{label}: shape {got.shape}, PyTorch {want.shape}"
    if got.dtype != want.dtype:
        return f"{label}: dtype {got.dtype}, PyTorch {want.dtype}"
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True):
        return f"{label}: values {got.ravel()[:6]}, PyTorch {want.ravel()[:6]}"
    return None


def _run(lib, specs, fn, device):
    """Forward and backward: (outputs, gradients) as NumPy, or the exception."""
    try:
        tensors = _inputs(lib, specs, device)
        outs = _as_tuple(fn(lib, *tensors))
        leaves = [t for t in tensors if t.requires_grad] + [o for o in outs if o.requires_grad and o.grad_fn is None]
        loss = None
        for n, o in enumerate(outs):
            if o.requires_grad and o.grad_fn is not None and o.is_floating_point():
                w = np.random.default_rng(100 + n).uniform(-1, 1, tuple(o.shape)).astype(np.float32)
                term = (o * lib.tensor(w, **({"device": device} if device else {}))).sum()
                loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        grads = [None if t.grad is None else _np(t.grad) for t in leaves]
        return [_np(o) for o in outs], [(tuple(t.shape), g) for t, g in zip(leaves, grads)]
    except Exception as e:  # the outcome compared: PyTorch's refusal must be the stage's
        return e


def compare(sg, torch, name, device=None):
    """'ok', or what the stage does differently from PyTorch on case ``name``."""
    specs, fn, *oracle = CASES[name]
    want = _run(torch, specs, oracle[0] if oracle else fn, None)
    got = _run(sg, specs, fn, device)
    if isinstance(want, Exception) or isinstance(got, Exception):
        if isinstance(want, Exception) and isinstance(got, Exception):
            return "refused, as by PyTorch"
        if isinstance(got, Exception):
            return f"raised {type(got).__name__}: {got}"[:300]
        return f"answered where PyTorch raises {type(want).__name__}: {want}"[:300]
    (outs, grads), (touts, tgrads) = got, want
    if len(outs) != len(touts):
        return f"{len(outs)} outputs, PyTorch {len(touts)}"
    problems = [_differs(f"output {n}", g, w) for n, (g, w) in enumerate(zip(outs, touts))]
    for n, ((shape, g), (_, w)) in enumerate(zip(grads, tgrads)):
        # an input PyTorch's graph leaves untouched has no gradient: zeros are as good
        g = np.zeros(shape, np.float32) if g is None else g
        w = np.zeros(shape, np.float32) if w is None else w
        problems.append(_differs(f"gradient {n}", g, w))
    problems = [p for p in problems if p]
    return "; ".join(problems) if problems else "ok"


def main(stage, device=None):
    import importlib

    import torch
    sg = importlib.import_module(stage)
    if device:
        sg.set_default_device(device)
    for name in CASES:
        print("START " + name, flush=True)
        print("DONE " + json.dumps([name, compare(sg, torch, name, device)]), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
