"""``stagegrad train --save`` killed (SIGKILL) while it writes over an existing checkpoint:
the file on disk is then the previous checkpoint or the new one, byte for byte, never a
torn mix; what the killed save left behind is cleared by the next one; and ``--resume``
from it ends with the very checkpoint an uninterrupted run writes.

The runs are real ``stagegrad train`` processes on stage 0 (which needs no build) and on a
tiny MNIST-shaped IDX set written here. Each killed run is killed by itself, from inside
its second save, at a chosen point: halfway through writing the checkpoint's bytes, just
before the new file replaces the old one, or just after. Killing from inside needs no
timing: the point is reached on every run.
"""
import gzip
import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
STAGE = "stage0_python"
TRAIN = ["--stage", STAGE, "--subset", "64", "--test-subset", "16", "--batch-size", "32", "--epochs", "2"]

# The child: the fake IDX files' digests stand in for MNIST's, so the CLI reads them as it
# reads MNIST (it has no option to skip the checksums); ``where`` names the kill point.
CHILD = r"""
import builtins, importlib, io, json, os, shutil, signal, sys
where, ckpt, snapshot, digests, *argv = sys.argv[1:]
stage = argv[argv.index("--stage") + 1]
importlib.import_module(stage + ".datasets.mnist").SHA256.update(json.loads(digests))
ckpt = os.path.realpath(ckpt)


def die():
    os.kill(os.getpid(), signal.SIGKILL)


sg = importlib.import_module(stage)
real_save = sg.save


def save(obj, f, *a, **k):
    # the file as it was before this save began: the "old" checkpoint the test expects back
    if os.path.exists(ckpt) and not os.path.exists(snapshot):
        shutil.copyfile(ckpt, snapshot)
    return real_save(obj, f, *a, **k)


sg.save = save


def overwriting():
    return os.path.exists(snapshot)


class Cut:
    # a file being written that kills its process once ``left`` bytes are on disk
    def __init__(self, f, left):
        self._f, self._left = f, left

    def write(self, b):
        b = memoryview(b).cast("B")
        if len(b) < self._left:
            self._left -= len(b)
            return self._f.write(b)
        self._f.write(b[:self._left])
        self._f.flush()
        os.fsync(self._f.fileno())
        die()

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)


def writing(mode):
    return isinstance(mode, str) and any(c in mode for c in "wax+")


def cut_if_checkpoint(f, target, mode):
    # any file opened for writing in the checkpoint's folder during the overwriting save,
    # whether a temporary beside it or the checkpoint itself
    if where == "mid-write" and writing(mode) and overwriting():
        if os.path.dirname(os.path.realpath(target)) == os.path.dirname(ckpt):
            return Cut(f, os.path.getsize(snapshot) // 2)
    return f


real_open, real_fdopen = builtins.open, os.fdopen


def open_(file, mode="r", *a, **k):
    f = real_open(file, mode, *a, **k)
    return f if isinstance(file, int) else cut_if_checkpoint(f, file, mode)


def fdopen(fd, mode="r", *a, **k):
    f = real_fdopen(fd, mode, *a, **k)
    return cut_if_checkpoint(f, os.readlink(f"/proc/self/fd/{fd}"), mode)


builtins.open = io.open = open_
os.fdopen = fdopen


def renaming(real):
    def rename(src, dst, *a, **k):
        hit = overwriting() and os.path.realpath(dst) == ckpt
        if hit and where == "before-replace":
            die()
        real(src, dst, *a, **k)
        if hit and where == "after-replace":
            die()
    return rename


os.replace, os.rename = renaming(os.replace), renaming(os.rename)

from stagegrad.cli import main
sys.exit(main(argv))
"""


def _write_idx(path, arr):
    """An unsigned-byte IDX file, gzipped; the SHA-256 of its uncompressed bytes."""
    raw = struct.pack(">I", 0x0800 + arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()
    path.write_bytes(gzip.compress(raw))
    return hashlib.sha256(raw).hexdigest()


def _fake_mnist(folder):
    """64 training and 16 test images of noise in MNIST's layout; their digests by name."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    digests = {}
    for split, n in (("train", 64), ("t10k", 16)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        digests[f"{split}-images-idx3-ubyte"] = _write_idx(folder / f"{split}-images-idx3-ubyte.gz", images)
        digests[f"{split}-labels-idx1-ubyte"] = _write_idx(folder / f"{split}-labels-idx1-ubyte.gz", labels)
    return digests


def _train(data, ckpt, *extra, where="none"):
    """``stagegrad train`` in a child on the fake set, saving to ``ckpt``; killed at ``where``."""
    snapshot = ckpt.parent.parent / (ckpt.name + ".before")
    return subprocess.run([sys.executable, "-c", CHILD, where, str(ckpt), str(snapshot), json.dumps(data[1]),
                           "train", "--data", str(data[0]), *TRAIN, "--save", str(ckpt), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The fake set's folder and its files' digests."""
    folder = tmp_path_factory.mktemp("fake_mnist") / "mnist"
    return folder, _fake_mnist(folder)


@pytest.fixture(scope="module")
def straight(data, tmp_path_factory):
    """The bytes of the checkpoint an uninterrupted two-epoch run ends with."""
    ckpt = tmp_path_factory.mktemp("straight") / "out" / "run.ckpt"
    ckpt.parent.mkdir()
    r = _train(data, ckpt)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count(f"checkpoint written to {ckpt}") == 2
    return ckpt.read_bytes()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the child finds its open files in /proc")
@pytest.mark.parametrize("where, survivor", [("mid-write", "old"), ("before-replace", "old"),
                                             ("after-replace", "new")])
def test_a_save_killed_over_a_checkpoint_leaves_a_whole_one_and_resumes(data, straight, tmp_path, where,
                                                                        survivor):
    ckpt = tmp_path / "out" / "run.ckpt"
    ckpt.parent.mkdir()
    r = _train(data, ckpt, where=where)
    assert r.returncode == -signal.SIGKILL, f"exit {r.returncode}, not killed in its save: {r.stderr[-2000:]}"
    assert r.stdout.count("checkpoint written to") == 1  # killed in the second save, over the first
    old = (tmp_path / "run.ckpt.before").read_bytes()
    assert old != straight and len(old) == len(straight)  # the same layout, one epoch less trained
    on_disk = ckpt.read_bytes()
    state = {old: "old", straight: "new"}.get(on_disk, f"torn ({len(on_disk)} bytes, neither old nor new)")
    assert state == survivor, f"killed {where}, the checkpoint on disk is {state}"

    r = _train(data, ckpt, "--resume", str(ckpt))
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"resumed from {ckpt} after epoch {1 if survivor == 'old' else 2}" in r.stdout
    assert ckpt.read_bytes() == straight  # resumed to the end: the uninterrupted run's checkpoint
    # a killed save's temporary is cleared by the resumed run's save (or was renamed already)
    leftovers = sorted(p.name for p in ckpt.parent.iterdir() if p != ckpt)
    assert leftovers == [], leftovers
