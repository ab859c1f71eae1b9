"""``stagegrad loadtest``: throughput and latency percentiles of a deployed model at several
concurrency levels, on loopback only.

``stagegrad loadtest URL`` drives a server that ``stagegrad deploy`` started: each level runs
that many client threads, each sending requests one after another on one kept-alive
connection, until the level's request count or time runs out. ``stagegrad loadtest
--compare [CHECKPOINT]`` starts the servers itself, one after another on free loopback
ports, for each of ``--backends`` serving the same checkpoint (an untrained MNIST CNN when
none is given: serving speed does not depend on the weights), and stage 3 once more with
batching off (``--max-batch 1``), so the table shows the stages, PyTorch and ONNX Runtime
side by side, and what dynamic batching buys. Writes ``loadtest.json`` and ``loadtest.md``
to ``--out``.
"""
import http.client
import json
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from ..formatting import write_tables
from . import process

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_arguments(p):
    """``stagegrad loadtest``'s options."""
    p.add_argument("url", nargs="?", default=None,
                   help="the server, e.g. http://127.0.0.1:8080 (loopback only); omit with --compare")
    p.add_argument("--compare", nargs="?", const="", default=None, metavar="CHECKPOINT",
                   help="start a server per backend for CHECKPOINT (default: an untrained MNIST CNN) and "
                        "load each in turn")
    p.add_argument("--backends", default="2,3,torch,onnxruntime", help="the backends --compare serves")
    p.add_argument("--concurrency", default="1,4,16", help="comma-separated client counts")
    p.add_argument("--requests", type=int, default=400, help="requests per level at most")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds per level at most")
    p.add_argument("--instances", type=int, default=1, help="images per prediction request")
    p.add_argument("--quick", action="store_true", help="levels 1 and 8, 60 requests each")
    p.add_argument("--out", default="out/loadtest", help="output folder")


def run(args):
    """Load one server, or compare the backends, and write the report."""
    levels = [1, 8] if args.quick else [int(c) for c in args.concurrency.split(",")]
    requests, seconds = (60, 5.0) if args.quick else (args.requests, args.seconds)
    if args.compare is None:
        if not args.url:
            raise SystemExit("loadtest: give the server's URL, or --compare")
        rows = [dict(server="the server", **r)
                for r in load(args.url, levels, requests, seconds, args.instances)]
    else:
        rows = compare(args.compare or None, [b.strip() for b in args.backends.split(",")], levels, requests,
                       seconds, args.instances)
    report = {"levels": levels, "requests": requests, "seconds": seconds, "instances": args.instances,
              "rows": rows}
    paths = write_tables(args.out, "loadtest", report, markdown(report))
    print(markdown(report))
    print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)


def check_loopback(url):
    """``url`` if its host is this machine's loopback, else SystemExit: the load test never
    loads another machine."""
    host = urlsplit(url).hostname
    if host not in LOOPBACK:
        raise SystemExit(f"loadtest: {url} is not on loopback ({', '.join(LOOPBACK)}); the load test only "
                         f"drives a server on this machine")
    return url.rstrip("/")


def load(url, levels, requests, seconds, instances=1):
    """One row per concurrency level against the server at ``url``."""
    url = check_loopback(url)
    with urllib.request.urlopen(url + "/v1/models", timeout=30) as r:
        model = json.loads(r.read())["models"][0]
    if model["kind"] in ("gpt", "lstm"):
        endpoint, body = f"{url}/v1/models/{model['name']}:generate", {"prompt": "\n", "max_tokens": 20}
    else:
        rng = random.Random(0)
        images = [[[rng.random() for _ in range(28)] for _ in range(28)] for _ in range(instances)]
        endpoint, body = f"{url}/v1/models/{model['name']}:predict", {"instances": images}
    data = json.dumps(body).encode()
    return [dict(level=c, **_level(endpoint, data, c, requests, seconds)) for c in levels]


class _Connection(http.client.HTTPConnection):
    """A connection that sends each request at once. http.client writes a request's headers
    and its body separately, and Nagle's algorithm would hold the body back until the
    server's delayed ACK, some 40 ms later, on every request."""

    def connect(self):
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _level(endpoint, data, clients, requests, seconds):
    latencies, errors, lock = [], {}, threading.Lock()
    left = [requests]
    deadline = time.perf_counter() + seconds
    url = urlsplit(endpoint)

    def client():
        # one kept-alive connection per client, as HTTP clients in production keep theirs: a
        # connection per request would measure TCP set-up on this machine's cores instead
        conn = _Connection(url.hostname, url.port, timeout=60)
        while time.perf_counter() < deadline:
            with lock:
                if left[0] == 0:
                    break
                left[0] -= 1
            t0 = time.perf_counter()
            try:
                conn.request("POST", url.path, body=data, headers={"Content-Type": "application/json"})
                answer = conn.getresponse()
                answer.read()
                status = answer.status
            except (OSError, http.client.HTTPException) as e:
                status = type(e).__name__
                conn.close()  # the next request opens a new one
            with lock:
                if status == 200:
                    latencies.append(time.perf_counter() - t0)
                else:
                    errors[str(status)] = errors.get(str(status), 0) + 1
        conn.close()
    t0 = time.perf_counter()
    workers = [threading.Thread(target=client) for _ in range(clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    latencies.sort()

    def pct(q):
        if not latencies:
            return None
        return latencies[min(len(latencies) - 1, round(q / 100 * (len(latencies) - 1)))]
    return {"ok": len(latencies), "errors": errors, "seconds": wall, "per_s": len(latencies) / wall,
            "p50": pct(50), "p95": pct(95), "p99": pct(99)}


def _untrained_cnn(folder):
    from .. import load_stage, training
    sg = load_stage("3")
    sg.manual_seed(0)
    path = Path(folder) / "cnn.ckpt"
    sg.save({"model": training.build_model(sg, "cnn").state_dict(), "model_kind": "cnn"}, str(path))
    return path


def compare(checkpoint, backends, levels, requests, seconds, instances=1):
    """Rows for each backend serving ``checkpoint`` (stage 3 also without batching), each
    server started in turn on a free loopback port and stopped after its levels."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(checkpoint) if checkpoint else _untrained_cnn(folder)
        setups = [(b, []) for b in backends]
        if "3" in backends:
            setups.insert(backends.index("3") + 1, ("3", ["--max-batch", "1"]))
        for backend, extra in setups:
            label = _label(backend) + (", batching off" if extra else "")
            print(f"loadtest: {label}...", file=sys.stderr, flush=True)
            server, url = process.launch(path, backend, *extra, stderr=subprocess.PIPE,
                                         env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
            try:
                if not process.wait_ready(url, server):
                    rows.append({"server": label, "failed": server.stderr.read()[-500:]})
                    continue
                rows += [dict(server=label, **r) for r in load(url, levels, requests, seconds, instances)]
            finally:
                server.terminate()
                server.wait(30)
    return rows


def _label(backend):
    return {"torch": "PyTorch", "onnxruntime": "ONNX Runtime"}.get(backend, f"stage {backend}")


def markdown(report):
    """The report's table."""
    lines = [f"Each level: that many clients, each sending requests one after another on one kept-alive "
             f"connection ({report['instances']} "
             f"image{'s' * (report['instances'] > 1)} each), {report['requests']} requests or "
             f"{report['seconds']:g} s at most; the servers on one thread, batching up to 32 images "
             f"(waiting up to 5 ms for more while requests arrive together) unless off.", "",
             "| server | clients | requests/s | p50 ms | p95 ms | p99 ms | errors |",
             "|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        if "failed" in r:
            why = (r["failed"].strip().splitlines() or ["no output"])[-1]
            lines.append(f"| {r['server']} | - | - | - | - | - | did not start: {why} |")
            continue
        ms = [f"{r[k] * 1e3:.1f}" if r[k] is not None else "-" for k in ("p50", "p95", "p99")]
        errors = ", ".join(f"{n} x {code}" for code, n in r["errors"].items()) or "none"
        lines.append(f"| {r['server']} | {r['level']} | {r['per_s']:.1f} | {' | '.join(ms)} | {errors} |")
    return "\n".join(lines)
