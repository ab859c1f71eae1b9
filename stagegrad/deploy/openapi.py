"""The deploy API's request and response bodies as JSON Schema, for its OpenAPI document: the
handlers read and check bodies themselves (``app.py``, ``model.py``), and these schemas
describe what they accept and answer, so that a client, or a fuzzer, knows the real shapes."""
from .model import FLOAT32_MAX, IMAGE

PIXEL = {"type": "number", "minimum": -FLOAT32_MAX, "maximum": FLOAT32_MAX}
ROWS = {"type": "array", "minItems": IMAGE[1], "maxItems": IMAGE[1],
        "items": {"type": "array", "minItems": IMAGE[2], "maxItems": IMAGE[2], "items": PIXEL}}
PNG = {"type": "object", "required": ["b64"], "additionalProperties": False,
       "properties": {"b64": {"type": "string", "contentEncoding": "base64",
                              "description": "a 28 x 28 grey PNG, base64"}}}
SAMPLING = {"max_tokens": {"type": "integer", "minimum": 1, "default": 100},
            "temperature": {"type": "number", "default": 1.0},
            "top_k": {"type": ["integer", "null"], "minimum": 1},
            "seed": {"type": "integer", "minimum": 0, "maximum": 2 ** 63 - 1, "default": 0}}
MODEL = {"type": "object", "required": ["name", "kind", "backend", "parameters", "sha256"], "properties": {
    "name": {"type": "string"}, "kind": {"type": "string"}, "backend": {"type": "string"},
    "parameters": {"type": "integer"}, "sha256": {"type": "string"},
    "input": {"type": "array", "items": {"type": "integer"}}, "classes": {"type": "integer"},
    "vocabulary": {"type": "string"}, "context": {"type": ["integer", "null"]}}}


def prompt(served):
    """A prompt's schema: characters of the model's vocabulary, at most its context (GPT)."""
    if not served.text:
        return {"type": "string"}
    chars = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in served.tokenizer.chars)
    out = {"type": "string", "pattern": f"^[{chars}]*$"}
    return out if served.kind != "gpt" else dict(out, maxLength=served.context)


def predict_body(served, max_instances, max_tokens, min_temperature, max_temperature):
    """The ``:predict`` body: images, or prompts with the sampling settings."""
    text = served.text
    if not text:
        image = {"anyOf": [ROWS, {"type": "array", "minItems": 1, "maxItems": 1, "items": ROWS}, PNG]}
        return {"type": "object", "required": ["instances"], "properties": {
            "instances": {"type": "array", "minItems": 1, "maxItems": max_instances, "items": image}}}
    return {"type": "object", "required": ["instances"], "properties": {
        "instances": {"type": "array", "minItems": 1, "maxItems": max_instances, "items": prompt(served)},
        **sampling(max_tokens, min_temperature, max_temperature)}}


def sampling(max_tokens, min_temperature, max_temperature):
    """The sampling settings' schemas, with the server's bounds."""
    return dict(SAMPLING, max_tokens=dict(SAMPLING["max_tokens"], maximum=max_tokens),
                temperature=dict(SAMPLING["temperature"], minimum=min_temperature, maximum=max_temperature))


def generate_body(served, max_tokens, min_temperature, max_temperature):
    """The ``:generate`` body."""
    return {"type": "object", "properties": {
        "prompt": dict(prompt(served), default=""), "stream": {"type": "boolean", "default": False},
        **sampling(max_tokens, min_temperature, max_temperature)}}


def predictions(text):
    """The ``:predict`` answer: each image's 10 class probabilities, or each prompt's text."""
    each = {"type": "string"} if text else {"type": "array", "minItems": 10, "maxItems": 10,
                                             "items": {"type": "number", "minimum": 0, "maximum": 1}}
    return {"type": "object", "required": ["predictions"],
            "properties": {"predictions": {"type": "array", "items": each}}}


GENERATION = {"application/json": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
              # each event as OpenAPI describes a stream's: a token event per character, then end, each
              # with {"text": ...} as its data
              "text/event-stream": {"type": "object", "required": ["event", "data"], "properties": {
                  "event": {"enum": ["token", "end"]},
                  "data": {"type": "string", "contentMediaType": "application/json"}}}}
HEALTH = {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}
MODELS = {"type": "object", "required": ["models"], "properties": {"models": {"type": "array", "items": MODEL}}}
STATUS = dict(MODEL, required=[*MODEL["required"], "ready"], properties=dict(MODEL["properties"],
                                                                             ready={"type": "boolean"}))
METRICS = {"text/plain": {"type": "string", "description": "Prometheus's text format"}}
