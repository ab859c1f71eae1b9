"""Whether a journey measurement may be published: the checks a number must pass before a
table or the landing page quotes it.

- A cell whose samples disagree wildly (the slowest more than ``SPREAD_LIMIT`` times the
  fastest) was disturbed while it was timed: the journey measures it again, and a cell
  whose samples still disagree is *unsteady*; its time is shown, marked, and no headline
  quotes a ratio of it.
- A cell faster than the hardware allows (more FLOP/s than one core's measured FMA peak
  times the cores it was seen to use) is *doubted*: it is not a result, and no ratio of
  it is printed.
- A ratio in which a peer trails a stage by more than ``PEER_LIMIT`` times is not a
  result either: NumPy and PyTorch call the same kinds of kernels as the fast stages, so
  a gap that wide is a stall, not a speed-up.
"""

SPREAD_LIMIT = 3.0    # slowest sample over fastest beyond which a cell is measured again
PEER_LIMIT = 1000.0   # a peer this many times slower than a stage is a stall, not a result
PEAK_SLACK = 1.15     # the peak is the best of a few runs: a GEMM may land a little above it


def spread(samples):
    """The slowest sample over the fastest (1.0 for fewer than two samples)."""
    if len(samples) < 2 or min(samples) <= 0:
        return 1.0
    return max(samples) / min(samples)


def disagrees(samples, limit=SPREAD_LIMIT):
    """Whether the samples of one measurement disagree beyond ``limit``."""
    return spread(samples) > limit


def above_peak(cell, per_core_peak):
    """Why ``cell`` (a journey result) is faster than the hardware allows, or None: its
    FLOP/s over one core's FMA peak times the cores it used (at least one)."""
    if cell.get("status") != "ok" or not cell.get("flops") or not per_core_peak:
        return None
    gflops = cell["flops"] / cell["time_s"] / 1e9
    cores = max(1.0, cell.get("cores") or 1.0)
    if gflops <= PEAK_SLACK * per_core_peak * cores:
        return None
    return (f"{gflops:,.0f} GFLOP/s on {cores:.1f} core(s) is above the FMA peak of that many "
            f"({per_core_peak:,.0f} GFLOP/s per core): not a result")


def check(report):
    """Set every ok cell's ``doubts`` (the reasons it is not a result; empty if none),
    from the report's per-core peak and the cores each cell used."""
    peak = (report.get("machine") or {}).get("peak") or {}
    for r in report["results"]:
        if r["status"] != "ok":
            continue
        reason = above_peak(r, peak.get("per_core"))
        r["doubts"] = [reason] if reason else []


def ratio_doubt(slow, fast):
    """Why the ratio ``slow`` time over ``fast`` time (two ok cells) is not a result, or
    None: either cell is doubted, or a peer trails a stage by more than ``PEER_LIMIT``."""
    for cell in (slow, fast):
        if cell.get("doubts"):
            return cell["doubts"][0]
    ratio = slow["time_s"] / fast["time_s"]
    if slow.get("kind") == "peer" and fast.get("kind") == "stage" and ratio > PEER_LIMIT:
        return (f"a peer {ratio:,.0f}x slower than a stage is beyond what the hardware allows "
                f"(more than {PEER_LIMIT:,.0f}x): a stall, not a result")
    return None
