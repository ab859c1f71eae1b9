"""How the stage-measuring tools (``measure_stage1.py``, ``measure_stage2.py``) time and print:
``best``, the best seconds per call on the measuring library's timer (``stagegrad.measure``),
and ``fmt``, a time in its unit. Run from the checkout: each tool puts its root on the path."""
from stagegrad.measure import calls_lasting, seconds_per_call


def best(fn, repeat, number=None):
    """Seconds per call, best of ``repeat`` runs of ``number`` calls (by default as many as
    last about 0.2 s, so that a short op is not timed one call at a time)."""
    if number is None:
        number = calls_lasting(fn, 0.2, warmup=0)
    return seconds_per_call(fn, repeat, "best", number=number, warmup=0)


def fmt(seconds):
    """``seconds`` with three significant digits, in s, ms, us or ns."""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"
