"""A green run under ``CI=true`` proves what it claims: a run in which an oracle is missing
(or installed but failing to import) or a stage cannot be imported (a chosen one too) fails
at its start, with the reason, where outside CI it only warns. Each run is a pytest of its
own in a subprocess, broken on purpose."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a plugin, loaded before the suite's conftest, that makes one stage fail to import, as a
# stage whose build failed does
BREAK_STAGE = '''
import sys

class Broken:
    def find_spec(self, name, path=None, target=None):
        if name == "stage1_strides":
            raise ImportError("stage1_strides is broken on purpose")
        return None

sys.meta_path.insert(0, Broken())
'''
ONE_TEST = "common_tests/test_creation.py::test_bool_alias"


def _pytest(tmp_path, ci, path=None, plugin=False, extra=()):
    env = {k: v for k, v in os.environ.items() if k not in ("STAGEGRAD_STAGES", "PYTEST_ADDOPTS", "CI")}
    if ci:
        env["CI"] = "true"
    if path is not None:
        env["PATH"] = path
    args = [sys.executable, "-m", "pytest", ONE_TEST, "-n", "0", "-p", "no:cacheprovider", "-q"]
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])  # the plugins
    if plugin:
        (tmp_path / "break_stage.py").write_text(BREAK_STAGE)
        args += ["-p", "break_stage"]
    args += list(extra)
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_a_broken_stage_fails_ci_and_only_warns_elsewhere(tmp_path):
    r = _pytest(tmp_path, ci=True, plugin=True)
    out = r.stdout + r.stderr
    assert r.returncode == 3, out
    assert "stage not tested: stage1_strides (ImportError: stage1_strides is broken on purpose)" in out, out
    r = _pytest(tmp_path, ci=False, plugin=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "not tested: stage1_strides (ImportError: stage1_strides is broken on purpose)" in out, out


def test_a_missing_oracle_fails_ci_and_only_warns_elsewhere(tmp_path):
    bare = tmp_path / "bin"  # a PATH with Python alone: no dot, mpirun, Chromium
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    # with the slow tests kept, gcc's AddressSanitizer runtime too (no gcc on this PATH)
    r = _pytest(tmp_path, ci=True, path=str(bare), extra=["-m", "slow"])
    out = r.stdout + r.stderr
    assert r.returncode == 3 and "oracle missing: dot" in out and "oracle missing: mpirun" in out, out
    assert "oracle missing: libasan.so" in out, out
    r = _pytest(tmp_path, ci=False, path=str(bare))
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "warning: oracles missing" in out and "dot" in out, out
    assert "libasan" not in out, out  # the sanitized build's runtime: an oracle of slow runs only



def test_a_chosen_stage_that_fails_to_import_fails_ci(tmp_path):
    """Choosing the stages (``--stages``) leaves the others out on purpose, but not a chosen
    one that is broken."""
    env_stages = ["--stages", "stage0_python,stage1_strides"]
    r = _pytest(tmp_path, ci=True, plugin=True, extra=env_stages)
    out = r.stdout + r.stderr
    assert r.returncode == 3, out
    assert "stage not tested: stage1_strides (ImportError: stage1_strides is broken on purpose)" in out, out


# a plugin that leaves an oracle installed (found) but failing to import, as a wheel built for
# another Python or a missing shared library does
BREAK_ORACLE = '''
import importlib.machinery
import sys


class Failing:
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise ImportError("torchinfo is broken on purpose")


class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "torchinfo":
            return importlib.machinery.ModuleSpec(name, Failing())
        return None


sys.meta_path.insert(0, Finder())
'''


def test_an_oracle_that_fails_to_import_counts_as_missing(tmp_path):
    (tmp_path / "break_oracle.py").write_text(BREAK_ORACLE)
    r = _pytest(tmp_path, ci=True, extra=["-p", "break_oracle"])
    out = r.stdout + r.stderr
    assert r.returncode == 3 and "oracle missing: torchinfo" in out, out
