"""``stagegrad serve``: a local training dashboard in the browser.

Choose a model (the zoo's, or one built layer by layer), a stage, an optimizer and its
schedule, start, and watch the loss, accuracy, samples/s and learning rate live; cancel
at any time; download the trained weights (safetensors, and ONNX where the export
works). Runs are worker processes (``jobs``), at most ``--max-runs`` at a time; their
history (``store``) is kept in SQLite and survives a restart, and the page overlays the
curves of any runs chosen. ``app`` is the web app; ``settings`` and ``architecture``
check what a request asks for; ``worker`` trains.

The server listens on 127.0.0.1 unless ``--host`` says otherwise, prints its address and
opens nothing by itself. FastAPI and uvicorn are the ``serve`` extra
(``pip install -e '.[serve]'``; ``./dev serve`` installs them).
"""
import ipaddress
import os
import socket
from pathlib import Path

from ..train_parts import integer

LOOPBACK_NAMES = ("127.0.0.1", "localhost")


def default_db():
    """Where the history is kept by default: ``$XDG_DATA_HOME/stagegrad/runs.sqlite``
    (``~/.local/share/stagegrad/runs.sqlite`` when the variable is unset)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return str(Path(base) / "stagegrad" / "runs.sqlite")


def _max_runs(text):
    return integer(text, 1, 65, "a number of runs in [1, 64]")


def _threads(text):
    return integer(text, 1, 1025, "a number of threads in [1, 1024]")


def default_threads(max_runs):
    """The threads each run gets: the cores shared among the runs that may train at once
    (a kernel's threads that outnumber the free cores wait on each other, and a step
    slows many times over)."""
    return max(1, (os.cpu_count() or 1) // max_runs)


def port_number(text):
    """A ``--port`` option's value: a port in [0, 65535] (0: the kernel picks a free one)."""
    return integer(text, 0, 65536, "a port in [0, 65535]")


def add_arguments(p):
    """``stagegrad serve``'s options."""
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on; anything but a loopback address lets other machines "
                        "start runs on this one (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=8750, help="the port; 0 picks a free one (default 8750)")
    p.add_argument("--db", default=default_db(), metavar="PATH",
                   help="the SQLite file of the run history; each run's weights and log go to 'runs/' "
                        "beside it (default %(default)s, under $XDG_DATA_HOME when set)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="the directory holding MNIST (DIR or DIR/mnist) and Shakespeare (DIR or "
                        "DIR/shakespeare) (default: $STAGEGRAD_DATA, the shared datasets folder beside "
                        "the checkout, then the user cache)")
    p.add_argument("--max-runs", type=_max_runs, default=1,
                   help="runs trained at the same time; more are queued (default 1)")
    p.add_argument("--threads", type=_threads, default=None,
                   help="threads each run's kernels use (default: the CPU's cores divided among "
                        "--max-runs runs)")


def is_loopback(host):
    """Whether ``host`` (a name or an address) is this machine's loopback: only this machine reaches it."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host, port):
    """A listening socket bound to ``host`` and ``port`` (0: a free one), and its address as a
    URL, with the port the kernel chose."""
    # named TCP, so that asyncio sets TCP_NODELAY on each accepted connection (it checks the
    # protocol): else a response's headers and body, written apart, wait on a delayed ACK, 40 ms
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM,
                         socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}"


def run(args):
    """Serve the dashboard until interrupted."""
    try:
        import uvicorn

        from .app import create_app
    except ImportError as e:
        raise RuntimeError(f"the dashboard needs FastAPI and uvicorn ({e}); install them with "
                           f"pip install -e '.[serve]' (./dev serve does)") from None
    local = is_loopback(args.host)
    # on loopback, a request must name this machine: a DNS name an attacker points at
    # 127.0.0.1 would otherwise let their page read the API (Starlette's host check reads
    # IPv4 and names only, so an IPv6 address goes without it)
    trusted = LOOPBACK_NAMES if local and ":" not in args.host else None
    threads = args.threads or default_threads(args.max_runs)
    app = create_app(args.db, data_dir=args.data, max_runs=args.max_runs, threads=threads,
                     trusted_hosts=trusted)
    sock, address = bind(args.host, args.port)  # bound here: the address printed is the one in use
    print(f"stagegrad serve: the dashboard is at {address}/ (history: {args.db})", flush=True)
    if not local:
        print(f"stagegrad serve: listening on {args.host}: anyone who can reach it can start runs on this "
              f"machine", flush=True)

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            app.state.stopping.set()  # an open event stream would hold the shutdown up: end them
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)
    Server(config).run(sockets=[sock])
