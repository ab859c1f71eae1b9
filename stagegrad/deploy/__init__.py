"""``stagegrad deploy``: serve a model that ``stagegrad train --save`` wrote over HTTP.

One command loads the checkpoint on a stage and answers predictions (image models) or
generations (the language models) with dynamic batching, health and Prometheus metrics:
see ``app.py`` for the API, ``batching.py`` for how requests merge, ``model.py`` for what
a client may send. A checkpoint that is corrupt or not one ``--save`` wrote is refused
before the server starts, with the path and the reason.
"""
import sys

from .. import installed_text
from ..dashboard import bind, is_loopback, port_number
from .model import CheckpointError, Served


def add_arguments(p):
    """``stagegrad deploy``'s options."""
    p.add_argument("checkpoint", help="a checkpoint 'stagegrad train --save' wrote (an image model or a "
                                      "language model)")
    p.add_argument("--stage", default="3",
                   help=f"what runs the model: a stage ({installed_text()} are installed here), 'torch' "
                        f"(PyTorch) or 'onnxruntime' (the stage's ONNX export; image models) (default 3)")
    p.add_argument("--name", default=None, help="the model's name in the API (default: the file's name)")
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on; anything but a loopback address serves other machines")
    p.add_argument("--port", type=port_number, default=8080, help="the port; 0 picks a free one")
    p.add_argument("--max-batch", type=int, default=32, help="instances a batch holds at most")
    p.add_argument("--max-wait-ms", type=float, default=5.0,
                   help="how long a batch waits for more requests after its first, while requests "
                        "arrive together (a lone request never waits)")
    p.add_argument("--queue", type=int, default=64, help="requests waiting at most; more are answered 503")
    p.add_argument("--threads", type=int, default=None, help="the stage's threads (default: its own)")


def run(args):
    """Serve the checkpoint until interrupted."""
    try:
        import uvicorn

        from .app import create_app
    except ImportError as e:
        raise RuntimeError(f"deploy needs FastAPI and uvicorn ({e}); install them with "
                           f"pip install -e '.[serve]' (./dev deploy does)") from None
    for what, value, low in (("--max-batch", args.max_batch, 1), ("--queue", args.queue, 1),
                             ("--max-wait-ms", args.max_wait_ms, 0)):
        if value < low:
            raise SystemExit(f"deploy: {what} must be at least {low}, got {value}")
    try:
        served = Served(args.checkpoint, backend=args.stage, name=args.name)
    except CheckpointError as e:
        raise SystemExit(f"deploy: {e}") from None
    if args.threads:
        from ..measure import set_threads
        set_threads(args.threads)
    app = create_app(served, max_batch=args.max_batch, max_wait_ms=args.max_wait_ms, max_queue=args.queue)
    sock, address = bind(args.host, args.port)  # bound here: the address printed is the one in use
    print(f"serving {served.kind} model {served.name!r} on {served.backend} at {address}"
          f"/v1/models/{served.name}:{'generate' if served.text else 'predict'}", file=sys.stderr)
    if not is_loopback(args.host):
        print(f"deploy: listening on {args.host}: anyone who can reach it can use the model", file=sys.stderr)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
