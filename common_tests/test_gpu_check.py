"""The cuda device's one-shot hardware check (``tools/gpu/``, ``./dev gpu-check``), where CI
can test it: its refusal on a machine without an NVIDIA GPU (exit code 2, and why), its
refusal when what it carries was not prepared, and the preparation itself, offline, from
a local wheel folder. The check's GPU part runs only on a GPU machine."""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tools(tmp_path, *tools):
    """A folder for PATH holding ``tools`` (links to this machine's) and nothing else."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return bin_dir


def _fake_nvidia_smi(bin_dir, lists_a_gpu):
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + ('echo "GPU 0: Test GPU"\n' if lists_a_gpu else "exit 9\n"))
    smi.chmod(0o755)


def _check(tmp_path, bin_dir):
    repo = tmp_path / "repo"
    (repo / "tools" / "gpu").mkdir(parents=True)
    shutil.copy(ROOT / "tools" / "gpu" / "check.sh", repo / "tools" / "gpu")
    return subprocess.run(["/bin/bash", str(repo / "tools" / "gpu" / "check.sh")], capture_output=True,
                          text=True, timeout=60, env={"PATH": str(bin_dir), "HOME": str(tmp_path)})


@pytest.mark.parametrize("smi", ["missing", "lists none"])
def test_the_check_refuses_a_machine_without_an_nvidia_gpu(tmp_path, smi):
    bin_dir = _tools(tmp_path, "dirname")
    if smi == "lists none":
        _fake_nvidia_smi(bin_dir, lists_a_gpu=False)
    r = _check(tmp_path, bin_dir)
    assert r.returncode == 2, r.stderr
    assert "no NVIDIA GPU here" in r.stderr and r.stdout == ""


def test_the_check_refuses_to_start_unprepared(tmp_path):
    bin_dir = _tools(tmp_path, "dirname")
    _fake_nvidia_smi(bin_dir, lists_a_gpu=True)
    r = _check(tmp_path, bin_dir)
    assert r.returncode == 1
    assert "./dev gpu-check prepare" in r.stderr


def _wheel(folder, name, version):
    """A minimal wheel of ``name`` (its metadata only), as pip reads one."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                                              "Tag: py3-none-any\n")
        z.writestr(f"{dist}.dist-info/RECORD", "")
    return path


def test_prepare_gathers_the_wheel_and_the_headers_it_carries(tmp_path):
    """Offline: pip finds the wheels in a local folder, the headers come from XSIMD_INCLUDE."""
    repo = tmp_path / "repo"
    (repo / "tools" / "gpu").mkdir(parents=True)
    shutil.copy(ROOT / "tools" / "gpu" / "prepare.sh", repo / "tools" / "gpu")
    shutil.copy(ROOT / "pyproject.toml", repo)
    index = tmp_path / "index"
    index.mkdir()
    wheels = [_wheel(index, name, version) for name, version in
              (("scipy-openblas32", "0.3.99"), ("cuda-bindings", "12.9.0"), ("cuda-pathfinder", "1.0.0"))]
    headers = tmp_path / "include" / "xsimd"
    headers.mkdir(parents=True)
    (headers / "xsimd.hpp").write_text("// test\n")
    env = {**os.environ, "PYTHON": sys.executable, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index),
           "XSIMD_INCLUDE": str(headers.parent), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    r = subprocess.run(["/bin/bash", str(repo / "tools" / "gpu" / "prepare.sh")], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (repo / ".gpu" / "wheels").iterdir()) == sorted(w.name for w in wheels)
    assert (repo / ".gpu" / "include" / "xsimd" / "xsimd.hpp").read_text() == "// test\n"
    assert "prepared .gpu/" in r.stdout


def test_the_zoo_table_sets_each_sides_counts_and_times_side_by_side():
    """``zoo_steps.markdown``: per model, PyTorch's time over ours as the speed, our launches
    beside PyTorch's CUDA activities and both sides' synchronizations, a failed side's error
    in its cell, and a loss that disagrees marked WRONG."""
    sys.path.insert(0, str(ROOT / "tools" / "gpu"))
    try:
        import zoo_steps
    finally:
        sys.path.remove(str(ROOT / "tools" / "gpu"))
    rows = [{"model": "MNIST CNN", "batch": 256, "torch_s": 0.002, "stage4_s": 0.004, "launches": 41,
             "syncs": 0, "torch_kernels": 37, "torch_syncs": 1, "loss": 2.3, "torch_loss": 2.3, "loss_ok": True},
            {"model": "LSTM 2x256", "batch": 16, "torch_s": 0.01, "error": "RuntimeError: boom",
             "torch_kernels": 90, "torch_syncs": 0},
            {"model": "GPT 4x128", "batch": 16, "torch_s": 0.008, "stage4_s": 0.008, "launches": 300,
             "syncs": 2, "torch_kernels": 250, "torch_syncs": 0, "loss": 4.0, "torch_loss": 4.2,
             "loss_ok": False}]
    lines = zoo_steps.markdown(rows, "Test GPU").splitlines()
    cells = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in lines if line.startswith("| ") and "model" not in line}
    assert cells["MNIST CNN"] == ["256", "2.00", "4.00", "0.50x", "41 / 37", "0 / 1", "2.30000 / 2.30000"]
    assert cells["LSTM 2x256"][2:6] == ["RuntimeError: boom", "-", "- / 90", "- / 0"]
    assert cells["GPT 4x128"][3] == "1.00x" and cells["GPT 4x128"][6].endswith("WRONG")


def test_the_bandwidth_command_checks_every_kernel_then_rates_it_against_the_roof(tmp_path):
    """``stagegrad cuda-bandwidth`` on a small size under the host emulation (its times mean
    nothing there; the checks and the arithmetic do): every kernel and version agrees with
    stage 3 on the host, and each row's GB/s and share of the roof follow from its bytes
    and its time."""
    from stagegrad.cuda_bandwidth import TOLERANCE

    from .emulation import run_emulated
    code = ("import json, sys\nfrom stagegrad import cuda_bandwidth as cb\n"
            "r = cb.measure(5000)\nprint(json.dumps(r))\n")
    report = run_emulated(["-c", code], timeout=600)
    assert report["available"], report["reason"]
    versions = {(r["kernel"], r["version"]) for r in report["rows"]}
    assert {("add", "one run, 16-byte packs"), ("add", "general strided loop"), ("sum", "split over the SMs"),
            ("sum", "one block per output"), ("softmax", "rows of 4096"), ("layer norm", "rows of 4096"),
            ("cross-entropy", "rows of 4096")} <= versions
    assert len(versions) == len(report["rows"]) == 11
    for r in report["rows"]:
        assert r["error"] <= TOLERANCE, r
        assert r["seconds"] > 0 and r["gbs"] == pytest.approx(r["bytes"] / r["seconds"] / 1e9)
        assert r["of_roof"] == pytest.approx(r["gbs"] / report["roof_gbs"])
    from stagegrad.cuda_bandwidth import markdown
    assert report["gpu"] in markdown(report)
