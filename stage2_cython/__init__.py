"""stagegrad, stage 2: storage and kernels in Cython.

``import stage2_cython as sg``. This folder holds only what stage 2 rewrites: the
backend (``backend.py`` routing to the compiled ``_*.pyx`` modules), the storage and its
pool (``_storage.pyx``, statistics in ``memory.py``). Every other module is inherited:
``__path__`` lists the compiled modules (``build/ext/stage2_cython`` in a checkout), then
stage 1's and stage 0's folders (``stage0_python/stages.py``), so ``stage2_cython.nn`` is
``stage0_python/nn`` whose relative imports reach this stage's backend.
"""
from stage0_python.stages import inherit

inherit(__name__, __path__)

from .api import *  # noqa: E402, F403  (stage 0's api.py, as this stage's module)
from .api import __getattr__, dtypes  # noqa: E402, F401

LACKS = dtypes.LACKING | {"devices"}  # views alias their base; storages export the buffer protocol
