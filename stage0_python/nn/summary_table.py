"""The text of ``sg.nn.summary``'s table, in torchinfo 1.8's layout: a name column 40
characters wide (wider, in steps of 5, when a name needs it), value columns
``col_width`` wide, ``=`` rules around the header and the totals, the tree drawn with
``├─`` and ``│    └─``, counts with thousands separators, ``--`` for nothing."""
import math

HEADERS = {"input_size": "Input Shape", "output_size": "Output Shape", "num_params": "Param #",
           "params_percent": "Param %", "kernel_size": "Kernel Shape", "mult_adds": "Mult-Adds",
           "trainable": "Trainable"}
COLUMNS = tuple(HEADERS)


def format_table(stats):
    """The whole table of a ``ModelStatistics``."""
    ascii_only = "ascii_only" in stats.row_settings
    name_width = _name_width(stats)
    rule = "=" * (name_width + stats.col_width * len(stats.columns))

    def line(name, cells):
        text = f"{name:<{name_width}} " + "".join(f"{cells.get(c, ''):<{stats.col_width}} "
                                                  for c in stats.columns)
        return text.rstrip() + "\n"

    title = "Layer (type" + (" (var_name)" if "var_names" in stats.row_settings else "") \
        + (":depth-idx" if "depth" in stats.row_settings else "") + ")"
    body = ""
    for row in stats.summary_list:
        if row.depth > stats.depth or ("hide_recursive_layers" in stats.row_settings and row.is_recursive):
            continue
        deepest = row.depth == stats.depth
        body += line(_indent(row.depth, ascii_only) + _title(row, stats.row_settings),
                     _cells(row, deepest, stats.total_params))
        if stats.verbose == 2:  # one line per parameter under its layer
            # the model's own row lists only its direct parameters
            params = [p for p in row.params if row.parent is not None or "." not in p[0]]
            for k, (pname, shape, n) in enumerate(params):
                if pname == "weight" and len(shape) > 1:  # shown as [in, out, ...]
                    shape = [shape[1], shape[0], *shape[2:]]
                body += line(_indent(row.depth + 1, ascii_only) + pname,
                             {"kernel_size": str(shape),
                              "num_params": ("└─" if k == len(params) - 1 else "├─") + f"{n:,}"})
    text = (f"{rule}\n{line(title, HEADERS)}{rule}\n{body}{rule}\n"
            f"Total params: {stats.total_params:,}\n"
            f"Trainable params: {stats.trainable_params:,}\n"
            f"Non-trainable params: {stats.non_trainable_params:,}\n")
    if stats.has_input:
        mb = 1e6
        text += (f"Total mult-adds {_readable(stats.total_mult_adds)}\n{rule}\n"
                 f"Input size (MB): {stats.total_input / mb:0.2f}\n"
                 f"Forward/backward pass size (MB): {stats.total_output_bytes / mb:0.2f}\n"
                 f"Params size (MB): {stats.total_param_bytes / mb:0.2f}\n"
                 f"Estimated Total Size (MB): {stats.total_bytes / mb:0.2f}\n")
    return text + rule


def _name_width(stats, step=5):
    # each depth indents by up to 5 characters; 40 unless a name needs more
    need = max((len(_title(r, stats.row_settings)) + r.depth * step + 1 for r in stats.summary_list),
               default=0)
    return 40 if need < 40 else math.ceil(need / step) * step


def _indent(depth, ascii_only):
    if depth == 0:
        return ""
    branch, bar = ("+ ", "|    ") if ascii_only else ("├─", "│    ")
    return branch if depth == 1 else bar * (depth - 1) + ("+ " if ascii_only else "└─")


def _title(row, settings):
    name = row.class_name
    if "var_names" in settings and row.var_name:
        name += f" ({row.var_name})"
    if "depth" in settings and row.depth > 0:
        name += f": {row.depth}" + (f"-{row.depth_index}" if row.depth_index is not None else "")
    return name


def _cells(row, deepest, total_params):
    """The row's value per column. At the deepest level shown a container counts all its
    parameters; above it, only those no row below shows."""
    whole = deepest or row.is_leaf_layer
    return {"input_size": _or_dashes(row.input_size), "output_size": _or_dashes(row.output_size),
            "kernel_size": _or_dashes(row.kernel_size), "trainable": row.trainable,
            "num_params": _params(row, whole), "params_percent": _percent(row, whole, total_params),
            "mult_adds": _macs(row, deepest)}


def _or_dashes(value):
    return str(value) if value else "--"


def _params(row, whole):
    if row.num_params == 0:
        return "--"
    if row.is_recursive:
        return "(recursive)"
    if whole:  # parenthesized when none of them is trainable
        return f"{row.num_params:,}" if row.trainable_params else f"({row.num_params:,})"
    left = row.leftover_params()
    return f"{left:,}" if left > 0 else "--"


def _percent(row, whole, total_params):
    none = "     --"
    if total_params == 0:
        return none
    if row.is_recursive:
        return "(recursive)"
    n = row.num_params if whole else row.leftover_params()
    return none if n == 0 else f"{n / total_params:>7.2%}"


def _macs(row, deepest):
    if row.macs <= 0:
        return "--"
    if row.is_leaf_layer:
        return f"{row.macs:,}"
    if deepest:
        return f"{sum(c.macs for c in row.children if c.is_leaf_layer):,}"
    return "--"


def _readable(n):
    """``(M): 1.23``, ``(G): ...`` or ``(T): ...``: whole numbers without decimals."""
    unit, scale = ("T", 1e12) if n >= 1e12 else ("G", 1e9) if n >= 1e9 else ("M", 1e6)
    value = n / scale
    return f"({unit}): {int(value):,d}" if value.is_integer() else f"({unit}): {value:,.2f}"
