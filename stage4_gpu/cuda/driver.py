"""The CUDA driver: the device's memory and kernels, gathered into the one ``Driver``
every cuda buffer reaches them through (``buffer.Buffer.driver``)."""
from ..device import device as _device
from ..gpu.driver import Driver
from .conv import DTYPES as _CONV_DTYPES
from .conv import ConvKernels
from .elementwise import ElementwiseKernels
from .fused import FusedKernels
from .index import IndexKernels
from .matmul import MatmulKernels
from .memory import Memory
from .reduce import ReduceKernels
from .runtime import runtime


class Cuda(Memory, ElementwiseKernels, ReduceKernels, IndexKernels, FusedKernels, MatmulKernels, ConvKernels,
           Driver):
    """CUDA kernels compiled by NVRTC through CuPy; a kernel takes a pointer, so it can start
    at a view's offset."""

    name = "cuda"
    device = _device("cuda", 0)
    offsets = True
    checks_indices = True  # gather, scatter_add, put and cross_entropy check on the device
    # the softmaxes, attention and the recurrent layers are written for float64 too,
    # convolution for every float dtype; other dtypes take the composite
    fused_dtypes = {"softmax": ("float32", "float64"), "log_softmax": ("float32", "float64"),
                    "attention": ("float32", "float64"), "conv2d": _CONV_DTYPES,
                    "recurrent": ("float32", "float64")}
    dlpack_refusal = ("__dlpack__: sharing cuda memory through DLPack is not implemented yet, so the "
                      "cuda device lacks dlpack (t.cpu() copies it to the host)")

    def capturing(self):
        """Whether a CUDA graph is being captured (``graphs.py``)."""
        return runtime().capture is not None
