"""The CUDA driver's fused kernels: softmax and log_softmax with their backwards
(``kernels/softmax.cu``, float32 and float64), cross-entropy (``cross_entropy*.cu``),
layer norm (``layer_norm.cu``), attention (``attention.cu``, tiled: one block per 32 query
rows forward, no L x S scores in memory), the optimizer steps (``optim.cu``, one kernel per
rule taking its choices as flags, one launch for a whole group), one block of ROW_THREADS
per row for the row kernels, and a recurrent layer's time loop (``recurrent.cu``, float32
and float64: one block of RECURRENT_THREADS for a whole layer and direction).
"""
from ..gpu.fused import OWN
from .runtime import BLOCK, runtime

ROW_THREADS = 256  # rows.cuh's: one block of this many threads per row
# elements one block of a multi-tensor optimizer step covers: 16 a thread, enough to pay
# for finding its tensor, and still thousands of blocks for millions of parameters
CHUNK = 16 * BLOCK
ATT_TILE, ATT_THREADS = 32, 256  # attention.cu's: the query and key rows of a tile, a block's threads
_MASKS = {None: 0, "bool": 1}  # attention.cu's mask kinds by the mask's dtype; additive (2) otherwise
RECURRENT_THREADS = 256  # the one block that runs a recurrent layer's steps
_RECURRENT_MODES = {"RNN_TANH": 0, "RNN_RELU": 1, "LSTM": 2, "GRU": 3}  # recurrent.cu's
_MODES = {"softmax": 0, "log_softmax": 1, "softmax_backward": 2, "log_softmax_backward": 3}


def _at(x):
    """A contiguous buffer's address from its offset (the kernel indexes it from 0)."""
    return x.address


class FusedKernels:
    """The CUDA driver's fused hooks (see ``gpu.driver.Driver``)."""

    def rows(self, mode, out, x, y, rows, cols):
        """softmax.cu in ``mode``, one block per row."""
        rt = runtime()
        rt.launch("softmax", f"softmax<{x.ctype}, {_MODES[mode]}>", rt.grid(rows, 1), ROW_THREADS,
                  [[rows, cols], out.storage.ptr, _at(x), _at(y)])

    def cross_entropy(self, loss, wrow, probs, x, target, weight, ignore_index, label_smoothing):
        """cross_entropy.cu, one block per row, checking the targets on the device (the
        runtime's error words, ``Runtime.checked``)."""
        rt = runtime()
        rows = x.shape[0]
        rt.launch("cross_entropy", f"cross_entropy<{target.ctype}>", rows, ROW_THREADS,
                  [list(x.shape), loss.storage.ptr, wrow.storage.ptr, probs.storage.ptr, _at(x), _at(target),
                   _at(weight), rt.checked(), ignore_index, label_smoothing])

    def cross_entropy_backward(self, gx, probs, target, weight, scale, wsum, ignore_index,
                               label_smoothing):
        """cross_entropy_backward.cu, one thread per logit."""
        rt = runtime()
        rt.launch("cross_entropy_backward", f"cross_entropy_backward<{target.ctype}>",
                  rt.grid(probs.numel), BLOCK,
                  [list(probs.shape), gx.storage.ptr, _at(probs), _at(target), _at(weight), _at(scale),
                   _at(wsum), ignore_index, label_smoothing])

    def optimizer_steps(self, rule, steps):
        """optim.cu's ``<rule>_step`` over every parameter of a group (multi-tensor apply):
        one launch per LIST_MAX tensors, the most one TensorList holds, so a larger group
        takes several. Each launch carries the group's hyperparameters and flags, and per
        tensor its buffers' addresses (0 for a missing state, which the kernel never reads),
        its size, its last block and its own constants (``OWN``), all by value."""
        from .. import _launch
        own_hyper, own_flags = OWN[rule]
        _, _, _, hyper, flags = steps[0]
        params = [CHUNK] + [v for name, v in flags.items() if name not in own_flags]
        hyper = [h for k, h in enumerate(hyper) if k not in own_hyper]
        most = _launch.LIMITS["tensors"]
        rt = runtime()
        kernel = rule + "_step"
        for start in range(0, len(steps), most):
            rows, end = [], 0
            for param, grad, states, h, f in steps[start:start + most]:
                end += -(-param.numel // CHUNK)
                addresses = [_at(param), _at(grad)] + [0 if s is None else _at(s) for s in states]
                own = [h[k] for k in own_hyper] + [f[name] for name in own_flags]
                rows.append((param.numel, end, addresses, own))
            rt.launch(kernel, kernel, rt.grid(end, 1), BLOCK, [params, hyper, rows])

    def layer_norm(self, y, mean, rstd, x, w, b, rows, cols, eps):
        """layer_norm.cu's forward, one block per row."""
        rt = runtime()
        rt.launch("layer_norm_forward", "layer_norm_forward", rt.grid(rows, 1), ROW_THREADS,
                  [[rows, cols, int(w is not None), int(b is not None)], y.storage.ptr, mean.storage.ptr,
                   rstd.storage.ptr, _at(x), _at(w or x), _at(b or x), eps])

    def layer_norm_backward(self, gx, mean, rstd, x, g, w, rows, cols):
        """layer_norm.cu's backward (the input's gradient), one block per row."""
        rt = runtime()
        rt.launch("layer_norm_backward", "layer_norm_backward", rt.grid(rows, 1), ROW_THREADS,
                  [[rows, cols, int(w is not None), 0], gx.storage.ptr, _at(mean), _at(rstd),
                   _at(x), _at(g), _at(w or x)])

    def _attention_params(self, q, k, v, mask, causal):
        """attention.cu's Parameters ``p``."""
        (n, L, E), (kv, S, Ev) = q.shape, v.shape
        kind = 0 if mask is None else _MASKS.get(mask.dtype.name, 2)
        shared = int(mask is not None and mask.shape[0] == 1)
        return [n, L, S, E, Ev, n // kv if kv else 1, int(bool(causal)), kind, shared]

    def attention(self, out, lse, q, k, v, mask, causal, scale):
        """attention.cu's forward, one block per (problem, query tile)."""
        rt = runtime()
        params = self._attention_params(q, k, v, mask, causal)
        n, L = q.shape[:2]
        rt.launch("attention_forward", f"attention_forward<{q.ctype}>", n * -(-L // ATT_TILE), ATT_THREADS,
                  [params, out.storage.ptr, lse.storage.ptr, _at(q), _at(k), _at(v), _at(q if mask is None else mask),
                   scale])

    def attention_backward(self, gq, gk, gv, g, q, k, v, out, lse, mask, causal, scale):
        """attention.cu's backward: dQ (and each row's rowsum(dO * O), kept for the next
        launch) per (problem, query tile), then dK and dV per (key/value head, key tile)."""
        rt = runtime()
        params = self._attention_params(q, k, v, mask, causal)
        (n, L), (kv, S) = q.shape[:2], k.shape[:2]
        m = _at(q if mask is None else mask)
        dsum = type(q).empty((n, L), q.dtype)
        if n * L:
            rt.launch("attention_backward_dq", f"attention_backward_dq<{q.ctype}>", n * -(-L // ATT_TILE),
                      ATT_THREADS, [params, gq.storage.ptr, dsum.storage.ptr, _at(g), _at(q), _at(k), _at(v),
                                    _at(out), _at(lse), m, scale])
        if kv * S:
            rt.launch("attention_backward_dkdv", f"attention_backward_dkdv<{q.ctype}>", kv * -(-S // ATT_TILE),
                      ATT_THREADS, [params, gk.storage.ptr, gv.storage.ptr, _at(g), _at(q), _at(k), _at(v),
                                    _at(lse), _at(dsum), m, scale])

    @staticmethod
    def _recurrent_params(mode, reverse, sizes, rows, w, w_hr, bias):
        gates = 4 if mode == "LSTM" else 3 if mode == "GRU" else 1
        hidden = w.shape[0] // gates
        return [_RECURRENT_MODES[mode], int(reverse), sizes.shape[0], rows, hidden, w.shape[1], int(bias),
                int(w_hr is not None)]

    def recurrent(self, mode, reverse, sizes, out, h, c, saved, hprev, pre, gi, w, b, w_hr):
        """recurrent.cu's forward: the whole time loop in one launch of one block."""
        rt = runtime()
        p = self._recurrent_params(mode, reverse, sizes, out.shape[0], w, w_hr, b is not None)
        rt.launch("recurrent_forward", f"recurrent_forward<{gi.ctype}>", 1, RECURRENT_THREADS,
                  [p, _at(out), _at(h), _at(c or h), _at(saved), _at(hprev), _at(pre), _at(gi), _at(w),
                   _at(b or w), _at(w_hr or w), _at(sizes)])

    def recurrent_backward(self, mode, reverse, sizes, ggi, gh, gc, gp, gproj, dhc, gout, saved, hprev, w,
                           w_hr):
        """recurrent.cu's backward through time: one launch of one block."""
        rt = runtime()
        p = self._recurrent_params(mode, reverse, sizes, ggi.shape[0], w, w_hr, False)
        rt.launch("recurrent_backward", f"recurrent_backward<{w.ctype}>", 1, RECURRENT_THREADS,
                  [p, _at(ggi), _at(gh), _at(gc or gh), _at(gp), _at(gproj or gh), _at(dhc or gh), _at(gout),
                   _at(saved), _at(hprev), _at(w), _at(w_hr or w), _at(sizes)])


def instances():
    """Every fused instantiation this module can launch."""
    out = [("softmax", f"softmax<{t}, {mode}>") for t in ("float", "double") for mode in _MODES.values()]
    for i in ("int", "long long"):
        out += [("cross_entropy", f"cross_entropy<{i}>"),
                ("cross_entropy_backward", f"cross_entropy_backward<{i}>")]
    out += [(k, f"{k}<{t}>") for k in ("attention_forward", "attention_backward_dq", "attention_backward_dkdv")
            for t in ("float", "double")]
    out += [(k, k) for k in ("layer_norm_forward", "layer_norm_backward", "adam_step", "sgd_step",
                             "rmsprop_step")]
    out += [(k, f"{k}<{t}>") for k in ("recurrent_forward", "recurrent_backward") for t in ("float", "double")]
    return out
