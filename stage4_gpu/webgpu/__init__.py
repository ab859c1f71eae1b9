"""``sg.webgpu``: the WebGPU device's questions and controls, as ``sg.cuda`` answers them
for CUDA. This folder is the WebGPU driver of the shared device layer (``../gpu/``): its
runtime (``runtime.py``), its memory (``memory.py``) and its kernels (``kernels/*.wgsl``,
filled in and launched by the modules beside them, gathered in ``driver.py``)."""
from .runtime import is_available, runtime, unavailable_reason

# what a program cannot do with tensors on this device (a stage's LACKS, per device):
# float64, since WGSL has no 64-bit floats; the 1- and 2-byte types, since its kernels address
# 32-bit words (WGSL has no 8- or 16-bit integers, and its f16 is an optional feature, which
# Mesa's software driver lacks); reading its memory as another dtype (not implemented);
# sharing memory, since WebGPU gives no pointer
LACKS = frozenset({"float64", "float16", "bfloat16", "uint8", "int8", "int16", "dtype_views", "dlpack",
                   "buffer_protocol"})


def device_name():
    """The adapter's name (Mesa's software driver calls itself ``llvmpipe``)."""
    return runtime().name


def is_software():
    """Whether the adapter is a software rasteriser running on the CPU: its timings are
    never GPU speed."""
    return runtime().software


def synchronize():
    """Wait until every kernel submitted to the device has finished."""
    runtime().synchronize()


def empty_cache():
    """Free the GPU buffers the caching allocator keeps for reuse."""
    runtime().empty_cache()


def memory_cached():
    """Bytes held by the caching allocator for reuse."""
    return runtime().pool.pooled_bytes


__all__ = ["LACKS", "is_available", "unavailable_reason", "device_name", "is_software", "synchronize",
           "empty_cache", "memory_cached"]
