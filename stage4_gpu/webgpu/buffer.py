"""Tensors on the WebGPU device: ``Buffer``, a strided view (``../strided.py``) of a
storage in GPU memory (``memory.py``), reaching its kernels through the WebGPU driver."""
from ..strided import StridedBuffer
from .driver import WebGPU
from .kernels import WGSL


class Buffer(StridedBuffer):
    """A strided view of a Storage on the webgpu device."""
    __slots__ = ()
    driver = WebGPU()

    @property
    def wgsl(self):
        """The WGSL type of the elements, as the kernels are filled in with it."""
        return WGSL[self.dtype.name][0]
