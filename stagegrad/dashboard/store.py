"""The run history in SQLite: each run's settings, status, curves and final metrics.

One connection, shared by the server's threads behind a lock (the job threads write
points while requests read them). Settings and final metrics are stored as JSON text;
the curves as one row per progress point. A run's status is one of ``STATUSES``; when a
server starts, runs an earlier server left queued or running are marked ``interrupted``,
since no process of theirs survives it.
"""
import json
import sqlite3
import threading
import time

STATUSES = ("queued", "running", "done", "failed", "cancelled", "interrupted")
FINAL = ("done", "failed", "cancelled", "interrupted")
POINT_FIELDS = ("step", "epoch", "loss", "accuracy", "test_accuracy", "val_loss", "samples_per_s", "lr",
                "elapsed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL, started REAL, finished REAL,
    status TEXT NOT NULL, settings TEXT NOT NULL, stage TEXT, model TEXT,
    total_steps INTEGER, parameters INTEGER, final TEXT, files TEXT, wall_s REAL, error TEXT);
CREATE TABLE IF NOT EXISTS points (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id),
    step INTEGER, epoch INTEGER, loss REAL, accuracy REAL, test_accuracy REAL, val_loss REAL,
    samples_per_s REAL, lr REAL, elapsed REAL);
CREATE INDEX IF NOT EXISTS points_by_run ON points(run_id, id);
"""


def _number(value):
    """A point's field as stored: a finite number, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if value == value and abs(value) != float("inf") else None


class Store:
    """The history database at ``path`` (created with its folder's tables if new)."""

    def __init__(self, path):
        self.path = str(path)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.executescript(_SCHEMA)

    def close(self):
        """Close the connection."""
        with self._lock:
            self._db.close()

    def _write(self, sql, args=()):
        with self._lock, self._db:
            return self._db.execute(sql, args).lastrowid

    def _read(self, sql, args=()):
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def interrupt_leftovers(self):
        """Mark the runs an earlier server left queued or running as ``interrupted``; how many."""
        with self._lock, self._db:
            return self._db.execute(
                "UPDATE runs SET status = 'interrupted', finished = ?, error = 'the server stopped before "
                "the run finished' WHERE status IN ('queued', 'running')", (time.time(),)).rowcount

    def create(self, settings):
        """A new queued run with ``settings``; its id."""
        return self._write("INSERT INTO runs (created, status, settings, model) VALUES (?, 'queued', ?, ?)",
                           (time.time(), json.dumps(settings), settings.get("model")))

    def started(self, run_id):
        """Record that the run's process started."""
        self._write("UPDATE runs SET status = 'running', started = ? WHERE id = ?", (time.time(), run_id))

    def describe(self, run_id, total_steps, parameters, stage):
        """Record what the worker reported when training began."""
        self._write("UPDATE runs SET total_steps = ?, parameters = ?, stage = ? WHERE id = ?",
                    (total_steps, parameters, stage, run_id))

    def add_point(self, run_id, point):
        """Store one progress point (a dict of ``POINT_FIELDS``); the point as stored, with ``seq``."""
        values = {k: _number(point.get(k)) for k in POINT_FIELDS}
        seq = self._write(f"INSERT INTO points (run_id, {', '.join(POINT_FIELDS)}) VALUES "
                          f"(?, {', '.join('?' * len(POINT_FIELDS))})", (run_id, *values.values()))
        return {"seq": seq, **values}

    def finish(self, run_id, status, final=None, files=None, error=None):
        """Mark the run ended with ``status`` (one of ``FINAL``), its metrics, files or error."""
        if status not in FINAL:
            raise ValueError(f"a run ends as one of {', '.join(FINAL)}, not {status!r}")
        now = time.time()
        self._write("UPDATE runs SET status = ?, finished = ?, final = ?, files = ?, error = ?, "
                    "wall_s = CASE WHEN started IS NULL THEN NULL ELSE ? - started END WHERE id = ?",
                    (status, now, json.dumps(final) if final is not None else None,
                     json.dumps(files) if files is not None else None, error, now, run_id))

    def run(self, run_id):
        """The run as a dict (settings and final metrics decoded), or None."""
        rows = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _decode(rows[0]) if rows else None

    def runs(self):
        """Every run, newest first."""
        return [_decode(r) for r in self._read("SELECT * FROM runs ORDER BY id DESC")]

    def points(self, run_id, after=0):
        """The run's progress points with ``seq`` above ``after``, in order."""
        rows = self._read(f"SELECT id, {', '.join(POINT_FIELDS)} FROM points WHERE run_id = ? AND id > ? "
                          "ORDER BY id", (run_id, after))
        return [{"seq": r["id"], **{k: r[k] for k in POINT_FIELDS}} for r in rows]


def _decode(row):
    out = dict(row)
    for key in ("settings", "final", "files"):
        out[key] = json.loads(out[key]) if out[key] is not None else None
    return out
