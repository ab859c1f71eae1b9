"""The dashboard's web app (FastAPI): the page, the JSON API and the live event streams.

- ``GET /`` the page; ``/static/*`` its script and style (nothing is loaded from elsewhere).
- ``GET /api/options``: the installed stages, models, optimizers, schedules, layer types
  and the bounds the page offers.
- ``POST /api/check``: settings checked without starting anything (the builder's sizes).
- ``POST /api/runs``: start a run (201), or 422 with one message per field at fault.
- ``GET /api/runs``, ``GET /api/runs/{id}``: the history, a run with its curve.
- ``GET /api/runs/{id}/events``: server-sent events: ``status``, then every ``point``
  so far and as they come, and ``end`` when the run has finished.
- ``POST /api/runs/{id}/cancel``; ``GET /api/runs/{id}/weights.safetensors``,
  ``/model.onnx`` and ``/model.ckpt``: the trained model, from the run's own folder (no
  path comes from the request); the checkpoint is what ``stagegrad deploy`` serves.
- ``POST /api/runs/{id}/deploy`` (``{"backend": "3"}``, default the run's stage): serve the
  finished run's model on loopback with ``stagegrad deploy`` (``deployments``); ``GET
  /api/runs/{id}`` shows its state and address. ``POST /api/runs/{id}/deploy/stop`` stops
  it; ``POST /api/runs/{id}/deploy/try`` passes one request (a ``:predict`` or a
  ``:generate`` body) to it, so the page can try the model without calling another origin.

Requests that change something must be JSON (``Content-Type: application/json``) of at
most ``MAX_BODY`` bytes, nested at most ``guard.MAX_DEPTH`` deep, and a request from a page
of another origin is refused: a web page elsewhere cannot start runs on this machine through
the visitor's browser. A client's mistake is a 4xx with a message; a 5xx is the server's own
fault, answered as JSON with a ``request_id`` that its log names (``guard``). The OpenAPI
document (``/openapi.json``) describes every body (``openapi.py``).
"""
import asyncio
import importlib.util
import json
import logging
import threading
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, HTTPException, Request
from fastapi import Path as PathParameter
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.trustedhost import TrustedHostMiddleware

from .. import STAGES, datafiles, installed_stages
from . import architecture, guard
from . import openapi as api
from . import settings as settings_mod
from .deployments import DeployError, Deployments
from .jobs import Hub, Jobs
from .store import FINAL, Store

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY = 64 * 1024
KEEPALIVE_S = 15  # a comment line this often keeps proxies and browsers from closing a quiet stream
POLL_S = 0.5  # how soon an event stream notices that the server is stopping
# what a run offers for download: its URL's last part -> the kind and the fixed file name
DOWNLOADS = {"weights.safetensors": ("safetensors", "model.safetensors"),
             "model.onnx": ("onnx", "model.onnx"), "model.ckpt": ("checkpoint", "model.ckpt")}
PEERS = {"torch": "PyTorch", "onnxruntime": "ONNX Runtime"}  # what serves a run beside the stages
# a run's id as SQLite stores it: anything else is no run (a 422, before the database is asked)
RunId = Annotated[int, PathParameter(ge=1, le=2 ** 63 - 1)]
Download = Annotated[str, PathParameter(json_schema_extra={"enum": list(DOWNLOADS)})]
LOG = logging.getLogger("stagegrad.dashboard")


def _backends(stages):
    """What may serve a run here: the installed stages, then the peer runtimes installed."""
    out = [{"id": n, "label": f"stage {n} ({pkg})"} for n, pkg in stages.items()]
    return out + [{"id": b, "label": label} for b, label in PEERS.items() if importlib.util.find_spec(b)]


def _options(stages, backends):
    return {
        "stages": [{"id": n, "package": pkg} for n, pkg in stages.items()],
        "backends": backends,
        "models": settings_mod.MODELS,
        "optimizers": settings_mod.OPTIMIZERS,
        "schedules": settings_mod.SCHEDULES,
        "numbers": {k: {"min": v[0], "max": v[1], "default": v[2], "integer": v[3]}
                    for k, v in settings_mod.NUMBERS.items()},
        "fields": settings_mod.FIELDS,
        "layers": {k: {f: {"min": b[0], "max": b[1], "default": b[2]} for f, b in fields.items()}
                   for k, fields in architecture.LAYERS.items()},
        "limits": {"layers": architecture.MAX_LAYERS, "parameters": architecture.MAX_PARAMETERS,
                   "activation_bytes": architecture.MAX_ACTIVATION_BYTES},
    }


def _sse(kind, data):
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"


def _forward(url, raw):
    """POST the JSON bytes ``raw`` to a deployed model's endpoint; its status and JSON answer."""
    request = urllib.request.Request(url, data=raw, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:  # the model server's own 4xx and its message
        text = e.read().decode(errors="replace")
        try:
            return e.code, json.loads(text)
        except ValueError:  # not its JSON: a proxy's or a crash's page
            return e.code, {"detail": text.strip() or f"the model's server answered {e.code}"}
    except OSError as e:
        return 502, {"detail": f"the model's server did not answer ({type(e).__name__}: {e})"}


def create_app(db, runs_dir=None, data_dir=None, max_runs=1, threads=None, trusted_hosts=None):
    """The app, keeping its history in the SQLite file ``db`` and each run's files in
    ``runs_dir`` (default: ``runs`` beside ``db``); ``data_dir`` is where datasets are read
    (default: the datasets' search path); ``threads``: each run's kernel threads (default:
    the libraries' own). ``trusted_hosts``: the host names requests may
    name (default: any)."""
    db = Path(db)
    db.parent.mkdir(parents=True, exist_ok=True)
    store = Store(db)
    store.interrupt_leftovers()
    hub = Hub()
    jobs = Jobs(store, hub, runs_dir or db.parent / "runs", data_dir, max_runs, threads)
    stages = {n: pkg for n, pkg in STAGES.items() if pkg in installed_stages()}
    backends = _backends(stages)
    deployments = Deployments(jobs.runs_dir, threads)

    @asynccontextmanager
    async def lifespan(app):
        yield
        await asyncio.to_thread(deployments.close)
        await asyncio.to_thread(jobs.close)
        store.close()

    app = FastAPI(title="stagegrad dashboard", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.store, app.state.jobs, app.state.deployments = store, jobs, deployments
    app.state.stopping = stopping = threading.Event()  # set when the server is asked to exit
    guard.install(app, LOG.name)
    if trusted_hosts:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(trusted_hosts))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    def same_origin(request):
        origin = request.headers.get("origin")
        if origin and origin.split("://", 1)[-1] != request.headers.get("host"):
            raise HTTPException(403, f"requests from another origin ({origin}) are refused")

    async def body(request):
        same_origin(request)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise HTTPException(415, "send the settings as JSON (Content-Type: application/json)")
        try:
            return await guard.read_json(request, MAX_BODY)
        except guard.BadBody as e:
            raise HTTPException(e.status, str(e)) from None

    def checked(raw):
        try:
            out = settings_mod.check(raw, stages)
        except settings_mod.SettingsError as e:
            raise HTTPException(422, {"errors": e.errors}) from None
        try:  # a dataset found nowhere is the worker's to download, not the request's
            find = datafiles.mnist_dir if out["dataset"] == "mnist" else datafiles.shakespeare_dir
            find(data_dir, fetch=False)
        except ValueError as e:
            if data_dir is not None or datafiles.offline():
                raise HTTPException(422, {"errors": {"dataset": str(e)}}) from None
        return out

    def get_run(run_id):
        run = store.run(run_id)
        if run is None:
            raise HTTPException(404, f"there is no run {run_id}")
        return run

    @app.get("/", include_in_schema=False)
    def page():
        return FileResponse(STATIC / "index.html")

    settings_body = guard.body(api.settings_body(stages))
    changes = (400, 403, 413, 415, 422)  # what a body that changes something may be refused with

    @app.get("/api/options", responses=guard.responses(api.OPTIONS))
    def options():
        return _options(stages, backends)

    @app.post("/api/check", openapi_extra=settings_body, responses=guard.responses(api.CHECKED, *changes))
    async def check(request: Request):
        out = checked(await body(request))
        info = {"settings": out}
        if out["model"] == "custom":
            sizes = architecture.check(out["architecture"], out["batch_size"])
            info.update(parameters=sizes["parameters"], activation_bytes=sizes["activation_bytes"],
                        layers=sizes["layers"])
        return info

    @app.post("/api/runs", status_code=201, openapi_extra=settings_body,
              responses=guard.responses(api.RUN, *changes, ok_status=201))
    async def start(request: Request):
        out = checked(await body(request))
        run_id = jobs.submit(out)
        return store.run(run_id)

    @app.get("/api/runs", responses=guard.responses(api.RUNS))
    def history():
        return store.runs()

    @app.get("/api/runs/{run_id}", responses=guard.responses(api.ONE_RUN, 404, 422))
    def one(run_id: RunId):
        return dict(get_run(run_id), points=store.points(run_id), deployment=deployments.status(run_id))

    @app.post("/api/runs/{run_id}/cancel", responses=guard.responses(api.CANCELLING, 403, 404, 409, 422))
    async def cancel(run_id: RunId, request: Request):
        same_origin(request)
        run = get_run(run_id)
        if not jobs.cancel(run_id):
            raise HTTPException(409, f"run {run_id} has already ended ({run['status']})")
        return {"id": run_id, "cancelling": True}

    @app.post("/api/runs/{run_id}/deploy", status_code=201, openapi_extra=guard.body(api.deploy_body(backends)),
              responses=guard.responses(api.DEPLOYMENT, *changes, 404, 409, ok_status=201))
    async def deploy(run_id: RunId, request: Request):
        raw = await body(request)
        run = get_run(run_id)
        if run["status"] != "done":
            raise HTTPException(409, f"run {run_id} is {run['status']}: only a finished run can be served")
        if not isinstance(raw, dict):
            raise HTTPException(400, "send an object, such as {\"backend\": \"3\"}")
        backend = str(raw.get("backend", run["settings"]["stage"]))
        text = run["settings"]["dataset"] == "shakespeare"
        offered = [b["id"] for b in backends if not (text and b["id"] == "onnxruntime")]
        if backend not in offered:
            why = f"{backend!r} cannot serve this run here; expected one of {', '.join(offered)}"
            raise HTTPException(422, {"errors": {"backend": why}})
        try:
            return deployments.start(run_id, backend, f"run{run_id}-{run['model']}", text)
        except DeployError as e:
            raise HTTPException(409, str(e)) from None

    @app.post("/api/runs/{run_id}/deploy/stop", responses=guard.responses(api.DEPLOYMENT, 403, 404, 409, 422))
    async def undeploy(run_id: RunId, request: Request):
        same_origin(request)
        get_run(run_id)
        if not await asyncio.to_thread(deployments.stop, run_id):
            raise HTTPException(409, f"run {run_id} is not being served")
        return deployments.status(run_id)

    @app.post("/api/runs/{run_id}/deploy/try", openapi_extra=guard.body(api.TRY_BODY),
              responses=guard.responses(api.ANSWER, *changes, 404, 409, 502, 503))
    async def try_it(run_id: RunId, request: Request):
        sent = await body(request)
        if isinstance(sent, dict) and sent.get("stream"):
            raise HTTPException(400, "the dashboard passes on whole answers: leave out \"stream\"")
        raw = json.dumps(sent).encode()
        get_run(run_id)
        served = deployments.status(run_id)
        if not served or served["state"] != "ready":
            state = f" ({served['state']})" if served else ""
            raise HTTPException(409, f"run {run_id} is not being served{state}")
        status, answer = await asyncio.to_thread(_forward, served["endpoint"], raw)
        if status >= 500:  # the model's server failed, or did not answer: logged here with an id
            return guard.fault(request, status, answer.get("detail", answer) if isinstance(answer, dict) else answer,
                               LOG)
        return JSONResponse(answer, status_code=status)

    @app.get("/api/runs/{run_id}/events", responses=guard.responses(api.EVENTS, 404, 422))
    async def events(run_id: RunId):
        get_run(run_id)
        return StreamingResponse(_stream(run_id), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    async def _stream(run_id):
        queue = hub.subscribe(run_id)  # before the snapshot: nothing falls between the two
        try:
            run = store.run(run_id)
            yield _sse("status", run)
            last = 0
            for point in store.points(run_id):
                last = point["seq"]
                yield _sse("point", point)
            quiet = 0.0
            while run["status"] not in FINAL:
                if stopping.is_set():
                    return
                try:
                    kind, data = await asyncio.wait_for(queue.get(), POLL_S)
                except asyncio.TimeoutError:
                    quiet += POLL_S
                    if quiet >= KEEPALIVE_S:
                        quiet = 0.0
                        yield ": keep-alive\n\n"
                    continue
                quiet = 0.0
                if kind == "point":
                    if data["seq"] <= last:
                        continue
                    last = data["seq"]
                else:
                    run = data
                yield _sse(kind, data)
            yield _sse("end", store.run(run_id))
        finally:
            hub.unsubscribe(run_id, queue)

    @app.get("/api/runs/{run_id}/{name}", responses=guard.responses(api.FILE, 404, 422))
    def download(run_id: RunId, name: Download):
        if name not in DOWNLOADS:
            raise HTTPException(404, f"no such download {name!r}; there are: {', '.join(DOWNLOADS)}")
        run = get_run(run_id)
        key, filename = DOWNLOADS[name]
        files = run["files"] or {}
        if run["status"] != "done" or key not in files:
            why = files.get(f"{key}_error") or f"the run is {run['status']}"
            raise HTTPException(404, f"run {run_id} has no {key} file: {why}")
        path = jobs.runs_dir / str(run_id) / filename
        if not path.is_file():  # removed from the run's folder since the run ended
            raise HTTPException(404, f"run {run_id}'s {key} file is no longer in {path.parent}")
        model = run["model"] or "model"
        return FileResponse(path, media_type="application/octet-stream",
                            filename=f"run{run_id}-{model}.{name.rsplit('.', 1)[1]}")

    return app
