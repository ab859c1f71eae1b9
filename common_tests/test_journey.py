"""The journey report and the documentation site, from one quick run.

``stagegrad docs`` measures a quick journey into ``docs/_generated`` and builds the site
with warnings as errors. The report is then checked against reality: the stages it
lists are the installed ones, every number is positive, the ratios are the ratios of the
times, the MNIST runs of all implementations reach the same loss (same data, same
initial weights), and the site contains the generated tables and figures. Timings
themselves are never asserted.
"""
import html
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stagegrad import installed_stages
from stagegrad.workloads import PEERS, WORKLOADS, implementations, stage_packages

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "docs" / "_generated"

pytest.importorskip("sphinx")
pytest.importorskip("matplotlib")
# one worker builds the site: two builds at once would share docs/_generated
pytestmark = pytest.mark.xdist_group("docs")


def _selected_stages(config):
    """The stages this test session covers (``--stages`` / ``STAGEGRAD_STAGES``), if chosen."""
    raw = config.getoption("--stages") or os.environ.get("STAGEGRAD_STAGES") or ""
    chosen = [s.strip().partition("[")[0] for s in raw.split(",") if s.strip()]
    return [s for s in stage_packages() if s in chosen] if chosen else stage_packages()


@pytest.fixture(scope="module")
def stages(request):
    return _selected_stages(request.config)


# the journey's quick run, as `stagegrad journey --quick` measures it before its own chapters'
# tables (the models, the convolution ladder and the devices have tests of their own)
QUICK_JOURNEY = """
import sys
from pathlib import Path
from stagegrad.journey import QUICK_BUDGET, measure_all, write
from stagegrad.measure import set_threads
set_threads(1)
write(measure_all(stages=sys.argv[2].split(","), quick=True, budget=QUICK_BUDGET, threads=1), Path(sys.argv[1]))
"""


@pytest.fixture(scope="module")
def journey_dir(tmp_path_factory, stages):
    out = tmp_path_factory.mktemp("journey")
    proc = subprocess.run([sys.executable, "-c", QUICK_JOURNEY, str(out), ",".join(stages)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, f"the quick journey failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
    return out


@pytest.fixture(scope="module")
def report(journey_dir):
    return json.loads((journey_dir / "journey.json").read_text())


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site as a clean clone builds it: from the committed reference run, measuring nothing."""
    html = tmp_path_factory.mktemp("site") / "html"
    proc = subprocess.run([sys.executable, "-m", "stagegrad", "docs", "--out", str(html)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, f"stagegrad docs failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
    return html


def _cells(report):
    return {(r["workload"], str(r["size"]), r["impl"]): r for r in report["results"]}


def _package(name):
    return name.partition("[")[0]


def test_lists_exactly_the_installed_implementations(report, stages):
    assert list(dict.fromkeys(map(_package, report["stages"]))) == stages
    names = [i["name"] for i in report["implementations"]]
    assert names == implementations(stages)
    assert [n for n in names if n in PEERS] == [p for p in PEERS if p in names]


def test_every_cell_is_reported_once_and_none_failed(report):
    """A stage with two GEMMs is measured with both where a workload multiplies matrices,
    with its first elsewhere."""
    first = {}
    for i in report["implementations"]:
        first.setdefault(i["package"], i["name"])
    expected = {(w.key, str(s), i["name"]) for w in WORKLOADS for s in w.quick_sizes
                for i in report["implementations"] if w.gemm or first[i["package"]] == i["name"]}
    assert set(_cells(report)) == expected
    assert len(report["results"]) == len(expected)
    errors = [(r["workload"], r["impl"], r["reason"]) for r in report["results"] if r["status"] == "error"]
    assert not errors
    for r in report["results"]:
        if r["status"] == "skipped":
            assert "budget" in r["reason"] and r["estimate_s"] > report["budget_s"]
        if r["status"] == "unsupported":  # only for want of autograd or of the data files
            assert (r["impl"], r["workload"]) == ("numpy", "overhead") or (
                r["workload"] == "mnist" and "MNIST files not found" in r["reason"]), r


def test_numbers_are_positive_and_consistent(report):
    ok = [r for r in report["results"] if r["status"] == "ok"]
    assert any(r["impl"] == report["stages"][0] for r in ok)
    for r in ok:
        assert r["time_s"] > 0 and all(s > 0 for s in r["samples"])
        assert r["min_s"] <= r["time_s"] <= max(r["samples"])
        assert r["cores"] > 0 and r["rounds"] >= 1 and isinstance(r["doubts"], list)
        if r["metric"] == "GFLOP/s":
            assert r["rate"] == pytest.approx(r["flops"] / r["time_s"] / 1e9)
        elif r["metric"] == "GB/s":
            assert r["rate"] == pytest.approx(r["bytes"] / r["time_s"] / 1e9)
        elif r["metric"] == "samples/s":
            assert r["rate"] == pytest.approx(r["size"] * 64 / r["time_s"])


def test_ratios_are_ratios_of_the_times(report):
    """vs PyTorch: in the same cell; vs the previous stage: its first implementation."""
    cells = _cells(report)
    packages = list(dict.fromkeys(map(_package, report["stages"])))
    first = {}
    for name in report["stages"]:
        first.setdefault(_package(name), name)
    for (w, s, name), r in cells.items():
        torch = cells.get((w, s, "torch"))
        if r["status"] == "ok" and torch and torch["status"] == "ok":
            assert r["vs_torch"] == pytest.approx(torch["time_s"] / r["time_s"])
        else:
            assert r["vs_torch"] is None
        pkg = _package(name)
        before = packages[packages.index(pkg) - 1] if pkg in packages[1:] else None
        prev = cells.get((w, s, first[before])) if before else None
        if r["status"] == "ok" and prev and prev["status"] == "ok":
            assert r["speedup_prev"] == pytest.approx(prev["time_s"] / r["time_s"])
        else:
            assert r["speedup_prev"] is None


def test_mnist_runs_agree_on_the_loss(report):
    losses = {r["impl"]: r["extra"]["loss"] for r in report["results"]
              if r["workload"] == "mnist" and r["status"] == "ok"}
    if not losses:
        pytest.skip("no MNIST run fitted the budget, or the MNIST files are absent")
    for name, loss in losses.items():
        assert math.isfinite(loss) and 0 < loss < math.log(10) + 0.1, (name, loss)
    ref = next(iter(losses.values()))
    assert all(loss == pytest.approx(ref, abs=2e-3) for loss in losses.values()), losses


def test_machine_and_roofline_recorded(report):
    m = report["machine"]
    assert m["cpu_model"] and m["cores"]["usable"] >= 1
    assert m["peak"]["gflops"] > 0 and m["bandwidth"]["gbs"] > 0
    if "stage3_simd" in installed_stages():  # the peak is our own FMA loop, per thread count used
        assert "multiply-add" in m["peak"]["method"] and m["peak"]["per_core"] > 0
        assert m["peak"]["each"]["1"] == m["peak"]["per_core"]
        assert str(m["peak"]["threads"]) in m["peak"]["each"]
    assert "matmul" in m["gemm"]["method"] and "copies" in m["bandwidth"]["method"]
    for impl in report["implementations"]:  # the docs' quick journey runs on one thread
        assert impl["cores"] > 0 and impl["threads"] in (1, None), impl
    assert m["cache_bandwidth"]["gbs"] > 0 and "cache-resident" in m["cache_bandwidth"]["method"]
    for pkg, info in m["simd"].items():  # stages with SIMD paths record the one they ran on
        assert pkg in {i["package"] for i in report["implementations"]}
        assert info["path"] in info["supported"]


def test_markdown_and_plots_written(report, journey_dir):
    """A row per workload and size, a column per implementation; each measured cell shows
    its time, each stage after the first its speed-up; each skip has a note with its reason."""
    from stagegrad.formatting import fmt_seconds
    md = (journey_dir / "journey.md").read_text().replace("\u00a0", " ")  # cells keep "1.2 ms" on one line
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| workload | size |"))
    for impl in report["implementations"]:
        assert impl["label"].replace(" (", " ").replace(" GEMM)", "") in header
    body = [line for line in lines if line.startswith("| ") and line is not header and "---" not in line
            and not line.startswith("| cores used |")]
    cores = next(line for line in lines if line.startswith("| cores used |"))  # the last row
    assert cores.count("/1") == len(report["implementations"]), cores  # each on the one thread it was set to
    assert len(body) == len({(r["workload"], str(r["size"])) for r in report["results"]})
    by_cell, title = {}, None  # a workload's title heads its first row only
    for line in body:
        cells = [c.strip() for c in line.strip()[1:-1].split("|")]
        title = cells[0] or title
        by_cell[(title, cells[1].partition(" [")[0])] = line
    titles = {w["key"]: w["title"] for w in report["workloads"]}
    for r in report["results"]:
        row = by_cell[(titles[r["workload"]], r["size_label"])]
        if r["status"] == "ok":
            assert fmt_seconds(r["time_s"]) in row
            if r["doubts"] or r["speedup_prev_doubt"]:  # a ratio the hardware does not allow: flagged
                assert "<br>? [" in row
            elif r["speedup_prev"] is not None:
                assert f"<br>{r['speedup_prev']:.3g}x" in row or f"<br>{r['speedup_prev']:,.0f}x" in row
        else:
            note = next(line for line in lines if line.startswith("- [") and r["reason"] in line)
            assert f"[{note[3:note.index(']')]}]" in row
    for name in ("ladder.png", "roofline.png"):
        data = (journey_dir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def _fake_report(skip=(("matmul", "stage0_python"),)):
    """A report with made-up times for every installed implementation (no measuring): the
    layout tests need its shape, not its numbers."""
    from stagegrad.journey import add_ratios
    impls = implementations()
    labels = {"numpy": "NumPy", "torch": "PyTorch"}
    entries = []
    for name in impls:
        pkg = name.partition("[")[0]
        gemm = name.partition("[")[2].rstrip("]")
        label = labels.get(pkg) or f"stage {pkg[5]}" + (f" ({gemm} GEMM)" if gemm else "")
        entries.append({"name": name, "label": label, "kind": "peer" if pkg in labels else "stage",
                        "package": pkg})
    results = []
    for w in WORKLOADS:
        for s in w.sizes:
            for n, i in enumerate(entries):
                first = next(e["name"] for e in entries if e["package"] == i["package"])
                if not w.gemm and i["name"] != first:  # as the journey: one GEMM where none multiplies
                    continue
                skipped = (w.key, i["package"]) in skip
                results.append({"workload": w.key, "size": s, "size_label": w.size_label(s),
                                "impl": i["name"], "label": i["label"], "kind": i["kind"], "package": i["package"],
                                "status": "skipped" if skipped else "ok",
                                "reason": "est. 41 s > budget 10 s" if skipped else None,
                                "time_s": None if skipped else 10.0 ** -(n % 6) * 1.234, "note": None,
                                "extra": {"loss": 0.5} if w.key == "mnist" else {}})
    report = {"implementations": entries, "results": results,
              "stages": [e["name"] for e in entries if e["kind"] == "stage"],
              "workloads": [{"key": w.key, "title": w.title, "metric": w.metric} for w in WORKLOADS]}
    add_ratios(report)
    return report


def test_terminal_table_fits_100_columns_and_explains_skips():
    import re

    from stagegrad import journey_report as R
    report = _fake_report()
    text = R.text(report)
    assert max(map(len, text.splitlines())) <= 100, text
    for w in WORKLOADS:
        assert w.title in text
    n = re.search(r"\[(\d+)\] skipped: est. 41 s > budget 10 s \(stage 0, matmul a @ b, 64x64", text).group(1)
    assert f"skip [{n}]" in text
    assert "loss after the last step: 0.5000 on every implementation that ran" in text


def test_a_stage_without_a_package_is_marked_as_such(tmp_path, monkeypatch):
    """The landing page's stage list and a chapter's top say "planned" or "in progress"
    for a stage that has no folder, or a folder without ``__init__.py``, instead of numbers."""
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import stagegrad_docs as ext
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    monkeypatch.setattr(ext, "stage_packages", lambda: ["stage0_python"])
    monkeypatch.setattr(ext, "ROOT", tmp_path)
    (tmp_path / "stage1_strides").mkdir()
    assert ext.stage_status("0") == "ready"
    assert ext.stage_status("1") == "in progress"
    assert ext.stage_status("2") == "planned"
    source = ["# Stage 2: Cython storage and kernels\n\nBody.\n"]
    ext._source_read(None, "stage2", source)
    assert source[0].startswith("# Stage 2") and "This stage is planned" in source[0]
    report = _fake_report()
    table = ext.stages_table(report)
    assert "| planned |" in table and "| in progress |" in table


def _fake_machine(monkeypatch):
    """The machine's measurements replaced by fixed figures (no measuring)."""
    from stagegrad import roofline
    fake = {"gbs": 1.0, "gflops": 1.0, "per_core": 1.0, "threads": 1, "each": {1: 1.0}, "by": "numpy",
            "method": ""}
    for name in ("measure_peak_gflops", "measure_gemm_gflops", "measure_bandwidth_gbs",
                 "measure_cache_bandwidth_gbs"):
        monkeypatch.setattr(roofline, name, lambda *args, **kwargs: fake)


def _row_lines(text):
    """A row's first line: the size, indented two spaces under its workload's title."""
    return [line for line in text.splitlines() if line.startswith("  ") and line[2] != " "]


def test_headline_names_the_fastest_stage_and_its_ratios():
    """Against the made-up times: the fastest stage is 10^5 times the first stage's speed,
    and 10^3 times PyTorch's; a workload the first stage skipped has no headline row."""
    from stagegrad import journey_report as R
    report = _fake_report()
    fastest = report["implementations"][5]
    if fastest["kind"] != "stage" or "torch" not in report["stages"] + [i["name"] for i in
                                                                         report["implementations"]]:
        pytest.skip("needs six stage implementations and PyTorch")
    lines = R.headline(report).splitlines()
    assert lines[0].startswith("| workload | fastest stage | its speed-up over stage 0")
    mlp = next(line for line in lines if line.startswith("| MLP training step"))
    assert f"| {fastest['label']} | 100,000x |" in mlp and mlp.endswith("| 1,000x |")
    assert not any(line.startswith("| matmul") for line in lines)


def test_journey_prints_each_row_as_it_is_measured(monkeypatch):
    """The live table shows a row once its last cell is measured, before the next row starts."""
    import io

    from stagegrad import journey
    _fake_machine(monkeypatch)
    out, seen = io.StringIO(), []

    def cell(w, size, impl, budget, target, measured):
        seen.append(len(_row_lines(out.getvalue())))  # rows printed when this cell starts
        return {"workload": w.key, "size": size, "size_label": w.size_label(size), "impl": impl.name,
                "label": impl.label, "kind": impl.kind, "package": impl.package, "metric": None,
                "status": "ok", "reason": None, "time_s": 1e-3, "note": None, "extra": {}}
    monkeypatch.setattr(journey, "measure_cell", cell)
    report = journey.measure_all(stages=["stage0_python"], quick=True, stream=io.StringIO(), live=out)
    keys = list(dict.fromkeys((r["workload"], str(r["size"])) for r in report["results"]))
    assert len(_row_lines(out.getvalue())) == len(keys)
    assert seen == sorted(seen) and seen[-1] == len(keys) - 1


def _fake_cell(w, size, impl, budget, target, measured, counter=[0]):
    """A made-up cell at the extremes the terminal table must fit: times from 0.1 µs to
    hours (ratios of 1e-7 and 1e7), a dozen distinct notes (two-digit marks), single-call
    and unsteady marks, skips, unsupported and failed cells."""
    counter[0] += 1
    n = counter[0]
    row = {"workload": w.key, "size": size, "size_label": w.size_label(size), "impl": impl.name,
           "label": impl.label if w.gemm else impl.base_label, "kind": impl.kind, "package": impl.package,
           "metric": w.metric, "flops": None, "status": "ok", "reason": None, "time_s": None, "note": None,
           "extra": {"loss": 0.1 * (n % 3)} if w.key == "mnist" else {}, "cores": 1.0 + (n % 4) / 2}
    if n % 11 == 0:
        return dict(row, status="skipped", reason=f"est. {n} s > budget 10 s", estimate_s=n)
    if n % 13 == 0:
        return dict(row, status="unsupported", reason=f"not supported here ({n})")
    if n % 17 == 0:
        return dict(row, status="error", reason=f"RuntimeError: made up ({n})")
    seconds = 10.0 ** ((n * 7) % 12 - 7) * 1.2345  # 0.12 µs to 12,345 s
    return dict(row, time_s=seconds, min_s=seconds, samples=[seconds, seconds * 4],
                note="single call, warm-up included" if n % 5 == 0 else None, unsteady=n % 3 == 0)


def _fake_devices_report():
    """A full `stagegrad devices` report with every column it can have (webgpu, cuda and
    PyTorch CUDA) and made-up times at the extremes (no measuring)."""
    from types import SimpleNamespace

    from stagegrad import devices
    columns = ["webgpu", "cuda", "PyTorch CUDA"]
    seconds, k = {}, 0
    for label in ["stage 3", "webgpu, queued", "webgpu, synchronized", "cuda, queued", "cuda, synchronized",
                  "PyTorch", "PyTorch CUDA, queued", "PyTorch CUDA, synchronized"]:
        seconds[("overhead", label)] = 1.234e-6 * 10 ** (len(seconds) % 4)
    for dev in ("webgpu", "cuda"):
        for direction, pinned in devices.TRANSFERS:
            if dev == "cuda" or not pinned:  # pinned memory is the cuda device's
                seconds[("transfer", (dev, devices._transfer_label(direction, pinned)))] = 0.0123
    for name in devices.SWEEPS:
        for n in devices.FULL[name]:
            for label in ["stage 3"] + columns:
                k += 1
                seconds[("sweep", (name, n, label))] = 1.23456e-6 * 10 ** (k % 7)
    info = {"available": True, "reason": "", "name": "a GPU with a rather long marketing name (PCIe, 80 GB)",
            "software": False}
    return devices._report(False, SimpleNamespace(get_num_threads=lambda: 1),
                           {"webgpu": dict(info), "cuda": dict(info)}, columns,
                           SimpleNamespace(__version__="2.13.0+cpu"), devices.FULL, seconds, "a CPU")


@pytest.fixture
def threads_kept(monkeypatch):
    """The thread variables and every loaded library's count as they were, after a test that
    runs the journey's command (which sets them all)."""
    from stagegrad import STAGES
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, os.environ.get(name, "1"))
    libs = [sys.modules[m] for m in (*STAGES.values(), "torch") if hasattr(sys.modules.get(m), "get_num_threads")]
    before = [lib.get_num_threads() for lib in libs]
    yield
    for lib, n in zip(libs, before):
        lib.set_num_threads(n)


def test_journey_prints_within_100_columns(monkeypatch, tmp_path, capsys, threads_kept):
    """Everything ``stagegrad journey`` prints (the live table, its notes, the machine, and
    stage 4's devices) fits 100 columns, with every installed stage and peer, two-digit
    notes, extreme ratios and a devices report with every column it can have."""
    from stagegrad import cli, devices, journey
    _fake_machine(monkeypatch)
    monkeypatch.setattr(journey, "measure_cell", _fake_cell)
    monkeypatch.setattr(devices, "measure", lambda quick=False, stream=None: _fake_devices_report())
    monkeypatch.setattr(journey, "stage3_chapter", lambda report, args: ([], []))  # its own tests
    with pytest.raises(RuntimeError, match="cell.s. failed"):  # the made-up failures are reported
        journey.run(cli.build_parser().parse_args(["journey", "--no-plots", "--out", str(tmp_path)]))
    out = capsys.readouterr().out
    long = [line for line in out.splitlines() if len(line) > 100]
    assert not long, "\n".join(long)
    assert "[12]" in out and "cores used" in out and "~" in out
    if "stage4_gpu" in stage_packages():  # the sweep, too wide with every device, is split
        assert sum(line.startswith("| workload | size ") for line in out.splitlines()) >= 2


def test_threads_reach_every_stage_already_imported(monkeypatch, threads_kept):
    """The command line imports every stage (to list them in its help) before the journey
    parses ``--threads``, and a stage reads ``OMP_NUM_THREADS`` when it is imported: the
    journey must still set each stage's count, or stage 3 runs on every core beside peers
    on one."""
    from stagegrad import cli, journey
    if "stage3_simd" not in stage_packages():
        pytest.skip("needs a stage that computes on threads (stage 3)")
    import stage3_simd
    seen = {}

    def measure_all(**kwargs):
        seen["threads"] = stage3_simd.get_num_threads()
        raise RuntimeError("measured nothing")
    monkeypatch.setattr(journey, "measure_all", measure_all)
    stage3_simd.set_num_threads(2)  # as if imported where OMP_NUM_THREADS was unset, on 2 cores
    assert cli.main(["journey", "--threads", "1", "--no-plots"]) == 1
    assert seen["threads"] == 1


def test_a_cell_whose_samples_disagree_is_measured_again():
    """``steady`` measures again while a round's slowest sample is over 3x its fastest (up
    to three rounds, while the budget holds one more), reports the median of all the
    samples, the cores of all the timed calls, and whether the last round still disagreed."""
    from stagegrad.measure import steady

    def rounds(*sample_lists):
        it = iter(sample_lists)
        asked = []

        def measure(left):
            asked.append(left)
            samples = next(it)
            return {"time_s": sorted(samples)[len(samples) // 2], "min_s": min(samples), "samples": samples,
                    "calls_per_sample": 10, "note": None, "timed_s": 0.1, "cpu_s": 0.1 * len(asked),
                    "spent_s": 0.2}
        return measure, asked
    stall, calm = [1e-6, 1.67e-3], [1e-6, 1.1e-6, 1e-6, 1.2e-6, 1e-6]
    measure, asked = rounds(calm)
    t = steady(measure, budget=10.0)
    assert asked == [10.0] and t["rounds"] == 1 and not t["unsteady"] and t["time_s"] == 1e-6
    measure, asked = rounds(stall, calm)
    t = steady(measure, budget=10.0)
    assert asked == [10.0, pytest.approx(9.8)] and t["rounds"] == 2 and not t["unsteady"]
    assert t["samples"] == stall + calm and t["time_s"] == 1e-6 and t["min_s"] == 1e-6
    assert t["cores"] == pytest.approx((0.1 + 0.2) / 0.2) and t["spread"] == pytest.approx(1.2)
    measure, asked = rounds(stall, stall, stall, calm)
    t = steady(measure, budget=10.0)
    assert len(asked) == 3 and t["rounds"] == 3 and t["unsteady"] and t["spread"] == pytest.approx(1670)
    measure, asked = rounds(stall, calm)
    t = steady(measure, budget=0.3)  # 0.2 s spent of 0.3: no room for another round of 0.2 s
    assert len(asked) == 1 and t["unsteady"]


def test_plausibility_flags_what_the_hardware_cannot_do():
    """A GEMM above the FMA peak of the cores it used is doubted (the report's 460 GFLOP/s
    "on one thread" against a 240 GFLOP/s core), and so is a peer more than 1000x slower
    than a stage (the landing page's "1,670x PyTorch"); a stage 1000x faster than the
    stage before it is not (interpreted Python to compiled code)."""
    from stagegrad import plausibility as P
    assert P.spread([2.0]) == 1.0 and P.spread([2.0, 1.0, 6.0]) == 6.0
    assert not P.disagrees([1.0, 1.2, 2.9]) and P.disagrees([1.0, 3.5])
    gemm = {"status": "ok", "flops": 2 * 1024 ** 3, "time_s": 4.67e-3, "cores": 1.0}
    assert "above the FMA peak" in P.above_peak(gemm, per_core_peak=240.0)
    assert "460 GFLOP/s on 1.0 core(s)" in P.above_peak(dict(gemm, cores=None), 240.0)
    assert P.above_peak(dict(gemm, cores=1.98), 240.0) is None  # two cores can
    assert P.above_peak(dict(gemm, time_s=9e-3), 240.0) is None
    assert P.above_peak(dict(gemm, flops=None), 240.0) is None and P.above_peak(gemm, None) is None
    assert P.above_peak(dict(gemm, status="skipped"), 240.0) is None
    stage = {"kind": "stage", "time_s": 1e-6, "doubts": []}
    peer = {"kind": "peer", "time_s": 1.67e-3, "doubts": []}
    assert "1,670x slower" in P.ratio_doubt(peer, stage)
    assert P.ratio_doubt(dict(peer, time_s=5e-4), stage) is None
    assert P.ratio_doubt(stage, peer) is None  # a stage far slower than a peer: stage 0 is
    assert P.ratio_doubt(dict(stage, time_s=1.0), stage) is None  # stage 0 over stage 3
    assert P.ratio_doubt(dict(peer, time_s=2e-6), dict(stage, doubts=["above the peak"])) == "above the peak"
    report = {"machine": {"peak": {"per_core": 240.0}},
              "results": [dict(gemm, impl="fast"), dict(gemm, time_s=9e-3, impl="slow"),
                          {"status": "skipped", "impl": "skipped"}]}
    P.check(report)
    assert [len(r.get("doubts", ())) for r in report["results"]] == [1, 0, 0]
    assert "doubts" not in report["results"][2]


def test_tables_mark_unsteady_cells_and_flagged_ratios():
    """An unsteady cell's time carries ``~``; a doubted cell's ratios are ``?`` with a note
    giving the reason, in the terminal and in Markdown; the cores row shows each column's
    most cores over its threads."""
    from stagegrad import journey_report as R
    from stagegrad.journey import add_ratios
    report = _fake_report()
    cells = {(r["workload"], str(r["size"]), r["impl"]): r for r in report["results"]}
    stages = [i["name"] for i in report["implementations"] if i["kind"] == "stage"]
    if len(stages) < 2:
        pytest.skip("needs two stages")
    cells[("add", "10000", stages[1])]["unsteady"] = True
    cells[("matmul", "128", stages[1])]["doubts"] = ["a made-up reason it is not a result"]
    for r in report["results"]:
        r["cores"] = 1.0
    for impl in report["implementations"]:
        impl["threads"] = 1
    add_ratios(report)
    for text in (R.text(report), R.table(report)):
        assert "~" in text and "unsteady" in text
        line = next(x for x in text.splitlines() if "a made-up reason" in x)
        n = line.partition("]")[0].rpartition("[")[2]
        assert f"? [{n}]" in text and "128x128" in line
        assert "cores used" in text and "1.0/1" in text


def test_headline_quotes_only_results_and_says_when_quick():
    """The landing page's table: a quick run says so above it; a peer more than 1000x
    slower is ``?`` with a note, never a ratio; a doubted cell is never the fastest stage."""
    from stagegrad import journey_report as R
    from stagegrad.journey import add_ratios
    report = _fake_report()
    if not {"torch", "numpy"} <= {i["name"] for i in report["implementations"]} or len(report["stages"]) < 6:
        pytest.skip("needs six stage implementations, NumPy and PyTorch")
    report["quick"] = False
    assert "quick run" not in R.headline(report)
    report["quick"] = True
    text = R.headline(report)
    assert text.startswith("**These figures are from a quick run**")
    mlp = next(line for line in text.splitlines() if line.startswith("| MLP training step"))
    n = mlp.rpartition("? [")[2].partition("]")[0]  # NumPy: 10,000x the fastest stage's time
    assert f"- [{n}] a peer 10,000x slower than a stage" in text and "10,000x |" not in mlp
    fastest = report["stages"][5]
    cell = next(r for r in report["results"] if r["workload"] == "mlp_step" and r["impl"] == fastest)
    cell["doubts"] = ["above the peak"]
    add_ratios(report)
    mlp = next(line for line in R.headline(report).splitlines() if line.startswith("| MLP training step"))
    assert f"| {cell['label']} |" not in mlp


def test_site_shows_the_reference_run(site):
    """A clean clone's site quotes the newest committed run, names it, and shows its tables
    in every stage chapter; the landing page has the journey's figure, headline and stages."""
    from stagegrad import STAGES, chapters
    run = chapters.newest()
    report = json.loads((run / "journey.json").read_text())
    journey = (site / "journey.html").read_text()
    assert "ladder.png" in journey and "roofline.png" in journey
    assert (site / "_images" / "ladder.png").exists()
    index = html.unescape((site / "index.html").read_text())  # the landing page: figure, headline, stages
    assert "ladder.png" in index and "its speed-up over" in index and "status here" in index
    assert f"docs/results/{run.name}/" in index
    titles = {w["key"]: w["title"] for w in report["workloads"]}
    first = report["stages"][0]
    for w in {r["workload"] for r in report["results"] if r["impl"] == first and r["status"] == "ok"}:
        assert titles[w] in index
    for number in STAGES:
        chapter = html.unescape((site / f"stage{number}.html").read_text())
        assert "<table" in chapter and f"Reference run {run.name}" in re.sub("<[^>]+>", "", chapter)
        assert "were measured when this site was built" not in chapter  # the committed run: no label
    reading = (site / "reading_path.html").read_text()
    assert "reading_path.html" in index and "_run" in reading and "MatMul" in reading
    primitives = (site / "api" / "primitives.html").read_text()
    assert "<code" in primitives and "native" in primitives
    assert "class=\"sig" in (site / "api" / "tensor.html").read_text()  # autodoc ran


def test_stage3_chapters_show_their_ladders_and_models(site):
    gemm = html.unescape((site / "stage3_gemm.html").read_text())
    assert "+ register micro-kernel" in gemm and "OpenBLAS, 1 thread" in gemm
    assert (site / "_images" / "gemm_sweep.png").exists() and "gemm_sweep.png" in gemm
    models = html.unescape((site / "stage3_models.html").read_text())
    assert "resnet18" in models.lower() and "<table" in models
