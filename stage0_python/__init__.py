"""stagegrad, stage 0: the whole framework in pure Python (standard library only).

The reference every later stage must match: ``import stage0_python as sg``.
"""
from .api import *  # noqa: F403  (the public names: api.py)
from .api import __getattr__, dtypes  # noqa: F401  (__getattr__: subpackages load on first use)

# what this stage cannot do that later ones can (see common_tests/conftest.py)
LACKS = frozenset({"views", "dtype_views", "pool", "buffer_protocol", "dlpack", "devices"}) | dtypes.LACKING
