"""``stagegrad serve``'s API through FastAPI's test client: start, stream, cancel, history,
downloads and bad input, on real (tiny) training runs in worker processes.

The oracles: a stage's own model (its parameter count and weight shapes, its accuracy
on the same test images, its output next to ONNX Runtime's on the exported file), the
``safetensors`` package reading the downloaded weights, and the events the worker sent
against what the history stored.
"""
import importlib.util
import json
import math
import shutil
import sqlite3
import threading
import time
import urllib.request
import warnings

import numpy as np
import pytest

with warnings.catch_warnings():  # starlette 1 suggests httpx2 for its test client; httpx works the same
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    TestClient = pytest.importorskip("fastapi.testclient").TestClient  # CI=true insists on it

from stagegrad import datafiles, installed_stages, load_stage, train_text, training
from stagegrad.dashboard import architecture, settings, worker
from stagegrad.dashboard.app import create_app
from stagegrad.deploy.model import Served

TIMEOUT = 60
TINY = {"model": "mlp", "stage": "3", "epochs": 2, "subset": 256, "test_subset": 200, "batch_size": 32,
        "lr": 0.003}
# a run that is still going when the test stops it: the bundled slice's 1,024 images, 50 times
LONG = {"model": "mlp", "stage": "1", "epochs": 50, "subset": 60000, "batch_size": 16}

pytestmark = pytest.mark.xdist_group("serve")


def _wait(client, run_id, done, timeout=TIMEOUT):
    """Poll the run until ``done(run)``; the run."""
    deadline = time.monotonic() + timeout
    while True:
        run = client.get(f"/api/runs/{run_id}").json()
        if done(run):
            return run
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']} after {timeout} s"
        time.sleep(0.05)


def _events(text):
    """Parse a server-sent event stream into ``[(event, data), ...]``."""
    out = []
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line and not line.startswith(":")]
        if lines:
            fields = dict(line.split(": ", 1) for line in lines)
            out.append((fields["event"], json.loads(fields["data"])))
    return out


def _stream(client, run_id):
    """Read the run's event stream to its end in a thread, failing after ``TIMEOUT``."""
    box = {}

    def read():
        with client.stream("GET", f"/api/runs/{run_id}/events") as r:
            box["type"] = r.headers["content-type"]
            box["text"] = "".join(r.iter_text())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), f"the event stream of run {run_id} did not end"
    assert box["type"].startswith("text/event-stream")
    return _events(box["text"])


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return tmp_path_factory.mktemp("serve") / "runs.sqlite"


@pytest.fixture(scope="module")
def client(db):
    with TestClient(create_app(db, threads=1)) as c:
        yield c


@pytest.fixture(scope="module")
def finished(client):
    """A tiny MNIST run streamed from its start to its end: (run, its events)."""
    r = client.post("/api/runs", json=TINY)
    assert r.status_code == 201, r.text
    events = _stream(client, r.json()["id"])
    return client.get(f"/api/runs/{r.json()['id']}").json(), events


def test_a_run_streams_its_progress_and_the_history_keeps_it(client, finished):
    run, events = finished
    kinds = [k for k, _ in events]
    assert kinds[0] == "status" and kinds[-1] == "end" and "point" in kinds
    assert events[-1][1]["status"] == "done", events[-1][1]
    streamed = [d for k, d in events if k == "point"]
    assert [p["seq"] for p in streamed] == sorted({p["seq"] for p in streamed})
    assert streamed == run["points"]  # what was streamed is what was stored
    sg = load_stage("3")
    model = training.build_model(sg, "mlp")
    assert run["parameters"] == sum(p.numel() for p in model.parameters())
    assert run["total_steps"] == TINY["epochs"] * math.ceil(TINY["subset"] / TINY["batch_size"])
    losses = [p for p in run["points"] if p["loss"] is not None]
    assert losses[-1]["step"] == run["total_steps"]
    assert run["final"]["final_loss"] == losses[-1]["loss"]
    tests = [p["test_accuracy"] for p in run["points"] if p["test_accuracy"] is not None]
    assert len(tests) == TINY["epochs"] and run["final"]["test_accuracy"] == tests[-1]
    assert [p["lr"] for p in losses] == sorted((p["lr"] for p in losses), reverse=True)  # the cosine falls
    assert run["stage"] == "stage3_simd" and run["wall_s"] > 0
    assert run["final"]["threads"] == 1  # the app's threads per run reached the worker's kernels
    assert run["settings"] == settings.check(TINY, {"3": "stage3_simd"})
    history = client.get("/api/runs").json()
    assert history[0]["id"] == run["id"] and history[0]["status"] == "done"


def test_downloads_are_the_trained_model(client, finished, tmp_path):
    import onnxruntime
    from safetensors.numpy import load_file
    run, _ = finished
    sg = load_stage("3")
    r = client.get(f"/api/runs/{run['id']}/weights.safetensors")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    (tmp_path / "w.safetensors").write_bytes(r.content)
    weights = load_file(str(tmp_path / "w.safetensors"))
    model = training.build_model(sg, "mlp")
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert shapes == {k: v.shape for k, v in weights.items()}
    model.load_state_dict(sg.load_safetensors(str(tmp_path / "w.safetensors")))
    test_set = sg.utils.data.Subset(sg.datasets.MNIST(root=datafiles.mnist_dir(None), train=False),
                                    range(TINY["test_subset"]))
    assert training.evaluate(sg, model, test_set) == run["final"]["test_accuracy"]
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 200
    session = onnxruntime.InferenceSession(r.content, providers=["CPUExecutionProvider"])
    x = np.stack([test_set[i][0].numpy() for i in range(8)])
    ours = model(sg.from_numpy(x)).detach().numpy()
    theirs = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-4)


def _served(client, run_id, **body):
    """Deploy the run from the dashboard and wait until its server answers; the deployment."""
    r = client.post(f"/api/runs/{run_id}/deploy", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "starting"
    run = _wait(client, run_id, lambda run: run["deployment"]["state"] != "starting", timeout=120)
    assert run["deployment"]["state"] == "ready", run["deployment"]
    return run["deployment"]


def _stage_model(client, run_id, tmp_path, build):
    """The run's model rebuilt on stage 3 by ``build(sg, checkpoint)`` from the downloaded
    checkpoint, in eval mode."""
    r = client.get(f"/api/runs/{run_id}/model.ckpt")
    assert r.status_code == 200, r.text
    (tmp_path / "model.ckpt").write_bytes(r.content)
    sg = load_stage("3")
    ckpt = sg.load(str(tmp_path / "model.ckpt"))
    model = build(sg, ckpt)
    model.load_state_dict(ckpt["model"])
    return sg, ckpt, model.eval()


def test_a_finished_run_is_served_from_the_dashboard(client, finished, tmp_path):
    run, _ = finished
    served = _served(client, run["id"])
    assert served["backend"] == "3" and served["name"] == f"run{run['id']}-mlp"
    assert served["endpoint"] == f"{served['url']}/v1/models/run{run['id']}-mlp:predict"
    assert served["url"].startswith("http://127.0.0.1:")
    r = client.post(f"/api/runs/{run['id']}/deploy", json={})
    assert r.status_code == 409 and "already served" in r.json()["detail"]
    with urllib.request.urlopen(served["url"] + "/v1/models", timeout=TIMEOUT) as answer:
        assert json.loads(answer.read())["models"][0]["backend"] == "stage3_simd"
    # what the page's try sends through the dashboard is what the stage's own model answers
    sg, ckpt, model = _stage_model(client, run["id"], tmp_path,
                                   lambda sg, c: training.build_model(sg, c["model_kind"]))
    assert ckpt["model_kind"] == "mlp"
    test_set = sg.datasets.MNIST(root=datafiles.mnist_dir(None), train=False)
    x = np.stack([test_set[i][0].numpy() for i in range(3)])
    r = client.post(f"/api/runs/{run['id']}/deploy/try", json={"instances": x.tolist()})
    assert r.status_code == 200, r.text
    with sg.no_grad():
        want = sg.nn.functional.softmax(model(sg.from_numpy(x)), dim=-1).numpy()
    np.testing.assert_allclose(np.array(r.json()["predictions"]), want, rtol=1e-6, atol=1e-7)
    r = client.post(f"/api/runs/{run['id']}/deploy/try", json={"instances": [[[1.0] * 27] * 28]})
    assert r.status_code == 422 and "28 x 28" in r.json()["detail"]  # the model server's own message
    # stop: the server exits, and nothing more is passed on
    r = client.post(f"/api/runs/{run['id']}/deploy/stop", json={})
    assert r.status_code == 200 and r.json()["state"] == "stopped"
    with pytest.raises(OSError):
        urllib.request.urlopen(served["url"] + "/healthz", timeout=5)
    assert client.post(f"/api/runs/{run['id']}/deploy/try", json={"instances": x.tolist()}).status_code == 409
    assert client.post(f"/api/runs/{run['id']}/deploy/stop", json={}).status_code == 409
    assert client.get(f"/api/runs/{run['id']}").json()["deployment"]["state"] == "stopped"


def test_a_built_model_is_served_on_pytorch(client, tmp_path):
    pytest.importorskip("torch")
    layers = [{"type": "conv2d", "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1},
              {"type": "batchnorm"}, {"type": "relu"}, {"type": "flatten"},
              {"type": "linear", "out_features": 10}]
    r = client.post("/api/runs", json=dict(TINY, model="custom", architecture=layers, epochs=1))
    run = _wait(client, r.json()["id"], lambda run: run["status"] not in ("queued", "running"))
    assert run["status"] == "done", run["error"]
    served = _served(client, run["id"], backend="torch")
    assert served["backend"] == "torch" and served["name"] == f"run{run['id']}-custom"
    sg, ckpt, model = _stage_model(client, run["id"], tmp_path,
                                   lambda sg, c: architecture.build(sg, c["architecture"]))
    x = np.random.default_rng(0).random((2, 1, 28, 28)).astype(np.float32)
    r = client.post(f"/api/runs/{run['id']}/deploy/try", json={"instances": x.tolist()})
    assert r.status_code == 200, r.text
    with sg.no_grad():
        want = sg.nn.functional.softmax(model(sg.from_numpy(x)), dim=-1).numpy()
    np.testing.assert_allclose(np.array(r.json()["predictions"]), want, rtol=1e-5, atol=1e-6)
    assert client.post(f"/api/runs/{run['id']}/deploy/stop", json={}).status_code == 200


def test_deploy_refuses_what_it_cannot_serve(client, finished, tmp_path):
    run, _ = finished
    r = client.post(f"/api/runs/{run['id']}/deploy", json={"backend": "7"})
    assert r.status_code == 422 and "'7' cannot serve this run" in r.json()["detail"]["errors"]["backend"]
    r = client.post(f"/api/runs/{run['id']}/deploy", json={}, headers={"origin": "http://example.invalid"})
    assert r.status_code == 403
    assert client.post("/api/runs/999999/deploy", json={}).status_code == 404
    cancelled = client.post("/api/runs", json=LONG).json()["id"]
    client.post(f"/api/runs/{cancelled}/cancel")
    run_after = _wait(client, cancelled, lambda run: run["status"] != "running")
    r = client.post(f"/api/runs/{cancelled}/deploy", json={})
    assert r.status_code == 409 and f"is {run_after['status']}" in r.json()["detail"]
    # a server that cannot load its checkpoint fails, with the reason from its log
    app = create_app(tmp_path / "runs.sqlite")
    with TestClient(app):  # its lifespan stops the servers at the end
        folder = tmp_path / "runs" / "1"
        folder.mkdir(parents=True)
        (folder / "model.ckpt").write_bytes(b"not a checkpoint")
        deployments = app.state.deployments
        deployments.start(1, "3", "broken", text=False)
        deadline = time.monotonic() + 120
        while deployments.status(1)["state"] == "starting":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        failed = deployments.status(1)
        assert failed["state"] == "failed" and "not a checkpoint" in failed["error"], failed


def test_queue_then_cancel(client, db):
    first = client.post("/api/runs", json=LONG).json()
    second = client.post("/api/runs", json=LONG).json()
    assert first["status"] == "running" and second["status"] == "queued"  # one run at a time by default
    assert client.post(f"/api/runs/{second['id']}/cancel").status_code == 200
    queued = client.get(f"/api/runs/{second['id']}").json()
    assert queued["status"] == "cancelled" and queued["started"] is None
    _wait(client, first["id"], lambda run: run["points"])
    stream = {}
    reader = threading.Thread(target=lambda: stream.update(events=_stream(client, first["id"])), daemon=True)
    reader.start()
    assert client.post(f"/api/runs/{first['id']}/cancel").status_code == 200
    run = _wait(client, first["id"], lambda run: run["status"] != "running")
    assert run["status"] == "cancelled" and run["final"] is None
    reader.join(TIMEOUT)
    stored = {k: v for k, v in run.items() if k not in ("points", "deployment")}  # the run's own row
    assert stream["events"][-1] == ("end", stored)
    assert not (db.parent / "runs" / str(first["id"])).exists(), "a cancelled run's files were left behind"
    assert client.app.state.jobs.active() == ([], [])
    r = client.post(f"/api/runs/{first['id']}/cancel")
    assert r.status_code == 409 and "already ended (cancelled)" in r.json()["detail"]
    assert client.get(f"/api/runs/{first['id']}/weights.safetensors").status_code == 404


def test_a_crashing_run_is_marked_failed_with_its_error(tmp_path):
    data = tmp_path / "mnist"
    data.mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        (data / name).write_bytes(b"not an IDX file")
    with TestClient(create_app(tmp_path / "runs.sqlite", data_dir=str(data))) as c:
        run_id = c.post("/api/runs", json=TINY).json()["id"]
        run = _wait(c, run_id, lambda run: run["status"] not in ("queued", "running"))
        assert run["status"] == "failed", run
        assert run["error"].startswith("DatasetError: ") and "SHA-256" in run["error"], run["error"]
        r = c.get(f"/api/runs/{run_id}/model.onnx")
        assert r.status_code == 404 and "the run is failed" in r.json()["detail"]


def test_a_worker_killed_from_outside_is_marked_failed(client):
    run_id = client.post("/api/runs", json=LONG).json()["id"]
    _wait(client, run_id, lambda run: run["points"])
    client.app.state.jobs._running[run_id].kill()  # as the kernel's out-of-memory killer would
    run = _wait(client, run_id, lambda run: run["status"] != "running")
    assert run["status"] == "failed" and run["error"].startswith("the worker exited with status -9"), run
    assert client.app.state.jobs.active() == ([], [])


def test_history_survives_a_restart_and_unfinished_runs_are_interrupted(finished, db, tmp_path):
    run, _ = finished
    copy = tmp_path / "runs.sqlite"
    shutil.copyfile(db, copy)
    with sqlite3.connect(copy) as con:  # as if a server had stopped mid-run
        con.execute("INSERT INTO runs (created, status, settings) VALUES (0, 'running', '{}')")
    with TestClient(create_app(copy)) as c:
        runs = {r["id"]: r for r in c.get("/api/runs").json()}
        assert runs[run["id"]]["final"] == run["final"] and runs[run["id"]]["status"] == "done"
        assert c.get(f"/api/runs/{run['id']}").json()["points"] == run["points"]
        left = max(runs)
        assert runs[left]["status"] == "interrupted" and "server stopped" in runs[left]["error"]


def test_a_language_model_trains_and_reports_its_validation_loss(client, tmp_path):
    r = client.post("/api/runs", json={"model": "lstm", "stage": "3", "steps": 4, "batch_size": 2,
                                       "context": 16})
    assert r.status_code == 201, r.text
    run = _wait(client, r.json()["id"], lambda run: run["status"] not in ("queued", "running"))
    assert run["status"] == "done", run["error"]
    assert run["settings"]["dataset"] == "shakespeare" and run["total_steps"] == 4
    val = [p["val_loss"] for p in run["points"] if p["val_loss"] is not None]
    assert val and run["final"]["val_loss"] == val[-1] and 0 < val[-1] < 10
    # the weights rebuild the model on the stage, and the ONNX file (its logits) computes the same
    import onnxruntime
    sg = load_stage("3")
    (tmp_path / "w.safetensors").write_bytes(client.get(f"/api/runs/{run['id']}/weights.safetensors").content)
    weights = sg.load_safetensors(str(tmp_path / "w.safetensors"))
    vocab = weights["encoder.weight"].shape[0]
    model = train_text.build_model(sg, "lstm", vocab, dict(worker.TEXT_CONFIG["lstm"], context=16))
    model.load_state_dict(weights)
    model.eval()
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 200, r.text
    session = onnxruntime.InferenceSession(r.content, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).integers(0, vocab, (3, 16))
    theirs = session.run(None, {session.get_inputs()[0].name: x.astype(np.int64)})[0]
    ours = train_text.logits_of(model, sg.tensor(x.tolist())).detach().numpy()
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-4)
    # served from the dashboard: its text is what the checkpoint samples here with the same seed
    if importlib.util.find_spec("onnxruntime"):
        r = client.post(f"/api/runs/{run['id']}/deploy", json={"backend": "onnxruntime"})
        assert r.status_code == 422 and "expected one of" in r.json()["detail"]["errors"]["backend"]
    served = _served(client, run["id"])
    assert served["endpoint"].endswith(f"/v1/models/run{run['id']}-lstm:generate")
    body = {"prompt": "Th", "max_tokens": 12, "temperature": 0.8, "top_k": 5, "seed": 3}
    r = client.post(f"/api/runs/{run['id']}/deploy/try", json=body)
    assert r.status_code == 200, r.text
    (tmp_path / "model.ckpt").write_bytes(client.get(f"/api/runs/{run['id']}/model.ckpt").content)
    local = Served(tmp_path / "model.ckpt", backend="3")
    assert local.config == dict(worker.TEXT_CONFIG["lstm"], context=16)
    assert r.json()["text"] == "".join(local.stream(local.prompt_ids("Th"), 12, 0.8, 5, 3))
    assert client.post(f"/api/runs/{run['id']}/deploy/try", json=dict(body, stream=True)).status_code == 400
    assert client.post(f"/api/runs/{run['id']}/deploy/stop", json={}).status_code == 200


def test_options_list_the_installed_stages(client):
    options = client.get("/api/options").json()
    assert [s["package"] for s in options["stages"]] == installed_stages()
    backends = [b["id"] for b in options["backends"]]  # what may serve a run: the stages, then the peers
    assert backends == [s["id"] for s in options["stages"]] + [b for b in ("torch", "onnxruntime")
                                                                if importlib.util.find_spec(b)]
    assert set(options["layers"]) == set(architecture.LAYERS)
    assert client.get("/").headers["content-type"].startswith("text/html")
    assert "stagegrad dashboard" in client.get("/").text


def test_the_builder_builds_what_it_counted():
    sg = load_stage("3")
    layers = [{"type": "conv2d", "out_channels": 8, "kernel_size": 3, "padding": 1}, {"type": "batchnorm"},
              {"type": "relu"}, {"type": "maxpool2d"}, {"type": "conv2d", "out_channels": 4, "kernel_size": 5,
                                                         "padding": 0},
              {"type": "avgpool2d", "kernel_size": 2, "stride": 2}, {"type": "dropout", "p": 0.2},
              {"type": "flatten"}, {"type": "layernorm"}, {"type": "linear", "out_features": 32},
              {"type": "gelu"}, {"type": "tanh"}, {"type": "sigmoid"}, {"type": "linear", "out_features": 10}]
    info = architecture.check(layers, batch_size=4)
    assert [tuple(x["output"]) for x in info["layers"]][:6] == [(8, 28, 28), (8, 28, 28), (8, 28, 28),
                                                             (8, 14, 14), (4, 10, 10), (4, 5, 5)]
    model = architecture.build(sg, layers)
    assert info["parameters"] == sum(p.numel() for p in model.parameters())
    model.eval()
    assert tuple(model(sg.randn(4, 1, 28, 28)).shape) == (4, 10)


BAD = [  # (settings, field, words the message must hold)
    ({"lr": -1}, "lr", "must be more than 0 and at most 10, got -1"),
    ({"lr": "fast"}, "lr", "must be a number, got 'fast'"),
    ({"lr": 10**400}, "lr", "at most 10, got 10,000,000,000,000,0..."),  # no float holds it
    ({"subset": 1e300}, "subset", "between 1 and 60,000, got 1,000,000,000,000,00..."),
    ({"batch_size": 0}, "batch_size", "between 1 and 1,024, got 0"),
    ({"batch_size": 2.5}, "batch_size", "whole number"),
    ({"epochs": 10**9}, "epochs", "between 1 and 50"),
    ({"model": "vgg"}, "model", "unknown model 'vgg'"),
    ({"stage": "9"}, "stage", "unknown stage '9'"),
    ({"optimizer": "lion"}, "optimizer", "expected one of adamw, adam, sgd"),
    ({"model": "gpt", "dataset": "mnist"}, "dataset", "the gpt model trains on shakespeare"),
    ({"model": "resnet18", "batch_size": 1024}, "batch_size", "at most 256 for the resnet18 model"),
    ({"shell": "rm -rf /"}, "shell", "unknown setting"),
    ({"architecture": [{"type": "linear"}]}, "architecture", "only used with the model 'custom'"),
    ({"model": "custom", "architecture": "__import__('os').system('true')"}, "architecture",
     "must be a list of layers, got str"),
    ({"model": "custom", "architecture": [{"type": "eval"}]}, "architecture",
     "layer 1: unknown layer type 'eval'"),
    ({"model": "custom", "architecture": [{"type": {"a": 1}}]}, "architecture",  # unhashable: not a 500
     "layer 1: unknown layer type {'a': 1}"),
    ({"model": "custom", "architecture": [{"type": "linear", "out_features": 10}]}, "architecture",
     "layer 1: linear needs a flat input"),
    ({"model": "custom", "architecture": [{"type": "flatten"}, {"type": "linear", "out_features": 7}]},
     "architecture", "must output the 10 class scores"),
    ({"model": "custom", "architecture": [{"type": "flatten"}, {"type": "linear", "out_features": 16384},
                                          {"type": "linear", "out_features": 16384},
                                          {"type": "linear", "out_features": 10}]},
     "architecture",
     f"the model has {(784 + 1) * 16384 + (16384 + 1) * 16384 + (16384 + 1) * 10:,} parameters; "
     "at most 20,000,000"),
    ({"model": "custom", "batch_size": 1024, "architecture": [
        {"type": "conv2d", "out_channels": 1024}, {"type": "flatten"},
        {"type": "linear", "out_features": 10}]},
     "architecture", "needs about"),
    ({"model": "custom", "architecture": [{"type": "conv2d", "kernel_size": 11, "padding": 0, "exec": 1}]},
     "architecture", "conv2d has no field 'exec'"),
    ({"model": "custom", "architecture": [{"type": "maxpool2d", "kernel_size": 8}] * 3},
     "architecture", "layer 3: maxpool2d's kernel of 8 is larger than its input (1, 2, 2)"),
]


@pytest.mark.parametrize("raw, field, words", BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_settings_are_refused_with_a_message_per_field(client, raw, field, words):
    before = len(client.get("/api/runs").json())
    for path in ("/api/check", "/api/runs"):
        r = client.post(path, json=dict(TINY, **raw))
        assert r.status_code == 422, r.text
        errors = r.json()["detail"]["errors"]
        assert field in errors and words in errors[field], errors
    assert len(client.get("/api/runs").json()) == before


def test_bad_requests_are_refused(client, finished):
    run, _ = finished
    JSON = {"content-type": "application/json"}
    r = client.post("/api/runs", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["detail"]
    for depth in (33, 30000):  # nested past the bound, within Python's recursion limit and past it
        r = client.post("/api/check", content=b"[" * depth + b"]" * depth, headers=JSON)
        assert r.status_code == 400 and "more than 32 deep" in r.json()["detail"], r.text
    r = client.post("/api/check", content=b'{"seed": ' + b"9" * 5000 + b"}", headers=JSON)
    assert r.status_code == 400 and "not valid JSON" in r.json()["detail"], r.text  # past Python's int digits
    r = client.post("/api/runs", content=json.dumps(TINY), headers={"content-type": "text/plain"})
    assert r.status_code == 415  # what a form on another site could send without asking
    r = client.post("/api/runs", json=dict(TINY, pad="x" * 70000))
    assert r.status_code == 413
    r = client.post("/api/runs", json=TINY, headers={"origin": "http://example.invalid"})
    assert r.status_code == 403 and "another origin" in r.json()["detail"]
    r = client.post(f"/api/runs/{run['id']}/cancel", headers={"origin": "http://example.invalid"})
    assert r.status_code == 403
    assert client.get("/api/runs/999999").status_code == 404
    assert client.get("/api/runs/999999/events").status_code == 404
    assert client.get("/api/runs/abc").status_code == 422
    assert client.get(f"/api/runs/{2 ** 63}").status_code == 422  # beyond SQLite's integers: no run
    for name in ("log.txt", "..%2f..%2fruns.sqlite", "model.safetensors"):
        assert client.get(f"/api/runs/{run['id']}/{name}").status_code == 404, name
    assert client.get("/static/../app.py").status_code == 404


def test_the_server_refuses_other_host_names_on_loopback(tmp_path):
    app = create_app(tmp_path / "runs.sqlite", trusted_hosts=("127.0.0.1", "localhost"))
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.get("/api/options").status_code == 200
        assert c.get("/api/options", headers={"host": "attacker.example"}).status_code == 400


def test_open_streams_end_when_the_server_stops(tmp_path):
    app = create_app(tmp_path / "runs.sqlite")
    with TestClient(app) as c:
        run_id = c.post("/api/runs", json=LONG).json()["id"]
        _wait(c, run_id, lambda run: run["points"])
        threading.Timer(1.0, app.state.stopping.set).start()  # as Ctrl-C does, while the stream is open
        events = _stream(c, run_id)
        assert events[0][0] == "status" and events[-1][0] == "point"  # ended without an "end"
    run = create_app(tmp_path / "runs.sqlite").state.store.run(run_id)
    assert run["status"] == "interrupted"
