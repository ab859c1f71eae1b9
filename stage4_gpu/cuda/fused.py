"""The CUDA driver's fused kernels: softmax and log_softmax with their backwards
(``kernels/softmax.cu``, float32 and float64), cross-entropy (``cross_entropy*.cu``),
layer norm (``layer_norm.cu``), the optimizer steps (``optim.cu``, one kernel per
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
        rt.launch("softmax", f"softmax<{x.ctype}, {_MODES[mode]}>", rows, ROW_THREADS,
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
                  -(-probs.numel // BLOCK), BLOCK,
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
            rt.launch(kernel, kernel, end, BLOCK, [params, hyper, rows])

    def layer_norm(self, y, mean, rstd, x, w, b, rows, cols, eps):
        """layer_norm.cu's forward, one block per row."""
        rt = runtime()
        rt.launch("layer_norm_forward", "layer_norm_forward", rows, ROW_THREADS,
                  [[rows, cols, int(w is not None), int(b is not None)], y.storage.ptr, mean.storage.ptr,
                   rstd.storage.ptr, _at(x), _at(w or x), _at(b or x), eps])

    def layer_norm_backward(self, gx, mean, rstd, x, g, w, rows, cols):
        """layer_norm.cu's backward (the input's gradient), one block per row."""
        rt = runtime()
        rt.launch("layer_norm_backward", "layer_norm_backward", rows, ROW_THREADS,
                  [[rows, cols, int(w is not None), 0], gx.storage.ptr, _at(mean), _at(rstd),
                   _at(x), _at(g), _at(w or x)])

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
    out += [(k, k) for k in ("layer_norm_forward", "layer_norm_backward", "adam_step", "sgd_step",
                             "rmsprop_step")]
    out += [(k, f"{k}<{t}>") for k in ("recurrent_forward", "recurrent_backward") for t in ("float", "double")]
    return out
