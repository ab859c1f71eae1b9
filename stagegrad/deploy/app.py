"""The inference API (FastAPI) of one served model.

- ``GET /healthz``: ``{"status": "ok"}`` while the model is loaded.
- ``GET /v1/models``: the one model served (its name, kind, stage, parameter count, the
  checkpoint's SHA-256, and input or vocabulary); ``GET /v1/models/NAME``: the same, with
  ``"ready": true`` (KServe's v1 model status).
- ``POST /v1/models/NAME:predict`` (image models): ``{"instances": [...]}``, each a 28 x 28
  (or 1 x 28 x 28) image of numbers or ``{"b64": PNG}``, answered by ``{"predictions": [...]}``, each the
  image's class probabilities. Concurrent requests run as one batch (``batching.py``).
- The same for a language model: ``{"instances": [prompt, ...], "max_tokens", "temperature",
  "top_k", "seed"}``, answered by ``{"predictions": [text, ...]}``, each prompt's generated text.
- ``POST /v1/models/NAME:generate`` (language models): ``{"prompt", "max_tokens",
  "temperature", "top_k", "seed", "stream"}``, answered by ``{"text": ...}``, or with
  ``"stream": true`` by server-sent events: a ``token`` event per character, then ``end``.
- ``GET /metrics``: Prometheus text (``metrics.py``).

Bad input is a 4xx whose ``detail`` names the problem, and the server goes on serving: a
body that is not JSON, not an object or nested too deeply (400), one over the size limit, too
many instances or a PNG past Pillow's decompression-bomb limit (413), an unknown model (404),
the wrong endpoint for the model (400), wrong shapes, numbers that are not finite or beyond
float32, images that overflow inside the model, prompts past the context or outside the
vocabulary, bad sampling settings (422). A full queue is a 503 with ``Retry-After``; any other
5xx is the server's own fault, answered as JSON with a ``request_id`` that its log names
(``dashboard.guard``). The OpenAPI document (``/openapi.json``) describes every body
(``openapi.py``).
"""
import asyncio
import json
import math
import threading
import time
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import FastAPI, HTTPException, Path, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from ..dashboard import guard
from . import openapi as api
from .batching import Batcher, QueueFull
from .metrics import Metrics
from .model import BadInput

MAX_BODY = 8 * 2 ** 20  # a batch of 28 x 28 images as JSON is about 10 KB an image
MAX_INSTANCES = 256
MAX_TOKENS = 2000
MAX_PROMPTS = 16  # a language model's instances generate one after another
# a temperature divides float32 logits: below this they overflow to infinity
TEMPERATURES = (1e-3, 1e6)


def create_app(served, max_batch=32, max_wait_ms=5.0, max_queue=64, max_body=MAX_BODY, max_tokens=MAX_TOKENS):
    """The app serving ``served`` (a ``model.Served``); ``max_tokens``: the most a generation
    may ask for."""
    metrics = Metrics()
    state = {}
    lock = threading.Lock()  # generations take the model one at a time

    @asynccontextmanager
    async def lifespan(app):
        if not served.text:
            state["batcher"] = Batcher(served.predict, max_batch, max_wait_ms / 1000, max_queue,
                                       metrics.batch)
        yield
        if "batcher" in state:
            state["batcher"].close()

    app = FastAPI(title=f"stagegrad deploy: {served.name}", lifespan=lifespan)
    app.state.metrics = metrics
    guard.install(app, "stagegrad.deploy")
    most = MAX_PROMPTS if served.text else MAX_INSTANCES
    predict_body = api.predict_body(served, most, max_tokens, *TEMPERATURES)
    # the one name served, as the schema says (any other is a 404)
    Name = Annotated[str, Path(json_schema_extra={"enum": [served.name]})]

    async def body_of(request, route):
        try:
            body = await guard.read_json(request, max_body)
        except guard.BadBody as e:
            raise _fail(metrics, route, e.status, str(e)) from None
        if not isinstance(body, dict):
            raise _fail(metrics, route, 400, "the body must be a JSON object")
        return body

    def check_name(name, route, wants_text=None):
        if name != served.name:
            raise _fail(metrics, route, 404, f"no model {name!r} here; this server serves {served.name!r}")
        if wants_text is not None and served.text != wants_text:
            raise _fail(metrics, route, 400, f"{served.name!r} is a {served.kind} model: use :predict")

    def take(tokens):  # the next piece of one generation: the model runs one step at a time
        with lock:
            return next(tokens, None)

    async def whole(ids, settings):
        tokens, text = served.stream(ids, **settings), []
        while (piece := await asyncio.to_thread(take, tokens)) is not None:
            text.append(piece)
        return "".join(text)

    @app.get("/healthz", responses=guard.responses(api.HEALTH))
    def healthz():
        return {"status": "ok"}

    @app.get("/v1/models", responses=guard.responses(api.MODELS))
    def models():
        return {"models": [served.describe()]}

    @app.get("/v1/models/{name}", responses=guard.responses(api.STATUS, 404))
    def model_status(name: Name):
        if name != served.name:
            raise _fail(metrics, "status", 404, f"no model {name!r} here; this server serves {served.name!r}")
        return dict(served.describe(), ready=True)  # loaded before the server started: always ready

    @app.get("/metrics", responses=guard.responses(api.METRICS))
    def prometheus():
        return PlainTextResponse(metrics.text(served.name), media_type="text/plain; version=0.0.4")

    @app.post("/v1/models/{name}:predict", openapi_extra=guard.body(predict_body),
              responses=guard.responses(api.predictions(served.text), 400, 404, 413, 422, 503))
    async def predict(name: Name, request: Request):
        route, t0 = "predict", time.perf_counter()
        check_name(name, route)
        body = await body_of(request, route)
        instances = body.get("instances")
        if not isinstance(instances, list) or not instances:
            what = "prompts (strings)" if served.text else "images"
            raise _fail(metrics, route, 422, f"'instances' must be a non-empty list of {what}")
        if len(instances) > most:
            raise _fail(metrics, route, 413, f"{len(instances)} instances; at most {most} a request")
        if served.text:  # each prompt's generated text, one after another
            try:
                prompts = [_instance(i, served.prompt_ids, p) for i, p in enumerate(instances)]
                settings = _sampling(body, max_tokens)
            except BadInput as e:
                raise _fail(metrics, route, e.status, str(e)) from None
            predictions = [await whole(ids, settings) for ids in prompts]
            metrics.request(route, 200, time.perf_counter() - t0)
            return {"predictions": predictions}
        try:
            images = served.images(instances)
        except BadInput as e:
            raise _fail(metrics, route, e.status, str(e)) from None
        try:
            future = state["batcher"].submit(images)
        except QueueFull as e:
            metrics.request(route, 503)
            raise HTTPException(503, f"busy: {e}; retry shortly", headers={"Retry-After": "1"}) from None
        predictions = await asyncio.wrap_future(future)
        for i, p in enumerate(predictions):  # finite pixels may still overflow float32 in the model
            if not all(map(math.isfinite, p)):
                raise _fail(metrics, route, 422, f"instance {i}: its pixels overflow float32 inside the model "
                                                 f"(its output is not finite): send MNIST's scale, 0 to 1")
        metrics.request(route, 200, time.perf_counter() - t0)
        return {"predictions": predictions}

    generate_body = api.generate_body(served, max_tokens, *TEMPERATURES)

    @app.post("/v1/models/{name}:generate", openapi_extra=guard.body(generate_body),
              responses=guard.responses(api.GENERATION, 400, 404, 413, 422))
    async def generate(name: Name, request: Request):
        route, t0 = "generate", time.perf_counter()
        check_name(name, route, wants_text=True)
        body = await body_of(request, route)
        try:
            ids, settings = served.prompt_ids(body.get("prompt", "")), _sampling(body, max_tokens)
            if not isinstance(body.get("stream", False), bool):
                raise BadInput(f"stream: expected true or false, got {body['stream']!r}")
        except BadInput as e:
            raise _fail(metrics, route, e.status, str(e)) from None
        if not body.get("stream"):
            text = await whole(ids, settings)
            metrics.request(route, 200, time.perf_counter() - t0)
            return {"text": text}
        tokens = served.stream(ids, **settings)

        async def events():
            text = []
            while (piece := await asyncio.to_thread(take, tokens)) is not None:
                text.append(piece)
                yield f"event: token\ndata: {json.dumps({'text': piece})}\n\n"
            metrics.request(route, 200, time.perf_counter() - t0)
            yield f"event: end\ndata: {json.dumps({'text': ''.join(text)})}\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    return app


def _fail(metrics, route, status, detail):
    """Count a refused request and make its HTTPException."""
    metrics.request(route, status)
    return HTTPException(status, detail)


def _instance(i, read, value):
    """``read(value)``, with the instance's index in the message of a BadInput."""
    try:
        return read(value)
    except BadInput as e:
        raise BadInput(f"instance {i}: {e}") from None


def _sampling(body, most=MAX_TOKENS):
    """The generation settings of a request body, checked: BadInput names the first bad one."""
    max_tokens, temperature = body.get("max_tokens", 100), body.get("temperature", 1.0)
    top_k, seed = body.get("top_k"), body.get("seed", 0)
    low, high = TEMPERATURES
    if type(max_tokens) is not int or not 1 <= max_tokens <= most:
        raise BadInput(f"max_tokens: expected an integer from 1 to {most}, got {_shown(max_tokens)}")
    if type(temperature) not in (int, float) or not low <= temperature <= high:
        raise BadInput(f"temperature: expected a number from {low:g} to {high:g}, got {_shown(temperature)}")
    if top_k is not None and (type(top_k) is not int or top_k < 1):
        raise BadInput(f"top_k: expected a positive integer or null, got {_shown(top_k)}")
    if type(seed) is not int or not 0 <= seed < 2 ** 63:
        raise BadInput(f"seed: expected an integer from 0 to 2**63 - 1, got {_shown(seed)}")
    return {"max_tokens": max_tokens, "temperature": float(temperature), "top_k": top_k, "seed": seed}


def _shown(value):
    """``value`` as a message quotes it, cut short (a body may hold a string of megabytes)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "..."
