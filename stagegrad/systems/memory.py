"""Memory and the operating system: page faults per training step with the pool on and off,
and the first touch of fresh memory on 4 KiB and 2 MiB pages."""
import json
import mmap
import time
from pathlib import Path

from .. import load_stage
from .common import MIB, child, faults, rss_mib, stage3, titled


@titled("Page faults per training step, with the buffer pool on and off")
def page_faults(quick, out=None):
    """Each stage runs the MLP training step (784-128-10, batch 64, AdamW) in a process of its
    own, in three settings: its buffer pool on (as shipped); off
    (``sg.memory.set_pool_enabled(False)``), so that every buffer comes from the C allocator,
    which keeps freed memory for reuse itself below its mmap threshold; and off with that
    threshold fixed at 128 KiB (``MALLOC_MMAP_THRESHOLD_``), so that every larger buffer is a
    fresh mapping from the kernel. Fresh memory faults on its first touch, a minor fault per
    4 KiB page: a trap, a zeroed page and a page-table update. Major faults (pages read from
    disk) should be zero in every setting. Stage 0 keeps Python lists, whose memory Python's
    own allocator reuses."""
    stages = ("2", "3") if quick else ("0", "1", "2", "3")
    rows = []
    for stage in stages:
        steps = 2 if stage in ("0", "1") else (5 if quick else 20)
        on = None
        for label, pool, env in SETTINGS:
            code = (f"from stagegrad.systems.memory import fault_child; "
                    f"fault_child('{stage}', {pool}, {steps})")
            c = child(code, env)
            on = on or c
            rows.append([f"stage {stage}", label, f"{c['minor']:.0f}", f"{c['major']:.0f}",
                         f"{c['rss_mib']:.0f}", f"{c['ms']:.2f}", f"{c['ms'] / on['ms']:.2f}x"])
    return {"head": ["stage", "pool", "minor faults / step", "major faults / step", "resident MiB",
                     "ms / step", "time vs pool on"], "rows": rows,
            "note": "glibc's malloc keeps freed memory for reuse itself unless a block is above its mmap "
                    "threshold, which it raises to the largest block freed so far (up to 32 MiB); "
                    "MALLOC_MMAP_THRESHOLD_ fixes it, so that every larger block is a fresh mapping"}


# the pool's settings the page-fault experiment compares: label, pool on, environment
SETTINGS = (("on", True, {}), ("off", False, {}),
            ("off, blocks over 128 KiB from the kernel", False, {"MALLOC_MMAP_THRESHOLD_": "131072"}))


def fault_child(stage, pool, steps):
    """In a child process: the MLP step on ``stage`` with the pool on or off; prints JSON."""
    from .. import workloads
    sg = load_stage(stage)
    sg.memory.set_pool_enabled(pool)
    step = workloads.build_mlp_step(workloads.Impl(sg.__name__), workloads.MLP_BATCH)
    for _ in range(2):  # warm-up: the pool fills, lazy imports and code paths load
        step()
    (minor0, major0), t0 = faults(), time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - t0
    minor1, major1 = faults()
    print(json.dumps({"minor": (minor1 - minor0) / steps, "major": (major1 - major0) / steps,
                      "rss_mib": rss_mib(), "ms": seconds / steps * 1e3}))


@titled("First touch: fresh memory against reused, on 4 KiB and 2 MiB pages")
def first_touch(quick, out=None):
    """Stage 3 fills a fresh anonymous mapping (``sg.frombuffer`` over it, then ``fill_``), then
    fills it again. Fresh memory costs a minor fault per page on its first touch: a trap, a
    zeroed page and a page-table update, before the write itself; the second fill writes at
    memory speed. That difference is what a pool saves each time it hands back a block instead
    of asking the kernel. ``madvise`` then asks for transparent huge pages: one fault maps
    2 MiB instead of 4 KiB (512 times fewer), and the kernels that stream through the buffer
    afterwards need fewer TLB entries; but a fault must find (or compact) 2 MiB of contiguous
    memory. Linux grants them only where ``/sys/kernel/mm/transparent_hugepage/enabled`` says
    ``always`` or ``madvise``."""
    sg = stage3()
    setting = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    try:
        mode = setting.read_text().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        mode = "absent"
    kinds = [("4 KiB pages", getattr(mmap, "MADV_NOHUGEPAGE", None))]
    if mode in ("always", "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        kinds.append(("2 MiB pages", mmap.MADV_HUGEPAGE))
    mib = 32 if quick else 128
    rows = []
    for label, advice in kinds:
        runs = []
        for _ in range(2 if quick else 3):  # a fresh mapping each time
            # private: shared anonymous memory is shmem's, whose huge pages follow another setting
            m = mmap.mmap(-1, mib * MIB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if advice is not None:
                m.madvise(advice)
            view = sg.frombuffer(m, dtype=sg.uint8)
            huge0 = _anon_huge_mib()
            fills = []
            for value in (1, 2):
                f0, t0 = faults()[0], time.perf_counter()
                view.fill_(value)
                fills.append((time.perf_counter() - t0, faults()[0] - f0))
            runs.append((fills, _anon_huge_mib() - huge0))
            del view
            m.close()
        (first, touched), (second, _) = min(r[0] for r in runs)
        huge = max(r[1] for r in runs)
        per_fault = first * 1e9 / max(touched, 1)
        rows.append([label, f"{first * 1e3:.2f}", f"{touched}", f"{per_fault:.0f}", f"{second * 1e3:.2f}",
                     f"{first / second:.1f}x", f"{huge:.0f}"])
    note = f"{mib} MiB, best of {len(runs)}; transparent huge pages: `{mode}`"
    if len(kinds) == 1:
        note += " (no 2 MiB row: the system grants none)"
    return {"head": ["mapping", "first fill ms", "minor faults", "ns per fault (whole fill)",
                     "second fill ms", "first over second", "MiB on huge pages"], "rows": rows, "note": note}


def _anon_huge_mib():
    """MiB of this process's anonymous memory on huge pages (NaN where Linux does not say)."""
    try:
        text = Path("/proc/self/smaps_rollup").read_text()
    except OSError:  # no smaps_rollup: an older kernel
        return float("nan")
    for line in text.splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1]) / 1024
    return float("nan")
