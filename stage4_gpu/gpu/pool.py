"""The caching allocator's free lists: a device buffer freed by a dying tensor is kept for
the next request of its size class, because creating a device buffer costs far more than
a kernel on a small tensor. The WebGPU runtime allocates through it; CuPy brings the same
design (its memory pool) to the CUDA device."""

_MIN_BYTES = 16
_MIB = 1 << 20


def size_class(nbytes):
    """Bytes actually allocated for a request: a power of two up to 1 MiB, then whole MiB,
    so that buffers of nearby sizes are interchangeable in the pool."""
    n = max(nbytes, _MIN_BYTES)
    if n <= _MIB:
        return 1 << (n - 1).bit_length()
    return -(-n // _MIB) * _MIB


class CachingPool:
    """Free device buffers by size class; ``pooled_bytes`` counts what is held."""

    def __init__(self):
        self._free = {}  # size class -> buffers ready for reuse
        self.pooled_bytes = 0

    def take(self, size):
        """A free buffer of the size class ``size``, or None."""
        free = self._free.get(size)
        if not free:
            return None
        self.pooled_bytes -= size
        return free.pop()

    def give(self, buf, size):
        """Keep ``buf`` (of the size class ``size``) for reuse."""
        self._free.setdefault(size, []).append(buf)
        self.pooled_bytes += size

    def drain(self):
        """Every buffer held, handed over for the driver to destroy; the pool is then empty."""
        bufs = [b for group in self._free.values() for b in group]
        self._free.clear()
        self.pooled_bytes = 0
        return bufs
