"""The buffer pool: arrays of dead storages, kept by size class and handed to the next
storage of that class instead of a fresh allocation.

A size class is an exact (typecode, length) pair. An ``array.array`` cannot be split,
and a longer array would make every "the whole storage" fast path slice; training
loops allocate the same shapes every step, so exact classes are the ones they hit.

An array enters the pool only from ``Storage.__del__``: its storage is dead, so no
tensor or view can still reach it (every array belongs to exactly one storage). The
finaliser only appends to a deque, which is atomic and takes no lock, because a
finaliser can run inside any other pool call, in any thread; the queue is sorted into
classes under the lock at the next allocation or ``stats()``.
"""
import threading
from array import array
from collections import deque

DEFAULT_LIMIT = 256 * 2**20  # bytes the pool may hold


class Pool:
    def __init__(self, limit=DEFAULT_LIMIT):
        self._lock = threading.Lock()
        self._free = {}  # (typecode, length) -> [array]
        self._returned = deque()
        self.enabled = True
        self.limit = limit
        self.held = 0
        self._reset()

    def _reset(self):
        self.hits = self.misses = 0
        self.in_use = 0
        self.peak = 0

    # ------------------------------------------------------------ storage side

    def take(self, typecode, n, itemsize):
        """An array of ``n`` elements: a pooled one (old contents) or a fresh zeroed one."""
        nbytes = n * itemsize
        with self._lock:
            if self._returned:
                self._drain()
            bucket = self._free.get((typecode, n))
            if bucket:
                arr = bucket.pop()
                self.held -= nbytes
                self.hits += 1
            else:
                arr = None
                self.misses += 1
            self._count(nbytes)
        return arr if arr is not None else array(typecode, [0]) * n

    def give(self, arr):
        """Called by a dying storage: queue its array (no lock, see the module doc)."""
        self._returned.append(arr)

    def _count(self, nbytes):
        self.in_use += nbytes
        if self.in_use > self.peak:
            self.peak = self.in_use

    def _drain(self):
        # called with the lock held
        returned = self._returned
        while returned:
            arr = returned.popleft()
            nbytes = len(arr) * arr.itemsize
            self.in_use -= nbytes
            if nbytes and self.enabled and self.held + nbytes <= self.limit:
                self._free.setdefault((arr.typecode, len(arr)), []).append(arr)
                self.held += nbytes

    # ------------------------------------------------------------ user side

    def stats(self):
        with self._lock:
            self._drain()
            return {"hits": self.hits, "misses": self.misses, "allocations": self.hits + self.misses,
                    "bytes_in_use": self.in_use, "peak_bytes_in_use": self.peak,
                    "bytes_held_by_pool": self.held}

    def reset_stats(self):
        """Zero the counters; the peak restarts from what is in use now."""
        with self._lock:
            self._drain()
            in_use = self.in_use
            self._reset()
            self.in_use = self.peak = in_use

    def empty_cache(self):
        with self._lock:
            self._drain()
            self._free.clear()
            self.held = 0

    def set_enabled(self, enabled):
        with self._lock:
            self.enabled = bool(enabled)
            if not self.enabled:
                self._drain()
                self._free.clear()
                self.held = 0

    def set_limit(self, nbytes):
        if nbytes < 0:
            raise ValueError(f"set_pool_limit: the limit must be >= 0 bytes, got {nbytes}")
        with self._lock:
            self._drain()
            self.limit = int(nbytes)
            self._free = {k: v for k, v in self._free.items() if v}
            # evict the largest classes first: they free the most for the fewest reuses lost
            for key in sorted(self._free, key=lambda k: -k[1] * self._free[k][0].itemsize):
                bucket = self._free[key]
                while bucket and self.held > self.limit:
                    arr = bucket.pop()
                    self.held -= len(arr) * arr.itemsize
                if not bucket:
                    del self._free[key]


POOL = Pool()
