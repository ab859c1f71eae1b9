"""The dashboard in a real headless browser: ``stagegrad serve`` as a user meets it.

The test starts ``stagegrad serve`` (port 0, a fresh history) and drives the page in
Debian's Chromium over the DevTools protocol (``cdp``), which resolves no host name but
the local one. It fills the form and starts a short run on stage 3, sees it finish with
its loss chart holding every point the server stored and the history showing the final
loss and test accuracy the server recorded; runs the same settings on stage 2, whose
first loss must equal stage 3's (the stages share their random numbers); starts a long
run on stage 1, sees its chart gain points while it streams, with a progress bar and an
ETA, cancels it and sees it marked cancelled; sees a bad learning rate refused with the
server's message beside the field; sees the layer builder's parameter count equal the
zoo MLP's, a conv2d after the flatten refused with the layer named, and the count once it
is moved first; overlays the two finished runs in the comparison view. The first run is also served from
the page (Deploy), a digit drawn on its pad is classified, and the classes shown must be
those the served model gives the 28 x 28 image the page made; then it is stopped. Every request must
stay on the local server and no script may fail. Set ``STAGEGRAD_SERVE_SCREENSHOTS=DIR``
to keep the screenshots (``docs/img/serve_*.png`` are made that way).
"""
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from common_tests.cdp import find_chromium, problems, watching

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60

pytestmark = pytest.mark.xdist_group("serve")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; ./dev test installs it)")
    db = tmp_path_factory.mktemp("serve") / "runs.sqlite"
    # one thread per run: the browser and the server share the cores, and the screenshots'
    # samples/s should show the stages, not kernels' threads waiting for a core
    proc = subprocess.Popen([sys.executable, "-m", "stagegrad", "serve", "--port", "0", "--db", str(db),
                             "--threads", "1"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=TIMEOUT)
    except queue.Empty:
        proc.kill()
        raise AssertionError("stagegrad serve printed no address") from None
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
    assert m, f"stagegrad serve did not print its address: {first!r}"
    try:
        yield f"http://127.0.0.1:{m.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(server, tmp_path_factory):
    with watching(tmp_path_factory.mktemp("chromium-profile"), timeout=TIMEOUT) as b:
        yield b


# a stroke of pad coordinates (0 to 280) drawn as a pointer would draw it
DRAW = """function (stroke) {
  const pad = document.getElementById('pad'), box = pad.getBoundingClientRect();
  const at = (type, x, y) => pad.dispatchEvent(new PointerEvent(type, {pointerId: 1, bubbles: true,
    clientX: box.left + x * box.width / 280, clientY: box.top + y * box.height / 280}));
  at('pointerdown', ...stroke[0]);
  stroke.slice(1).forEach(p => at('pointermove', ...p));
  at('pointerup', ...stroke[stroke.length - 1]);
}"""
# the 28 x 28 image the page made of the drawing, as values in [0, 1]
SEEN = """function () {
  const d = document.getElementById('pad-small').getContext('2d').getImageData(0, 0, 28, 28).data;
  return Array.from({length: 28}, (_, y) => Array.from({length: 28}, (_, x) => d[4 * (y * 28 + x)] / 255));
}"""


def _get(url):
    with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
        return json.load(r)


def _set(browser, values):
    """Type ``values`` (element id -> text) into the form, as a user's input would."""
    for key, value in values.items():
        browser.evaluate(f"(function () {{ const e = document.getElementById({json.dumps(key)});"
                         f" e.value = {json.dumps(str(value))};"
                         f" e.dispatchEvent(new Event(e.tagName === 'SELECT' ? 'change' : 'input')); }})()")


def _click(browser, element_id):
    browser.evaluate(f"document.getElementById({json.dumps(element_id)}).click()")


def _row(run_id):
    """A script expression: the history table's row of the run."""
    return f"document.querySelector('#runs tr[data-id=\"{run_id}\"]')"


def _row_status(browser, run_id):
    return browser.evaluate(f"(function () {{ const r = {_row(run_id)};"
                            " return r && r.children[2].textContent; })()")


def _wait_status(browser, run_id, status):
    """Wait until the history shows the run with ``status``; fail saying what it shows."""
    shown = browser.wait_for(f"(function () {{ const r = {_row(run_id)};"
                             f" return r && r.children[2].textContent === '{status}'; }})()")
    assert shown, f"run {run_id} is not shown {status} in the history: {_row_status(browser, run_id)}"


def _shown_run(browser, previous=None):
    """The id of the run the live panel shows, once it is not ``previous``."""
    return browser.wait_for(f"(function () {{ const m = document.getElementById('run-title').textContent"
                            f".match(/^Run (\\d+)/); return m && m[1] !== '{previous}' ? m[1] : null; }})()")


def _start_and_finish(browser, previous=None):
    """Press Start, wait for the run to be shown and to finish; its id."""
    _click(browser, "start")
    run_id = _shown_run(browser, previous)
    assert run_id, "starting a run did not show it"
    _wait_status(browser, run_id, "done")
    return run_id


def _points(browser, chart):
    return int(browser.evaluate(f"document.getElementById({json.dumps(chart)}).dataset.points || '0'"))


def _shot(browser, directory, name, selector=None):
    """Screenshot the window, or the element ``selector`` (all of it, beyond the window)."""
    path = directory / name
    clip = None
    if selector:
        clip = browser.evaluate(f"(function () {{ const r = document.querySelector({json.dumps(selector)})"
                                ".getBoundingClientRect(); return {x: r.left + scrollX, y: r.top + scrollY,"
                                " width: r.width, height: r.height}; })()")
    browser.screenshot(path, clip)
    assert path.stat().st_size > 10000, f"{name} looks empty"
    keep = os.environ.get("STAGEGRAD_SERVE_SCREENSHOTS")
    if keep:
        shutil.copyfile(path, Path(keep) / name)


def test_start_watch_cancel_compare_in_the_browser(server, browser, tmp_path):
    browser.call("Page.navigate", url=server + "/")
    assert browser.wait_for("!!document.body && document.body.dataset.ready === '1'"), \
        "the page did not finish loading"
    stages = browser.evaluate("[...document.querySelectorAll('#stage option')].map(o => o.value)")
    assert stages == [s["id"] for s in _get(server + "/api/options")["stages"]] and "0" in stages

    # a short run: its chart fills, it finishes, the history shows the server's numbers
    short = {"model": "mlp", "stage": "3", "epochs": "2", "subset": "1024", "test_subset": "500",
             "batch_size": "32", "lr": "0.003"}
    _set(browser, short)
    first = _start_and_finish(browser)
    run = _get(f"{server}/api/runs/{first}")
    assert run["status"] == "done" and run["settings"]["lr"] == 0.003 and run["stage"] == "stage3_simd"
    curve = [p for p in run["points"] if p["loss"] is not None]
    browser.wait_for(f"document.getElementById('chart-loss').dataset.points == {len(curve)}")
    assert _points(browser, "chart-loss") == len(curve) >= 2
    row = browser.evaluate(f"[...{_row(first)}.children].map(td => td.textContent)")
    assert row[6] == f"{run['final']['final_loss']:.4f}" == f"{curve[-1]['loss']:.4f}", row
    assert row[7] == f"{run['final']['test_accuracy'] * 100:.2f}% test", row
    assert browser.evaluate("document.getElementById('progress-text').textContent") == \
        f"{run['total_steps']} / {run['total_steps']} steps"
    links = browser.evaluate("[...document.querySelectorAll('#downloads a')]"
                             ".map(a => a.getAttribute('href'))")
    assert links == [f"/api/runs/{first}/weights.safetensors", f"/api/runs/{first}/model.onnx",
                     f"/api/runs/{first}/model.ckpt"]

    # serve it: Deploy, draw a digit, classify it; the page shows what the served model answers
    assert browser.evaluate("document.getElementById('deploy-backend').value") == "3"
    _click(browser, "deploy-start")
    status = browser.wait_for("/^serving at|failed/.test(document.getElementById('deploy-status')"
                              ".textContent) && document.getElementById('deploy-status').textContent",
                              timeout=120)
    served = _get(f"{server}/api/runs/{first}")["deployment"]
    assert status == f"serving at {served['endpoint']}", status
    stroke = [(170 - 6 * i, 40 + 20 * i) for i in range(11)]  # a 1, leaning as MNIST's ones do
    browser.evaluate(f"({DRAW})({json.dumps(stroke)})")
    _click(browser, "pad-classify")
    shown = browser.wait_for("document.querySelectorAll('#pad-result li').length === 3 &&"
                             " [...document.querySelectorAll('#pad-result li')].map(li => li.textContent)")
    assert shown, "the drawn digit was not classified"
    image = browser.evaluate(f"({SEEN})()")
    assert 20 < sum(v > 0.5 for row in image for v in row) < 400, "the 28 x 28 image holds no stroke"
    request = urllib.request.Request(served["endpoint"], data=json.dumps({"instances": [image]}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=TIMEOUT) as r:
        p = json.load(r)["predictions"][0]
    want = [f"{k}: {p[k] * 100:.1f}%" for k in sorted(range(10), key=lambda k: -p[k])[:3]]
    assert shown == want, (shown, want)
    _shot(browser, tmp_path, "serve_deploy.png", "#live")
    _click(browser, "deploy-stop")
    assert browser.wait_for("document.getElementById('deploy-status').textContent === 'stopped'")
    assert _get(f"{server}/api/runs/{first}")["deployment"]["state"] == "stopped"

    # the same run on stage 2: the same start (the stages share their random numbers), its own speed
    _set(browser, {"stage": "2"})
    other = _start_and_finish(browser, first)
    other_curve = [p for p in _get(f"{server}/api/runs/{other}")["points"] if p["loss"] is not None]
    assert abs(other_curve[0]["loss"] - curve[0]["loss"]) < 1e-4
    _shot(browser, tmp_path, "serve_run.png", "main")

    # a long run: the chart updates while it streams, then cancel, and the history says so
    _set(browser, {"stage": "1", "epochs": "5", "subset": "60000", "batch_size": "16"})
    _click(browser, "start")
    second = _shown_run(browser, other)
    assert second, "the second run was not shown"
    before = browser.wait_for("+document.getElementById('chart-loss').dataset.points >= 10 &&"
                              " +document.getElementById('chart-loss').dataset.points")
    assert before, "the loss chart got no points from the running run"
    after = browser.wait_for(f"+document.getElementById('chart-loss').dataset.points > {before} &&"
                             " +document.getElementById('chart-loss').dataset.points")
    assert after, "the loss chart did not update while the run streamed"
    assert browser.evaluate("/ETA/.test(document.getElementById('eta').textContent)")
    assert browser.evaluate("parseFloat(document.getElementById('progress-fill').style.width) > 0")
    _shot(browser, tmp_path, "serve_live.png")
    _click(browser, "cancel")
    _wait_status(browser, second, "cancelled")
    assert _get(f"{server}/api/runs/{second}")["status"] == "cancelled"
    assert browser.evaluate("document.getElementById('cancel').disabled")

    # bad input: the server's message shows beside the field, nothing starts
    _set(browser, {"lr": "-1"})
    _click(browser, "start")
    message = browser.wait_for("document.getElementById('errors').textContent")
    assert message == "lr: must be more than 0 and at most 10, got -1", message
    assert browser.evaluate("document.getElementById('lr').classList.contains('bad')")
    assert len(_get(server + "/api/runs")) == 3

    # the builder: its default layers are the zoo's MLP, and the server counts as the stage did
    _set(browser, {"lr": "0.002", "model": "custom"})
    size = browser.wait_for("document.getElementById('arch-size').textContent")
    assert size.startswith(f"{run['parameters']:,} parameters"), size
    # a layer the shapes cannot take is refused, naming the layer; moving it fixes it
    _set(browser, {"new-layer": "conv2d"})
    _click(browser, "add-layer")
    message = browser.wait_for("document.getElementById('errors').textContent")
    assert message == "architecture: layer 5: conv2d needs an image (channels, height, width), but gets a " \
                      "flat input (10); it must come before the flatten", message
    assert browser.evaluate("document.getElementById('builder').classList.contains('bad')")
    _shot(browser, tmp_path, "serve_builder.png", "#setup")
    for _ in range(4):  # up, to the top: a conv on the image, then the flatten
        browser.evaluate("[...document.querySelectorAll('#layers li')].find(li =>"
                         " li.querySelector('.layer-type').textContent === 'conv2d')"
                         ".querySelector('button').click()")
    size = browser.wait_for("!document.getElementById('errors').textContent &&"
                            " document.getElementById('arch-size').textContent")
    conv = 16 * 1 * 3 * 3 + 16  # the builder's default conv2d: 16 channels, 3x3, padding 1
    assert size.startswith(f"{conv + 16 * 28 * 28 * 128 + 128 + 128 * 10 + 10:,} parameters"), size
    _set(browser, {"model": "mlp"})

    # compare: the two finished runs' curves overlaid, one series each
    browser.evaluate(f"document.querySelectorAll('#runs input[type=checkbox]').forEach(c => {{"
                     f" c.checked = ['{first}', '{other}'].includes(c.value); }})")
    _click(browser, "compare")
    drawn = browser.wait_for("+document.getElementById('compare-loss').dataset.points")
    assert drawn == len(curve) + len(other_curve), drawn
    _shot(browser, tmp_path, "serve_compare.png", "#history")

    browser.wait_for("false", timeout=0.5)  # let late loads report before the check below
    found = [p for p in problems(browser, server)
             if not (" 422" in p and ("/api/runs" in p or "/api/check" in p))]  # the refusals above
    assert not found, "the page did not work cleanly offline:\n" + "\n".join(found)
