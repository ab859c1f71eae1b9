"""The two commands of the README's quick start (``./dev journey``, ``./dev test``) and the
container built on them: a failed install step fails a CI run instead of turning its tests
into skips, and the Dockerfile builds with the very script a machine uses."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _functions(*names):
    """The shell functions ``names`` of ``./dev``, as text to source."""
    text = (ROOT / "dev").read_text()
    return "\n".join(re.search(rf"^{name}\(\) {{.*?^}}$", text, re.S | re.M).group(0) for name in names)


@pytest.mark.parametrize("ci, status", [("true", 1), ("", 0)])
def test_a_failed_install_step_fails_ci_and_warns_elsewhere(ci, status):
    script = _functions("warn", "check_installs") + '''
FAILED=()
check_installs  # nothing failed: nothing said
warn "PyTorch could not be installed; its comparisons will be reported as skipped"
check_installs
echo "went on"
'''
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    r = subprocess.run(["bash", "-c", script], env=dict(env, CI=ci), capture_output=True, text=True)
    assert r.returncode == status, r.stderr
    assert r.stderr.startswith("warning: PyTorch could not be installed")
    if status:
        assert "CI=true and an install step failed:\n  PyTorch could not be installed" in r.stderr
        assert "went on" not in r.stdout
    else:
        assert r.stdout == "went on\n"


def test_the_tests_and_the_container_install_the_same_things():
    text = (ROOT / "dev").read_text()
    assert re.search(r"^  test\)\s+setup; test_deps; lint; exec ", text, re.M)  # the linters first
    assert re.search(r'^  setup\)\s+setup; if \[ "\$\{1:-\}" = test \]; then test_deps; fi', text, re.M)
    docker = (ROOT / "Dockerfile").read_text()
    steps = re.findall(r"^(RUN|CMD) (.*)$", docker, re.M)
    assert ("RUN", "./dev setup test") in steps and steps[-1] == ("CMD", '["./dev", "test"]')
    assert not any("pip" in line for _, line in steps)  # every install is ./dev's


@pytest.mark.slow
def test_the_container_builds_where_a_container_engine_runs(tmp_path):
    engine = next((e for e in ("docker", "podman") if shutil.which(e)), None)
    if engine is None or subprocess.run([engine, "info"], capture_output=True).returncode != 0:
        pytest.skip("no container engine runs here (docker or podman); the Dockerfile's steps are "
                    "./dev's, which the rest of the suite runs")
    r = subprocess.run([engine, "build", "-q", "-t", "stagegrad-test", str(ROOT)], capture_output=True,
                       text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([engine, "run", "--rm", "stagegrad-test", "./dev", "test", "--co", "-q"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0 and "tested:     stage3_simd" in r.stdout, r.stdout[-4000:]
