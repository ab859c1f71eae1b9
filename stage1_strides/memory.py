"""Memory statistics and the pool's settings (``sg.memory``), as every stage offers them.

``stats()`` counts storages: ``allocations`` (each new storage), of which ``hits`` reused
an array from the pool and ``misses`` allocated one; ``bytes_in_use`` by live storages and
its peak; ``bytes_held_by_pool``, arrays kept for reuse.
"""
from .pool import POOL


def stats():
    return POOL.stats()


def reset_stats():
    """Zero the counters; the peak restarts from what is in use now."""
    POOL.reset_stats()


def empty_cache():
    """Release every array the pool holds."""
    POOL.empty_cache()


def set_pool_enabled(enabled):
    """Turn reuse on or off; off also empties the pool."""
    POOL.set_enabled(enabled)


def set_pool_limit(nbytes):
    """Hold at most ``nbytes`` in the pool, evicting the largest arrays first."""
    POOL.set_limit(nbytes)
