"""Helpers that compare a stage's tensors with NumPy and PyTorch."""
import re

import numpy as np
import pytest

try:
    import torch
except ImportError:  # the suite still runs: PyTorch comparisons are skipped, and say so
    torch = None

TOL = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}


def np_(t):
    """A stage tensor (or a nested value) as a NumPy array."""
    if hasattr(t, "numpy") and hasattr(t, "grad_fn"):
        return t.detach().numpy()
    return np.asarray(t)


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True):
    a = np_(actual)
    e = expected.detach().numpy() if torch is not None and isinstance(expected, torch.Tensor) else np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"dtype {a.dtype} != expected {e.dtype}"
    r, t = TOL.get(str(a.dtype), (0, 0))
    np.testing.assert_allclose(a, e, rtol=r if rtol is None else rtol, atol=t if atol is None else atol,
                               equal_nan=True)


def need_torch():
    if torch is None:
        pytest.skip("PyTorch is not installed: the PyTorch comparison cannot run")
    return torch


def need_torch_at_least(version, feature):
    """PyTorch, skipping the test when the installed one is older than ``version`` (the
    suite's, "2.13") and lacks ``feature``: an older oracle cannot judge it. ``./dev test``
    installs the suite's version; a GPU machine may bring an older one."""
    torch = need_torch()
    have = tuple(int(p) for p in re.findall(r"\d+", torch.__version__)[:2])
    if have < tuple(int(p) for p in version.split(".")):
        pytest.skip(f"PyTorch {torch.__version__} is older than the suite's {version} and lacks {feature}")
    return torch


def random_array(dtype, shape=(3, 4, 5), seed=0):
    """A NumPy array of random values of ``dtype`` (by name): coin flips, integers in
    [-1000, 1000) or standard normals."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def randn(sg, *shape, dtype="float32", requires_grad=False):
    """The same random data as a stage tensor and a NumPy array."""
    x = np.random.default_rng(abs(hash(shape)) % 2**32).standard_normal(shape).astype(dtype)
    return sg.tensor(x.tolist() if shape else float(x), dtype=getattr(sg, dtype),
                     requires_grad=requires_grad), x
