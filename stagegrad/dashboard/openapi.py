"""The dashboard API's request and response bodies as JSON Schema, for its OpenAPI document,
made from the same tables that ``settings`` and ``architecture`` check against: the handlers
read and check bodies themselves, and these schemas say what they accept and answer."""
from . import architecture, settings
from .store import STATUSES

NUMBER_OR_NULL = {"type": ["number", "null"]}
INTEGER_OR_NULL = {"type": ["integer", "null"]}
OBJECT_OR_NULL = {"type": ["object", "null"]}


def _number(name):
    low, high, _, whole = settings.NUMBERS[name]
    if whole:
        return {"type": "integer", "minimum": low, "maximum": high}
    return {"type": "number", "exclusiveMinimum": low, "maximum": high}


def _layer(kind, fields):
    props = {"type": {"const": kind}}
    for name, (low, high, _) in fields.items():
        props[name] = {"type": "number" if isinstance(low, float) else "integer", "minimum": low, "maximum": high}
    return {"type": "object", "required": ["type"], "additionalProperties": False, "properties": props}


def settings_body(stages):
    """What ``POST /api/check`` and ``POST /api/runs`` read: a run's settings (every field
    optional, a default filling in), ``stages`` the installed stages' numbers."""
    layers = {"type": "array", "minItems": 1, "maxItems": architecture.MAX_LAYERS,
              "items": {"oneOf": [_layer(k, f) for k, f in architecture.LAYERS.items()]},
              "description": "the layers of the model 'custom' (the last must give the 10 class scores)"}
    props = {"model": {"enum": list(settings.MODELS)}, "dataset": {"enum": list(settings.DATASETS)},
             "stage": {"enum": list(stages)}, "optimizer": {"enum": list(settings.OPTIMIZERS)},
             "schedule": {"enum": list(settings.SCHEDULES)}, "architecture": layers,
             **{name: _number(name) for name in settings.NUMBERS}}
    return {"type": "object", "additionalProperties": False, "properties": props}


def deploy_body(backends):
    """What ``POST /api/runs/{id}/deploy`` reads: the backend (default: the run's stage)."""
    return {"type": "object", "properties": {"backend": {"enum": [b["id"] for b in backends]}}}


TRY_BODY = {"type": "object", "description": "a :predict or :generate body, passed to the model's server"}
RUN = {"type": "object", "required": ["id", "status", "settings", "created"], "properties": {
    "id": {"type": "integer"}, "status": {"enum": list(STATUSES)}, "settings": {"type": "object"},
    "created": {"type": "number"}, "started": NUMBER_OR_NULL, "finished": NUMBER_OR_NULL,
    "stage": {"type": ["string", "null"]}, "model": {"type": ["string", "null"]},
    "total_steps": INTEGER_OR_NULL, "parameters": INTEGER_OR_NULL, "final": OBJECT_OR_NULL,
    "files": OBJECT_OR_NULL, "wall_s": NUMBER_OR_NULL, "error": {"type": ["string", "null"]}}}
RUNS = {"type": "array", "items": RUN}
DEPLOYMENT = {"type": "object", "required": ["run", "backend", "name", "url", "endpoint", "state"], "properties": {
    "run": {"type": "integer"}, "backend": {"type": "string"}, "name": {"type": "string"},
    "url": {"type": "string"}, "endpoint": {"type": "string"},
    "state": {"enum": ["starting", "ready", "failed", "stopped"]}, "error": {"type": ["string", "null"]}}}
POINT = {"type": "object", "required": ["seq"], "properties": {
    "seq": {"type": "integer"}, **{k: NUMBER_OR_NULL for k in ("step", "epoch", "loss", "accuracy", "test_accuracy",
                                                             "val_loss", "samples_per_s", "lr", "elapsed")}}}
ONE_RUN = dict(RUN, required=[*RUN["required"], "points", "deployment"], properties=dict(
    RUN["properties"], points={"type": "array", "items": POINT}, deployment={"anyOf": [DEPLOYMENT, {"type": "null"}]}))
CHECKED = {"type": "object", "required": ["settings"], "properties": {
    "settings": {"type": "object"}, "parameters": {"type": "integer"}, "activation_bytes": {"type": "integer"},
    "layers": {"type": "array", "items": {"type": "object"}}}}
CANCELLING = {"type": "object", "required": ["id", "cancelling"],
              "properties": {"id": {"type": "integer"}, "cancelling": {"const": True}}}
OPTIONS = {"type": "object", "required": ["stages", "backends", "models", "optimizers", "schedules", "numbers",
                                          "fields", "layers", "limits"]}
ANSWER = {"application/json": {"description": "the model server's answer, with its status"}}
# an event stream as OpenAPI describes one: each event, its data a JSON object
EVENTS = {"text/event-stream": {"type": "object", "required": ["event", "data"], "properties": {
    "event": {"enum": ["status", "point", "end"]}, "data": {"type": "string", "contentMediaType": "application/json"}}}}
FILE = {"application/octet-stream": {"type": "string", "format": "binary"}}
