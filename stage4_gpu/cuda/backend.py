"""The cuda device's primitive set: the device layer's (``../gpu/backend.py``), with
``binary`` and ``unary`` compiled for operands of one shape laid out row-major
(``../_cuda_elementwise.pyx``), the case that decides what an elementwise op costs the
host; any other operands take the device layer's primitives."""
from .._cuda_elementwise import ElementwisePath
from ..gpu import backend as _device_layer
from ..gpu.backend import *  # noqa: F403  (every other primitive, as the device layer's)
from .elementwise import fast_kernel
from .runtime import BLOCK, runtime

_PATH = ElementwisePath(runtime, fast_kernel, _device_layer.binary, _device_layer.unary, BLOCK)
binary, unary = _PATH.binary, _PATH.unary
