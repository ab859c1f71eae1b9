"""Dynamic batching: requests that arrive within a short window run as one batch.

Design: one worker thread owns the model. A request puts its instances and a future on a
bounded queue (full: ``QueueFull``, which the API answers with 503 rather than letting the
queue grow). The worker takes the oldest request and every request already queued behind
it, up to ``max_batch`` instances; it waits up to ``max_wait_s`` for more only while
requests are arriving together (the last batch merged several): a lone client's request
then runs at once instead of paying the window, and under load the requests that arrive
during one batch make up the next. It runs the model once on all of them and hands each
request its slice of the results.
"""
import queue
import threading
import time
from concurrent.futures import Future


class QueueFull(Exception):
    """The batcher's queue is full: the server is saturated."""


class Batcher:
    """Runs ``run(instances) -> results`` (one result per instance) on merged requests."""

    def __init__(self, run, max_batch=32, max_wait_s=0.005, max_queue=64, on_batch=None):
        self.run, self.max_batch, self.max_wait_s = run, max_batch, max_wait_s
        self.on_batch = on_batch  # called with each batch's size (the metrics)
        self._queue = queue.Queue(maxsize=max_queue)
        self._together = False  # whether the last batch merged requests: then wait for more
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._loop, name="batcher", daemon=True)
        self._worker.start()

    def submit(self, instances):
        """A future of ``instances``' results, or QueueFull."""
        future = Future()
        try:
            self._queue.put_nowait((list(instances), future))
        except queue.Full:
            raise QueueFull(f"the queue holds {self._queue.maxsize} requests already") from None
        return future

    def close(self):
        """Stop the worker after the batch in hand; requests still queued are cancelled."""
        self._stop.set()
        self._worker.join(timeout=5)
        while True:
            try:
                self._queue.get_nowait()[1].cancel()
            except queue.Empty:
                return

    def _loop(self):
        while not self._stop.is_set():
            try:
                first = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            jobs, size = [first], len(first[0])
            deadline = time.monotonic() + (self.max_wait_s if self._together else 0.0)
            while size < self.max_batch:
                try:
                    job = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                jobs.append(job)
                size += len(job[0])
            self._together = len(jobs) > 1
            self._serve(jobs, size)

    def _serve(self, jobs, size):
        items = [x for instances, _ in jobs for x in instances]
        try:
            results = self.run(items)
        except Exception as e:  # the model failed: every request of the batch hears why
            for _, future in jobs:
                future.set_exception(e)
            return
        if self.on_batch:
            self.on_batch(size)
        at = 0
        for instances, future in jobs:
            future.set_result(results[at:at + len(instances)])
            at += len(instances)
