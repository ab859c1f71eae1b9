"""``stagegrad deploy`` as a child process: started on a free loopback port, then waited for
until it answers. ``stagegrad loadtest --compare`` and the dashboard's Deploy button both
serve this way."""
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the folder holding the stagegrad package


def free_port():
    """A TCP port free on loopback now. Another process may take it before the server binds
    it; the server then exits saying so, and ``wait_ready`` returns False."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(checkpoint, backend, *options, stderr=None, env=None):
    """``(process, url)``: ``stagegrad deploy`` serving ``checkpoint`` on ``backend`` at a free
    loopback port. ``options`` are more of deploy's options; ``stderr`` takes its messages
    (a file, or ``subprocess.PIPE``); ``env`` adds to this process's environment."""
    port = free_port()
    command = [sys.executable, "-m", "stagegrad", "deploy", str(Path(checkpoint).resolve()),
               "--stage", str(backend), "--port", str(port), *options]
    # run from the checkout, so that ``-m stagegrad`` is this very package
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                            env={**os.environ, **(env or {})})
    return proc, f"http://127.0.0.1:{port}"


def wait_ready(url, proc, timeout=120):
    """Whether the server at ``url`` answers ``/healthz`` within ``timeout`` seconds; False as
    soon as ``proc`` has exited."""
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        if proc.poll() is not None:
            return False
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False
