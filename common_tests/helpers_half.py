"""Helpers for the tests of the 2-byte float dtypes (float16, bfloat16): a fixture over
them that skips a stage lacking one, and a float32 copy of a tensor of either library."""
import numpy as np
import pytest


def two_byte_dtypes(names):
    """A fixture giving each dtype of ``names`` in turn, skipped where the stage's ``LACKS``
    names it."""
    @pytest.fixture(params=names)
    def dtype(request, sg):
        if request.param in sg.LACKS:
            pytest.skip(f"{sg.__name__} declares it lacks {request.param}")
        return request.param
    return dtype


def f32(t):
    """A float32 NumPy copy of a tensor of either library (exact for 2-byte floats)."""
    return np.asarray(t.detach().float().tolist(), dtype=np.float32)
