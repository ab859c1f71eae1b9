"""Rendering a journey report: the Markdown table and the two figures."""
from .journey import fmt_seconds

COLUMNS = ("workload", "size", "implementation", "time", "rate", "vs previous stage", "vs PyTorch", "note")


def _ratio(x):
    if x is None:
        return "—"
    return f"{x:,.0f}x" if x >= 1000 else f"{x:.3g}x"


def _rate(r):
    if r["rate"] is None:
        return "—"
    unit = r["metric"]
    value = r["rate"]
    if unit == "samples/s":
        return f"{value:,.0f} samples/s"
    if value < 0.01:  # pure-Python rates read better in mega-units
        return f"{value * 1e3:.3g} {unit.replace('G', 'M', 1)}"
    return f"{value:.3g} {unit}"


def _note(r):
    if r["status"] != "ok":
        return f"{r['status']}: {r['reason']}"
    parts = []
    if "loss" in r.get("extra", {}):
        parts.append(f"loss reached {r['extra']['loss']:.4f}")
    if r.get("note"):
        parts.append(r["note"])
    return "; ".join(parts)


def rows(report, impls=None, workloads=None):
    """The table's rows (lists of strings), optionally for some implementations only."""
    titles = {w["key"]: w["title"] for w in report["workloads"]}
    out = []
    for r in report["results"]:
        if impls is not None and r["impl"] not in impls:
            continue
        if workloads is not None and r["workload"] not in workloads:
            continue
        ok = r["status"] == "ok"
        out.append([titles[r["workload"]], r["size_label"], r["label"],
                    fmt_seconds(r["time_s"]) if ok else "skipped" if r["status"] == "skipped" else "—",
                    _rate(r) if ok else "—", _ratio(r["speedup_prev"]), _ratio(r["vs_torch"]), _note(r)])
    return out


def table(report, impls=None, workloads=None):
    """A Markdown table, its columns padded so it also reads well in a terminal."""
    body = rows(report, impls, workloads)
    widths = [max(len(c), *(len(row[i]) for row in body)) if body else len(c) for i, c in enumerate(COLUMNS)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [line(COLUMNS), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(row) for row in body]
    return "\n".join(out)


def machine_summary(report):
    m = report["machine"]
    peak, bw = m["peak"], m["bandwidth"]
    threads = ", ".join(f"{k}={v}" for k, v in m["threads"].items() if v is not None) or "library defaults"
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
        lines.append(f"- practical FMA peak: {peak['gflops']:.1f} GFLOP/s ({peak['by']}; {peak['method']})")
    if bw["gbs"]:
        lines.append(f"- memory bandwidth: {bw['gbs']:.1f} GB/s ({bw['by']}; {bw['method']})")
        if peak["gflops"]:
            lines.append(f"- ridge point: {peak['gflops'] / bw['gbs']:.2f} FLOP/byte "
                         "(below it a kernel is bound by memory, above it by arithmetic)")
    return "\n".join(lines)


def markdown(report):
    kind = "quick run" if report["quick"] else "full run"
    head = (f"Journey report ({kind}, {report['created']}, per-cell budget {report['budget_s']:g} s, "
            f"{report['wall_s']:.0f} s in all). Ratios compare times measured in this run; "
            "above 1x means faster.")
    return "\n\n".join([head, machine_summary(report), table(report)])


# ------------------------------------------------------------------ figures

def _pyplot():
    import matplotlib
    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt
    return plt


def ladder_series(report):
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
        series.append((f"{w['key']} ({b['size_label']})", ups))
    return series


def plot_ladder(report, path):
    plt = _pyplot()
    impls = report["implementations"]
    fig, ax = plt.subplots(figsize=(10, 4.8))
    xs = list(range(len(impls)))
    for name, ups in ladder_series(report):
        pts = [(x, ups[i["name"]]) for x, i in zip(xs, impls) if i["name"] in ups]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_yscale("log")
    ax.set_xticks(xs, [i["label"] for i in impls])
    n_stages = len(report["stages"])
    if 0 < n_stages < len(impls):
        ax.axvline(n_stages - 0.5, color="grey", linestyle=":", linewidth=1)  # stages | peers
    ax.set_ylabel(f"speed-up over {impls[0]['label']} (log scale)" if impls else "speed-up")
    ax.set_title("The speed-up ladder: each cell at the largest size the first stage completed")
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_roofline(report, path):
    plt = _pyplot()
    peak = report["machine"]["peak"]["gflops"]
    bw = report["machine"]["bandwidth"]["gbs"]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    pts = [r for r in report["results"] if r["status"] == "ok" and r["flops"] and r["bytes"]]
    lo = min([r["flops"] / r["bytes"] for r in pts] + [0.05]) / 2
    hi = max([r["flops"] / r["bytes"] for r in pts] + [(peak / bw) if peak and bw else 1]) * 2
    if peak and bw:
        import numpy as np
        ai = np.geomspace(lo, hi, 200)
        ax.plot(ai, np.minimum(peak, bw * ai), color="black", linewidth=2,
                label=f"roofline: {peak:.0f} GFLOP/s, {bw:.0f} GB/s")
    # colour says which implementation, marker which workload
    from matplotlib.lines import Line2D
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    keys = [w["key"] for w in report["workloads"] if any(r["workload"] == w["key"] for r in pts)]
    marker = dict(zip(keys, "osD^v<>ph*"))
    handles = [ax.get_lines()[0]] if ax.get_lines() else []
    for k, impl in enumerate(report["implementations"]):
        mine = [r for r in pts if r["impl"] == impl["name"]]
        color = colors[k % len(colors)]
        for r in mine:
            ax.scatter(r["flops"] / r["bytes"], r["flops"] / r["time_s"] / 1e9, marker=marker[r["workload"]],
                       color=color, alpha=0.85)
        if mine:
            handles.append(Line2D([], [], color=color, marker="o", linestyle="", label=impl["label"]))
    handles += [Line2D([], [], color="grey", marker=marker[k], linestyle="", label=k) for k in keys]
    ax.legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte of compulsory traffic)")
    ax.set_ylabel("achieved GFLOP/s (log scale)")
    ax.set_title("Achieved GFLOP/s against the measured roofline")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
