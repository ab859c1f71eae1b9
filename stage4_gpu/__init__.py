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

Stage 3's compiled frontend is typed on stage 2's host buffers and bound to stage 3's
Tensor class, so stage 4 runs stage 0's Python ``tensor_core.py`` and ``graph.py``: on a
GPU an operation's launch costs tens of microseconds, and the Python frontend's few
microseconds are not what limits it.
"""
import stage3_simd  # noqa: F401  (first: it loads OpenBLAS, which the cpu device's kernels need)
from stage0_python.stages import inherit

inherit(__name__, __path__, python_frontend=True)

from .api import *  # noqa: E402, F403  (stage 0's api.py, as this stage's module)
from .api import __getattr__, dtypes  # noqa: E402, F401
from stage3_simd import simd_info  # noqa: E402, F401  (the cpu device's SIMD path)

dtypes.compute_in(*dtypes.HALF_NAMES)  # the cpu device is stage 3's
LACKS = dtypes.LACKING

from . import webgpu  # noqa: E402  (sg.webgpu: is_available, synchronize, empty_cache)
from . import cuda  # noqa: E402  (sg.cuda: torch.cuda's names, for the cuda device)
