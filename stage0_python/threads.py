"""``set_num_threads`` and ``get_num_threads``, as in PyTorch.

A stage whose backend computes on threads (stage 3: OpenMP kernels and OpenBLAS) takes
the setting there; stages 0 to 2 compute on one thread, and only remember the number.
"""
import operator

from . import backend as _B

_count = [1]


def set_num_threads(n):
    """The number of threads the stage's kernels (and its BLAS) may use."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"set_num_threads: expected an int, got {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive count, got {n}")
    if hasattr(_B, "set_num_threads"):
        _B.set_num_threads(n)
    _count[0] = n


def get_num_threads():
    """The number set by ``set_num_threads`` (by default: ``OMP_NUM_THREADS`` or the
    cores this process may use, on a stage that computes on threads; else 1)."""
    return _B.get_num_threads() if hasattr(_B, "get_num_threads") else _count[0]
