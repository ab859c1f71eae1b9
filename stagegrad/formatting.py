"""How the measuring commands show and keep their results, whatever they measured: a time in
its unit, Markdown tables, Markdown wrapped for a terminal, the JSON and Markdown files of a
report (``write_tables``, and ``publish``, which also prints the table), and the plotting
backend for figures written to files."""
import json
import textwrap
from pathlib import Path

WIDTH = 100        # a terminal's table or wrapped text fits this many columns


def fmt_seconds(t):
    """Three significant digits in the largest unit under 1000 of it (at most 7 characters
    below 1000 s: the journey's terminal table's cells are 8 wide)."""
    if t is None:
        return "—"
    for scale, unit in ((1e6, "µs"), (1e3, "ms"), (1, "s")):
        if t * scale < 999.5:  # what would round to 1000 moves up a unit
            return f"{t * scale:.3g} {unit}"
    return f"{t:,.0f} s"


def markdown_table(head, rows):
    """A Markdown table's lines: the header ``head`` and ``rows`` (lists of strings), each
    column as wide as its widest cell."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    return ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
            "|" + "|".join("-" * (w + 2) for w in widths) + "|",
            *("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows)]


def fit(markdown_text, width=WIDTH):
    """Markdown for a terminal: prose wrapped to ``width``; tables (already narrow) as they are."""
    out = []
    for line in markdown_text.splitlines():
        if line.startswith("|") or not line:
            out.append(line)
        else:
            out += textwrap.wrap(line, width, subsequent_indent="  " if line.startswith("- ") else "")
    return "\n".join(out)


def write_tables(out, name, data, table):
    """``name.json`` (``data``, every measurement) and ``name.md`` (``table``, Markdown) in
    the folder ``out``, made if missing; their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = out / f"{name}.json", out / f"{name}.md"
    paths[0].write_text(json.dumps(data, indent=1) + "\n")
    paths[1].write_text(table + "\n")
    return paths


def publish(out, name, data, table, wrap=False):
    """A command's results: ``write_tables``, then the table printed after a blank line and
    the paths written (both ``fit`` to a terminal where ``wrap``); the paths, as a list."""
    written = list(write_tables(out, name, data, table))
    shown = fit if wrap else str
    print()
    print(shown(table))
    print(shown("wrote " + ", ".join(str(p) for p in written)))
    return written


def pyplot():
    """``matplotlib.pyplot`` drawing to files only (the Agg backend), never to a window."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
