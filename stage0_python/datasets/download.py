"""Fetching a dataset's file: from the first source that answers, with a progress line,
checked against its SHA-256 before it is kept, written atomically.

A file is never kept unverified: a truncated download, a mirror serving something else or
a captive portal's page fails the check and leaves nothing behind, so the next run tries
again instead of reading a bad file. ``STAGEGRAD_OFFLINE=1`` refuses every download at once
(an air-gapped machine, a test suite), instead of waiting on the network.
"""
import hashlib
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request

CHUNK = 1 << 16


def offline():
    """Whether downloads are refused: ``STAGEGRAD_OFFLINE`` set to anything but 0."""
    return os.environ.get("STAGEGRAD_OFFLINE", "") not in ("", "0")


class Progress:
    """One line on ``stream`` saying how much of ``name`` has arrived: redrawn in place on a
    terminal (at most every 0.2 s), a line at the start and one at the end elsewhere (a log
    file is not flooded)."""

    def __init__(self, name, total, stream=None):
        self.name, self.total, self.done = name, total, 0
        self.stream = sys.stderr if stream is None else stream
        self.live = getattr(self.stream, "isatty", lambda: False)()
        self._drawn = 0.0
        if not self.live:
            self._write(f"downloading {name} ({_mb(total)})\n")

    def _write(self, text):
        self.stream.write(text)
        self.stream.flush()

    def update(self, n):
        """``n`` more bytes arrived."""
        self.done += n
        now = time.monotonic()
        if self.live and now - self._drawn >= 0.2:
            self._drawn = now
            share = f" {100 * self.done / self.total:3.0f}%" if self.total else ""
            self._write(f"\r  {self.name}: {_mb(self.done)} of {_mb(self.total)}{share}   ")

    def close(self):
        """The line that says it is complete."""
        self._write(("\r" if self.live else "") + f"  {self.name}: {_mb(self.done)} received\n")


def _mb(n):
    return "size unknown" if not n else f"{n / 1e6:.1f} MB"


def fetch(urls, check, name=None, progress=True):
    """The bytes of the first of ``urls`` whose content passes ``check`` (a function of the
    bytes returning an error string, or None when they are right). ``RuntimeError`` lists
    every source's failure (offline, HTTP error, checksum mismatch)."""
    if offline():
        raise RuntimeError(f"could not download {name or urls[0]}: STAGEGRAD_OFFLINE is set")
    errors = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                blob = _read(r, name or url.rsplit("/", 1)[-1], progress)
        except (urllib.error.URLError, OSError) as e:
            errors.append(f"{url}: {e}")
            continue
        problem = check(blob)
        if problem is None:
            return blob
        errors.append(f"{url}: {problem}")
    raise RuntimeError(f"could not download {name or urls[0]} (offline, or every source failed):\n  "
                       + "\n  ".join(errors))


def _read(response, name, progress):
    headers = getattr(response, "headers", None)
    total = int(headers.get("Content-Length") or 0) if headers is not None else 0
    bar = Progress(name, total) if progress else None
    parts = []
    while True:
        part = response.read(CHUNK)
        if not part:
            break
        parts.append(part)
        if bar:
            bar.update(len(part))
    if bar:
        bar.close()
    return b"".join(parts)


def sha256_check(expected):
    """A ``check`` for ``fetch``: the bytes' SHA-256 must be ``expected``."""
    def check(blob):
        got = hashlib.sha256(blob).hexdigest()
        return None if got == expected else f"checksum mismatch (SHA-256 {got}, expected {expected})"
    return check


def write_atomic(path, blob):
    """Write ``blob`` to ``path`` through a temporary file in the same folder, so that a
    reader never sees half a file, even if this process is killed mid-write."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
