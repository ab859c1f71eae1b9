"""Airspeed-velocity benchmarks of every installed stage, with NumPy and PyTorch as peers.

See ``docs/benchmarks.md`` for how to run, publish and view them.
"""
import sys
from pathlib import Path

try:
    import stagegrad  # noqa: F401  (installed, e.g. ``pip install -e .``)
except ImportError:  # a plain checkout: the packages live beside this folder
    sys.path.append(str(Path(__file__).resolve().parent.parent))
