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


@pytest.fixture(scope="module")
def site(tmp_path_factory, stages):
    html = tmp_path_factory.mktemp("site") / "html"
    cmd = [sys.executable, "-m", "stagegrad", "docs", "--out", str(html), "--stages", ",".join(stages)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, f"stagegrad docs failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
    return html


@pytest.fixture(scope="module")
def report(site):
    return json.loads((GENERATED / "journey.json").read_text())


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
    assert "matmul" in m["peak"]["method"] and "copies" in m["bandwidth"]["method"]
    assert m["cache_bandwidth"]["gbs"] > 0 and "cache-resident" in m["cache_bandwidth"]["method"]
    for pkg, info in m["simd"].items():  # stages with SIMD paths record the one they ran on
        assert pkg in {i["package"] for i in report["implementations"]}
        assert info["path"] in info["supported"]


def test_markdown_and_plots_written(report):
    """A row per workload and size, a column per implementation; each measured cell shows
    its time, each stage after the first its speed-up; each skip has a note with its reason."""
    from stagegrad.report import fmt_seconds
    md = (GENERATED / "journey.md").read_text().replace("\u00a0", " ")  # cells keep "1.2 ms" on one line
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| workload | size |"))
    for impl in report["implementations"]:
        assert impl["label"].replace(" (", " ").replace(" GEMM)", "") in header
    body = [line for line in lines if line.startswith("| ") and line is not header and "---" not in line]
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
            if r["speedup_prev"] is not None:
                assert f"<br>{r['speedup_prev']:.3g}x" in row or f"<br>{r['speedup_prev']:,.0f}x" in row
        else:
            note = next(line for line in lines if line.startswith("- [") and r["reason"] in line)
            assert f"[{note[3:note.index(']')]}]" in row
    for name in ("ladder.png", "roofline.png"):
        data = (GENERATED / name).read_bytes()
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
    from stagegrad import report as R
    report = _fake_report()
    text = R.text(report)
    assert max(map(len, text.splitlines())) <= 100, text
    for w in WORKLOADS:
        assert w.title in text
    assert "skip [1]" in text and "[1] skipped: est. 41 s > budget 10 s (stage 0, matmul a @ b, 64x64" in text
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


def _row_lines(text):
    """A row's first line: the size, indented two spaces under its workload's title."""
    return [line for line in text.splitlines() if line.startswith("  ") and line[2] != " "]


def test_headline_names_the_fastest_stage_and_its_ratios():
    """Against the made-up times: the fastest stage is 10^5 times the first stage's speed,
    and 10^3 times PyTorch's; a workload the first stage skipped has no headline row."""
    from stagegrad import report as R
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

    from stagegrad import journey, machine
    fake = {"gbs": 1.0, "gflops": 1.0, "by": "numpy", "method": ""}
    monkeypatch.setattr(machine, "measure_peak_gflops", lambda: fake)
    monkeypatch.setattr(machine, "measure_bandwidth_gbs", lambda: fake)
    monkeypatch.setattr(machine, "measure_cache_bandwidth_gbs", lambda: fake)
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


def test_site_shows_the_generated_material(site, report):
    journey = (site / "journey.html").read_text()
    assert "ladder.png" in journey and "roofline.png" in journey
    assert (site / "_images" / "ladder.png").exists()
    first = report["stages"][0]
    chapter = (site / f"stage{first[5]}.html").read_text()
    assert "Measured by the journey report" in chapter and "<table" in chapter
    index = html.unescape((site / "index.html").read_text())  # the landing page: figure, headline, stages
    assert "ladder.png" in index and "its speed-up over" in index and "status here" in index
    titles = {w["key"]: w["title"] for w in report["workloads"]}
    for w in {r["workload"] for r in report["results"] if r["impl"] == first and r["status"] == "ok"}:
        assert titles[w] in index
    reading = (site / "reading_path.html").read_text()
    assert "reading_path.html" in index and "_run" in reading and "MatMul" in reading
    if "stage1_strides" in report["stages"]:  # the views table, measured at build time
        assert "transpose x.t()" in (site / "stage1.html").read_text()
    primitives = (site / "api" / "primitives.html").read_text()
    assert "<code" in primitives and "native" in primitives
    assert "class=\"sig" in (site / "api" / "tensor.html").read_text()  # autodoc ran


def test_stage3_chapter_shows_its_own_measurements(site):
    chapter = (site / "stage3.html").read_text()
    if "stage3_simd" not in installed_stages():  # measured whenever built, whichever stages the journey ran
        assert "Not measured: stage 3 is not built" in chapter
        return
    ladder = json.loads((GENERATED / "gemm_ladder.json").read_text())
    assert [r["rung"] for r in ladder["rows"] if r["kind"] == "rung"] == [1, 2, 3, 4, 5, 6]
    assert all(r["gflops"] > 0 for r in ladder["rows"])
    assert "gemm_ladder.png" in chapter and (site / "_images" / "gemm_ladder.png").exists()
    assert "+ register micro-kernel" in chapter and "sse2 (one thread)" in chapter
    assert "+ compiled frontend (stage 3)" in chapter and "pool misses/step" in chapter
