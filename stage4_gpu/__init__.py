"""stagegrad, stage 4: devices. The ``cpu`` device is stage 3; ``webgpu`` runs the
project's WGSL kernels through wgpu (Metal on macOS, Vulkan on Linux and Windows, Mesa's
software Vulkan where there is no GPU); ``cuda`` runs the project's CUDA kernels on an
NVIDIA GPU through CuPy.

``import stage4_gpu as sg``. This folder holds only what stage 4 rewrites: the device
layer (``device.py``: which devices exist, moving buffers between them), the backend
(``backend.py``: each primitive routed to the device its buffers live on, and a clear
error when they live on two), the strided views every device's buffers share
(``strided.py``), and one folder per device with its kernels
(``webgpu/``, ``cuda/``). Everything else is inherited: ``__path__`` lists stage 3's folder after
this one.

Stage 3's compiled frontend is typed on stage 2's host buffers and bound to stage 3's
Tensor class, so stage 4 runs stage 0's Python ``tensor_core.py`` and ``graph.py``: on a
GPU an operation's launch costs tens of microseconds, and the Python frontend's few
microseconds are not what limits it.
"""
import importlib.util
import os
import sys

_STAGE4_DOC = __doc__


class _PythonFrontend:
    """Stage 0's ``tensor_core.py`` and ``graph.py`` for this stage (see the docstring)."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package != "stage4_gpu" or name not in ("tensor_core", "graph"):
            return None
        stage0 = importlib.util.find_spec("stage0_python").submodule_search_locations[0]
        return importlib.util.spec_from_file_location(fullname, os.path.join(stage0, name + ".py"))


sys.meta_path.insert(0, _PythonFrontend)
_PREVIOUS3 = importlib.util.find_spec("stage3_simd").submodule_search_locations[0]
__path__.append(_PREVIOUS3)

# Stage 3's __init__ extends __path__ with stage 2's, 1's and 0's folders and runs stage
# 0's __init__, which defines the public names
with open(os.path.join(_PREVIOUS3, "__init__.py"), encoding="utf-8") as _stage3_init:
    exec(compile(_stage3_init.read(), _stage3_init.name, "exec"))  # noqa: S102
del _stage3_init
__doc__ = _STAGE4_DOC
LACKS = LACKS - {"devices"}  # noqa: F821  (stage 3's, from the run above)

from . import webgpu  # noqa: E402  (sg.webgpu: is_available, synchronize, empty_cache)
from . import cuda  # noqa: E402  (sg.cuda: torch.cuda's names, for the cuda device)
