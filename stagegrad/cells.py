"""A measured cell as the tables show it: the marks after its time and the notes that explain
them, its rates (GFLOP/s, the share of the FMA peak, PyTorch's time over its own), and the
sentences the tables of ``models`` and ``conv-ladder`` share (a thread count's heading, the
OpenBLAS pins unset for the run). How a cell is timed is ``measure``'s."""
from . import plausibility

# the tables' note on a cell marked ~ (steady's ``unsteady``)
UNSTEADY_NOTE = (f"~: unsteady: the samples disagreed by more than {plausibility.SPREAD_LIMIT:g}x even when "
                 "measured again; the median of them all is shown.")
# ... and on a cell marked * (time_calls' ``note``: not even one sample fitted after the warm-up)
SINGLE_NOTE = "*: a single call, warm-up included (one call took the whole budget)."


def cell_marks(row):
    """The marks after a cell's time: ``*`` for a single call (``SINGLE_NOTE``), ``~`` for
    unsteady samples (``UNSTEADY_NOTE``)."""
    return ("*" if row.get("note") else "") + ("~" if row.get("unsteady") else "")


def mark_notes(rows, single=SINGLE_NOTE):
    """The notes on the marks that ``rows`` carry (``cell_marks``), ``single`` saying what a
    single call was."""
    return (([single] if any(r.get("note") for r in rows) else [])
            + ([UNSTEADY_NOTE] if any(r.get("unsteady") for r in rows) else []))


def failure_notes(rows, where):
    """A note for each cell of ``rows`` that failed or was wrong: its label, ``where(cell)``
    (what it measured), its thread count, its status and the reason."""
    return [f"{r['label']}, {where(r)}, {r['threads']} thread(s): {r['status']}: {r['reason']}"
            for r in rows if r["status"] != "ok"]


def rates(row, flops, peak):
    """Set a cell's ``flops``, its ``gflops`` (``flops`` over its time) and ``of_peak`` (that
    over ``peak["gflops"]``, where the peak was measured); the two are None for a cell that
    did not run or has no FLOP count."""
    row["flops"] = flops
    row["gflops"] = row["of_peak"] = None
    if row["status"] == "ok" and flops:
        row["gflops"] = flops / row["time_s"] / 1e9
        if peak.get("gflops"):
            row["of_peak"] = row["gflops"] / peak["gflops"]


def vs_torch(cells):
    """Set each of ``cells``' ``vs_torch``: PyTorch's time (its cell among them) over the
    cell's, both measured in this run; above 1 the cell is faster. None where either did not run."""
    torch = next((r for r in cells if r["impl"] == "torch" and r["status"] == "ok"), None)
    for r in cells:
        r["vs_torch"] = torch["time_s"] / r["time_s"] if torch and r["status"] == "ok" else None


def threads_heading(n, peak, torch):
    """The sentence over a table's section measured on ``n`` threads: how every library was
    set to them (PyTorch too where ``torch``), and the FMA ``peak`` on as many."""
    where = f"{peak['gflops']:.1f} GFLOP/s ({peak['by']})" if peak.get("gflops") else "not measured"
    plural = "s" * (n > 1)
    torch = f"`torch.set_num_threads({n})`, " if torch else ""
    return (f"**{n} thread{plural}** on every side: {torch}`sg.set_num_threads({n})` and `OMP_NUM_THREADS`, "
            f"`OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS` = {n}. The float32 FMA peak on {n} thread{plural}: "
            f"{where}.")


def unpinned_note(facts):
    """What a report says of the OpenBLAS pins the command unset (``cli.OPENBLAS_PINS``), from
    the machine's ``facts`` (``machine.describe()``), which must record some."""
    return (f"unset for this run: {facts['openblas_unpinned']} (the host's pin of OpenBLAS to an older "
            "core's kernels), so that OpenBLAS runs this CPU's own")
