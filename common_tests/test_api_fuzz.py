"""Both HTTP APIs fuzzed from their own OpenAPI documents, in-process (no port): schemathesis
generates requests that fit each operation's schema and requests that break it, and every
answer must be a documented status with a body that fits its schema, never a 5xx. Then the
``:predict`` body decoder under hypothesis: nested lists of any shape and base64 strings of
any content are decoded exactly (NumPy's reshape and Pillow's own encoding are the oracles)
or refused with the 4xx that names the problem."""
import base64
import io
import math
import struct
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from stagegrad.deploy.model import FLOAT32_MAX, BadInput, Served

schemathesis = pytest.importorskip("schemathesis", reason="the API fuzzers (pip install -e '.[test]')")
with warnings.catch_warnings():  # starlette 1 suggests httpx2 for its test client; httpx works the same
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    TestClient = pytest.importorskip("fastapi.testclient").TestClient  # CI=true insists on it

from stagegrad.dashboard.app import create_app as dashboard_app  # noqa: E402
from stagegrad.deploy.app import create_app as deploy_app  # noqa: E402

from .test_deploy import _checkpoint  # noqa: E402

pytestmark = pytest.mark.xdist_group("deploy")
EXAMPLES = 30  # per operation and per test: the fuzzers' whole run stays within seconds
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure prints its request
                suppress_health_check=list(HealthCheck))  # bodies of images are large by design


def _checks():
    c = schemathesis.checks
    return [c.not_a_server_error, c.status_code_conformance, c.content_type_conformance,
            c.response_schema_conformance]


def _fuzz(client, path_values=None):
    """Every operation of the OpenAPI document of ``client``'s app, ``EXAMPLES`` generated requests each (those
    that fit the schema and those that break it), each answer checked; ``path_values`` maps a
    path parameter to values that exist (run ids), drawn in place of a generated one at times.
    The statuses seen, by operation."""
    # the document as the client reads it (from_asgi would start the app a second time, till exit)
    schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
    modes = schemathesis.GenerationMode
    seen = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        cases = st.one_of(operation.as_strategy(generation_mode=modes.POSITIVE),
                          operation.as_strategy(generation_mode=modes.NEGATIVE))
        known = {k: st.sampled_from([None, *v]) for k, v in (path_values or {}).items()}
        statuses = seen.setdefault(operation.label, set())

        @FUZZ
        @given(case=cases, chosen=st.fixed_dictionaries(known))
        def one(case, chosen):
            for name, value in chosen.items():
                if value is not None and name in (case.path_parameters or {}):
                    case.path_parameters[name] = value
            sent = case.as_transport_kwargs(base_url="http://testserver")
            if not sent.pop("cookies", None) and isinstance(sent.get("data"), (bytes, str)):
                sent["content"] = sent.pop("data")  # httpx's name for a raw body
            response = client.request(**sent)
            statuses.add(response.status_code)
            case.validate_response(response, checks=_checks())
        one()
    return seen


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_the_deploy_api_answers_every_generated_request_as_documented(tmp_path, kind):
    served = Served(_checkpoint(tmp_path, kind), backend="3")
    app = deploy_app(served, max_tokens=8)  # a generation's cost bounded: the fuzzer asks for the most
    with TestClient(app, raise_server_exceptions=False) as client:
        seen = _fuzz(client)
    route = "generate" if served.text else "predict"
    # the fuzzer reached the model, and its refusals too, not only the router's 404
    assert {200, 422} <= seen[f"POST /v1/models/{{name}}:{route}"], seen
    assert {200, 404} <= seen["GET /v1/models/{name}"], seen


def test_the_dashboard_api_answers_every_generated_request_as_documented(tmp_path):
    app = dashboard_app(tmp_path / "runs.sqlite", threads=1)
    store, jobs = app.state.store, app.state.jobs
    done = store.create({"model": "mlp", "dataset": "mnist", "stage": "3"})
    # a finished run whose weights are there and whose ONNX file has gone, and a failed run
    store.finish(done, "done", final={"test_accuracy": 0.5},
                 files={"safetensors": "model.safetensors", "onnx": "model.onnx"})
    (jobs.runs_dir / str(done)).mkdir(parents=True)
    (jobs.runs_dir / str(done) / "model.safetensors").write_bytes(b"weights")
    failed = store.create({"model": "cnn", "dataset": "mnist", "stage": "3"})
    store.finish(failed, "failed", error="a crash")

    def submit(checked):  # the API is under test, not training: a run is recorded and ended at once
        run_id = store.create(checked)
        store.finish(run_id, "cancelled")
        return run_id
    jobs.submit = submit
    with TestClient(app, raise_server_exceptions=False) as client:
        seen = _fuzz(client, {"run_id": [done, failed]})
    assert {201, 422} <= seen["POST /api/runs"] and {200, 422} <= seen["POST /api/check"], seen
    assert {200, 404} <= seen["GET /api/runs/{run_id}/{name}"], seen  # a run's download, and the one gone
    assert 409 in seen["POST /api/runs/{run_id}/deploy"], seen  # a run the fuzzer named, refused for a reason


# ------------------------------------------------------------ the :predict body decoder

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    return Served(_checkpoint(tmp_path_factory.mktemp("fuzz"), "mlp"), backend="3")


PIXELS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2 ** 200, 2 ** 200),
                   st.floats(-FLOAT32_MAX, FLOAT32_MAX))
JSON = st.recursive(st.none() | st.booleans() | PIXELS | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=30)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=60)


def _image(rows, cols, pixels=PIXELS):
    return st.lists(st.lists(pixels, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


def _refused(served, instance):
    """The decoder's answer to one instance: its pixels, or the BadInput's status and message."""
    try:
        return served.images([instance])[0]
    except BadInput as e:
        assert str(e).startswith("instance 0: ") and e.status in (413, 422), e
        return e


@settings(max_examples=40, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instance=st.one_of(JSON, _image(28, 28), _image(28, 28).map(lambda x: [x]), _image(28, 27),
                          _image(28, 28, st.floats(-1e3, 1e3)), _image(28, 28, st.integers(-255, 255))))
def test_the_predict_decoder_reads_images_exactly_or_names_the_fault(served, instance):
    got = _refused(served, instance)
    rows = instance[0] if isinstance(instance, list) and len(instance) == 1 else instance
    try:
        want = np.array(rows, dtype=object)  # NumPy's reading of the nested lists
    except ValueError:  # ragged
        want = None
    want = want.reshape(784) if want is not None and want.shape == (28, 28) else None
    fits = want is not None and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))
        and -FLOAT32_MAX <= v <= FLOAT32_MAX for v in want)
    if fits:
        assert got == list(want)  # every pixel as sent, in row-major order
    else:
        assert isinstance(got, BadInput) and got.status == 422, got


def _png_bytes(width, height, seed):
    from PIL import Image
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(out, format="PNG")
    return out.getvalue(), pixels


def _header_only(width, height):
    """A PNG's signature and header claiming ``width`` x ``height``, with one empty data chunk."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(data=st.data(), case=st.sampled_from(["png", "header", "mangled", "text", "bytes"]))
def test_the_predict_decoder_reads_base64_pngs_or_names_the_fault(served, data, case):
    pytest.importorskip("PIL")
    from PIL import Image
    if case == "png":  # Pillow's own encoding of random grey pixels, any size near 28 x 28
        width, height = data.draw(st.integers(27, 29)), data.draw(st.integers(27, 29))
        raw, pixels = _png_bytes(width, height, data.draw(st.integers(0, 2 ** 32 - 1)))
        got = _refused(served, {"b64": base64.b64encode(raw).decode()})
        if (width, height) == (28, 28):
            assert got == [v / 255 for v in pixels.reshape(-1).tolist()]
        else:
            assert isinstance(got, BadInput) and got.status == 422 and f"{width} x {height} pixels" in str(got)
        return
    if case == "header":  # a header claiming any size: refused before decoding, 413 past Pillow's bound
        width, height = data.draw(st.integers(0, 2 ** 32 - 1)), data.draw(st.integers(0, 2 ** 32 - 1))
        got = _refused(served, {"b64": base64.b64encode(_header_only(width, height)).decode()})
        if width * height > Image.MAX_IMAGE_PIXELS:
            assert got.status == 413 and "decompression-bomb" in str(got), got
        elif (width, height) != (28, 28):
            assert got.status == 422 and f"{width} x {height} pixels" in str(got), got
        else:  # 28 x 28 with no pixel data: Pillow refuses the truncated file
            assert got.status == 422 and "not a readable PNG" in str(got), got
        return
    if case == "mangled":  # a real PNG with bytes flipped past its header
        raw = bytearray(_png_bytes(28, 28, 0)[0])
        for at in data.draw(st.lists(st.integers(24, len(raw) - 1), min_size=1, max_size=8)):
            raw[at] ^= data.draw(st.integers(1, 255))
        got = _refused(served, {"b64": base64.b64encode(bytes(raw)).decode()})
        assert isinstance(got, BadInput) or (len(got) == 784 and all(0 <= v <= 1 for v in got))
        return
    text = (data.draw(st.text(max_size=40)) if case == "text"
            else base64.b64encode(data.draw(st.binary(max_size=64))).decode())
    got = _refused(served, {"b64": text})
    assert isinstance(got, BadInput) and got.status == 422, got
