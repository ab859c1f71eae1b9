"""The journey's report: the comparison table (Markdown for the site, fixed-width text for a
terminal, row by row as the journey measures), the machine's facts, the headline ratios of the
landing page and the two figures (the speed-up ladder and the roofline). The generic pieces
(numbers, Markdown tables, wrapping, the plotting backend) are ``formatting``'s."""
import math
import textwrap

from . import plausibility
from .cells import SINGLE_NOTE, cell_marks, unpinned_note
from .formatting import WIDTH, fmt_seconds, pyplot

CELL = 8           # characters per implementation column in the terminal
LEGEND = ("Each cell: the median time of one call. Under a stage's time: its speed-up over the stage "
          "before. Under a peer's time: how fast {last} is relative to that peer (the peer's time over "
          "{last}'s). Above 1x means faster.")
BLANK = ("A blank cell: the workload multiplies no matrices, so the stage ran it with its first GEMM "
         "only.")
UNSTEADY = (f"~: unsteady, the samples disagreed by more than {plausibility.SPREAD_LIMIT:g}x even when "
            "measured again; the median of them all is shown, and the headline quotes none of its ratios.")
DOUBTED = "?: a ratio that is not a result; its note says why."
CORES = ("cores used: the most CPU time over wall time of any of the column's cells (all its "
         "threads' CPU time; 1.0 is one core kept busy), beside the threads it was set to.")
NBSP = "\u00a0"
STATUS = {"skipped": "skip", "unsupported": "n/a", "error": "error"}
STATUS_WORDS = {"skipped": "skipped", "unsupported": "not supported", "error": "failed"}


def _ratio(x):
    if x is None:
        return ""
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def _short_ratio(x, width=CELL):
    """``_ratio`` in at most ``width`` characters: fewer digits, then a power of ten."""
    text = _ratio(x)
    if len(text) <= width or x is None:
        return text
    for digits in (2, 1):
        text = f"{x:.{digits}g}x"
        if len(text) <= width and "e" not in text:
            return text
    exponent = math.floor(math.log10(x))
    return f"{x / 10 ** exponent:.0f}e{exponent}x"


def _columns(report, impls=None):
    """The implementations shown, in the report's order: stages first, then the peers."""
    return [i for i in report["implementations"] if impls is None or i["name"] in impls]


def _head(impl):
    """Two header lines: ``stage 3`` over ``blas`` for a stage with several GEMMs."""
    base, _, gemm = impl["label"].partition(" (")
    return base, gemm.removesuffix(" GEMM)")


def _last_stage(columns):
    """The last stage shown (its first GEMM): the one each peer is compared with."""
    stages = [i for i in columns if i["kind"] == "stage"]
    if not stages:
        return None
    return next(i for i in stages if i["package"] == stages[-1]["package"])


class Notes:
    """The numbered notes under a table: one per distinct reason, listing its cells."""

    def __init__(self):
        self.items = []   # [text, [where, ...]]

    def mark(self, text, where):
        for n, (t, cells) in enumerate(self.items, 1):
            if t == text:
                cells.append(where)
                return n
        self.items.append([text, [where]])
        return len(self.items)

    def lines(self):
        return [f"[{n}] {text} ({'; '.join(cells)})" for n, (text, cells) in enumerate(self.items, 1)]


class Grid:
    """The cells of one table: a row per workload and size, a column per implementation."""

    def __init__(self, report, impls=None, ratio=_ratio):
        self.columns = _columns(report, impls)
        self.titles = {w["key"]: w["title"] for w in report["workloads"]}
        self.last = _last_stage(self.columns)
        self.notes = Notes()
        self.ratio = ratio
        self.blank = self.single = self.unsteady = self.doubted = False
        self.cores = {}   # implementation: the most cores any of its cells shown used

    def _doubt(self, reason, label, where):
        """The ratio's place in a cell when the ratio is not a result: ``?`` and its note."""
        self.doubted = True
        return f"? [{self.notes.mark(reason, f'{label}, {where}')}]"

    def row(self, results):
        """One row from the results of one (workload, size): its label, a note marker for the
        whole row (the losses of a training run) and per column a (time, ratio) pair."""
        by_impl = {r["impl"]: r for r in results}
        first = results[0]
        where = f"{self.titles[first['workload']]}, {first['size_label']}"
        last = by_impl.get(self.last["name"]) if self.last else None
        cells = []
        for impl in self.columns:
            r = by_impl.get(impl["name"])
            if r is None:
                cells.append(("", ""))
                continue
            if r["status"] != "ok":
                n = self.notes.mark(f"{STATUS_WORDS[r['status']]}: {r['reason']}",
                                    f"{impl['label']}, {where}")
                cells.append((f"{STATUS[r['status']]} [{n}]", ""))
                continue
            time = fmt_seconds(r["time_s"]) + cell_marks(r)
            self.unsteady |= bool(r.get("unsteady"))
            if r.get("cores"):
                self.cores[impl["name"]] = max(self.cores.get(impl["name"], 0.0), r["cores"])
            if impl["kind"] == "stage":
                doubt = (r.get("doubts") or [None])[0] or r.get("speedup_prev_doubt")
                ratio = self.ratio(r.get("speedup_prev"))
            else:  # a peer: the last stage's speed relative to it, both measured in this run
                ok = last is not None and last["status"] == "ok"
                doubt = plausibility.ratio_doubt(r, last) if ok else None
                ratio = self.ratio(r["time_s"] / last["time_s"]) if ok else ""
            cells.append((time, self._doubt(doubt, impl["label"], where) if doubt else ratio))
        self.blank |= ("", "") in cells
        self.single |= any(t.rstrip("~").endswith("*") for t, _ in cells)
        losses = {}  # the same data from the same weights: equal losses say the stages agree
        for impl in self.columns:
            extra = (by_impl[impl["name"]].get("extra") or {}) if impl["name"] in by_impl else {}
            if "loss" in extra:
                losses.setdefault(f"{extra['loss']:.4f}", []).append(impl["label"])
        if len(losses) == 1:
            text = f"loss after the last step: {next(iter(losses))} on every implementation that ran"
        else:
            text = "loss after the last step: " + "; ".join(f"{v} on {', '.join(who)}"
                                                             for v, who in losses.items())
        mark = self.notes.mark(text, where) if losses else None
        return first["size_label"], mark, cells

    def legend(self):
        """What the cells mean; call it after the rows (it mentions what they contained)."""
        parts = [LEGEND.format(last=self.last["label"] if self.last else "the last stage")]
        parts += [BLANK] if self.blank else []
        parts += [SINGLE_NOTE] if self.single else []
        parts += [UNSTEADY] if self.unsteady else []
        parts += [DOUBTED] if self.doubted else []
        parts += [CORES] if self.cores else []
        return " ".join(parts)

    def cores_row(self):
        """Per column: the most cores its cells used, over the threads it was set to
        (``1.9/1``), or blank; None when no cell recorded its cores."""
        if not self.cores:
            return None
        out = []
        for impl in self.columns:
            used, threads = self.cores.get(impl["name"]), impl.get("threads")
            out.append("" if used is None else f"{used:.1f}" + (f"/{threads}" if threads else ""))
        return out


def _group(report, workloads=None):
    """The results grouped by row, in the order measured."""
    rows = {}
    for r in report["results"]:
        if workloads is None or r["workload"] in workloads:
            rows.setdefault((r["workload"], str(r["size"])), []).append(r)
    return list(rows.values())


# ------------------------------------------------------------------ Markdown

def table(report, impls=None, workloads=None):
    """The comparison as a Markdown table, its notes under it."""
    grid = Grid(report, impls)
    head = ["workload", "size"] + [" ".join(p for p in _head(i) if p) for i in grid.columns]
    out = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(grid.columns)]
    shown = None
    for results in _group(report, workloads):
        label, mark, cells = grid.row(results)
        title = grid.titles[results[0]["workload"]]
        first = title != shown
        shown = title
        size = label + (f" [{mark}]" if mark else "")
        # a cell breaks between its time and its ratio, never inside "1.49 ms" or "skip [2]"
        cells = [(t.replace(" ", NBSP), r) for t, r in cells]
        out.append(f"| {title if first else ''} | {size} | "
                   + " | ".join(f"{t}<br>{r}" if r else t for t, r in cells) + " |")
    cores = grid.cores_row()
    if cores:
        out.append("| cores used | | " + " | ".join(cores) + " |")
    out += ["", grid.legend()]
    if grid.notes.items:
        out += [""] + [f"- {line}" for line in grid.notes.lines()]
    return "\n".join(out)


# ------------------------------------------------------------------ terminal

class TextTable:
    """The comparison for a terminal, within ``WIDTH`` columns, one row at a time: the
    journey prints each row as soon as its last cell is measured. A cell never takes more
    than ``CELL`` characters (a long ratio loses digits, a long status its spaces); a row
    label too long for the label column gets a line of its own, and a row's note mark
    that does not fit after its label goes under it."""

    def __init__(self, report, impls=None, width=WIDTH, labels=None):
        self.grid = Grid(report, impls, ratio=_short_ratio)
        self.width = width
        labels = labels if labels is not None else [r["size_label"] for r in report["results"]]
        room = width - len(self.grid.columns) * (CELL + 1)
        self.label = max(min(room, max([18] + [len(s) + 2 for s in labels])), 0)
        self.shown = None

    def _cell(self, text):
        if len(text) > CELL:  # "skip [12]" -> "skip[12]", "1.23 ms*~" -> "1.23ms*~"
            text = text.replace(" ", "")
        if len(text) > CELL:
            text = text.replace("error", "err")
        return text[:CELL]

    def _line(self, label, cells):
        return (label.ljust(self.label) + "".join(" " + self._cell(c).rjust(CELL) for c in cells)).rstrip()

    def header(self):
        heads = [_head(i) for i in self.grid.columns]
        return "\n".join([self._line("", [h[0] for h in heads]), self._line("", [h[1] for h in heads])])

    def row(self, results):
        label, mark, cells = self.grid.row(results)
        out = []
        title = self.grid.titles[results[0]["workload"]]
        if title != self.shown:
            out.append(title)
            self.shown = title
        label = "  " + label
        mark = f"[{mark}]" if mark else ""
        under = ""  # the label column of the ratio line
        if len(label) > self.label:  # the label alone on its line, the cells below it
            out.append(label + (" " + mark if mark else ""))
            label, mark = "", ""
        elif mark and len(label) + 1 + len(mark) > self.label:
            under = "    " + mark
        elif mark:
            label += " " + mark
        out.append(self._line(label, [t for t, _ in cells]))
        if any(r for _, r in cells) or under:
            out.append(self._line(under, [r for _, r in cells]))
        return "\n".join(out)

    def footer(self):
        lines = []
        cores = self.grid.cores_row()
        if cores:
            lines += [self._line("cores used", cores), ""]
        wrap = textwrap.TextWrapper(self.width, subsequent_indent="    ")
        lines += wrap.wrap(self.grid.legend())
        for note in self.grid.notes.lines():
            lines += wrap.wrap(note)
        return "\n".join(lines)


def text(report, impls=None, width=WIDTH):
    """The whole comparison for a terminal (what the journey printed as it went)."""
    t = TextTable(report, impls, width)
    return "\n".join([t.header()] + [t.row(rs) for rs in _group(report)] + ["", t.footer()])


def machine_summary(report, width=None):
    """The machine's facts as a Markdown list; ``width`` wraps it for a terminal."""
    m = report["machine"]
    peak, bw = m["peak"], m["bandwidth"]
    threads = ", ".join(f"{k}={v}" for k, v in m["threads"].items() if v is not None and k != "note") \
        or "library defaults"
    if m["threads"].get("note"):
        threads += f" ({m['threads']['note']})"
    lines = [
        f"- CPU: {m['cpu_model']}" + (f" ({m['cpu_mhz']:.0f} MHz reported)" if m.get("cpu_mhz") else ""),
        f"- cores: {m['cores']['usable']} usable of {m['cores']['logical']}; threads: {threads}",
        f"- SIMD: {' '.join(m['isa']) or 'unknown'}",
        f"- Python {m['python']}, NumPy {m['numpy'] or 'absent'}, PyTorch {m['torch'] or 'absent'}",
    ]
    for pkg, info in m.get("simd", {}).items():
        lines.append(f"- {pkg}: SIMD path {info['path']} ({info['vector_bits']}-bit registers"
                     + (", forced by STAGEGRAD_SIMD" if info["forced"] else "")
                     + f"; this CPU runs {', '.join(info['supported'])}), OpenBLAS core {info['openblas_core']}")
    if peak["gflops"]:
        counts = [f"{g:.1f} GFLOP/s on {n} thread{'s' * (int(n) > 1)}"
                  for n, g in (peak.get("each") or {}).items()]
        lines.append(f"- FMA peak: {', '.join(counts) or format(peak['gflops'], '.1f') + ' GFLOP/s'} "
                     f"({peak['by']}; {peak['method']})")
    gemm = m.get("gemm") or {}  # absent from reports written before the peak was our own loop
    if gemm.get("gflops"):
        each = ", ".join(f"{name} {g:.1f}" for name, g in gemm["each"].items())
        lines.append(f"- BLAS GEMM, beside the peak: {gemm['gflops']:.1f} GFLOP/s ({each}; {gemm['method']})")
    if m.get("openblas_coretype"):
        lines.append(f"- OPENBLAS_CORETYPE={m['openblas_coretype']}: OpenBLAS (NumPy's and stage 3's) runs "
                     "that core's kernels, which may be narrower than this CPU's")
    if m.get("openblas_unpinned"):
        lines.append(f"- {unpinned_note(m)}")
    cache = m.get("cache_bandwidth") or {}  # absent from reports written before it was measured
    if bw["gbs"]:
        lines.append(f"- memory bandwidth: {bw['gbs']:.1f} GB/s ({bw['by']}; {bw['method']})")
    if cache.get("gbs"):
        lines.append(f"- cache bandwidth: {cache['gbs']:.1f} GB/s ({cache['by']}; {cache['method']})")
    if report.get("mnist_source"):  # absent from reports written before it was recorded
        lines.append(f"- MNIST training-run data: {report['mnist_source']}")
    if bw["gbs"] and peak["gflops"]:
        lines.append(f"- ridge point: {peak['gflops'] / bw['gbs']:.2f} FLOP/byte "
                     "(below it a kernel is bound by memory, above it by arithmetic)")
    if width:
        lines = [part for line in lines for part in textwrap.wrap(line, width, subsequent_indent="  ")]
    return "\n".join(lines)


def markdown(report):
    kind = "quick run" if report["quick"] else "full run"
    head = (f"Journey report ({kind}, {report['created']}, per-cell budget {report['budget_s']:g} s, "
            f"{report['wall_s']:.0f} s in all). Ratios compare times measured in this run; "
            "above 1x means faster.")
    return "\n\n".join([head, machine_summary(report), table(report)])


QUICK_HEADLINE = ("**These figures are from a quick run** (the smallest sizes, a few short samples "
                  "per cell): they show the shape of the journey, not numbers to quote. "
                  "`stagegrad docs --from out/journey` builds this page from a full `stagegrad journey`.")


def headline(report):
    """The landing page's measured ratios, as a Markdown table: for each workload, at the
    cell the speed-up ladder shows (the largest size the first stage completed), the fastest
    stage there, its speed-up over the first stage and its speed relative to each peer.

    Only results are quoted: the fastest stage is chosen among cells that are not doubted,
    and a ratio that is not a result (a doubted or unsteady cell, a peer more than
    ``plausibility.PEER_LIMIT`` times slower) is ``?`` with a note saying why. A quick
    run says so above the table."""
    labels = {i["name"]: i["label"] for i in report["implementations"]}
    ok = {(r["workload"], str(r["size"]), r["impl"]): r for r in report["results"] if r["status"] == "ok"}
    titles = {w["key"]: w["title"] for w in report["workloads"]}
    first = report["stages"][0] if report["stages"] else None
    peers = [i for i in report["implementations"] if i["kind"] == "peer"]
    notes = Notes()
    out = [QUICK_HEADLINE, ""] if report.get("quick") else []
    out += ["| workload | fastest stage | its speed-up over " + labels.get(first, "the first stage")
            + "".join(f" | vs {p['label']}" for p in peers) + " |",
            "|---|---|---:" + "|---:" * len(peers) + "|"]

    def quoted(slow, fast, where):
        if slow is None:
            return "—"
        doubt = plausibility.ratio_doubt(slow, fast)
        if doubt is None and (slow.get("unsteady") or fast.get("unsteady")):
            who = fast if fast.get("unsteady") else slow
            doubt = (f"{labels.get(who['impl'], who['impl'])}'s samples disagreed by "
                     f"{who.get('spread', 0):.1f}x even when measured again")
        if doubt:
            return f"? [{notes.mark(doubt, where)}]"
        return _ratio(slow["time_s"] / fast["time_s"])

    for w in report["workloads"]:
        base = [r for r in report["results"] if r["workload"] == w["key"] and r["impl"] == first
                and r["status"] == "ok"]
        if not base:
            continue
        size = str(base[-1]["size"])
        where = f"{titles[w['key']]}, {base[-1]['size_label']}"
        stages = [ok[(w["key"], size, s)] for s in report["stages"] if (w["key"], size, s) in ok]
        best = min([r for r in stages if not r.get("doubts")] or stages, key=lambda r: r["time_s"])
        vs = [ok.get((w["key"], size, p["name"])) for p in peers]
        out.append(f"| {titles[w['key']]}, {base[-1]['size_label']} | {best['label']} | "
                   f"{quoted(base[-1], best, where)}"
                   + "".join(f" | {quoted(p, best, where)}" for p in vs) + " |")
    out += ["", "A ratio above 1x means the stage is faster: over the first stage, the first stage's "
            "time divided by this stage's; against a peer, the peer's time divided by the stage's. Every "
            "ratio compares two times measured in the same run."]
    if notes.items:
        out += [""] + [f"- {line}" for line in notes.lines()]
    return "\n".join(out)


# ------------------------------------------------------------------ figures

def speedup_series(report):
    """For each workload, the cell at the largest size that stage 0 (the first stage)
    completed, and every implementation's speed-up over it there."""
    first = report["stages"][0] if report["stages"] else None
    ok = {(r["workload"], str(r["size"]), r["impl"]): r for r in report["results"] if r["status"] == "ok"}
    series = []
    for w in report["workloads"]:
        base = [r for r in report["results"] if r["workload"] == w["key"] and r["impl"] == first
                and r["status"] == "ok"]
        if not base:
            continue
        b = base[-1]  # sizes run in increasing order
        ups = {}
        for impl in report["implementations"]:
            r = ok.get((w["key"], str(b["size"]), impl["name"]))
            if r:
                ups[impl["name"]] = b["time_s"] / r["time_s"]
        series.append((f"{w['title']} ({b['size_label']})", ups))
    return series


def plot_speedups(report, path):
    """One line per workload through the stages (each stage's first GEMM; a second GEMM is
    a hollow marker beside it); the peers are not a next step, so they stand apart, right
    of the divider, as unconnected markers in the workload's colour."""
    from matplotlib.lines import Line2D
    plt = pyplot()
    impls = report["implementations"]
    packages = list(dict.fromkeys(i["package"] for i in impls if i["kind"] == "stage"))
    peers = [i for i in impls if i["kind"] == "peer"]
    firsts = {}
    for i in impls:
        if i["kind"] == "stage":
            firsts.setdefault(i["package"], i["name"])
    x_of = {}
    for i in impls:  # a stage's second GEMM sits just right of its first
        if i["kind"] == "stage":
            second = i["name"] != firsts[i["package"]]
            x_of[i["name"]] = packages.index(i["package"]) + (0.15 if second else 0)
    for k, i in enumerate(peers):
        x_of[i["name"]] = len(packages) + 0.5 + k
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    peer_marker = dict(zip([p["name"] for p in peers], "D^sv"))
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for n, (name, ups) in enumerate(speedup_series(report)):
        color = colors[n % len(colors)]
        line = [(x_of[i], ups[i]) for i in firsts.values() if i in ups]
        ax.plot([p[0] for p in line], [p[1] for p in line], marker="o", color=color, label=name)
        for i in impls:
            if i["name"] not in ups or i["name"] in firsts.values():
                continue
            hollow = i["kind"] == "stage"
            ax.plot([x_of[i["name"]]], [ups[i["name"]]], linestyle="",
                    marker="o" if hollow else peer_marker[i["name"]], color=color,
                    markerfacecolor="none" if hollow else color)
    ticks = [(packages.index(i["package"]), i["label"].partition(" (")[0]) for i in impls
             if i["name"] in firsts.values()] + [(x_of[p["name"]], p["label"]) for p in peers]
    ax.set_xticks([t[0] for t in ticks], [t[1] for t in ticks])
    if peers:
        ax.axvline(len(packages) - 0.25, color="grey", linestyle=":", linewidth=1)
        ax.text(len(packages) - 0.2, 0.98, "peers, for reference", transform=ax.get_xaxis_transform(),
                fontsize=8, color="grey", va="top")
    ax.set_yscale("log")
    first = next((i["label"] for i in impls if i["kind"] == "stage"), "the first stage")
    ax.set_ylabel(f"speed-up over {first} (log scale)")
    ax.set_title("The speed-up ladder: each workload at the largest size the first stage completed")
    ax.grid(True, which="both", axis="y", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if len(firsts) < sum(i["kind"] == "stage" for i in impls):
        gemm = next(i["label"] for i in impls if i["kind"] == "stage" and i["name"] not in firsts.values())
        handles.append(Line2D([], [], color="grey", marker="o", markerfacecolor="none", linestyle="",
                              label=f"hollow: the stage's other GEMM ({gemm.partition('(')[2].rstrip(')')})"))
    handles += [Line2D([], [], color="grey", marker=peer_marker[p["name"]], linestyle="", label=p["label"])
                for p in peers]
    ax.legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_roofline(report, path):
    """Achieved GFLOP/s against two roofs: DRAM bandwidth (the compulsory traffic of a
    large operand) and cache bandwidth (operands that stay in L2 can run above the first)."""
    plt = pyplot()
    peak = report["machine"]["peak"]["gflops"]
    bw = report["machine"]["bandwidth"]["gbs"]
    cache = (report["machine"].get("cache_bandwidth") or {}).get("gbs")
    fig, ax = plt.subplots(figsize=(9, 4.8))
    pts = [r for r in report["results"] if r["status"] == "ok" and r["flops"] and r["bytes"]]
    lo = min([r["flops"] / r["bytes"] for r in pts] + [0.05]) / 2
    hi = max([r["flops"] / r["bytes"] for r in pts] + [(peak / bw) if peak and bw else 1]) * 2
    handles = []
    if peak and bw:
        import numpy as np
        ai = np.geomspace(lo, hi, 200)
        handles += ax.plot(ai, np.minimum(peak, bw * ai), color="black", linewidth=2,
                           label=f"memory roof: {peak:.0f} GFLOP/s, {bw:.0f} GB/s")
        if cache:
            handles += ax.plot(ai, np.minimum(peak, cache * ai), color="black", linewidth=1, linestyle="--",
                               label=f"cache roof: {cache:.0f} GB/s (L2-resident copy)")
    # colour says which implementation, marker which workload
    from matplotlib.lines import Line2D
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    keys = [w["key"] for w in report["workloads"] if any(r["workload"] == w["key"] for r in pts)]
    titles = {w["key"]: w["title"] for w in report["workloads"]}
    marker = dict(zip(keys, "osD^v<>ph*"))
    for k, impl in enumerate(report["implementations"]):
        mine = [r for r in pts if r["impl"] == impl["name"]]
        color = colors[k % len(colors)]
        for r in mine:
            ax.scatter(r["flops"] / r["bytes"], r["flops"] / r["time_s"] / 1e9, marker=marker[r["workload"]],
                       color=color, alpha=0.85)
        if mine:
            handles.append(Line2D([], [], color=color, marker="o", linestyle="", label=impl["label"]))
    handles += [Line2D([], [], color="grey", marker=marker[k], linestyle="", label=titles[k]) for k in keys]
    ax.legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte of compulsory traffic)")
    ax.set_ylabel("achieved GFLOP/s (log scale)")
    ax.set_title("Achieved GFLOP/s against the measured roofs")
    note = ("Intensity counts each operand read once from memory. Operands small enough to stay in cache "
            "are not bound by memory bandwidth:\ntheir points can sit above the memory roof, up to the cache "
            "roof.")
    if peak and any(r["flops"] / r["time_s"] / 1e9 > 1.05 * peak for r in pts):
        # the peak is the best of a few GEMMs at the start: a busy machine measures it low
        note += " Points above the flat roof: the peak was measured while the machine was busy."
    fig.text(0.01, 0.01, note, fontsize=7, color="dimgrey", va="bottom")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
