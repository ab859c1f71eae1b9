"""``nn.functional`` entry points exported as one ONNX operator each.

``FUNCTIONS[kind](g, a, out)``: ``a`` maps the function's parameter names to the values
of the call (tensors as ``Val``s), ``out`` is the result's Val. ``APPLIES[kind](a)``, where
present, says whether the call fits the operator; when it does not (batch norm on batch
statistics), the trace records the primitives the function runs instead.
"""
from .errors import ExportError
from .primitives import composite_unary


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _batched(g, x, nd, run):
    """Run ``run(name)`` on ``x`` given a batch dim, as PyTorch's unbatched inputs are."""
    if len(x.shape) == nd + 2:
        return run(x.name)
    axis = g.const([0], "int64")
    return g.node("Squeeze", [run(g.node("Unsqueeze", [x.name, axis])), axis])


def linear(g, a, out):
    """``act(x @ w.T + b)``: ``_linear`` is where Linear, F.linear and Sequential's fused
    Linear + activation meet."""
    x, w, b = a["input"], a["weight"], a["bias"]
    if len(x.shape) == 2 and b is not None:
        y = g.node("Gemm", [x.name, w.name, b.name], transB=1)
    else:
        y = g.node("MatMul", [x.name, g.node("Transpose", [w.name], perm=[1, 0])])
        if b is not None:
            y = g.node("Add", [y, b.name])
    if a["act"] == "relu":
        y = g.node("Relu", [y])
    elif a["act"] in ("gelu", "gelu_tanh"):
        y = composite_unary(g, a["act"], y, x.dtype.name)
    g.node("Identity", [y], [out.name])


def safe_softmax(g, a, out):
    """Attention's softmax, whose rows with every position masked give zeros: the
    stage checks for such rows first, the graph computes both and selects."""
    x = a["scores"]
    dead = g.node("Equal", [g.reduce("Max", x.name, [len(x.shape) - 1], True), g.const(-float("inf"),
                                                                                       x.dtype.name)])
    zero = g.const(0.0, x.dtype.name)
    soft = g.node("Softmax", [g.node("Where", [dead, zero, x.name])], axis=-1)
    g.node("Where", [dead, zero, soft], [out.name])


def _conv_pads(padding, kernel, dilation, nd):
    if padding == "valid":
        return [0] * 2 * nd
    if padding == "same":  # PyTorch puts the odd element of the total on the right
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    p = _ntuple(padding, nd)
    return list(p) * 2


def _conv(nd):
    def emit(g, a, out):
        x, w, b = a["input"], a["weight"], a["bias"]
        kernel = list(w.shape[2:])
        dilation = list(_ntuple(a["dilation"], nd))
        attrs = dict(kernel_shape=kernel, strides=list(_ntuple(a["stride"], nd)), dilations=dilation,
                     group=a["groups"], pads=_conv_pads(a["padding"], kernel, dilation, nd))
        inputs = [w.name] + ([] if b is None else [b.name])
        y = _batched(g, x, nd, lambda name: g.node("Conv", [name] + inputs, **attrs))
        g.node("Identity", [y], [out.name])
    return emit


def _conv_transpose(nd):
    def emit(g, a, out):
        x, w, b = a["input"], a["weight"], a["bias"]
        attrs = dict(kernel_shape=list(w.shape[2:]), strides=list(_ntuple(a["stride"], nd)),
                     dilations=list(_ntuple(a["dilation"], nd)), group=a["groups"],
                     pads=list(_ntuple(a["padding"], nd)) * 2,
                     output_padding=list(_ntuple(a["output_padding"], nd)))
        inputs = [w.name] + ([] if b is None else [b.name])
        y = _batched(g, x, nd, lambda name: g.node("ConvTranspose", [name] + inputs, **attrs))
        g.node("Identity", [y], [out.name])
    return emit


def _pool_attrs(a):
    k = _ntuple(a["kernel_size"], 2)
    stride = a["stride"]
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else _ntuple(stride, 2)
    return dict(kernel_shape=list(k), strides=list(s), pads=list(_ntuple(a["padding"], 2)) * 2,
                ceil_mode=int(bool(a["ceil_mode"])))


def max_pool2d(g, a, out):
    if a["return_indices"]:
        raise ExportError("max_pool2d with return_indices: ONNX's MaxPool indices count differently "
                          "from PyTorch's, so they are not exported")
    attrs = _pool_attrs(a)
    attrs["dilations"] = list(_ntuple(a["dilation"], 2))
    y = _batched(g, a["input"], 2, lambda name: g.node("MaxPool", [name], **attrs))
    g.node("Identity", [y], [out.name])


def avg_pool2d(g, a, out):
    if a["divisor_override"] is not None:
        raise ExportError("avg_pool2d with divisor_override has no ONNX form")
    attrs = _pool_attrs(a)
    attrs["count_include_pad"] = int(bool(a["count_include_pad"]))
    y = _batched(g, a["input"], 2, lambda name: g.node("AveragePool", [name], **attrs))
    g.node("Identity", [y], [out.name])


def _given_or(g, v, values, shape, dtype):
    """The parameter ``v``, or a constant of ``values`` where the layer has none."""
    return v.name if v is not None else g.const(values, dtype.name, shape)


def batch_norm(g, a, out):
    """Batch norm with running statistics, then its activation: ``_batch_norm`` is where
    F.batch_norm, the BatchNorm layers and Sequential's fused batch norm + ReLU/ReLU6 meet."""
    x, mean, var = a["input"], a["running_mean"], a["running_var"]
    C = (mean.shape[0],)
    scale = _given_or(g, a["weight"], [1.0] * C[0], C, x.dtype)
    bias = _given_or(g, a["bias"], [0.0] * C[0], C, x.dtype)
    act = a["act"]
    y = g.node("BatchNormalization", [x.name, scale, bias, mean.name, var.name], None if act else [out.name],
               epsilon=float(a["eps"]))
    if act == "relu":
        g.node("Relu", [y], [out.name])
    elif act == "relu6":
        g.node("Clip", [y, g.const(0.0, x.dtype.name), g.const(6.0, x.dtype.name)], [out.name])


def layer_norm(g, a, out):
    x = a["input"]
    shape = tuple(_ntuple(a["normalized_shape"], 1))
    n = 1
    for s in shape:
        n *= s
    scale = _given_or(g, a["weight"], [1.0] * n, shape, x.dtype)
    inputs = [x.name, scale] + ([] if a["bias"] is None else [a["bias"].name])
    g.node("LayerNormalization", inputs, [out.name], axis=-len(shape), epsilon=float(a["eps"]))


def embedding(g, a, out):
    g.node("Gather", [a["weight"].name, a["input"].name], [out.name], axis=0)


def _softmax(op):
    def emit(g, a, out):
        x = a["input"]
        name = x.name if a["dtype"] is None else g.cast(x.name, x.dtype, a["dtype"])
        g.node(op, [name], [out.name], axis=a["dim"])
    return emit


def _no_operator(name):
    def emit(g, a, out):
        raise ExportError(f"{name} (im2col) has no ONNX operator")
    return emit


def rnn(g, a, out):
    """A whole ``RNN``/``LSTM``/``GRU`` as ONNX's operator of the same name, one per layer,
    both directions in one: the sequence length stays dynamic, where the unrolled loop
    would fix it. PyTorch's gate blocks are reordered to ONNX's (LSTM i,f,g,o -> i,o,f,c;
    GRU r,z,n -> z,r,n with ``linear_before_reset``, PyTorch's formula) by slicing the
    weights in the graph."""
    layer, x, hx, w = a["self"], a["input"], a["hx"], a["weights"]
    op, order = _RNN_OPS[layer.mode]
    H, dirs = layer.hidden_size, 2 if layer.bidirectional else 1
    hx = [] if hx is None else list(hx) if isinstance(hx, (tuple, list)) else [hx]
    y = g.node("Transpose", [x.name], perm=[1, 0, 2]) if layer.batch_first else x.name
    attrs = dict(hidden_size=H, direction="bidirectional" if dirs == 2 else "forward")
    if op == "RNN":
        attrs["activations"] = ["Relu" if layer.mode == "RNN_RELU" else "Tanh"] * dirs
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    finals = [[] for _ in hx or range(2 if op == "LSTM" else 1)]

    def stacked(names, blocks):  # per direction, gate blocks reordered, then stacked
        parts = []
        for name in names:
            rows = [g.node("Slice", [name, g.const([k * H], "int64"), g.const([(k + 1) * H], "int64"),
                                     g.const([0], "int64")]) for k in order]
            parts.append(g.node("Unsqueeze", [g.node("Concat", rows, axis=0) if blocks > 1 else rows[0],
                                              g.const([0], "int64")]))
        return parts[0] if len(parts) == 1 else g.node("Concat", parts, axis=0)

    for k in range(layer.num_layers):
        suffixes = layer._suffixes(k)
        W = stacked([w["weight_ih" + s].name for s in suffixes], len(order))
        R = stacked([w["weight_hh" + s].name for s in suffixes], len(order))
        inputs = [y, W, R]
        if layer.bias:
            biases = [g.node("Concat", [stacked([w["bias_ih" + s].name], len(order)),
                                        stacked([w["bias_hh" + s].name], len(order))], axis=1)
                      for s in suffixes]
            inputs.append(biases[0] if dirs == 1 else g.node("Concat", biases, axis=0))
        else:
            inputs.append("")
        inputs.append("")  # sequence lengths: every sequence is full
        for state in hx:
            inputs.append(g.node("Slice", [state.name, g.const([k * dirs], "int64"),
                                           g.const([(k + 1) * dirs], "int64"), g.const([0], "int64")]))
        outs = g.node(op, inputs, n_out=3 if op == "LSTM" else 2, **attrs)
        # (T, dirs, B, H) -> (T, B, dirs * H), the next layer's input
        y = g.node("Reshape", [g.node("Transpose", [outs[0]], perm=[0, 2, 1, 3]),
                               g.const([0, 0, -1], "int64")])
        for f, name in zip(finals, outs[1:]):
            f.append(name)
    if layer.batch_first:
        y = g.node("Transpose", [y], perm=[1, 0, 2])
    y_out, states = out
    states = list(states) if isinstance(states, tuple) else [states]
    g.node("Identity", [y], [y_out.name])
    for f, val in zip(finals, states):
        g.node("Concat" if len(f) > 1 else "Identity", f, [val.name], **({"axis": 0} if len(f) > 1 else {}))


# ONNX's operator and the PyTorch gate blocks in ONNX's order
_RNN_OPS = {"RNN_TANH": ("RNN", [0]), "RNN_RELU": ("RNN", [0]), "LSTM": ("LSTM", [0, 3, 1, 2]),
            "GRU": ("GRU", [1, 0, 2])}


# keyed by where the function lives in a stage: "<module>:<name in it>"
FUNCTIONS = {
    "nn.functional.linear_maps:_linear": linear, "nn.functional.attention:_safe_softmax": safe_softmax,
    "nn.functional.convolution:conv1d": _conv(1), "nn.functional.convolution:conv2d": _conv(2),
    "nn.functional.convolution:conv_transpose1d": _conv_transpose(1),
    "nn.functional.convolution:conv_transpose2d": _conv_transpose(2),
    "nn.functional.pooling:max_pool2d": max_pool2d, "nn.functional.pooling:avg_pool2d": avg_pool2d,
    "nn.functional.normalization:_batch_norm": batch_norm,
    "nn.functional.normalization:layer_norm": layer_norm,
    "nn.functional.embeddings:embedding": embedding, "functional:softmax": _softmax("Softmax"),
    "functional:log_softmax": _softmax("LogSoftmax"),
    "nn.functional.im2col:unfold": _no_operator("unfold"), "nn.functional.im2col:fold": _no_operator("fold"),
    "nn.rnn:RNNBase.forward": rnn,
}

APPLIES = {
    # batch statistics (training, or no running stats) are left to the primitives
    "nn.functional.normalization:_batch_norm": lambda a: not a["training"] and a["running_mean"] is not None,
    # max_norm renormalises the weight in place: the primitives report that
    "nn.functional.embeddings:embedding": lambda a: a["max_norm"] is None,
    # ONNX's operators have no projection and take padded batches: the rest is unrolled
    "nn.rnn:RNNBase.forward": lambda a: (a["self"].proj_size == 0 and hasattr(a["input"], "ndim")
                                         and a["input"].ndim == 3),
}

# what an entry point reads besides its arguments: the recurrent layers' parameters
EXTRA = {
    "nn.rnn:RNNBase.forward": lambda a: {"weights": {n: getattr(a["self"], n)
                                                     for n in a["self"]._flat_weights_names}},
}
