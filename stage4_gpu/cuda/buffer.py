"""Tensors on the CUDA device: ``Buffer``, a strided view (``../strided.py``) of a storage
in device memory (``memory.py``), reaching its kernels through the CUDA driver."""
from ..strided import StridedBuffer
from .driver import Cuda
from .kernels import CTYPE


class Buffer(StridedBuffer):
    """A strided view of a Storage on the cuda device."""
    __slots__ = ()
    driver = Cuda()

    @property
    def ctype(self):
        """The C type of the elements, as the kernels' name expressions write it."""
        return CTYPE[self.dtype.name]

    @property
    def array(self):
        """The storage's CuPy array."""
        return self.storage.array

    @property
    def address(self):
        """The device address of the view's first element (what a kernel that indexes the
        view from 0 takes; one that takes the view's offset in its parameters takes
        ``storage.ptr``)."""
        return self.storage.ptr + self.offset * self.dtype.itemsize
