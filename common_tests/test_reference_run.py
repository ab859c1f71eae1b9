"""The chapters carry their numbers: a committed reference run (``docs/results/``), its tables
written into the chapters, and prose that quotes no figure the run does not contain.

Reads files and runs a quick ``stagegrad results`` of two steps; it takes no ``sg`` fixture
and runs once, whichever stages the session tests.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from stagegrad import STAGES, chapters, results

ROOT = Path(__file__).resolve().parents[1]


def test_a_reference_run_is_committed_whole():
    run = chapters.newest()
    readme = (run / "README.md").read_text()
    assert "A quick run" not in readme, f"{run.name} is a quick run: its numbers are not to quote"
    for step in results.STEPS:
        row = next((line for line in readme.splitlines() if line.startswith(f"| {step.name} ")), None)
        assert row is not None and "| ok" in row, f"{run.name}: step {step.name}: {row}"
    for name, (table, _) in chapters.FILES.items():
        assert (run / table).exists(), f"{run.name} lacks {table} (the block {name})"
    machine = json.loads((run / "machine.json").read_text())
    assert machine["cpu_model"] and machine["cores"]["usable"] >= 1


def test_every_stage_chapter_opens_with_its_results():
    pages = sorted(chapters.DOCS.glob("stage*.md"))
    assert {f"stage{n}.md" for n in STAGES} <= {p.name for p in pages}
    for page in pages:
        names = [m["name"] for m in chapters.BLOCK.finditer(page.read_text(encoding="utf-8"))]
        assert names, f"{page.name} has no results table"
        assert all(chapters.known(n) for n in names), (page.name, names)


def test_the_chapters_tables_are_the_reference_runs():
    assert chapters.stale() == [], "run `stagegrad results --chapters` to rewrite them"


def test_prose_quotes_only_figures_a_results_file_contains():
    assert chapters.unbacked() == []


def test_a_figure_is_found_in_prose_but_not_in_code_or_tables(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Fused, the step runs 123.457x faster and takes 9876.5 µs.\n\n"
                    "`timeit` said `5555.5x`; so did\n\n```text\n4444.4x\n```\n\n"
                    "<!-- results: models -->\n| 3333.3x |\n<!-- end results -->\n"
                    "A 3x3 convolution on 32x32 images, an F(2x2,3x3) transform.\n")
    assert chapters.unbacked([page]) == [("page.md", "123.457x"), ("page.md", "9876.5 µs")]


def test_results_runs_its_steps_into_one_folder_and_the_chapters_render_from_it(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "stagegrad", "results", "--quick", "--only",
                           "gemm-ladder,stage1-views", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    readme = (out / "README.md").read_text()
    assert readme.startswith(f"# Reference run `{out.name}`") and "A quick run" in readme
    assert "| gemm-ladder " in readme and "| stage1-views " in readme and "| journey " not in readme
    assert (out / "logs" / "gemm-ladder.log").exists()
    sweep = json.loads((out / "gemm_sweep.json").read_text())
    assert sweep["sizes"] == [16, 32] and all(len(lad["rows"]) == len(sweep["ladders"][0]["rows"])
                                              for lad in sweep["ladders"])
    assert "transpose" in (out / "stage1_views.md").read_text()
    page = chapters.DOCS / "stage3_gemm.md"
    text = "# A page\n\n<!-- results: gemm_sweep -->\nold\n<!-- end results -->\n"
    body = chapters.filled(text, out, page)
    assert f"Reference run `{out.name}`" in body and "| 1. naive i-j-k loops" in body
    assert "gemm_sweep.png)" in body and "old" not in body
    missing = chapters.filled("<!-- results: models -->\n<!-- end results -->\n", out, page)
    assert "This run has no `models.md`" in missing
    with pytest.raises(ValueError, match="no results block named 'nope'"):
        chapters.filled("<!-- results: nope -->\n<!-- end results -->\n", out, page)


def test_an_unknown_step_is_an_error_naming_the_steps():
    with pytest.raises(ValueError, match="no step named nope .the steps: journey, models"):
        results.chosen("journey,nope")
