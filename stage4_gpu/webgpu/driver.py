"""The WebGPU driver: the device's memory and kernels, gathered into the one ``Driver``
every webgpu buffer reaches them through (``buffer.Buffer.driver``)."""
from ..device import device as _device
from ..gpu.driver import Driver
from .elementwise import ElementwiseKernels
from .fused import FusedKernels
from .index import IndexKernels
from .matmul import MatmulKernels
from .memory import Memory
from .reduce import ReduceKernels


class WebGPU(Memory, ElementwiseKernels, ReduceKernels, IndexKernels, FusedKernels, MatmulKernels, Driver):
    """WGSL kernels through wgpu; a kernel binds whole GPU buffers (a binding can start only
    at a 256-byte boundary), so fused kernels take views from their storage's start."""

    name = "webgpu"
    device = _device("webgpu", 0)
    offsets = False
    dlpack_refusal = ("__dlpack__: a webgpu tensor cannot be shared through DLPack: WebGPU gives no "
                      "pointer to its memory, so the webgpu device lacks dlpack (t.cpu() copies it to "
                      "the host)")
