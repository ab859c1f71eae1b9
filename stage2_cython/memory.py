"""Memory statistics and the pool's settings (``sg.memory``), as every stage offers them.

Stage 2's pool (``_storage.pyx``) keeps freed 64-byte-aligned blocks by size class:
multiples of 64 bytes up to 1 KiB, then eight classes per power of two, so a request is
served by a block at most 12.5% larger. ``stats()`` counts storages: ``allocations`` (each
new storage), of which ``hits`` reused a pooled block and ``misses`` allocated one;
``bytes_in_use`` (bytes asked for by live storages) and its peak; ``bytes_held_by_pool``
(the pooled blocks' sizes). Until ``set_pool_limit`` fixes a limit, the pool holds at most
twice as much as the program has ever had in use at once, and at least ``DEFAULT_LIMIT``:
enough for a training loop to reuse every block from its second step on.
"""
from stage2_cython import _storage

DEFAULT_LIMIT = _storage.DEFAULT_LIMIT


def stats():
    return _storage.stats()


def reset_stats():
    """Zero the counters; the peak restarts from what is in use now."""
    _storage.reset_stats()


def empty_cache():
    """Release every block the pool holds."""
    _storage.empty_cache()


def set_pool_enabled(enabled):
    """Turn reuse on or off; off also empties the pool."""
    _storage.set_enabled(enabled)


def set_pool_limit(nbytes):
    """Hold at most ``nbytes`` in the pool from now on (instead of the program's peak use),
    evicting the largest blocks first."""
    _storage.set_limit(nbytes)
