"""A model built layer by layer in the page: a JSON list of layers, checked and sized here.

An architecture is data: a list of objects such as ``{"type": "conv2d", "out_channels":
16, "kernel_size": 3}``, each a type from ``LAYERS`` with numeric fields in fixed bounds.
Nothing in it is ever evaluated; ``build`` maps each type to the stage's own layer class.
``check`` walks the shapes from MNIST's (1, 28, 28) image to the last layer, which must
give the 10 class scores, and counts the parameters and the activations a training step
keeps per image, so that a model too large for this machine is refused with a message
that says how large it is, before any memory is touched.
"""
INPUT_SHAPE = (1, 28, 28)  # an MNIST image
CLASSES = 10
MAX_LAYERS = 48
MAX_PARAMETERS = 20_000_000  # 80 MB of float32 weights, as much again for each optimizer state
MAX_ACTIVATION_BYTES = 1 << 30  # what one training step may keep for its backward pass

# type -> {field: (low, high, default)}; the bounds are inclusive
LAYERS = {
    "linear": {"out_features": (1, 16384, 128)},
    "conv2d": {"out_channels": (1, 1024, 16), "kernel_size": (1, 11, 3), "stride": (1, 4, 1),
               "padding": (0, 5, 1)},
    "maxpool2d": {"kernel_size": (1, 8, 2), "stride": (1, 8, 2)},
    "avgpool2d": {"kernel_size": (1, 8, 2), "stride": (1, 8, 2)},
    "batchnorm": {},
    "layernorm": {},
    "relu": {},
    "gelu": {},
    "tanh": {},
    "sigmoid": {},
    "dropout": {"p": (0.0, 0.9, 0.1)},
    "flatten": {},
}


class ArchitectureError(ValueError):
    """An architecture that cannot be built, with the layer it concerns (a 1-based index,
    or None for the whole) and the reason."""

    def __init__(self, message, layer=None):
        super().__init__(message if layer is None else f"layer {layer}: {message}")
        self.layer = layer


def shown(value):
    """``value`` as an error message quotes it: a number with thousands separated, cut short
    when long (a request may hold a JSON integer of hundreds of digits)."""
    text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else repr(value)
    return text if len(text) <= 24 else text[:20] + "..."


def _field(spec, kind, name, index):
    low, high, default = LAYERS[kind][name]
    value = spec.get(name, default)
    if isinstance(low, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high
        if not ok:
            raise ArchitectureError(f"{kind}'s {name} must be a number in [{low}, {high}], "
                                    f"got {shown(value)}", index)
        return float(value)
    if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
        raise ArchitectureError(f"{kind}'s {name} must be a whole number in [{low}, {high}], "
                                f"got {shown(value)}", index)
    return value


def _shape_text(shape):
    return "(" + ", ".join(map(str, shape)) + ")"


def _product(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _layer(kind, f, shape, index):
    """The output shape and parameter count of one layer on an input of ``shape``."""
    image = len(shape) == 3
    if kind == "linear":
        if image:
            raise ArchitectureError(f"linear needs a flat input, but gets an image {_shape_text(shape)}; "
                                    "put a flatten before it", index)
        return (f["out_features"],), shape[0] * f["out_features"] + f["out_features"]
    if kind in ("conv2d", "maxpool2d", "avgpool2d"):
        if not image:
            raise ArchitectureError(f"{kind} needs an image (channels, height, width), but gets a flat "
                                    f"input {_shape_text(shape)}; it must come before the flatten", index)
        c, h, w = shape
        pad = f.get("padding", 0)
        k, s = f["kernel_size"], f["stride"]
        if k > h + 2 * pad or k > w + 2 * pad:
            raise ArchitectureError(f"{kind}'s kernel of {k} is larger than its input {_shape_text(shape)}"
                                    + (f" padded by {pad}" if pad else ""), index)
        if kind == "conv2d" and pad > k // 2:
            raise ArchitectureError(f"conv2d's padding ({pad}) must be at most half its kernel ({k})", index)
        out = ((h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1)
        if kind != "conv2d":
            return (c,) + out, 0
        co = f["out_channels"]
        return (co,) + out, co * c * k * k + co
    if kind == "batchnorm":
        return shape, 2 * shape[0]
    if kind == "layernorm":
        return shape, 2 * _product(shape)
    if kind == "flatten":
        return (_product(shape),), 0
    return shape, 0  # activations and dropout keep the shape


def check(layers, batch_size=64):
    """Check an architecture (a list of layer objects) for MNIST at ``batch_size``.

    Returns ``{"layers": [...normalized layers with their output shapes], "parameters": n,
    "activation_bytes": n}``; raises ``ArchitectureError`` naming the first layer at fault,
    or the whole model when it is too large."""
    if not isinstance(layers, list):
        raise ArchitectureError(f"the architecture must be a list of layers, got {type(layers).__name__}")
    if not layers:
        raise ArchitectureError("the architecture has no layers")
    if len(layers) > MAX_LAYERS:
        raise ArchitectureError(f"the architecture has {len(layers)} layers; at most {MAX_LAYERS} are "
                                f"allowed")
    shape, parameters, activations, out = INPUT_SHAPE, 0, 0, []
    for index, spec in enumerate(layers, 1):
        if not isinstance(spec, dict):
            raise ArchitectureError(f"expected an object such as {{\"type\": \"relu\"}}, got {spec!r}", index)
        kind = spec.get("type")
        if not isinstance(kind, str) or kind not in LAYERS:  # a list or an object is no type either
            raise ArchitectureError(f"unknown layer type {shown(kind)}; expected one of {', '.join(LAYERS)}",
                                    index)
        unknown = sorted(set(spec) - set(LAYERS[kind]) - {"type"})
        if unknown:
            raise ArchitectureError(f"{kind} has no field {', '.join(map(repr, unknown))}; its fields are: "
                                    f"{', '.join(LAYERS[kind]) or 'none'}", index)
        fields = {name: _field(spec, kind, name, index) for name in LAYERS[kind]}
        shape, n = _layer(kind, fields, shape, index)
        if min(shape) < 1:
            raise ArchitectureError(f"{kind} leaves nothing of its input: output {_shape_text(shape)}", index)
        parameters += n
        activations += _product(shape)
        out.append({"type": kind, **fields, "output": list(shape)})
    if shape != (CLASSES,):
        raise ArchitectureError(f"the last layer must output the {CLASSES} class scores, shape ({CLASSES},), "
                                f"but it outputs {_shape_text(shape)}: end with a linear of {CLASSES} "
                                f"out_features after a flatten")
    if parameters > MAX_PARAMETERS:
        raise ArchitectureError(f"the model has {parameters:,} parameters; at most {MAX_PARAMETERS:,} are "
                                f"allowed: make layers narrower or fewer")
    # each layer's output is kept for the backward pass, and its gradient is as large
    need = 2 * 4 * activations * batch_size
    if need > MAX_ACTIVATION_BYTES:
        raise ArchitectureError(f"a training step at batch size {batch_size} needs about {need / 2**20:,.0f} "
                                f"MiB for its activations and their gradients; at most "
                                f"{MAX_ACTIVATION_BYTES / 2**20:,.0f} MiB are allowed: use a smaller batch, "
                                f"fewer channels or pool earlier")
    return {"layers": out, "parameters": parameters, "activation_bytes": need}


def build(sg, layers):
    """The checked architecture ``layers`` as an ``sg.nn.Sequential`` on stage ``sg``."""
    nn = sg.nn
    shape, modules = INPUT_SHAPE, []
    for spec in check(layers, batch_size=1)["layers"]:
        kind = spec["type"]
        if kind == "linear":
            modules.append(nn.Linear(shape[0], spec["out_features"]))
        elif kind == "conv2d":
            modules.append(nn.Conv2d(shape[0], spec["out_channels"], spec["kernel_size"],
                                     stride=spec["stride"], padding=spec["padding"]))
        elif kind in ("maxpool2d", "avgpool2d"):
            pool = nn.MaxPool2d if kind == "maxpool2d" else nn.AvgPool2d
            modules.append(pool(spec["kernel_size"], stride=spec["stride"]))
        elif kind == "batchnorm":
            modules.append((nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d)(shape[0]))
        elif kind == "layernorm":
            modules.append(nn.LayerNorm(list(shape)))
        elif kind == "dropout":
            modules.append(nn.Dropout(spec["p"]))
        else:
            modules.append({"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid,
                            "flatten": nn.Flatten}[kind]())
        shape = tuple(spec["output"])
    return nn.Sequential(*modules)
