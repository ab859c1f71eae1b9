"""``stagegrad deploy``: the inference API through FastAPI's test client (every endpoint,
every bad-input case, the queue limit, batching that merges concurrent requests),
predictions equal to the model's own forward on the same stage, generations equal to
``stagegrad sample``'s, a corrupt or foreign checkpoint refused at start, and one real
server on a free loopback port."""
import asyncio
import hashlib
import json
import math
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from stagegrad import load_stage, train_text, training
from stagegrad.dashboard import bind
from stagegrad.deploy import loadtest, process
from stagegrad.deploy.batching import Batcher, QueueFull
from stagegrad.deploy.model import CheckpointError, Served

fastapi = pytest.importorskip("fastapi", reason="the deploy API needs FastAPI (pip install -e '.[serve]')")
from fastapi.testclient import TestClient  # noqa: E402

from stagegrad.deploy.app import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GPT = {"context": 16, "n_layer": 1, "n_head": 2, "n_kv_head": None, "n_embd": 16, "dropout": 0.0,
       "positions": "learned"}
VOCAB = "\n abcdefgh"
pytestmark = pytest.mark.xdist_group("deploy")


def _checkpoint(tmp_path, kind, stage="3"):
    sg = load_stage(stage)
    sg.manual_seed(0)
    path = tmp_path / f"{kind}.ckpt"
    if kind in ("gpt", "lstm"):
        config = GPT if kind == "gpt" else {"n_embd": 16, "hidden": 16, "n_layer": 1, "dropout": 0.0}
        model = train_text.build_model(sg, kind, len(VOCAB), config)
        state = {"model": model.state_dict(), "model_kind": kind, "config": config, "vocab": VOCAB}
        sg.save(state, str(path))
    else:
        model = training.build_model(sg, kind)
        sg.save({"model": model.state_dict(), "model_kind": kind, "epoch": 1}, str(path))
    return path


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("ckpt"), "cnn")


def _client(served, **kw):
    return TestClient(create_app(served, **kw))


def _batch(n, seed=0):
    return np.random.default_rng(seed).random((n, 28, 28)).astype(np.float32)


def test_predictions_equal_the_models_own_forward(images):
    served = Served(images, backend="3")
    x = _batch(3)
    with _client(served) as client:
        r = client.post("/v1/models/cnn:predict", json={"instances": x.tolist()})
        assert r.status_code == 200, r.text
        got = np.array(r.json()["predictions"])
    sg = served.sg
    with sg.no_grad():
        want = sg.nn.functional.softmax(served.model(sg.tensor(x).reshape(3, 1, 28, 28)), dim=-1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)


def test_health_models_and_metrics(images):
    served = Served(images, backend="3", name="digits")
    with _client(served) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        cnn = training.build_model(served.sg, "cnn")
        about = {"name": "digits", "kind": "cnn", "backend": "stage3_simd", "input": [1, 28, 28],
                 "classes": 10, "parameters": sum(p.numel() for p in cnn.parameters()),
                 "sha256": hashlib.sha256(images.read_bytes()).hexdigest()}
        assert client.get("/v1/models").json()["models"] == [about]
        assert client.get("/v1/models/digits").json() == dict(about, ready=True)
        r = client.get("/v1/models/other")
        assert r.status_code == 404 and "serves 'digits'" in r.json()["detail"]
        client.post("/v1/models/digits:predict", json={"instances": _batch(2).tolist()})
        client.post("/v1/models/digits:predict", json={"instances": [[1, 2]]})
        text = client.get("/metrics").text
    assert 'stagegrad_requests_total{model="digits",route="predict",status="200"} 1' in text
    assert 'stagegrad_requests_total{model="digits",route="predict",status="422"} 1' in text
    assert 'stagegrad_latency_seconds{model="digits",quantile="0.5"}' in text
    assert 'stagegrad_batch_size_sum{model="digits"} 2' in text


BAD = [
    ("not json", b"{not json", 400, "not valid JSON"),
    ("not an object", b"[1, 2]", 400, "JSON object"),
    ("no instances", b"{}", 422, "non-empty list"),
    ("empty", b'{"instances": []}', 422, "non-empty list"),
    ("wrong size", json.dumps({"instances": [[[0.0] * 27] * 28]}).encode(), 422, "28 x 27"),
    ("flat", json.dumps({"instances": [[0.0] * 784]}).encode(), 422, "expected a 28 x 28"),
    ("strings", json.dumps({"instances": [[["x"] * 28] * 28]}).encode(), 422, "must be a number"),
    ("booleans", json.dumps({"instances": [[[True] * 28] * 28]}).encode(), 422, "must be a number"),
    ("NaN", json.dumps({"instances": [[[0.0] * 28] * 27 + [[0.0] * 27 + [float("nan")]]]}).encode(), 422,
     "not finite"),
    ("too many", json.dumps({"instances": [[[0.0] * 28] * 28] * 257}).encode(), 413, "at most 256"),
    ("beyond float32", json.dumps({"instances": [[[1e308] * 28] * 28]}).encode(), 422, "beyond float32's range"),
    ("huge integer", json.dumps({"instances": [[[10 ** 400] * 28] * 28]}).encode(), 422, "beyond float32's range"),
    ("digits", b'{"instances": [' + b"9" * 5000 + b"]}", 400, "not valid JSON"),
    ("deep", b'{"instances": ' + b"[" * 40 + b"]" * 40 + b"}", 400, "more than 32 deep"),
    ("deeper than Python", b'{"instances": ' + b"[" * 100000 + b"]" * 100000 + b"}", 400, "more than 32 deep"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_is_a_4xx_that_names_the_problem(images, case):
    _, body, status, words = case
    with _client(Served(images, backend="3")) as client:
        r = client.post("/v1/models/cnn:predict", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == status and words in r.json()["detail"], r.text
        ok = client.post("/v1/models/cnn:predict", json={"instances": _batch(1).tolist()})
        assert ok.status_code == 200  # the server keeps serving


def test_unknown_model_wrong_route_and_oversized_body(images):
    with _client(Served(images, backend="3"), max_body=1000) as client:
        assert client.post("/v1/models/other:predict", json={"instances": []}).status_code == 404
        r = client.post("/v1/models/cnn:generate", json={"prompt": "a"})
        assert r.status_code == 400 and ":predict" in r.json()["detail"]
        r = client.post("/v1/models/cnn:predict", json={"instances": _batch(1).tolist()})
        assert r.status_code == 413 and "at most 1,000" in r.json()["detail"]


def test_batching_merges_concurrent_requests():
    sizes, release = [], threading.Event()

    def run(items):
        release.wait(5)
        return [x * 2 for x in items]
    batcher = Batcher(run, max_batch=8, max_wait_s=0.2, max_queue=16, on_batch=sizes.append)
    try:
        futures = [batcher.submit([i, i + 100]) for i in range(4)]
        release.set()
        assert [f.result(5) for f in futures] == [[2 * i, 2 * i + 200] for i in range(4)]
    finally:
        batcher.close()
    assert sum(sizes) == 8 and max(sizes) > 2  # requests shared a batch


def test_a_lone_request_does_not_wait_for_the_window():
    batcher = Batcher(lambda items: items, max_batch=8, max_wait_s=600, max_queue=16)
    try:
        assert batcher.submit([1]).result(30) == [1]  # not held for the 600 s window
    finally:
        batcher.close()


def test_a_full_queue_answers_503(images):
    """One request in the model, one in the queue (it holds one), two more refused: each
    step waits for the one before it, observed rather than slept for."""
    served = Served(images, backend="3")
    taken, gate, read = threading.Event(), threading.Event(), queue.Queue()
    predict, decode = served.predict, served.images

    def busy(items):  # the model busy until released
        taken.set()
        gate.wait(30)
        return predict(items)

    def noted(instances):
        # the handler submits right after this, with no await between: the event loop runs
        # no other request's handler before this one is queued
        out = decode(instances)
        read.put(len(instances))
        return out
    served.predict, served.images = busy, noted
    results = {}
    with _client(served, max_queue=1, max_wait_ms=0) as client:
        body = {"instances": _batch(1).tolist()}

        def ask(n):
            results[n] = client.post("/v1/models/cnn:predict", json=body)
        workers = [threading.Thread(target=ask, args=(n,)) for n in range(4)]
        try:
            workers[0].start()
            assert taken.wait(30) and read.get(timeout=30)  # the first is in the model
            workers[1].start()
            assert read.get(timeout=30)  # the second is in the queue
            for w in workers[2:]:  # the rest find it full, while the model is still busy
                w.start()
                w.join(30)
        finally:
            gate.set()
        for w in workers[:2]:
            w.join(30)
    assert [results[n].status_code for n in range(4)] == [200, 200, 503, 503]
    busy = results[2]
    assert busy.headers["retry-after"] == "1" and "busy" in busy.json()["detail"]


def test_batcher_refuses_beyond_its_queue():
    taken, gate = threading.Event(), threading.Event()

    def run(items):
        taken.set()
        gate.wait(30)
        return items
    batcher = Batcher(run, max_batch=1, max_wait_s=0, max_queue=1)
    try:
        batcher.submit([1])
        assert taken.wait(30)  # the first is in the worker's hands, the queue empty
        batcher.submit([2])
        with pytest.raises(QueueFull):
            batcher.submit([3])
    finally:
        gate.set()
        batcher.close()


@pytest.mark.parametrize("kind", ["gpt", "lstm"])
def test_generation_matches_sample_and_streams(tmp_path, kind):
    path = _checkpoint(tmp_path, kind)
    served = Served(path, backend="3")
    sg = served.sg
    model = train_text.build_model(sg, kind, len(VOCAB), served.config)
    model.load_state_dict(sg.load(str(path))["model"])
    want = train_text.generate(sg, model, sg.datasets.CharTokenizer(VOCAB), "ab", 20, 0.8, 3, 7)[2:]
    body = {"prompt": "ab", "max_tokens": 20, "temperature": 0.8, "top_k": 3, "seed": 7}
    with _client(served) as client:
        r = client.post(f"/v1/models/{kind}:generate", json=body)
        assert r.status_code == 200 and r.json()["text"] == want
        with client.stream("POST", f"/v1/models/{kind}:generate", json={**body, "stream": True}) as s:
            events = [line for line in s.iter_lines() if line.startswith("data: ")]
        pieces = [json.loads(e[6:])["text"] for e in events]
        assert "".join(pieces[:-1]) == want and pieces[-1] == want and len(pieces) == 21
        # the v1 protocol's predict: each prompt an instance, each prediction its text
        sampling = {k: v for k, v in body.items() if k != "prompt"}
        r = client.post(f"/v1/models/{kind}:predict", json={"instances": ["ab", "ba"], **sampling})
        other = train_text.generate(sg, model, sg.datasets.CharTokenizer(VOCAB), "ba", 20, 0.8, 3, 7)[2:]
        assert r.status_code == 200 and r.json()["predictions"] == [want, other], r.text
        r = client.post(f"/v1/models/{kind}:predict", json={"instances": []})
        assert r.status_code == 422 and "non-empty list of prompts" in r.json()["detail"]
        r = client.post(f"/v1/models/{kind}:predict", json={"instances": ["a"] * 17})
        assert r.status_code == 413 and "at most 16" in r.json()["detail"]


@pytest.mark.parametrize("body, words", [
    ({"prompt": "xyz"}, "not in the vocabulary"),
    ({"prompt": "a" * 17}, "past the model's context of 16"),
    ({"prompt": 5}, "expected a string"),
    ({"prompt": "a", "max_tokens": 0}, "max_tokens"),
    ({"prompt": "a", "temperature": 0}, "temperature"),
    ({"prompt": "a", "temperature": "hot"}, "temperature"),
    ({"prompt": "a", "top_k": 0}, "top_k"),
    ({"prompt": "a", "seed": -1}, "seed"),
])
def test_bad_generation_requests(tmp_path, body, words):
    with _client(Served(_checkpoint(tmp_path, "gpt"), backend="3")) as client:
        r = client.post("/v1/models/gpt:generate", json=body)
        assert r.status_code == 422 and words in r.json()["detail"], r.text
        prompt = body.pop("prompt")  # the same through predict, the prompt as its second instance
        r = client.post("/v1/models/gpt:predict", json={"instances": ["a", prompt], **body})
        assert r.status_code == 422 and words in r.json()["detail"], r.text
        if prompt != "a":  # the prompt is at fault: the message names its instance
            assert r.json()["detail"].startswith("instance 1: prompt: "), r.text


def test_corrupt_or_foreign_checkpoints_are_refused(tmp_path):
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(CheckpointError, match=f"{junk}: not a checkpoint"):
        Served(junk)
    sg = load_stage("3")
    other = tmp_path / "weights.ckpt"
    sg.save({"w": sg.ones(2)}, str(other))
    with pytest.raises(CheckpointError, match="not one 'stagegrad train --save' wrote"):
        Served(other)
    wrong = tmp_path / "wrong.ckpt"
    sg.save({"model": training.build_model(sg, "mlp").state_dict(), "model_kind": "cnn"}, str(wrong))
    with pytest.raises(CheckpointError, match="cannot be rebuilt"):
        Served(wrong)
    done = subprocess.run([sys.executable, "-m", "stagegrad", "deploy", str(junk)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode != 0 and str(junk) in done.stderr and "not a checkpoint" in done.stderr


def test_a_real_server_answers_on_loopback(images):
    # port 0: the kernel picks one, and the line the command prints names it
    server = subprocess.Popen([sys.executable, "-m", "stagegrad", "deploy", str(images), "--port", "0"],
                              cwd=ROOT, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        said, m = [], None
        for line in server.stderr:  # anything printed first, then its address; ends if it exits
            said.append(line)
            m = re.search(r"at (http://127\.0\.0\.1:(\d+))/v1/models/cnn:predict$", line.strip())
            if m:
                break
        assert m and m.group(2) != "0", said
        url = m.group(1)
        assert process.wait_ready(url, server), server.stderr.read() if server.poll() else "no answer"
        request = urllib.request.Request(url + "/v1/models/cnn:predict", method="POST",
                                         data=json.dumps({"instances": _batch(2).tolist()}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as r:
            predictions = json.loads(r.read())["predictions"]
        assert len(predictions) == 2 and all(math.isclose(sum(p), 1.0, rel_tol=1e-5) for p in predictions)
        rows = loadtest.load(url, [1, 3], requests=12, seconds=30)  # a short load test against it
        assert [r["level"] for r in rows] == [1, 3] and all(r["ok"] == 12 and not r["errors"] for r in rows)
        assert all(0 < r["p50"] <= r["p95"] <= r["p99"] for r in rows)
    finally:
        server.terminate()
        server.wait(10)


def test_connections_to_the_servers_send_at_once():
    # serve and deploy listen on bind()'s socket; asyncio turns Nagle's algorithm off only on
    # connections whose socket names TCP, and a response written in two parts would otherwise
    # wait for the client's delayed ACK, some 40 ms, every time
    sock, address = bind("127.0.0.1", 0)
    assert address == f"http://127.0.0.1:{sock.getsockname()[1]}"

    async def accepted_nodelay():
        seen = asyncio.get_running_loop().create_future()

        def on_connect(reader, writer):
            conn = writer.get_extra_info("socket")
            seen.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        server = await asyncio.start_server(on_connect, sock=sock)
        _, writer = await asyncio.open_connection(*sock.getsockname())
        try:
            return await asyncio.wait_for(seen, 30)
        finally:
            writer.close()
            server.close()
    assert asyncio.run(accepted_nodelay()) != 0


@pytest.mark.parametrize("backend", ["2", "torch", "onnxruntime"])
def test_every_backend_serves_the_same_predictions(images, backend):
    pytest.importorskip({"2": "stage2_cython", "torch": "torch", "onnxruntime": "onnxruntime"}[backend])
    x = _batch(4, seed=1).tolist()
    want = np.array(Served(images, backend="3").predict(Served(images).images(x)))
    served = Served(images, backend=backend)
    with _client(served) as client:
        r = client.post("/v1/models/cnn:predict", json={"instances": x})
        assert r.status_code == 200, r.text
        assert client.get("/v1/models").json()["models"][0]["backend"] == served.backend
    np.testing.assert_allclose(np.array(r.json()["predictions"]), want, rtol=1e-4, atol=1e-6)


def test_onnxruntime_refuses_a_language_model(tmp_path):
    pytest.importorskip("onnxruntime")
    with pytest.raises(CheckpointError, match="ONNX Runtime serves the image models"):
        Served(_checkpoint(tmp_path, "gpt"), backend="onnxruntime")


@pytest.mark.parametrize("url", ["http://example.com:8080", "http://10.0.0.1:80", "http://0.0.0.0:8080"])
def test_loadtest_drives_loopback_only(url):
    with pytest.raises(SystemExit, match="not on loopback"):
        loadtest.check_loopback(url)
    assert loadtest.check_loopback("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"


def test_loadtest_report_names_every_server_and_level():
    rows = [{"server": "stage 3", "level": 1, "ok": 5, "errors": {}, "seconds": 1.0, "per_s": 5.0,
             "p50": 0.01, "p95": 0.02, "p99": 0.03},
            {"server": "stage 3", "level": 4, "ok": 3, "errors": {"503": 2}, "seconds": 1.0, "per_s": 3.0,
             "p50": 0.01, "p95": 0.02, "p99": 0.03},
            {"server": "ONNX Runtime", "failed": "Traceback...\nCheckpointError: no onnxruntime"}]
    text = loadtest.markdown({"instances": 1, "requests": 5, "seconds": 1.0, "rows": rows})
    assert "| stage 3 | 1 | 5.0 | 10.0 | 20.0 | 30.0 | none |" in text
    assert "| stage 3 | 4 | 3.0 | 10.0 | 20.0 | 30.0 | 2 x 503 |" in text
    assert "ONNX Runtime | - |" in text and "no onnxruntime" in text


def _png(pixels, mode="L"):
    import base64
    import io

    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(pixels, mode=mode).save(buf, format="PNG")
    return {"b64": base64.b64encode(buf.getvalue()).decode()}


def test_png_instances_are_mnist_bytes(images):
    pytest.importorskip("PIL")
    pixels = (np.arange(784) % 256).astype(np.uint8).reshape(28, 28)
    served = Served(images, backend="3")
    with _client(served) as client:
        r = client.post("/v1/models/cnn:predict", json={"instances": [_png(pixels), (pixels / 255).tolist()]})
        assert r.status_code == 200, r.text
        a, b = r.json()["predictions"]
        np.testing.assert_allclose(a, b, rtol=1e-6)  # the PNG reads as its bytes / 255
        bomb = {"b64": base64_of(_png_header(20000, 20000))}  # decoded, 400 million pixels
        r = client.post("/v1/models/cnn:predict", json={"instances": [bomb]})
        assert r.status_code == 413 and "20000 x 20000 pixels, past the" in r.json()["detail"], r.text
        r = client.post("/v1/models/cnn:predict", json={"instances": [{"b64": base64_of(_png_header(2000, 2000))}]})
        assert r.status_code == 422 and "2000 x 2000 pixels" in r.json()["detail"], r.text
        for inst, words in ((_png(np.zeros((27, 28), np.uint8)), "28 x 27 pixels"),
                            ({"b64": "not base64!"}, "not a base64 PNG"),
                            ({"b64": base64_of(b"GIF89a...")}, "not a base64 PNG"),
                            ({"png": "x"}, "must be {")):
            r = client.post("/v1/models/cnn:predict", json={"instances": [inst]})
            assert r.status_code == 422 and words in r.json()["detail"], r.text


def base64_of(data):
    import base64
    return base64.b64encode(data).decode()


def _png_header(width, height):
    """A PNG's signature and header chunk claiming ``width`` x ``height`` grey pixels, and no data."""
    import struct
    import zlib
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


def test_pixels_that_overflow_inside_the_model_are_a_422(tmp_path):
    served = Served(_checkpoint(tmp_path, "mlp"), backend="3")
    with served.sg.no_grad():
        for p in served.model.parameters():
            p.fill_(1.0)  # 784 pixels of 3e38, summed by the first layer: infinity, then NaN
    x = [[[3e38] * 28] * 28]
    assert not np.isfinite(served.predict(served.images(x))).all()  # the model's own answer holds NaN
    with _client(served) as client:
        r = client.post("/v1/models/mlp:predict", json={"instances": [_batch(1)[0].tolist(), x]})
        assert r.status_code == 422 and r.json()["detail"].startswith("instance 1: its pixels overflow float32")
        assert client.post("/v1/models/mlp:predict", json={"instances": _batch(1).tolist()}).status_code == 200


def test_a_fault_of_the_server_is_json_with_a_request_id_in_its_log(images, caplog):
    served = Served(images, backend="3")

    def broken(items):
        raise RuntimeError("the model broke")
    served.predict = broken
    with TestClient(create_app(served), raise_server_exceptions=False) as client:
        with caplog.at_level("ERROR", logger="stagegrad.deploy"):
            r = client.post("/v1/models/cnn:predict", json={"instances": _batch(1).tolist()})
    assert r.status_code == 500 and "its fault" in r.json()["detail"], r.text
    request_id = r.json()["request_id"]
    assert r.headers["x-request-id"] == request_id and len(request_id) == 32
    logged = [rec for rec in caplog.records if request_id in rec.getMessage()]
    assert logged and "the model broke" in str(logged[0].exc_info[1])  # the traceback, under the id
