"""The conformance suite runs every test once per stage.

Select stages with ``--stages=stage0_python,stage1_strides`` or the environment
variable ``STAGEGRAD_STAGES``; by default every known stage is tried. A stage that
cannot be imported is reported in the header and the summary, never silently dropped.
A test marked ``@pytest.mark.capability("views")`` is skipped, with the reason, on a
stage whose ``LACKS`` names that capability.

Under ``CI=true`` the run fails at its start when an oracle (``ORACLE_MODULES``,
``ORACLE_PROGRAMS``) is missing or a stage of a default run is not tested (every stage
package and the webgpu device; cuda too where an NVIDIA driver is present); elsewhere the
summary warns.

``stage4_gpu[webgpu]`` (one of the defaults) runs stage 4 with the webgpu device as the
default device: every tensor a test makes lands there, and the device's own ``LACKS``
(float64, which WGSL lacks) joins the stage's. Where no WebGPU adapter exists it is
reported as not tested, with the adapter's reason. ``stage4_gpu[cuda]`` does the same on
the cuda device: where CuPy or an NVIDIA GPU is missing it is reported as not tested,
with the reason.

The suite reads no data from outside the repository: ``STAGEGRAD_DATA`` points every
dataset at the slices the package carries (``sg.datasets.SAMPLE_ROOT``), whatever the
caller set, and ``STAGEGRAD_OFFLINE`` refuses downloads, so neither a shared folder beside
the checkout, the user's cache nor the network can change a result. The thread counts
(two per library) and the locale are fixed the same way, so that a caller's
``OMP_NUM_THREADS=1`` or ``LC_ALL`` runs the same computation as CI does. Subprocesses
inherit all of these. Variables that pin a CPU path (``OPENBLAS_CORETYPE``) are left as the
host set them, except in the subprocesses that emulate another CPU (``environment.py``).

A test marked ``@pytest.mark.device("webgpu")`` is about that device itself: it names each
tensor's device, so it runs once per stage package under test that offers the device (a
stage pinned to it, ``stage4_gpu[webgpu]``, stands for its package), rather than being
skipped on every stage without devices and on every pin. Where no stage under test offers
it, the test is skipped once (not once per stage), naming the stages under test.
"""
import importlib
import importlib.util
import os
import platform
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from stagegrad import STAGES

os.environ["STAGEGRAD_DATA"] = str(Path(__file__).resolve().parents[1] / "stage0_python" / "datasets"
                                   / "sample")
os.environ["STAGEGRAD_OFFLINE"] = "1"
os.environ.update(OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2", LC_ALL="C.UTF-8")

# the stage packages, then stage 4 pinned to each of its devices
KNOWN_STAGES = (*STAGES.values(), "stage4_gpu[webgpu]", "stage4_gpu[cuda]")
_loaded = {}
_missing = {}


def pytest_addoption(parser):
    parser.addoption("--stages", default=None,
                     help="comma-separated stage packages to test (default: all known)")


class OnDevice(types.ModuleType):
    """A stage whose tests run with ``device`` as the default device: its names are the
    stage's, its ``LACKS`` the stage's and the device's."""

    def __init__(self, stage, device):
        super().__init__(stage.__name__, stage.__doc__)
        self.__file__ = stage.__file__
        self._stage, self.DEVICE = stage, device
        self.DEVICE_LACKS = getattr(stage, device).LACKS
        self.LACKS = frozenset(stage.LACKS) | self.DEVICE_LACKS

    def __getattr__(self, name):
        return getattr(self._stage, name)


def _import(name):
    """The stage ``name`` names: a package, or ``package[device]``."""
    package, _, device = name.partition("[")
    stage = importlib.import_module(package)
    if not device:
        return stage
    device = device.rstrip("]")
    runtime = getattr(stage, device, None)
    if runtime is None or not runtime.is_available():
        raise ImportError(f"device {device}: " + (runtime.unavailable_reason() if runtime else
                                                   f"{package} has no such device"))
    return OnDevice(stage, device)


def _selected(config):
    raw = config.getoption("--stages") or os.environ.get("STAGEGRAD_STAGES") or ""
    names = [s.strip() for s in raw.split(",") if s.strip()] or list(KNOWN_STAGES)
    for name in names:
        if name not in _loaded and name not in _missing:
            try:
                mod = _import(name)
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
    config.addinivalue_line("markers", "device(name): a test of that device, run on the stages offering it")
    config.addinivalue_line("markers", "slow: long-running, deselected unless asked for (-m slow)")
    config.addinivalue_line("markers", "needs_torch: compares against PyTorch")
    _selected(config)  # in every process, so the summary can name the stages left out
    _check_groups_hold(config)


def _check_groups_hold(config):
    """``--dist loadgroup`` sends an ``xdist_group``'s tests to one worker by appending ``@group``
    to their ids, which pytest 9.2 no longer lets pytest-xdist 3.8 do: tests sharing a resource
    (the docs' ``_generated/`` folder, a server's port) would then run at once and fail now and
    then, so such a pairing stops the run here instead."""
    dist = config.getoption("dist", default="no")
    major, minor = (int(p) for p in pytest.__version__.split(".")[:2])
    if dist == "loadgroup" and (major, minor) >= (9, 2):
        raise pytest.UsageError(f"pytest {pytest.__version__} makes pytest-xdist ignore xdist_group under "
                                "--dist loadgroup: install the test extra's versions "
                                "(pip install -e '.[test]')")


def pytest_report_header(config):
    names = _selected(config)
    lines = [f"stagegrad stages under test: {', '.join(names) or 'none'}"]
    for name, why in _missing.items():
        lines.append(f"stagegrad stage NOT AVAILABLE: {name} ({why})")
    return lines


# what the suite compares against or drives: a Python module, or a program on PATH
ORACLE_MODULES = ("numpy", "torch", "hypothesis", "onnx", "onnxruntime", "safetensors", "torchinfo",
                  "graphviz", "sphinx", "matplotlib", "asv", "wgpu", "fastapi", "uvicorn", "httpx", "mpi4py",
                  "schemathesis", "PIL",
                  # NVRTC (a wheel with no macOS build) compiles the cuda kernels with no GPU
                  *(("cuda.bindings.nvrtc",) if platform.system() != "Darwin" else ()))
ORACLE_PROGRAMS = (("dot",), ("mpirun",), ("chromium", "chromium-browser", "google-chrome"),
                   *((("qemu-x86_64",),) if platform.machine() == "x86_64" else ()),
                   # as root, the tests of refused permissions drop root's privileges with it
                   *((("setpriv",),) if hasattr(os, "geteuid") and os.geteuid() == 0 else ()))


# the compiler's runtime libraries a slow test preloads (the sanitized build's): oracles of a
# run that keeps the slow tests (``-m slow``), found as gcc finds them
SLOW_ORACLE_LIBRARIES = ("libasan.so",)


def compiler_runtime(name):
    """The path of one of gcc's runtime libraries (``libasan.so``, ``libstdc++.so``), or None."""
    try:
        path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return path if os.path.isabs(path) and os.path.exists(path) else None


def _keeps_slow(config):
    """Whether the run's marker expression keeps the slow tests (the default, ``-m 'not
    slow'``, deselects them)."""
    return "not slow" not in " ".join((config.getoption("markexpr", "") or "").split())


def _importable(name):
    """Whether module ``name`` is installed and imports: one that is found but fails to import
    would turn each of its comparisons into a skip."""
    try:
        if importlib.util.find_spec(name) is None:
            return False
        importlib.import_module(name)
    except Exception:
        return False
    return True


def missing_oracles(config):
    """The oracles of ``ORACLE_MODULES`` and ``ORACLE_PROGRAMS`` this machine lacks (a module
    that does not import counts as missing), and of ``SLOW_ORACLE_LIBRARIES`` where the run
    keeps the slow tests."""
    missing = [m for m in ORACLE_MODULES if not _importable(m)]
    missing += [names[0] for names in ORACLE_PROGRAMS if not any(map(shutil.which, names))]
    if _keeps_slow(config):
        missing += [lib for lib in SLOW_ORACLE_LIBRARIES if compiler_runtime(lib) is None]
    return missing


def untested_stages(config):
    """The stages that cannot be tested here, with the reason: of a default run, every stage
    package and the webgpu device, and the cuda device where an NVIDIA driver is present; of
    a run that chooses its stages (``--stages``, ``STAGEGRAD_STAGES``), every one chosen."""
    _selected(config)
    chosen = config.getoption("--stages") or os.environ.get("STAGEGRAD_STAGES")
    exempt = () if chosen or shutil.which("nvidia-smi") else ("stage4_gpu[cuda]",)
    return {name: why for name, why in _missing.items() if name not in exempt}


def _in_ci():
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def pytest_sessionstart(session):
    """Under ``CI=true`` a missing oracle or an untested stage fails the run at once: a green
    run must mean every stage was compared against every oracle. Elsewhere it is a warning
    in the summary."""
    config = session.config
    if not _in_ci() or hasattr(config, "workerinput"):  # the controller checks, once
        return
    problems = [f"oracle missing: {name}" for name in missing_oracles(config)]
    problems += [f"stage not tested: {name} ({why})" for name, why in untested_stages(config).items()]
    if problems:
        pytest.exit("CI=true and the run would prove less than it claims:\n  " + "\n  ".join(problems)
                    + "\n(./dev test installs every oracle; outside CI these are warnings)", returncode=3)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    terminalreporter.section("stages")
    for name in _selected(config):
        terminalreporter.write_line(f"tested:     {name}")
    for name, why in _missing.items():
        terminalreporter.write_line(f"not tested: {name} ({why})")
    missing = missing_oracles(config)
    if missing:
        terminalreporter.write_line(f"warning: oracles missing, their comparisons were skipped: "
                                    f"{', '.join(missing)} (under CI=true this fails the run)")


def pytest_generate_tests(metafunc):
    if "sg" in metafunc.fixturenames:
        names = _selected(metafunc.config)
        if not names:
            raise pytest.UsageError(f"no stage could be imported: {_missing}")
        device = metafunc.definition.get_closest_marker("device")
        if device is not None:
            offering = _offering(names, *device.args)
            names = offering or [pytest.param(None, id="none", marks=pytest.mark.skip(
                reason=f"no stage under test ({', '.join(names)}) offers the {device.args[0]} device"))]
        metafunc.parametrize("sg", names, indirect=True, scope="session")



def _offering(names, device):
    """The stage packages among ``names`` that offer ``device``; a stage pinned to that
    device stands for its package (imported here if only the pin was selected)."""
    packages = []
    for name in names:
        package, _, pin = name.partition("[")
        if (pin and pin != device + "]") or package in packages:
            continue
        stage = _loaded.get(package) or importlib.import_module(package)
        if "devices" not in stage.LACKS and getattr(stage, device, None) is not None:
            _loaded[package] = stage
            packages.append(package)
    return packages


@pytest.fixture(scope="session")
def sg(request):
    return _loaded[request.param]


DTYPE_NAMES = {"float64", "float32", "int64", "int32", "bool", "float16", "bfloat16", "uint8",
               "int8", "int16"}


def _strings(value):
    """The strings in a test parameter, and in the dicts, tuples and lists it holds."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (dict, tuple, list)):
        for v in value.values() if isinstance(value, dict) else value:
            yield from _strings(v)


# a test's stage argument: ``sg``, or test_fused's ``fsg`` (the stages that fuse)
STAGE_ARGUMENTS = ("sg", "fsg")


def _stage_of(request):
    """The stage the test runs on, or None."""
    name = next((n for n in STAGE_ARGUMENTS if n in request.fixturenames), None)
    return None if name is None else request.getfixturevalue(name)


@pytest.fixture(autouse=True)
def _capabilities(request):
    stage = _stage_of(request)
    if stage is None:
        return
    needs = {name for m in request.node.iter_markers("capability") for name in m.args}
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None:  # on a device, a test parametrized by a dtype it lacks needs it
        named = {v for p in callspec.params.values() for v in _strings(p)} & DTYPE_NAMES
        needs |= named & getattr(stage, "DEVICE_LACKS", frozenset())
    lacking = needs & set(getattr(stage, "LACKS", ()))
    if lacking:
        pytest.skip(f"{stage.__name__} declares it lacks {', '.join(sorted(lacking))}")


@pytest.fixture(autouse=True)
def _default_device(request):
    """On ``package[device]``, every test runs with that device as the default."""
    device = getattr(_stage_of(request), "DEVICE", None)
    if device is None:
        yield
        return
    stage = _stage_of(request)
    stage.set_default_device(device)
    try:
        yield
    finally:
        stage.set_default_device(None)


@pytest.fixture(autouse=True)
def _seeded(request):
    """Every test starts from the same seed, so failures reproduce."""
    if "sg" in request.fixturenames:
        request.getfixturevalue("sg").manual_seed(0)
