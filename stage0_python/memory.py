"""Memory statistics, as every stage reports them (``sg.memory.stats()``).

Stage 0 has no buffer pool: every result gets a fresh array, so ``hits`` stays 0 and the
pool holds 0 bytes. The pool settings are accepted (a program written for a later stage
runs unchanged) and have nothing to act on. What it does count is real: each array the
backend allocates, and the bytes of those still alive (a weak reference sees each die).
"""
import weakref

# the program's calls; ``track`` is the backend's
__all__ = ["stats", "reset_stats", "empty_cache", "set_pool_enabled", "set_pool_limit"]

_live = set()  # ids of the arrays being counted
_refs = {}  # id(weak reference) -> (id(array), nbytes, weak reference)
_counts = {"allocations": 0, "bytes_in_use": 0, "peak_bytes_in_use": 0}


def track(arr):
    """Count ``arr`` once, however many buffers share it."""
    key = id(arr)
    if key in _live:
        return
    nbytes = len(arr) * arr.itemsize
    _live.add(key)
    ref = weakref.ref(arr, _freed)
    _refs[id(ref)] = (key, nbytes, ref)
    c = _counts
    c["allocations"] += 1
    c["bytes_in_use"] += nbytes
    if c["bytes_in_use"] > c["peak_bytes_in_use"]:
        c["peak_bytes_in_use"] = c["bytes_in_use"]


def _freed(ref):
    key, nbytes, _ = _refs.pop(id(ref))
    _live.discard(key)
    _counts["bytes_in_use"] -= nbytes


def stats():
    """The allocator's counters, a dict: pool ``hits`` and ``misses``, ``allocations`` and
    ``peak_bytes_in_use`` (both since ``reset_stats``), ``bytes_in_use`` and ``bytes_held_by_pool``.
    Stage 0 has no pool, so ``hits`` and the pool's bytes stay 0."""
    c = _counts
    return {"hits": 0, "misses": c["allocations"], "allocations": c["allocations"],
            "bytes_in_use": c["bytes_in_use"], "peak_bytes_in_use": c["peak_bytes_in_use"],
            "bytes_held_by_pool": 0}


def reset_stats():
    """Zero the counters; the peak restarts from what is in use now."""
    _counts["allocations"] = 0
    _counts["peak_bytes_in_use"] = _counts["bytes_in_use"]


def empty_cache():
    """Release what the pool holds: nothing, here."""


def set_pool_enabled(enabled):
    """There is no pool to switch: results are always fresh arrays."""


def set_pool_limit(nbytes):
    """Any limit holds: the pool is always empty. Checked as later stages check it."""
    if nbytes < 0:
        raise ValueError(f"set_pool_limit: the limit must be >= 0 bytes, got {nbytes}")
