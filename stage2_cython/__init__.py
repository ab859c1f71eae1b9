"""stagegrad, stage 2: storage and kernels in Cython.

``import stage2_cython as sg``. This folder holds only what stage 2 rewrites: the
backend (``backend.py`` routing to the compiled ``_*.pyx`` modules), the storage and its
pool (``_storage.pyx``, statistics in ``memory.py``). Every other module is inherited:
``__path__`` lists stage 1's folder after this one, and stage 1's ``__init__`` (run here)
adds stage 0's, so ``stage2_cython.nn`` is ``stage0_python/nn`` whose relative imports
reach this stage's backend.
"""
import importlib.util
import os

_STAGE2_DOC = __doc__
_PREVIOUS = importlib.util.find_spec("stage1_strides").submodule_search_locations[0]
# the compiled modules: in a checkout, build/ext/stage2_cython (setup.py's BuildExt); in an
# installed wheel, this folder. Named, not derived from __name__: stage 3 runs this file too
__path__.append(os.path.join(os.path.dirname(_PREVIOUS), "build", "ext", "stage2_cython"))
__path__.append(_PREVIOUS)

# Stage 1's __init__ extends __path__ with stage 0's folder and runs stage 0's __init__,
# which defines the public names: running it here gives every stage the same names by
# construction.
with open(os.path.join(_PREVIOUS, "__init__.py"), encoding="utf-8") as _init:
    exec(compile(_init.read(), _init.name, "exec"))  # noqa: S102
del _init
__doc__ = _STAGE2_DOC  # the sources run above set their own

LACKS = dtypes.LACKING | {"dtype_views", "devices"}  # views alias their base; storages export the buffer protocol
