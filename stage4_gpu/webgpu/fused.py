"""The WebGPU driver's fused kernels: softmax and log_softmax with their backwards
(``kernels/softmax.wgsl``), cross-entropy (``cross_entropy*.wgsl``), layer norm
(``layer_norm.wgsl``) and the optimizer steps (``optim.wgsl``, filled in with the
rule's update for the choices made: WGSL has no templates, so each combination is its
own source, compiled once)."""
import struct

from .kernels import MATH, groups, kernel_source, launch, read

# what the row kernels include: math.wgsl and their workgroup trees
_ROWS = MATH + "\n" + read("rows.wgsl")
_LOG_SUM = "ff_f(ff_add(log_ff(s.x), ff(s.y / s.x)))"
# softmax.wgsl per mode: whether it needs the row's maximum, the term summed, the output
_MODES = {
    "softmax": ("true", "exp_f(v - m)", "exp_f(v - m) / ff_f(s)"),
    "log_softmax": ("true", "exp_f(v - m)", f"(v - m) - {_LOG_SUM}"),
    "softmax_backward": ("false", "v * u", "u * (v - ff_f(s))"),
    "log_softmax_backward": ("false", "v", "v - exp_f(u) * ff_f(s)"),
}
# each rule's state buffers, in the order the shared layer passes them
_STATES = {"adam": ("m", "v", "vmax"), "sgd": ("buf",), "rmsprop": ("sq", "gavg", "buf")}


def _bits(v):
    """A float32 value as the int32 a parameter buffer carries."""
    return struct.unpack("<i", struct.pack("<f", v))[0]


# ---------------------------------------------------------------- optimizer updates

def _decayed(flags):
    """The gradient, negated when maximizing, plus the weight decay (h1)."""
    g = "var g = grad[i];\n  let pv = param[i];\n  "
    if flags["maximize"]:
        g += "g = -g;\n  "
    if flags["decay"]:
        g += "g = g + pv * h1;\n  "
    return g


def _adam(flags):
    update = "var g = grad[i];\n  var pv = param[i];\n  "
    if flags["maximize"]:
        update += "g = -g;\n  "
    if flags["decay"]:  # 2: decoupled (AdamW)
        update += "pv = pv * h6;\n  " if flags["decay"] == 2 else "g = g + pv * h7;\n  "
    update += ("let mv = lerp_f(m[i], g, h0, h1);\n  var vv = v[i] * h2;\n  vv = vv + g * g * h3;\n  "
               "var second = vv;\n  ")
    if flags["amsgrad"]:
        update += "second = max_f(vmax[i], vv);\n  vmax[i] = second;\n  "
    return update + ("let denom = sqrt(second) / h5 + h4;\n  param[i] = pv + mv / denom * -h8;\n  "
                     "m[i] = mv;\n  v[i] = vv;")


def _sgd(flags):
    update = _decayed(flags)
    if flags["momentum"]:  # p[1]: whether this step starts the buffer
        update += "var b = g;\n  if (p[1] == 0) {\n    b = buf[i] * h2;\n    "
        update += "b = b + g * h3;\n  }\n  " if flags["dampening"] else "b = b + g;\n  }\n  "
        update += "buf[i] = b;\n  " + ("g = g + b * h2;\n  " if flags["nesterov"] else "g = b;\n  ")
    return update + "param[i] = pv + g * -h0;"


def _rmsprop(flags):
    update = _decayed(flags) + "var s = sq[i] * h2;\n  s = s + g * g * h3;\n  sq[i] = s;\n  "
    if flags["centered"]:
        update += "let ga = lerp_f(gavg[i], g, h4, h5);\n  gavg[i] = ga;\n  var avg = sqrt(s - ga * ga);\n  "
    else:
        update += "var avg = sqrt(s);\n  "
    update += "avg = avg + h6;\n  "
    if flags["momentum"]:
        return update + "let b = buf[i] * h7 + g / avg;\n  buf[i] = b;\n  param[i] = pv + b * -h0;"
    return update + "param[i] = pv + g / avg * -h0;"


_UPDATES = {"adam": _adam, "sgd": _sgd, "rmsprop": _rmsprop}


class FusedKernels:
    """The WebGPU driver's fused hooks (see ``gpu.driver.Driver``)."""

    def rows(self, mode, out, x, y, rows, cols):
        """softmax.wgsl, one workgroup per row."""
        needs_max, term, result = _MODES[mode]
        src = kernel_source("softmax", HELPERS=_ROWS, NEEDS_MAX=needs_max, SUM=term, OUT=result)
        launch(src, [out, x, y], [rows, cols], rows)

    def cross_entropy(self, loss, wrow, probs, x, target, weight, ignore_index, label_smoothing):
        """cross_entropy.wgsl, one workgroup per row."""
        launch(kernel_source("cross_entropy", HELPERS=_ROWS, I=target.wgsl),
               [loss, wrow, probs, x, target, weight],
               [x.shape[0], x.shape[1], ignore_index, _bits(label_smoothing)], x.shape[0])

    def cross_entropy_backward(self, gx, probs, target, weight, scale, wsum, ignore_index,
                               label_smoothing):
        """cross_entropy_backward.wgsl, one thread per logit."""
        rows, cols = probs.shape
        launch(kernel_source("cross_entropy_backward", I=target.wgsl),
               [gx, probs, target, weight, scale, wsum],
               [rows, cols, ignore_index, _bits(label_smoothing)], groups(rows * cols))

    def optimizer_step(self, rule, param, grad, states, hyper, flags):
        """optim.wgsl with the rule's update: the state buffers bound by name after the
        parameter and its gradient, the float32 constants as h0, h1, ... after the ints."""
        bound = [(name, s) for name, s in zip(_STATES[rule], states) if s is not None]
        ints = (flags["first"],) if rule == "sgd" else ()
        lines = [f"@group(0) @binding({k}) var<storage, read_write> {name}: array<f32>;"
                 for k, (name, _) in enumerate(bound, 2)]
        lines.append(f"@group(0) @binding({len(bound) + 2}) var<storage, read> p: array<i32>;")
        consts = "\n  ".join(f"let h{k} = bitcast<f32>(p[{1 + len(ints) + k}]);" for k in range(len(hyper)))
        src = kernel_source("optim", HELPERS=MATH, BINDINGS="\n".join(lines),
                            UPDATE=consts + "\n  " + _UPDATES[rule](flags))
        n = param.numel
        launch(src, [param, grad] + [s for _, s in bound], [n, *ints, *(_bits(v) for v in hyper)], groups(n))

    def layer_norm(self, y, mean, rstd, x, w, b, rows, cols, eps):
        """layer_norm.wgsl forward, one workgroup per row."""
        self._layer_norm("false", y, mean, rstd, x, x, w, b, rows, cols, eps)

    def layer_norm_backward(self, gx, mean, rstd, x, g, w, rows, cols):
        """layer_norm.wgsl backward, one workgroup per row."""
        self._layer_norm("true", gx, mean, rstd, x, g, w, None, rows, cols, 0.0)

    def _layer_norm(self, backward, out, mean, rstd, x, g, w, b, rows, cols, eps):
        src = kernel_source("layer_norm", HELPERS=_ROWS, BACKWARD=backward)
        launch(src, [out, mean, rstd, x, g, w or x, b or x],
               [rows, cols, int(w is not None), int(b is not None), _bits(eps)], rows)
