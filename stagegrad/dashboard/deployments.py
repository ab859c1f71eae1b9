"""The dashboard's Deploy button: a finished run's checkpoint served by ``stagegrad deploy`` in
a process of its own, on a free loopback port, whatever address the dashboard listens on (a
model served from here answers this machine's clients; ``stagegrad deploy --host`` is how to
expose one).

A deployment's ``state`` goes ``starting`` (the process loads the model), then ``ready``
(it answers ``/healthz``) or ``failed`` (with the last lines of its log, ``deploy.log`` in
the run's folder); ``stopped`` after ``stop``. A server that exits by itself while ready is
``failed`` with its exit status. At most ``max_served`` run at once; the dashboard stops
them all when it stops.
"""
import subprocess
import threading
from pathlib import Path

from ..deploy import process
from ..machine import THREAD_VARIABLES
from .jobs import log_tail

CHECKPOINT = "model.ckpt"  # what the worker writes beside the weights (worker._save)
MAX_SERVED = 4
LIVE = ("starting", "ready")


class DeployError(ValueError):
    """A deployment that cannot start now; the message says why (a 409 for the page)."""


class Deployments:
    """The servers of finished runs, at most one per run; ``runs_dir/<id>`` holds each run's files."""

    def __init__(self, runs_dir, threads=None, max_served=MAX_SERVED):
        self.runs_dir, self.threads, self.max_served = Path(runs_dir), threads, max_served
        self._served = {}  # run id -> the deployment as the API shows it
        self._procs = {}  # run id -> its process
        self._lock = threading.Lock()

    def start(self, run_id, backend, name, text):
        """Serve run ``run_id``'s checkpoint on ``backend`` under the model name ``name``
        (``text``: a language model, answered at ``:generate``); the deployment, ``starting``."""
        folder = self.runs_dir / str(run_id)
        if not (folder / CHECKPOINT).is_file():
            raise DeployError(f"run {run_id} has no checkpoint to serve (runs finished before the "
                              f"dashboard wrote {CHECKPOINT} beside the weights cannot be served)")
        options = ["--name", name]
        env = {}
        if self.threads:
            options += ["--threads", str(self.threads)]
            env = {v: str(self.threads) for v in THREAD_VARIABLES}
        with self._lock:
            current = self._served.get(run_id)
            if current and current["state"] in LIVE:
                raise DeployError(f"run {run_id} is already served on {current['backend']} at "
                                  f"{current['url']}; stop it first")
            if sum(d["state"] in LIVE for d in self._served.values()) >= self.max_served:
                raise DeployError(f"{self.max_served} models are served already, the most at once: stop one")
            with open(folder / "deploy.log", "w") as log:  # the child keeps its own copy of the file
                proc, url = process.launch(folder / CHECKPOINT, backend, *options, stderr=log, env=env)
            served = {"run": run_id, "backend": backend, "name": name, "url": url,
                      "endpoint": f"{url}/v1/models/{name}:{'generate' if text else 'predict'}",
                      "state": "starting", "error": None}
            self._served[run_id], self._procs[run_id] = served, proc
        threading.Thread(target=self._watch, args=(run_id, proc, url), daemon=True,
                         name=f"deployment-{run_id}").start()
        return dict(served)

    def _watch(self, run_id, proc, url):
        ready = process.wait_ready(url, proc)
        self._settle(run_id, proc, "ready" if ready else "failed")
        if not ready:
            proc.kill()
        proc.wait()
        self._settle(run_id, proc, "failed")  # exited by itself: a stop has already said "stopped"

    def _settle(self, run_id, proc, state):
        with self._lock:
            served = self._served[run_id]
            if self._procs.get(run_id) is not proc or served["state"] not in LIVE:
                return  # stopped, or replaced by a later deployment of the run
            served["state"] = state
            if state == "failed":
                code = proc.poll()
                why = "it did not answer within 120 s" if code is None else f"it exited with status {code}"
                served["error"] = why + log_tail(self.runs_dir / str(run_id) / "deploy.log", 3)

    def status(self, run_id):
        """The run's deployment (its last one, whatever its state), or None."""
        with self._lock:
            served = self._served.get(run_id)
            return dict(served) if served else None

    def stop(self, run_id, timeout=10):
        """Stop the run's server and wait until it has exited; False if none is starting or ready."""
        with self._lock:
            served = self._served.get(run_id)
            if not served or served["state"] not in LIVE:
                return False
            served["state"] = "stopped"
            proc = self._procs[run_id]
        _end(proc, timeout)
        return True

    def close(self, timeout=10):
        """Stop every server and wait for them to exit."""
        with self._lock:
            procs = list(self._procs.values())
            for served in self._served.values():
                if served["state"] in LIVE:
                    served["state"] = "stopped"
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            _end(proc, timeout)


def _end(proc, timeout):
    """Terminate ``proc`` and wait for it; killed if it is still there after ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
