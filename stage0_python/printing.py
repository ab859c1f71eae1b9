"""How a tensor prints: PyTorch's layout and options (see torch.set_printoptions).

A tensor of more than ``threshold`` elements is summarised: along every dimension longer
than ``2 * edgeitems`` only the first and last ``edgeitems`` entries are shown, with
``...`` between, so a 300 x 300 tensor prints seven short rows, not 90,000 numbers. Only
the entries shown are read from the tensor.

Numbers share one format across the tensor, chosen from the nonzero finite values shown:
whole numbers print as ``1.`` (floats) or ``1`` (integers); otherwise ``precision``
decimals; scientific notation when the largest magnitude exceeds 1e8, or is more than
1000 times the smallest, or the smallest is below 1e-4 (``sci_mode`` forces it on or
off). Every entry is padded to the widest, rows break to fit ``linewidth``, and the
suffixes (``device=``, ``dtype=``, ``grad_fn=``) move to a line of their own when the
last line has no room for them.

The options are this stage's own: each stage prints its tensors by its own settings.
"""
import contextlib
import math

from .dtypes import bool_, get_default_dtype, int64

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_PROFILES = {"default": _DEFAULTS,
             "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
             "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80}}
_options = dict(_DEFAULTS)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Set how tensors print (see torch.set_printoptions): ``precision`` decimals,
    summarise above ``threshold`` elements showing ``edgeitems`` at each end of a
    dimension, ``linewidth`` characters per line, ``profile`` one of ``"default"``,
    ``"short"``, ``"full"`` (applied first), ``sci_mode`` True/False to force scientific
    notation on or off, None (the default) to choose it from the values."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {', '.join(map(repr, _PROFILES))}, "
                             f"got {profile!r}")
        _options.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"set_printoptions: {name} must be an integer >= 0, got {value!r}")
            _options[name] = value
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold >= 0:
            raise ValueError(f"set_printoptions: threshold must be a number >= 0, got {threshold!r}")
        _options["threshold"] = threshold
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise ValueError(f"set_printoptions: sci_mode must be True, False or None, got {sci_mode!r}")
    _options["sci_mode"] = sci_mode  # as in PyTorch, leaving it out returns to the automatic choice


def get_printoptions():
    """The current print options as a dict that ``set_printoptions(**...)`` accepts."""
    return dict(_options)


@contextlib.contextmanager
def printoptions(**kwargs):
    """A context in which tensors print with ``set_printoptions(**kwargs)``; the options
    in force before are restored on leaving it."""
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


_CUT = object()  # where a summarised dimension's hidden entries would be


def _shown(t, summarize, edge):
    """The entries of ``t`` that print, as nested lists with ``_CUT`` where entries are
    left out; only those entries are read (a summarised tensor is never converted whole)."""
    if not summarize:
        return t.tolist()
    n = t.shape[0]
    if n > 2 * edge:
        keep = list(range(edge)) + [None] + list(range(n - edge, n))
    else:
        keep = list(range(n))
    if t.ndim == 1:
        if len(keep) == n:
            return t.tolist()
        head = t[:edge].tolist() if edge else []
        tail = t[n - edge:].tolist() if edge else []
        return head + [_CUT] + tail
    return [_CUT if i is None else _shown(t[i], summarize, edge) for i in keep]


def _leaves(nested, out):
    if isinstance(nested, list):
        for x in nested:
            _leaves(x, out)
    elif nested is not _CUT:
        out.append(nested)
    return out


class _Format:
    """One number format for every entry shown, and the width they are padded to."""

    def __init__(self, values, floating, options):
        self.floating, self.precision = floating, options["precision"]
        self.whole, self.sci, self.width = True, False, 1
        if not floating:
            self.width = max([1] + [len(str(v)) for v in values])
            return
        finite = [v for v in values if v != 0 and math.isfinite(v)]
        if not finite:  # zeros, infinities and NaNs alone: ``0.``, ``inf``, ``nan``
            return
        self.whole = all(v == math.ceil(v) for v in finite)
        low, high = min(abs(v) for v in finite), max(abs(v) for v in finite)
        auto = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
        self.sci = auto if options["sci_mode"] is None else options["sci_mode"]
        if self.sci:
            self.width = max(len(f"{v:.{self.precision}e}") for v in finite)
        elif self.whole:
            self.width = max(len(f"{v:.0f}") + 1 for v in finite)  # + 1: the point of ``1.``
        else:
            self.width = max(len(f"{v:.{self.precision}f}") for v in finite)

    def __call__(self, v):
        if not self.floating:
            text = str(v)
        elif self.sci:
            text = f"{v:{self.width}.{self.precision}e}"
        elif self.whole:
            text = f"{v:.0f}" + ("." if math.isfinite(v) else "")
        else:
            text = f"{v:.{self.precision}f}"
        return text.rjust(self.width)


def _layout(nested, ndim, fmt, indent, options):
    """The bracketed text of ``nested`` (``ndim`` dimensions), its rows indented to
    follow an opening bracket in column ``indent``."""
    if ndim == 0:
        return fmt(nested)
    if ndim == 1:
        cut = " ..." if options["edgeitems"] else "..."
        items = [cut if x is _CUT else fmt(x) for x in nested]
        per_line = max(1, (options["linewidth"] - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = ["..." if x is _CUT else _layout(x, ndim - 1, fmt, indent + 1, options) for x in nested]
    # a blank line between blocks of matrices, as many as the dimensions below
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _with_suffixes(text, suffixes, indent, linewidth):
    # PyTorch counts the last line's length this way (two more than it is when the text
    # has no line break); kept so that suffixes break where PyTorch's do
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > linewidth:
            text += ",\n" + " " * indent + suffix
            last = indent + len(suffix)
        else:
            text += ", " + suffix
            last += len(suffix) + 2
    return text + ")"


def tensor_repr(t):
    """``repr(t)`` as PyTorch writes it, with this stage's name for dtypes."""
    options = _options
    prefix = "tensor("
    suffixes = []
    if t.device.type != "cpu":  # where PyTorch says it: before the dtype
        suffixes.append(f"device='{t.device}'")
    data = t.detach()
    if data.numel() == 0:
        body = "[]"
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if data.dtype != get_default_dtype():
            suffixes.append(f"dtype={data.dtype!r}")
    else:
        summarize = data.numel() > options["threshold"]
        edge = options["edgeitems"]
        nested = data.item() if data.ndim == 0 else _shown(data, summarize, edge)
        values = _leaves(nested, [])
        fmt = _Format(values, data.dtype.is_floating_point, options)
        body = _layout(nested, data.ndim, fmt, len(prefix), options)
        if not edge:
            suffixes.append(f"size={tuple(data.shape)}")
        if data.dtype not in (get_default_dtype(), int64, bool_):
            suffixes.append(f"dtype={data.dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, len(prefix), options["linewidth"])
