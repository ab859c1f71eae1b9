"""The conformance suite runs every test once per stage.

Select stages with ``--stages=stage0_python,stage1_strides`` or the environment
variable ``STAGEGRAD_STAGES``; by default every known stage is tried. A stage that
cannot be imported is reported in the header and the summary, never silently dropped.
A test marked ``@pytest.mark.capability("views")`` is skipped, with the reason, on a
stage whose ``LACKS`` names that capability.
"""
import importlib
import os

import pytest

KNOWN_STAGES = ("stage0_python", "stage1_strides", "stage2_cython", "stage3_simd", "stage4_gpu")
_loaded = {}
_missing = {}


def pytest_addoption(parser):
    parser.addoption("--stages", default=None,
                     help="comma-separated stage packages to test (default: all known)")


def _selected(config):
    raw = config.getoption("--stages") or os.environ.get("STAGEGRAD_STAGES") or ""
    names = [s.strip() for s in raw.split(",") if s.strip()] or list(KNOWN_STAGES)
    for name in names:
        if name not in _loaded and name not in _missing:
            try:
                mod = importlib.import_module(name)
            except ImportError as e:
                _missing[name] = f"{type(e).__name__}: {e}"
                continue
            if getattr(mod, "__file__", None) is None:  # a bare folder imports as a namespace
                _missing[name] = "not a stage package (no __init__.py)"
            else:
                _loaded[name] = mod
    return [n for n in names if n in _loaded]


def pytest_configure(config):
    config.addinivalue_line("markers", "capability(name): needs a capability a stage may lack")
    config.addinivalue_line("markers", "slow: long-running (deselect with -m 'not slow')")
    config.addinivalue_line("markers", "needs_torch: compares against PyTorch")
    _selected(config)  # in every process, so the summary can name the stages left out


def pytest_report_header(config):
    names = _selected(config)
    lines = [f"stagegrad stages under test: {', '.join(names) or 'none'}"]
    for name, why in _missing.items():
        lines.append(f"stagegrad stage NOT AVAILABLE: {name} ({why})")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    terminalreporter.section("stages")
    for name in _selected(config):
        terminalreporter.write_line(f"tested:     {name}")
    for name, why in _missing.items():
        terminalreporter.write_line(f"not tested: {name} ({why})")


def pytest_generate_tests(metafunc):
    if "sg" in metafunc.fixturenames:
        names = _selected(metafunc.config)
        if not names:
            raise pytest.UsageError(f"no stage could be imported: {_missing}")
        metafunc.parametrize("sg", names, indirect=True, scope="session")


@pytest.fixture(scope="session")
def sg(request):
    return _loaded[request.param]


@pytest.fixture(autouse=True)
def _capabilities(request):
    marker = request.node.get_closest_marker("capability")
    if marker is None or "sg" not in request.fixturenames:
        return
    stage = request.getfixturevalue("sg")
    lacking = set(marker.args) & set(getattr(stage, "LACKS", ()))
    if lacking:
        pytest.skip(f"{stage.__name__} declares it lacks {', '.join(sorted(lacking))}")


@pytest.fixture(autouse=True)
def _seeded(request):
    """Every test starts from the same seed, so failures reproduce."""
    if "sg" in request.fixturenames:
        request.getfixturevalue("sg").manual_seed(0)
