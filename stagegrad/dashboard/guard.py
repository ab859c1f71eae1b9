"""What both web apps (the dashboard and ``stagegrad deploy``) do with a request body before
using it, and with a fault of their own.

- ``read_json``: the body read no further than a bound in bytes (whatever Content-Length
  claims) and parsed as JSON nested at most ``MAX_DEPTH`` deep; else ``BadBody`` with the 400
  or 413 to answer and a message that names the problem.
- ``install``: a client's mistake is a 4xx; a 5xx is the server's own fault and is answered
  as JSON ``{"detail", "request_id"}`` (the id also in ``X-Request-ID``) and logged with its
  traceback under that id, so that a report from a client finds its line in the log.
"""
import json
import logging
import uuid

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

MAX_DEPTH = 32  # the deepest body either API reads is 5 levels (a batch of 1 x 28 x 28 images)
# for the OpenAPI documents: every error is answered as ERROR
ERROR = {"type": "object", "required": ["detail"], "properties": {
    "detail": {"anyOf": [{"type": "string"}, {"type": "array"}, {"type": "object"}]},
    "request_id": {"type": "string", "description": "a 5xx's id, also in the server's log"}}}
WHY = {400: "the body is not JSON or not what the endpoint reads", 403: "a request from another origin",
       404: "no such thing here", 409: "not now: the detail says why", 413: "too large: the detail says what",
       415: "the body is not sent as JSON", 422: "a value is wrong: the detail says which",
       500: "the server's own fault", 502: "the model's server did not answer",
       503: "busy: retry after Retry-After seconds"}


class BadBody(ValueError):
    """A body that cannot be read: ``status`` (400 or 413) and a message for the client."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def depth(value):
    """How deeply lists and objects nest in the JSON value ``value`` (0 for a number or a
    string); counted level by level, without recursion."""
    level, current = 0, [value]
    while True:
        current = [c for c in current if isinstance(c, (list, dict))]
        if not current:
            return level
        level += 1
        current = [v for c in current for v in (c.values() if isinstance(c, dict) else c)]


async def read_json(request, max_body, max_depth=MAX_DEPTH):
    """The request's body as JSON, read no further than ``max_body`` bytes and nested at most
    ``max_depth`` deep; ``BadBody`` (413 for the size, 400 otherwise) names what is wrong."""
    claimed = request.headers.get("content-length", "")
    if claimed.isdigit() and int(claimed) > max_body:
        raise BadBody(413, f"the body is {int(claimed):,} bytes; at most {max_body:,} are read")
    raw = bytearray()
    async for chunk in request.stream():  # read no further than the bound, whatever was claimed
        raw += chunk
        if len(raw) > max_body:
            raise BadBody(413, f"the body is over {max_body:,} bytes, the most read")
    try:
        value = json.loads(raw)
    except RecursionError:  # the parser's own bound, below ours only when the stack is short
        raise BadBody(400, f"the body nests lists or objects more than {max_depth} deep") from None
    except ValueError as e:  # not JSON, not UTF-8, or a number of more digits than Python reads
        raise BadBody(400, f"the body is not valid JSON ({e})") from None
    if depth(value) > max_depth:
        raise BadBody(400, f"the body nests lists or objects more than {max_depth} deep")
    return value


def responses(ok, *errors, ok_status=200):
    """An operation's OpenAPI ``responses``: ``ok`` (the JSON Schema of its success, or a dict of
    media types to schemas) and each status in ``errors`` (and 500), all answered as ``ERROR``."""
    content = ok if "type" not in ok else {"application/json": ok}
    out = {ok_status: {"description": "success", "content": {k: {"schema": v} for k, v in content.items()}}}
    for status in (*errors, 500):
        out[status] = {"description": WHY[status], "content": {"application/json": {"schema": ERROR}}}
    return out


def body(schema):
    """An operation's ``openapi_extra`` for a required JSON body of ``schema``: the handlers read
    their bodies themselves, and this says what they read."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def fault(request, status, detail, log, exc=None):
    """The JSON answer to a request the server failed (``status`` >= 500), logged with a new
    request id that the answer carries."""
    request_id = uuid.uuid4().hex
    log.error("request %s (%s %s): %s %s", request_id, request.method, request.url.path, status, detail,
              exc_info=exc)
    return JSONResponse({"detail": detail, "request_id": request_id}, status_code=status,
                        headers={"X-Request-ID": request_id})


def install(app, log_name):
    """Answer every error of ``app`` as JSON ``{"detail": ...}``: an ``HTTPException`` with its
    status and headers, and an exception no handler caught as a 500 with a request id, logged
    to the logger ``log_name`` (as is any other 5xx)."""
    log = logging.getLogger(log_name)

    @app.exception_handler(HTTPException)
    async def http_error(request, exc):
        if exc.status_code >= 500:
            answer = fault(request, exc.status_code, exc.detail, log)
            answer.headers.update(exc.headers or {})
            return answer
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def crash(request, exc):  # Starlette's outermost layer calls this, then re-raises for the server's log
        return fault(request, 500, "the server failed on this request (its fault, not the request's); "
                                   "its log has the details under this request_id", log, exc)
