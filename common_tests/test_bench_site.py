"""The benchmark site renders offline: ``stagegrad bench-site`` in a real headless browser.

The test makes a small asv project in a temporary folder (a git repository with three
commits, and for each an asv results file of two benchmarks, one parametrized over two
stages), publishes it with ``stagegrad bench-site``, serves the site on 127.0.0.1 and
loads it in Debian's Chromium, which resolves no host name but the local one. The
summary grid and one benchmark's graph must render, every request must go to the local
server, and no load may fail. Set ``STAGEGRAD_BENCH_SITE_SCREENSHOT=PATH`` to keep the
graph's screenshot (docs/img/bench_site.png is made that way).
"""
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from common_tests.cdp import find_chromium, problems, watching
from stagegrad import bench_site

ROOT = Path(__file__).resolve().parents[1]
MACHINE = "testbox"
ENV = "existing-py"
STAGES = ("'stage0_python'", "'stage2_cython'")
BENCHMARKS = {  # name -> params; a parametrized one and a plain one
    "bench_demo.Add.time_add": [list(STAGES)],
    "bench_demo.time_sum": [],
}

pytestmark = pytest.mark.xdist_group("bench_site")


def _git(repo, *args, env=None):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _make_project(root):
    """A git repository with three commits and asv results for each; returns asv.conf.json."""
    _git(root, "init", "-q", "-b", "main")
    commits = []
    for i in range(3):
        (root / "f.txt").write_text(f"{i}\n")
        date = f"2026-01-0{i + 1}T12:00:00+00:00"
        env = dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date,
                   GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
        _git(root, "add", "f.txt", env=env)
        _git(root, "commit", "-q", "-m", f"c{i}", env=env)
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        commits.append((out, 1767268800000 + i * 86400000))
    conf = {"version": 1, "project": "demo", "project_url": "http://127.0.0.1/", "repo": ".",
            "branches": ["main"], "dvcs": "git", "environment_type": "existing",
            "benchmark_dir": "benchmarks", "results_dir": "results", "html_dir": "html"}
    (root / "asv.conf.json").write_text(json.dumps(conf))
    results = root / "results"
    (results / MACHINE).mkdir(parents=True)
    machine = {"arch": "x86_64", "cpu": "test cpu", "machine": MACHINE, "num_cpu": "2",
               "os": "Linux", "ram": "1000000", "version": 1}
    (results / MACHINE / "machine.json").write_text(json.dumps(machine))
    benchmarks = {"version": 2}
    for name, params in BENCHMARKS.items():
        benchmarks[name] = {
            "code": f"def {name.rsplit('.', 1)[1]}(): pass", "name": name, "type": "time",
            "unit": "seconds", "params": params, "param_names": ["stage"] if params else [],
            "version": "1", "timeout": 60, "number": 0, "repeat": 0, "min_run_count": 2,
            "rounds": 2, "sample_time": 0.01, "warmup_time": -1}
    (results / "benchmarks.json").write_text(json.dumps(benchmarks))
    columns = ["result", "params", "version", "started_at", "duration"]
    for i, (commit, date) in enumerate(commits):
        rows = {}
        for name, params in BENCHMARKS.items():
            values = [1e-3 * (j + 1) * (1 + 0.1 * i) for j in range(len(params[0]) if params else 1)]
            rows[name] = [values, params, "1", date, 0.5]
        data = {"commit_hash": commit, "env_name": ENV, "date": date,
                "params": {"arch": "x86_64", "cpu": "test cpu", "machine": MACHINE, "num_cpu": "2",
                           "os": "Linux", "ram": "1000000", "python": "3.11"},
                "python": "3.11", "requirements": {}, "env_vars": {}, "result_columns": columns,
                "results": rows, "durations": {}, "version": 2}
        (results / MACHINE / f"{commit[:8]}-{ENV}.json").write_text(json.dumps(data))
    return root / "asv.conf.json"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test reads failures from the browser, not this log
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("asv", reason="asv is not installed (pip install -e '.[test]' installs it)")
    if find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; ./dev test installs it)")
    absent = sorted({lib.package for lib in bench_site.LIBRARIES
                     if lib.path is not None and not (bench_site.SYSTEM_JS / lib.path).exists()})
    if absent:
        pytest.skip(f"apt-get install {' '.join(absent)} (./dev test installs them)")
    root = tmp_path_factory.mktemp("asvproject")
    config = _make_project(root)
    proc = subprocess.run([sys.executable, "-m", "stagegrad", "bench-site", "--config", str(config)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"stagegrad bench-site failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return root / "html", proc.stdout


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_Quiet, directory=str(site[0]))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(server, tmp_path_factory):
    with watching(tmp_path_factory.mktemp("chromium-profile")) as b:
        yield b


def test_page_references_only_local_files(site):
    html, stdout = site
    page = (html / "index.html").read_text()
    assert "https://" not in page.split("<body", 1)[0].replace('href="https://github.com', ""), \
        "a script or style is still loaded from the internet"
    assert "bench-site:" in stdout
    # flot-orderBars has no package anywhere: it must be reported by name, with its effect
    assert "MISSING flot-orderBars" in stdout and "overlap" in stdout
    for lib in bench_site.LIBRARIES:
        if lib.path is not None and lib.plugin is None:
            assert f"vendor/{lib.path}" in page, f"{lib.name} is not served from the site"
            assert (html / "vendor" / lib.path).is_file()


def test_grid_and_graph_render_offline(site, server, browser):
    browser.call("Page.navigate", url=server + "/index.html")
    # the summary grid: one cell per benchmark, each with its small graph drawn by Flot
    cells = browser.wait_for(
        "document.querySelectorAll('#summarygrid-display .benchmark-plot canvas').length >= 2 && "
        "document.querySelectorAll('#summarygrid-display .benchmark-container').length")
    assert location_is_index(browser), "the page sent itself to asv's error page"
    assert cells == len(BENCHMARKS), f"summary grid shows {cells} benchmarks, expected {len(BENCHMARKS)}"
    # one benchmark's graph: both stages' series, three commits each, on a drawn canvas
    browser.evaluate("location.hash = '#bench_demo.Add.time_add'")
    series = browser.wait_for(
        "(function () { var p = $('#main-graph').data('plot');"
        " if (!p || !$('#main-graph canvas').length) return null;"
        " return p.getData().map(function (s) { return s.data.length; }); })()")
    assert series, "the benchmark's graph was not drawn"
    assert sorted(series)[-2:] == [3, 3], f"graph series lengths {series}, expected two of 3 points"
    # each axis labelled once (asv's Flot 0.8 label plugin beside Flot 4's own draws them twice)
    labels = browser.evaluate(
        "$('#main-graph *').filter(function () { return $(this).children().length === 0 &&"
        " $.trim($(this).text()) === 'commits'; }).length")
    assert labels == 1, f"the x axis is labelled 'commits' {labels} times"
    # both plots (the graph and the overview under it) show every point inside their axes
    outside = browser.evaluate(
        "['#main-graph', '#overview'].map(function (id) { var p = $(id).data('plot'), n = 0;"
        " if (!p) return id + ' missing';"
        " p.getData().forEach(function (s) { s.data.forEach(function (d) {"
        "  if (d[1] == null) return;"
        "  if (d[0] < s.xaxis.min || d[0] > s.xaxis.max || d[1] < s.yaxis.min || d[1] > s.yaxis.max) n++;"
        " }); }); return n; })")
    assert outside == [0, 0], f"points outside the axes' ranges (graph, overview): {outside}"
    # ...and use the height they have: the highest point is in the upper half of each plot
    tops = browser.evaluate(
        "['#main-graph', '#overview'].map(function (id) { var p = $(id).data('plot'), top = -Infinity;"
        " var y = p.getAxes().yaxis; p.getData().forEach(function (s) { s.data.forEach(function (d) {"
        "  if (d[1] != null) top = Math.max(top, d[1]); }); });"
        " return (top - y.min) / (y.max - y.min); })")
    assert all(0.5 < t <= 1 for t in tops), f"highest point at {tops} of the plots' heights"
    # the y axis starts at zero unless "zoom y axis" is on: Flot honours the range asv sets
    assert browser.evaluate("$('#main-graph').data('plot').getAxes().yaxis.min") == 0
    # the legend (shown by default) is readable: not drawn on SVG's default black fill
    fills = browser.evaluate("$('#main-graph .legend rect.background').map(function () {"
                             " return getComputedStyle(this).fill; }).get()")
    assert fills and all(f not in ("rgb(0, 0, 0)", "black") for f in fills), f"legend fill {fills}"
    shot = site[0] / "graph.png"
    browser.screenshot(shot)
    assert shot.stat().st_size > 10000
    keep = os.environ.get("STAGEGRAD_BENCH_SITE_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
    # the same benchmark over its parameter: a bar chart on a category axis (Flot's
    # categories plugin), a series of bars per commit shown (the latest by default), a bar
    # per stage
    browser.evaluate("location.hash = '#bench_demo.Add.time_add?x-axis=stage'")
    bars = browser.wait_for(
        "(function () { var p = $('#main-graph').data('plot');"
        " if (!p || !p.getData().length || !p.getData()[0].bars.show) return null;"
        " return p.getData().map(function (s) { return s.data.length; }); })()")
    assert bars and all(n == len(STAGES) for n in bars), f"bar chart series lengths {bars}"
    ticks = browser.evaluate("$('#main-graph').data('plot').getAxes().xaxis.ticks"
                             ".map(function (t) { return t.label; })")
    assert sorted(ticks) == sorted(s.strip("'") for s in STAGES), f"category axis ticks {ticks}"
    browser.screenshot(site[0] / "bars.png")
    browser.wait_for("false", timeout=0.5)  # let late loads report before the check below
    found = problems(browser, server)
    assert not found, "the site did not load cleanly offline:\n" + "\n".join(found)


def location_is_index(browser):
    return browser.evaluate("location.pathname").endswith("/index.html")


def test_missing_and_incompatible_libraries_are_reported(tmp_path):
    """Without the packages, each library is named with what the page lacks; none stays remote."""
    asv = pytest.importorskip("asv", reason="asv is not installed (pip install -e '.[test]' installs it)")
    html = tmp_path / "html"
    html.mkdir()
    shutil.copyfile(Path(asv.__file__).parent / "www" / "index.html", html / "index.html")
    system_js = tmp_path / "js"
    (system_js / "jquery").mkdir(parents=True)
    (system_js / "jquery" / "jquery.min.js").write_text("/*! jQuery v1.12.4 | (c) */\n")
    report = {e["name"]: e for e in bench_site.make_self_contained(html, system_js)}
    assert report["jQuery"]["status"] == "missing" and "1.12.4" in report["jQuery"]["detail"]
    for lib in bench_site.LIBRARIES:
        assert report[lib.name]["status"] == "missing", lib.name
        if lib.package and lib.name != "jQuery":
            assert f"apt-get install {lib.package}" in report[lib.name]["detail"]
    lines = "\n".join(bench_site.report_lines(list(report.values())))
    assert "MISSING Flot: " in lines and "every graph" in lines
    head = (html / "index.html").read_text().split("<body", 1)[0]
    assert "https://" not in head and "vendor/" not in head
    assert not (html / "vendor").exists()
