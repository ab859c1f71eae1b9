"""``stagegrad systems`` (what the machine does), on synthetic inputs where a figure depends
on the machine: the Amdahl fit recovers a known serial fraction, the energy reader handles
its counter's wrap and refuses a missing or unreadable domain with the reason, the counter
reader refuses cleanly, the compiler-flag builds answer IEEE's questions as IEEE says (and
-ffast-math, as GCC documents, does not), and a quick run writes a section per experiment."""
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stagegrad import systems
from stagegrad.systems import compiler as C
from stagegrad.systems import hardware as K
from stagegrad.systems import scaling as T

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("serial", [0.0, 0.05, 0.3, 1.0])
def test_amdahl_fit_recovers_a_known_serial_fraction(serial):
    threads = [1, 2, 3, 4, 8]
    times = [2.0 * (serial + (1 - serial) / p) for p in threads]
    assert T.amdahl_fit(threads, times) == pytest.approx(serial, abs=1e-12)
    noisy = [t * (1 + 0.01 * (-1) ** i) for i, t in enumerate(times)]  # 1% noise moves it little
    assert T.amdahl_fit(threads, noisy) == pytest.approx(serial, abs=0.03)


def test_amdahl_fit_needs_more_than_one_thread_count_and_stays_in_range():
    assert T.amdahl_fit([1], [3.0]) is None
    assert T.amdahl_fit([1, 2], [1.0, 1.5]) == 1.0  # slower on two: clamped, not above 1
    assert T.amdahl_fit([1, 2], [1.0, 0.4]) == 0.0  # superlinear: clamped at 0


def test_energy_reader_reads_a_domain_and_its_wrap(tmp_path):
    (tmp_path / "energy_uj").write_text("123456\n")
    (tmp_path / "max_energy_range_uj").write_text("1000000\n")
    assert K.read_energy_uj(tmp_path) == (123456, 1000000)
    assert K.joules_between(900_000, 100_000, 1_000_000) == pytest.approx(0.200001)
    assert K.joules_between(100_000, 600_000, 1_000_000) == pytest.approx(0.5)


def test_energy_reader_says_why_it_cannot(tmp_path):
    with pytest.raises(K.Unavailable, match="no .*RAPL"):
        K.read_energy_uj(tmp_path / "absent")
    (tmp_path / "energy_uj").write_text("not a number\n")
    (tmp_path / "max_energy_range_uj").write_text("1\n")
    with pytest.raises(K.Unavailable, match="cannot be read"):
        K.read_energy_uj(tmp_path)


def test_counter_reader_refuses_cleanly():
    with pytest.raises(K.Unavailable, match="system call number"):
        K.open_counter(0, 1, machine_name="pdp11")
    # an event type no kernel has: a reason, never an OSError or a crash
    with pytest.raises(K.Unavailable):
        K.read_counters(lambda: None, {"bogus": 1 << 40})


def test_counter_reader_counts_or_says_why():
    try:
        counts = K.read_counters(lambda: sum(range(100000)), {"instructions": 1})
    except K.Unavailable as e:
        assert str(e)  # a VM without counters: the reason is the result
    else:
        assert counts["instructions"] > 100000  # at least one instruction per addition


def test_the_transposed_copy_misses_the_cache_more_often():
    """What the counters section shows, asserted where the CPU's counters reach this process:
    a 4096 x 4096 float32 copy (64 MiB, past the last-level cache) read down its columns
    misses that cache more often than one read along its rows."""
    sg = pytest.importorskip("stage3_simd")
    try:
        counts = K.copy_counts(sg, 4096)
    except K.Unavailable as e:
        pytest.skip(f"no hardware counters here: {e}")
    rows, columns = counts.values()
    assert columns["cache misses"] > rows["cache misses"], counts


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probe builds with gcc on Linux")
def test_compiler_builds_answer_as_ieee_says():
    with tempfile.TemporaryDirectory() as folder:
        for flags in (["-O0"], ["-O3"]):
            lib = C.load_probe(C.build_probe(flags, folder))
            assert lib.probe_isnan(float("nan")) and not lib.probe_isnan(1.0)
            assert lib.probe_isinf(float("inf"))
            assert math.copysign(1.0, lib.probe_plus_zero(-0.0)) == 1.0
            n = 4096
            order = C._floats([1e8] + [1.0] * (n - 2) + [-1e8])
            assert lib.sum_reps(order, n, 1) == 0.0  # in order, each 1 rounds away
            a, b, c = C._floats([1.5] * 8), C._floats([2.25] * 8), C._floats([0.0] * 8)
            lib.add_reps(a, b, c, 8, 3)
            assert list(c) == [3.75] * 8


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probe builds with gcc on Linux")
def test_denormal_mode_is_restored():
    with tempfile.TemporaryDirectory() as folder:
        lib = C.load_probe(C.build_probe(["-O2"], folder))
    before = lib.get_ftz_daz()
    if before < 0:
        pytest.skip("no SSE control register on this CPU")
    section = C.denormals(quick=True)
    assert lib.get_ftz_daz() == before
    subnormal = section["rows"][1]
    assert float(subnormal[3]) > 0 and float(subnormal[6]) == 0  # IEEE keeps it; FTZ flushes it


def test_quick_run_writes_every_section(tmp_path):
    out = tmp_path / "sys"
    done = subprocess.run([sys.executable, "-m", "stagegrad", "systems", "--quick", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "systems.json").read_text())
    assert [s["name"] for s in report["sections"]] == list(systems.EXPERIMENTS)
    text = (out / "systems.md").read_text()
    for s in report["sections"]:
        assert f"### {s['title']}" in text
        assert ("unavailable" in s) != ("rows" in s)  # a figure or the reason, never neither
        if "rows" in s:
            assert all(len(row) == len(s["head"]) for row in s["rows"])
    assert (out / "systems_threads.png").stat().st_size > 1000
    flags = next(s for s in report["sections"] if s["name"] == "compiler_flags")
    if "rows" in flags:  # a strict build keeps IEEE's answers; the in-order sum loses the ones
        strict = [row for row in flags["rows"] if "fast-math" not in row[0]]
        assert all(row[5] == "yes" and row[6] == "yes" and row[4] == "0" for row in strict)
        # what -ffast-math gives up, as GCC documents: tests for NaN and infinity fold to false
        # (-ffinite-math-only), and the sum is reassociated into vector lanes, so it is no
        # longer IEEE's in-order 0
        fast = next(row for row in flags["rows"] if "fast-math" in row[0])
        assert fast[5] == "**no**" and fast[6] == "**no**" and fast[4] != "0", fast
    pool = next(s for s in report["sections"] if s["name"] == "page_faults")
    assert all(row[3] == "0" for row in pool["rows"])  # no page is read from disk
