"""A pytest plugin for the per-GEMM rerun (``test_stage3.test_each_gemm_passes_the_suite``):
forcing a GEMM can change only the products that reach ``gemm_for`` with a shape the default
(``auto``) sends to the other one.

With ``STAGEGRAD_GEMM_REACH=FILE`` it records, as JSON, each test's GEMMs that ``auto`` would
have picked for its products (from its setup to its teardown), and ``"child"`` for a test
that starts a process, whose products it cannot see; with ``STAGEGRAD_GEMM_ONLY=FILE`` (a JSON
list of test ids) it runs those tests alone."""
import json
import os
import subprocess

import pytest

import stage3_simd.backend as B

_current = [None]
_reached = {}


def _traced(gemm_for):
    def traced(n, k, m):
        if _current[0] is not None:
            _reached.setdefault(_current[0], set()).add(B.auto_gemm(n, k, m))
        return gemm_for(n, k, m)
    traced.__doc__ = gemm_for.__doc__
    return traced


class _Popen(subprocess.Popen):
    """A process started by a test: the rerun keeps that test, as it cannot see inside."""

    def __init__(self, *args, **kwargs):
        if _current[0] is not None:
            _reached.setdefault(_current[0], set()).add("child")
        super().__init__(*args, **kwargs)


def pytest_configure(config):
    if os.environ.get("STAGEGRAD_GEMM_REACH"):
        B.gemm_for = _traced(B.gemm_for)  # backend.py's callers look it up as a module global
        subprocess.Popen = _Popen


def pytest_collection_modifyitems(config, items):
    only = os.environ.get("STAGEGRAD_GEMM_ONLY")
    if only:
        with open(only, encoding="utf-8") as f:
            wanted = set(json.load(f))
        missing = wanted - {item.nodeid for item in items}
        if missing:  # ids that no longer match: the rerun would prove less than it says
            raise pytest.UsageError(f"gemm_reach: {len(missing)} tests to rerun were not collected, "
                                    f"such as {sorted(missing)[:3]}")
        items[:] = [item for item in items if item.nodeid in wanted]


def pytest_runtest_setup(item):
    _current[0] = item.nodeid


def pytest_runtest_teardown(item):
    _current[0] = None


def pytest_sessionfinish(session):
    out = os.environ.get("STAGEGRAD_GEMM_REACH")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({test: sorted(gemms) for test, gemms in _reached.items()}, f)
