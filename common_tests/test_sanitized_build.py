"""The compiled stages, rebuilt with AddressSanitizer and their debug checks, run the
kernel edge-case, hostile-input and property suites with no report.

A copy of the sources is built in a temporary folder (``STAGEGRAD_CYTHON_DEBUG=1``:
bounds checks on, no optimisation; ``STAGEGRAD_SANITIZE=address``: every heap block its
exact size, so that one element past a tensor is caught), and the suites run there in a
subprocess with the sanitizer's runtime preloaded (Python itself is not instrumented). Of
stage 3's per-ISA modules it builds the one the suites run: the best this CPU has.
"""
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import compiler_runtime
from .environment import cpu_neutral_env

ROOT = Path(__file__).resolve().parent.parent
COMPILED = ("stage2_cython", "stage3_simd", "stage4_gpu")
SUITES = ["common_tests/test_kernels.py", "common_tests/test_hostile_input.py",
          "common_tests/test_properties.py", "common_tests/test_fused_images.py",
          "common_tests/test_fused.py::test_recurrent_layer", "common_tests/test_fused.py::test_attention"]


def _copy_sources(dest):
    """The checkout's source files (tracked, or new and not ignored): no build outputs."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("the sanitized build copies the sources git lists: not a git checkout")
    for rel in listed.stdout.splitlines():
        if rel.startswith(("stage", "common_tests/")) or rel in ("setup.py", "pyproject.toml"):
            src = ROOT / rel
            if src.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel)


@pytest.mark.slow
def test_compiled_stages_run_clean_under_address_sanitizer(tmp_path):
    asan, cxx = compiler_runtime("libasan.so"), compiler_runtime("libstdc++.so")
    if asan is None or cxx is None:
        pytest.skip("gcc's AddressSanitizer runtime (libasan) is not installed on this machine")
    _copy_sources(tmp_path)
    env = cpu_neutral_env(STAGEGRAD_CYTHON_DEBUG="1", STAGEGRAD_SANITIZE="address")
    try:
        env["STAGEGRAD_ISAS"] = importlib.import_module("stage3_simd._kernels").supported_paths()[-1]
    except ImportError:  # stage 3 is not built here: build every path, as the checkout does
        pass
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path,
                           env=env, capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-3000:]
    stages = [s for s in COMPILED if (tmp_path / s).is_dir()]
    # libstdc++ preloaded too: C++ libraries (PyTorch, the oracle) throw through it
    env = cpu_neutral_env(LD_PRELOAD=f"{asan} {cxx}", ASAN_OPTIONS="detect_leaks=0")
    run = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                          f"--stages={','.join(stages)}", *SUITES], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    out = run.stdout + run.stderr
    assert "AddressSanitizer" not in out, out[-6000:]
    assert run.returncode == 0, out[-4000:]
    assert f"tested:     {stages[0]}" in out  # the stages really ran
