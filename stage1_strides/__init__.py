"""stagegrad, stage 1: strided storage, zero-copy views and a buffer pool; still pure Python.

``import stage1_strides as sg``. This folder holds only what stage 1 rewrites: the
backend (``backend.py``), the pool behind it (``pool.py``) and its statistics
(``memory.py``). Every other module is stage 0's file, loaded as a module of this
package: ``__path__`` lists stage 0's folder after this one, so ``stage1_strides.nn`` is
``stage0_python/nn`` whose relative imports reach this stage's backend.
"""
import importlib.util
import os as _os

_STAGE1_DOC = __doc__
_PREVIOUS = importlib.util.find_spec("stage0_python").submodule_search_locations[0]
__path__.append(_PREVIOUS)

# Stage 0's __init__ defines the public names. Running its source here, rather than
# keeping a copy, gives both stages the same names by construction; its relative
# imports resolve inside this package.
with open(_os.path.join(_PREVIOUS, "__init__.py"), encoding="utf-8") as _f:
    exec(compile(_f.read(), _f.name, "exec"))  # noqa: S102
del _f
__doc__ = _STAGE1_DOC  # the source run above set stage 0's

# views alias their base here; arrays are not exported (nor shared through DLPack: an
# array.array cannot wrap another library's memory)
LACKS = frozenset({"buffer_protocol", "dtype_views", "dlpack", "devices"}) | dtypes.LACKING
