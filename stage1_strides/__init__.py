"""stagegrad, stage 1: strided storage, zero-copy views and a buffer pool; still pure Python.

``import stage1_strides as sg``. This folder holds only what stage 1 rewrites: the
backend (``backend.py``), the pool behind it (``pool.py``) and its statistics
(``memory.py``). Every other module is stage 0's file, loaded as a module of this
package: ``__path__`` lists stage 0's folder after this one (``stage0_python/stages.py``),
so ``stage1_strides.nn`` is ``stage0_python/nn`` whose relative imports reach this
stage's backend.
"""
from stage0_python.stages import inherit

inherit(__name__, __path__)

from .api import *  # noqa: E402, F403  (stage 0's api.py, as this stage's module)
from .api import __getattr__, dtypes  # noqa: E402, F401

# views alias their base here; arrays are not exported (nor shared through DLPack: an
# array.array cannot wrap another library's memory)
LACKS = frozenset({"buffer_protocol", "dtype_views", "dlpack", "devices"}) | dtypes.LACKING
