"""stagegrad, stage 4: devices. The ``cpu`` device is stage 3; ``webgpu`` runs the
project's WGSL kernels through wgpu (Metal on macOS, Vulkan on Linux and Windows, Mesa's
software Vulkan where there is no GPU); ``cuda`` runs the project's CUDA kernels on an
NVIDIA GPU through CuPy.

``import stage4_gpu as sg``. This folder holds only what stage 4 rewrites: the device
layer (``device.py``: which devices exist, moving buffers between them), the backend
(``backend.py``: each primitive routed to the device its buffers live on, and a clear
error when they live on two), the strided views every device's buffers share
(``strided.py``), and one folder per device with its kernels
(``webgpu/``, ``cuda/``). Everything else is inherited: ``__path__`` lists stage 3's folders after
this one, then stage 2's, 1's and 0's (``stage0_python/stages.py``).

Like stage 3, stage 4 compiles stage 0's ``tensor_core.py`` and ``graph.py`` (the hot half
of every operation) with Cython, from the same source, into modules of its own: its
``tensor_core.pxd`` types a tensor's buffer as any device's (a host buffer of stage 2, or a
device's ``StridedBuffer``), and ``graph.pxd`` is stage 3's declarations for this stage's
modules. ``STAGEGRAD_FRONTEND=python`` runs them as Python instead.
"""
import stage3_simd  # noqa: F401  (first: it loads OpenBLAS, which the cpu device's kernels need)
from stage0_python.stages import frontend_is_python, inherit

inherit(__name__, __path__, python_frontend=frontend_is_python())

from stage3_simd import simd_info  # noqa: E402, F401  (the cpu device's SIMD path)

from .api import *  # noqa: E402, F403  (stage 0's api.py, as this stage's module)
from .api import __getattr__, dtypes  # noqa: E402, F401

dtypes.compute_in(*dtypes.HALF_NAMES)  # the cpu device is stage 3's
LACKS = dtypes.LACKING

# sg.cuda (torch.cuda's names, for the cuda device) and sg.webgpu (is_available, synchronize, empty_cache)
from . import cuda, webgpu  # noqa: E402
