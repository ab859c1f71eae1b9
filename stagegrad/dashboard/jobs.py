"""Runs as jobs: one worker process each, at most ``max_runs`` at a time, the rest queued.

A run's process (``python -m stagegrad.dashboard.worker``) gets its settings as JSON on its
standard input and reports as JSON lines on its standard output; a thread per process
reads them, stores them (``Store``) and hands them to ``Hub``, which passes them to every
page streaming that run. Nothing a worker does can block the server: the server only
reads lines. ``cancel`` terminates the process; when it has exited the run is marked
``cancelled`` and its files are removed. A process that exits without reporting ``done``
(an exception, a crash, a kill from outside) marks the run ``failed`` with the error it
reported, or its exit status and the last lines of its log.
"""
import asyncio
import collections
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from ..machine import THREAD_VARIABLES

ROOT = Path(__file__).resolve().parents[2]  # the folder holding the stagegrad package


class Hub:
    """Fans each run's events out to the pages streaming it, across threads: the job
    threads publish, the server's event loop delivers to each subscriber's queue."""

    def __init__(self):
        self._subscribers = collections.defaultdict(list)
        self._lock = threading.Lock()

    def subscribe(self, run_id):
        """A queue receiving the run's events from now on; call from the event loop."""
        queue = asyncio.Queue()
        with self._lock:
            self._subscribers[run_id].append((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, run_id, queue):
        """Stop delivering to ``queue``."""
        with self._lock:
            self._subscribers[run_id] = [s for s in self._subscribers[run_id] if s[1] is not queue]
            if not self._subscribers[run_id]:
                del self._subscribers[run_id]

    def publish(self, run_id, kind, data):
        """Deliver the event ``(kind, data)`` to every subscriber of the run; from any thread."""
        with self._lock:
            targets = list(self._subscribers.get(run_id, ()))
        for loop, queue in targets:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, data))
            except RuntimeError:  # that page's loop has closed: nobody is listening there
                pass


class Jobs:
    """Starts, follows and cancels runs. ``runs_dir/<id>`` holds a run's log and files."""

    def __init__(self, store, hub, runs_dir, data_dir=None, max_runs=1, threads=None):
        self.store, self.hub = store, hub
        self.threads = threads
        self.runs_dir = Path(runs_dir)
        self.data_dir = data_dir
        self.max_runs = max_runs
        self._queue = collections.deque()
        self._running = {}  # run id -> Popen
        self._cancelled = set()
        self._threads = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, settings):
        """Queue a run with checked ``settings``; its id. It starts as soon as a slot is free."""
        run_id = self.store.create(settings)
        with self._lock:
            self._queue.append(run_id)
            self._fill()
        return run_id

    def _fill(self):
        # with the lock held: start queued runs while slots are free
        while self._queue and len(self._running) < self.max_runs and not self._closed:
            self._start(self._queue.popleft())

    def _start(self, run_id):
        out = self.runs_dir / str(run_id)
        out.mkdir(parents=True, exist_ok=True)
        settings = self.store.run(run_id)["settings"]
        # the worker imports this very package, wherever it was imported from
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, PYTHONPATH=path)
        if self.threads is not None:  # read by the kernels' libraries when the worker imports them
            env.update({name: str(self.threads) for name in THREAD_VARIABLES})
        proc = subprocess.Popen([sys.executable, "-m", "stagegrad.dashboard.worker", str(out),
                                 self.data_dir or ""], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
        proc.stdin.write(json.dumps(settings))
        proc.stdin.close()
        self._running[run_id] = proc
        self.store.started(run_id)
        self.hub.publish(run_id, "status", self.store.run(run_id))
        thread = threading.Thread(target=self._follow, args=(run_id, proc), daemon=True,
                                  name=f"run-{run_id}")
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _follow(self, run_id, proc):
        done, error = None, None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a stray line is not part of the protocol
            event = msg.get("event")
            if event == "start":
                self.store.describe(run_id, msg.get("total"), msg.get("parameters"), msg.get("stage"))
                self.hub.publish(run_id, "status", self.store.run(run_id))
            elif event == "point":
                self.hub.publish(run_id, "point", self.store.add_point(run_id, msg))
            elif event == "done":
                done = msg
            elif event == "error":
                error = str(msg.get("message"))
        code = proc.wait()
        with self._lock:
            self._running.pop(run_id, None)
            cancelled = run_id in self._cancelled
            self._cancelled.discard(run_id)
        out = self.runs_dir / str(run_id)
        if code == 0 and done is not None and not cancelled:
            self.store.finish(run_id, "done", final=done.get("final"), files=done.get("files"))
        elif cancelled or self._closed:
            shutil.rmtree(out, ignore_errors=True)
            self.store.finish(run_id, "cancelled" if cancelled else "interrupted",
                              error=None if cancelled else "the server stopped before the run finished")
        else:
            self.store.finish(run_id, "failed", error=error or self._crash(code, out))
            # nothing half-written stays downloadable
            for name in ("model.ckpt", "model.safetensors", "model.onnx"):
                (out / name).unlink(missing_ok=True)
        self.hub.publish(run_id, "status", self.store.run(run_id))
        with self._lock:
            self._fill()

    @staticmethod
    def _crash(code, out):
        return f"the worker exited with status {code}" + log_tail(out / "log.txt", 5)

    def cancel(self, run_id):
        """Cancel a queued or running run; False if it is not active (finished or unknown)."""
        with self._lock:
            if run_id in self._queue:
                self._queue.remove(run_id)
                self.store.finish(run_id, "cancelled")
                self.hub.publish(run_id, "status", self.store.run(run_id))
                return True
            proc = self._running.get(run_id)
            if proc is None:
                return False
            self._cancelled.add(run_id)
            proc.terminate()  # the following thread sees the exit, marks the run, removes its files
            return True

    def active(self):
        """The ids of the running and the queued runs."""
        with self._lock:
            return list(self._running), list(self._queue)

    def close(self, timeout=10):
        """Stop every worker (their runs become ``interrupted``) and wait for their threads."""
        with self._lock:
            self._closed = True
            for run_id in list(self._queue):
                self.store.finish(run_id, "interrupted", error="the server stopped before the run started")
            self._queue.clear()
            for proc in self._running.values():
                proc.terminate()
        for thread in self._threads:
            thread.join(timeout)


def log_tail(log, lines):
    """The last ``lines`` lines of the file ``log`` as ``": a | b | c"`` for an error message,
    or "" when it is missing or empty."""
    try:
        tail = log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return ": " + " | ".join(tail) if tail else ""
