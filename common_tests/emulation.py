"""The cuda device's tests without a GPU: a program run in a subprocess under the host
emulation of CuPy (``tools/cuda_on_host``, first on its ``PYTHONPATH``), which prints its
findings as JSON on its last line. A subprocess, because the emulation must be imported in
CuPy's place before the device opens, and a kernel gone wrong may crash the interpreter."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EMULATION = REPO / "tools" / "cuda_on_host"
# the caller's switches of the cuda device: the emulated run gets the device as it comes
CUDA_SWITCHES = ("STAGEGRAD_CUDA", "STAGEGRAD_CUDA_LAUNCH", "STAGEGRAD_CUDA_MATMUL", "STAGEGRAD_CUDA_HALF_MATMUL",
                 "STAGEGRAD_CUDA_CONV")


def emulated_env():
    """This environment with the emulation, then the checkout, first on ``PYTHONPATH`` and
    none of ``CUDA_SWITCHES``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(EMULATION), str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for name in CUDA_SWITCHES:
        env.pop(name, None)
    return env


def run_emulated(args, timeout=900):
    """``python *args`` under the emulation, from the checkout: its last line of output, read
    as JSON; the test fails with its error output if it fails, and is skipped (saying why)
    where g++, which compiles the emulated kernels, or stage 4 is missing."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: the host emulation compiles the kernels with it")
    try:
        import stage4_gpu  # noqa: F401  (the program runs stage 4)
    except ImportError as e:
        pytest.skip(f"stage4_gpu does not import here: {e}")
    r = subprocess.run([sys.executable, *args], cwd=REPO, env=emulated_env(), capture_output=True, text=True,
                       timeout=timeout, check=False)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])
