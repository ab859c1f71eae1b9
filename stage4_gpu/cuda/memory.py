"""Tensors' memory on the CUDA device: a ``Storage`` (``../_device_memory.pyx``) holds one
block of the runtime's caching allocator, shared by every view of it, and goes back to
that allocator's free list when it dies; ``Memory`` is the driver's part that allocates,
uploads and downloads (``gpu/driver.py``).

Element types: bool (one byte, as on the host), uint8, int8, int16, int32, int64, float16,
bfloat16, float32 and float64, each the C type ``kernels.CTYPE`` names: unlike WGSL, CUDA
has 64-bit floats and byte-addressed 1- and 2-byte elements, so float64 and the small
integers live on this device as on the host, and the 2-byte floats are stored as their bits.

Copies between a host tensor and the device run straight between the host buffer's memory
and the device array (``upload_buffer``, ``download_into``): one DMA each, no NumPy array
or bytes object in between. A host tensor may live in page-locked memory
(``pinned_empty``: CuPy's pinned pool, wrapped as a host storage that frees it back to the
pool when the storage dies); from or into such memory a copy need not block the host.
"""
from ..capabilities import CapabilityError
from .kernels import CTYPE
from .runtime import runtime

_NUMPY = {}  # dtype -> its NumPy dtype (see _numpy)


def _numpy(dtype):
    """The NumPy dtype of ``dtype``'s elements (CuPy arrays are typed by it): a bfloat16
    array holds its bits as uint16, NumPy having no bfloat16."""
    found = _NUMPY.get(dtype)
    if found is None:
        found = _NUMPY[dtype] = runtime().np.dtype("uint16" if dtype.name == "bfloat16" else dtype.name)
    return found


def bfloat16_bits(np, values):
    """float32 ``values`` narrowed to bfloat16 bits, as common.cuh's float_to_bf16_bits
    does on the device (to nearest even, a NaN kept quiet)."""
    u = np.asarray(values, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where((u & 0x7FFFFFFF) > 0x7F800000, ((u >> 16) | 0x40).astype(np.uint16), rounded)


class Memory:
    """The CUDA driver's memory hooks (see ``gpu.driver.Driver``)."""

    def check_dtype(self, dtype, op):
        """Refuse a dtype the device cannot hold, naming it."""
        if dtype.name not in CTYPE:
            raise CapabilityError(f"{op}: {dtype.name} tensors are not supported on the cuda device (the "
                                  f"cuda device lacks {dtype.name}: its LACKS names it)")

    def itemsize(self, dtype):
        """Bytes per element: the host's."""
        return dtype.itemsize

    def allocate(self, n, dtype):
        """A storage for ``n`` elements, from the runtime's caching allocator (while a CUDA
        graph is captured, from the graph's pool)."""
        return runtime().allocator().allocate(n, _numpy(dtype))

    def upload(self, raw, dtype):
        """A storage holding ``raw``, copied on the runtime's stream."""
        rt = runtime()
        host = rt.np.frombuffer(raw, dtype=_numpy(dtype))
        storage = self.allocate(host.size, dtype)
        rt.upload_into(storage.array, host)
        return storage

    def download(self, x):
        """The elements of the contiguous view x, as a NumPy array (the host waits)."""
        return runtime().download(x.storage.array, x.offset, x.numel,
                                  f"a read of {x.numel} element(s) back to the host (item, tolist)")

    def upload_buffer(self, host, non_blocking=False):
        """A storage holding the host buffer ``host``'s elements (row-major), copied from its
        memory. From page-locked memory the copy is queued on the stream and, with
        ``non_blocking``, not waited for (the runtime keeps ``host`` alive until it is done);
        without, the host waits, so that ``host`` may be written at once, as in PyTorch. From
        pageable memory the driver stages the bytes before returning either way."""
        from ..backend import cpu  # the host backend imports this package
        host = cpu.contiguous(host)
        storage = self.allocate(host.numel, host.dtype)
        rt = runtime()
        ptr = cpu.data_ptr(host)
        pinned = rt.is_pinned(ptr)
        rt.copy_to_device(storage.array, ptr, host.numel * host.dtype.itemsize, hold=host if pinned else None)
        if pinned and not non_blocking:
            rt.synchronize("a blocking copy to the device")
        return storage

    def download_into(self, x, dst, non_blocking=False):
        """Copy the view ``x``'s elements into the contiguous host buffer ``dst`` (same shape
        and dtype), after every launch queued before. With ``non_blocking`` and ``dst`` in
        page-locked memory the copy is only queued: ``dst`` holds the values after the next
        ``synchronize()``. Otherwise the host waits here."""
        from ..backend import cpu  # the host backend imports this package
        from ..gpu.movement import contiguous  # the movement kernels build on this package
        x = contiguous(x)
        rt = runtime()
        ptr = cpu.data_ptr(dst)
        wait = not (non_blocking and rt.is_pinned(ptr))
        rt.copy_to_host(x.storage.array, x.offset, x.numel * x.dtype.itemsize, ptr,
                        hold=None if wait else dst)
        if wait:
            rt.synchronize("a blocking copy to the host")

    def data_ptr(self, x):
        """The element's device address (CuPy's pointer into the pool), as PyTorch's data_ptr."""
        return x.address


# ---------------------------------------------------------------- page-locked host memory

def pinned_empty(shape, dtype):
    """A new contiguous host buffer of ``shape`` and ``dtype`` (contents undefined) whose
    storage is a block of page-locked memory from CuPy's pinned pool: the storage keeps the
    block, and the block goes back to the pool when the last view of the storage dies."""
    from ..backend import cpu  # the host backend imports this package
    n = 1
    for s in shape:
        n *= s
    nbytes = n * dtype.itemsize
    block = runtime().alloc_pinned(max(nbytes, dtype.itemsize))
    # the pool rounds sizes up: the storage spans the elements asked for (one, for none),
    # and holds the block through the memoryview
    flat = cpu.from_buffer(memoryview(block).cast("B")[:max(nbytes, dtype.itemsize)], dtype)
    return cpu.reshape(flat if n else cpu.slice(flat, (0,), (1,), (0,)), tuple(shape))


def is_pinned(host):
    """Whether the host buffer ``host``'s elements lie in page-locked memory."""
    from ..backend import cpu  # the host backend imports this package
    return runtime().is_pinned(cpu.data_ptr(host))
