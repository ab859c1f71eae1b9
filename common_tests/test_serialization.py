"""Checkpoints: bit-identical round trips, the documented file layout, atomic writes,
and clear errors for truncated, corrupted and foreign files."""
import hashlib
import io
import json
import math
import os
import pickle
import struct
import sys
import traceback

import numpy as np
import pytest

from . import unprivileged
from .helpers_optim import Pair, stage_tensor
from .oracle import need_torch, np_, random_array

SPECIALS = {
    "float32": np.array([0.0, -0.0, 1.5, -3.25e-38, 1e-45, 3.4028235e38, np.inf, -np.inf, np.nan,
                         np.float32(np.pi)], np.float32),
    "float64": np.array([0.0, -0.0, 5e-324, 1.7976931348623157e308, -np.inf, np.nan, np.pi, 1 / 3]),
    "int32": np.array([0, -1, 2**31 - 1, -2**31, 12345], np.int32),
    "int64": np.array([0, -1, 2**63 - 1, -2**63, 2**40 + 3], np.int64),
    "bool": np.array([True, False, False, True]),
}


def _sgdtype(sg, name):
    return sg.bool if name == "bool" else getattr(sg, name)


def _bits_equal(t, expected):
    a = np_(t)
    assert a.dtype == expected.dtype and a.shape == expected.shape
    assert a.tobytes() == expected.tobytes()  # bit for bit: -0.0 and NaN payloads included


@pytest.mark.parametrize("dtype", list(SPECIALS))
def test_round_trip_is_bit_identical_for_every_dtype(sg, tmp_path, dtype):
    random = random_array(dtype)
    cases = {"special": SPECIALS[dtype], "random": random, "scalar": SPECIALS[dtype][2].reshape(()),
             "empty": np.zeros((0, 3), dtype)}
    obj = {k: sg.tensor(v.tolist(), dtype=_sgdtype(sg, dtype)) for k, v in cases.items()}
    obj["empty"] = sg.zeros(0, 3, dtype=_sgdtype(sg, dtype))  # tolist() would lose the 3
    sg.save(obj, tmp_path / "t.sgc")
    back = sg.load(tmp_path / "t.sgc")
    assert list(back) == list(cases)
    for k, v in cases.items():
        assert back[k].dtype is _sgdtype(sg, dtype)
        _bits_equal(back[k], v)


def test_round_trip_of_nested_values(sg, tmp_path):
    w = stage_tensor(sg, np.ones((2, 2), np.float32), requires_grad=True)
    obj = {
        "model": {"layer.weight": w, "layer.bias": sg.zeros(2)},
        "optimizer": {"state": {0: {"step": 3, "buf": sg.ones(2)}},
                      "param_groups": [{"lr": 0.1, "params": [0], "betas": (0.9, 0.999)}]},
        "numbers": [1, -2**70, 0.1, -0.0, math.inf, -math.inf, math.nan, True, None],
        "keys": {1: "int", 2.5: "float", None: "none", False: "bool", "s": "str"},
        "nested": ((), [], {}, ("a", ("b", ["ü€"]))),
        "dtype": sg.float64,
    }
    sg.save(obj, tmp_path / "c.sgc")
    back = sg.load(tmp_path / "c.sgc")
    assert back["model"]["layer.weight"].requires_grad and not back["model"]["layer.bias"].requires_grad
    _bits_equal(back["model"]["layer.weight"], np.ones((2, 2), np.float32))
    assert back["optimizer"]["state"][0]["step"] == 3 and 0 in back["optimizer"]["state"]
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    nums = back["numbers"]
    assert nums[:3] == [1, -2**70, 0.1] and math.copysign(1, nums[3]) == -1
    assert nums[4] == math.inf and nums[5] == -math.inf and math.isnan(nums[6]) and nums[7:] == [True, None]
    assert type(nums[0]) is int and type(nums[7]) is bool
    assert back["keys"] == obj["keys"] and list(back["keys"]) == list(obj["keys"])
    assert back["nested"] == obj["nested"] and type(back["nested"][0]) is tuple
    assert back["dtype"] is sg.float64


def test_file_object_round_trip(sg):
    buf = io.BytesIO()
    sg.save({"x": sg.arange(5)}, buf)
    buf.seek(0)
    np.testing.assert_array_equal(np_(sg.load(buf)["x"]), np.arange(5))


def test_documented_layout(sg, tmp_path):
    """magic, version, lengths, a JSON header, 64-byte aligned data, a SHA-256 trailer."""
    import json
    path = tmp_path / "c.sgc"
    sg.save({"a": sg.tensor([1.0, 2.0]), "b": sg.tensor([[7, 8]], dtype=sg.int32)}, path)
    blob = path.read_bytes()
    magic, version, hlen, dlen = struct.unpack_from("<8sIQQ", blob)
    assert magic == b"\x89SGRAD\r\n" and version == 1
    header = json.loads(blob[28:28 + hlen])
    start = -(-(28 + hlen) // 64) * 64
    assert len(blob) == start + dlen + 32
    assert hashlib.sha256(blob[:-32]).digest() == blob[-32:]
    items = dict((k, v["tensor"]) for k, v in header["root"]["dict"])
    assert items["a"] == {"dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8, "requires_grad": False}
    assert items["b"]["offset"] == 64
    data = blob[start:start + dlen]
    assert np.frombuffer(data[:8], "<f4").tolist() == [1.0, 2.0]
    assert np.frombuffer(data[64:72], "<i4").tolist() == [7, 8]


def test_load_never_unpickles(sg, tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("pickle must not be used")
    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    sg.save({"w": sg.ones(3)}, tmp_path / "c.sgc")
    assert sg.load(tmp_path / "c.sgc")["w"].tolist() == [1.0, 1.0, 1.0]
    # a pickle under a checkpoint's name is refused, not executed
    (tmp_path / "evil.sgc").write_bytes(pickle.dumps({"w": 1}))
    with pytest.raises(ValueError, match="pickle"):
        sg.load(tmp_path / "evil.sgc")


def _good_file(sg, tmp_path):
    path = tmp_path / "good.sgc"
    sg.save({"w": sg.randn(10, 10), "step": 5}, path)
    return path, path.read_bytes()


def test_truncated_files_raise(sg, tmp_path):
    Error = sg.serialization.CheckpointError
    assert issubclass(Error, ValueError)
    _, blob = _good_file(sg, tmp_path)
    for cut in (3, 8, 20, 27, 100, len(blob) // 2, len(blob) - 33, len(blob) - 1):
        bad = tmp_path / f"cut{cut}.sgc"
        bad.write_bytes(blob[:cut])
        with pytest.raises(Error, match="truncated"):
            sg.load(bad)


def test_corrupted_files_raise(sg, tmp_path):
    Error = sg.serialization.CheckpointError
    _, blob = _good_file(sg, tmp_path)
    for pos in (30, len(blob) // 2, len(blob) - 40, len(blob) - 1):  # header, data, digest
        damaged = bytearray(blob)
        damaged[pos] ^= 0x10
        (tmp_path / "bad.sgc").write_bytes(bytes(damaged))
        with pytest.raises(Error, match="checksum"):
            sg.load(tmp_path / "bad.sgc")
    (tmp_path / "long.sgc").write_bytes(blob + b"\0")
    with pytest.raises(Error, match="trailing"):
        sg.load(tmp_path / "long.sgc")
    newer = bytearray(blob)
    newer[8:12] = struct.pack("<I", 99)
    (tmp_path / "v99.sgc").write_bytes(bytes(newer))
    with pytest.raises(Error, match="version 99"):
        sg.load(tmp_path / "v99.sgc")


def test_foreign_files_raise(sg, tmp_path):
    Error = sg.serialization.CheckpointError
    cases = {"empty": (b"", "empty"), "text": (b"hello, world\n" * 10, "not a stagegrad checkpoint"),
             "npy": (b"\x93NUMPY\x01\x00" + b"\0" * 100, "NumPy")}
    try:  # a zip that is no torch.save file (a .pt file loads: test_safetensors.py)
        import zipfile

        import torch  # noqa: F401
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("notes.txt", "not a checkpoint")
        cases["zip"] = (buf.getvalue(), "zip")
    except ImportError:
        pass
    for name, (blob, message) in cases.items():
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(Error, match=message):
            sg.load(tmp_path / name)


def _tmp_leftovers(directory):
    return [p for p in os.listdir(directory) if p.endswith(".tmp")]


def test_write_is_atomic(sg, tmp_path, monkeypatch):
    path, blob = _good_file(sg, tmp_path)
    # a failure while the new file is being written leaves the old one whole
    ser = sg.serialization

    def crash(fd):
        raise OSError("disk full")
    monkeypatch.setattr(ser.os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        sg.save({"w": sg.zeros(10, 10)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == blob and _tmp_leftovers(tmp_path) == []
    # an object that cannot be saved is rejected before anything is written
    with pytest.raises(TypeError, match=r"obj\['bad'\]\[1\] is a object"):
        sg.save({"w": sg.zeros(2), "bad": [1, object()]}, path)
    with pytest.raises(TypeError, match="key of type tuple"):
        sg.save({(1, 2): 3}, path)
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="contains itself"):
        sg.save(cyclic, path)
    assert path.read_bytes() == blob and _tmp_leftovers(tmp_path) == []
    # a successful save replaces the file in one step
    sg.save({"w": sg.zeros(1)}, path)
    assert sg.load(path)["w"].tolist() == [0.0] and _tmp_leftovers(tmp_path) == []


def test_optimizer_and_scheduler_checkpoint_resume_bit_identical(sg, tmp_path):
    """Training interrupted by a save/load continues exactly as if it had not been."""
    need_torch()

    def setup(pair):
        opt = sg.optim.AdamW(pair.p, lr=0.05)
        sched = sg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        return opt, sched

    def train(pair, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            pair.loss().backward()
            opt.step()
            sched.step()

    ref = Pair(sg)
    ref_opt, ref_sched = setup(ref)
    train(ref, ref_opt, ref_sched, 10)

    first = Pair(sg)
    opt, sched = setup(first)
    train(first, opt, sched, 4)
    sg.save({"params": first.p, "optim": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "ck.sgc")
    ck = sg.load(tmp_path / "ck.sgc")
    resumed = Pair(sg)
    for p, saved in zip(resumed.p, ck["params"]):
        with sg.no_grad():
            p.copy_(saved)
    opt2, sched2 = setup(resumed)
    sched2.load_state_dict(ck["sched"])
    opt2.load_state_dict(ck["optim"])
    train(resumed, opt2, sched2, 6)
    for p, q in zip(resumed.p, ref.p):
        _bits_equal(p, np_(q))
    assert sched2.get_last_lr() == ref_sched.get_last_lr()


# ------------------------------------------------------------------ hostile headers, failed saves

def _file_with_header(header):
    """A checkpoint file around ``header`` (bytes), laid out as documented, with no data and
    a valid checksum: it passes every check before the header is decoded."""
    preamble = struct.pack("<8sIQQ", b"\x89SGRAD\r\n", 1, len(header), 0)
    body = preamble + header
    body += bytes(-len(body) % 64)
    return body + hashlib.sha256(body).digest()


def _nested_header(depth):
    return ('{"format":"stagegrad","root":' + '{"list":[' * depth + "]}" * depth + "}").encode()


@pytest.mark.parametrize("depth", [201, 100_000])
def test_deeply_nested_header_raises_checkpoint_error(sg, tmp_path, depth):
    """Deeper than Python's recursion limit (json's parser) or than a checkpoint may nest
    (the decoder): both are malformed files, not a RecursionError."""
    path = tmp_path / "deep.sgc"
    path.write_bytes(_file_with_header(_nested_header(depth)))
    with pytest.raises(sg.serialization.CheckpointError, match="malformed checkpoint header.*nested"):
        sg.load(path)


def test_nesting_limit_is_the_same_for_save_and_load(sg, tmp_path):
    limit = sg.serialization.MAX_DEPTH
    path = tmp_path / "deep.sgc"
    path.write_bytes(_file_with_header(_nested_header(limit)))
    value = sg.load(path)
    for _ in range(limit - 1):
        value = value[0]
    assert value == []
    obj = []
    for _ in range(limit - 1):
        obj = [obj]
    sg.save(obj, tmp_path / "ok.sgc")
    assert sg.load(tmp_path / "ok.sgc") == obj
    with pytest.raises(ValueError, match=f"more than {limit} deep"):
        sg.save([obj], tmp_path / "too_deep.sgc")
    assert not (tmp_path / "too_deep.sgc").exists() and _tmp_leftovers(tmp_path) == []


def _save_error(sg, path):
    with pytest.raises(OSError) as info:
        sg.save({"w": sg.ones(2)}, path)
    e = info.value
    assert e.filename == str(path) and e.filename2 is None, e
    shown = "".join(traceback.format_exception(e))  # what the user reads, chained errors included
    assert ".sgsave." not in shown and ".tmp'" not in shown, shown
    return e


def test_save_errors_name_the_given_path(sg, tmp_path):
    assert isinstance(_save_error(sg, tmp_path / "missing" / "m.sgc"), FileNotFoundError)
    (tmp_path / "folder").mkdir()
    assert isinstance(_save_error(sg, tmp_path / "folder"), IsADirectoryError)
    assert list((tmp_path / "folder").iterdir()) == []
    (tmp_path / "file").write_bytes(b"x")
    assert isinstance(_save_error(sg, tmp_path / "file" / "m.sgc"), NotADirectoryError)
    assert _tmp_leftovers(tmp_path) == []


# a save into a read-only folder and one into a writable folder, by a process without
# privileges; what it saw, as JSON
_READ_ONLY_SAVE = """
import json, os, sys, traceback
import {stage} as sg
if {device!r}:
    sg.set_default_device({device!r})
read_only, writable = sys.argv[1:3]
seen = {{"may_write": os.access(read_only, os.W_OK)}}
path = os.path.join(read_only, "m.sgc")
try:
    sg.save({{"w": sg.ones(2)}}, path)
except OSError as e:
    seen.update(error=type(e).__name__, filename=e.filename, filename2=e.filename2,
                shown="".join(traceback.format_exception(e)))
seen["left"] = os.listdir(read_only)
sg.save({{"w": sg.ones(2)}}, os.path.join(writable, "m.sgc"))
seen["loaded"] = sg.load(os.path.join(writable, "m.sgc"))["w"].tolist()
print(json.dumps(seen))
"""


def test_save_into_a_read_only_directory_names_the_path(sg, tmp_path):
    """Run without privileges (under root too: root writes anywhere): the save fails with
    PermissionError naming the given path, leaves nothing behind, and the same process saves
    into a writable folder."""
    code = _READ_ONLY_SAVE.format(stage=sg.__name__, device=getattr(sg, "DEVICE", None))
    writable = tmp_path / "writable"
    writable.mkdir()
    with unprivileged.read_only_folder(tmp_path / "read_only") as read_only:
        r = unprivileged.run([sys.executable, "-c", code, str(read_only), str(writable)])
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.splitlines()[-1])
    assert seen["may_write"] is False  # the check is real: this process lacks the right
    assert seen["error"] == "PermissionError" and seen.get("filename2") is None, seen
    assert seen["filename"] == str(read_only / "m.sgc")
    assert ".sgsave." not in seen["shown"] and ".tmp'" not in seen["shown"], seen["shown"]
    assert seen["left"] == [] and seen["loaded"] == [1.0, 1.0]


_TEMP = r"\.(?P<target>.*)\.sgsave\.(?P<host>[A-Za-z0-9_-]+)-(?P<pid>\d+)\.[a-z0-9_]+\.tmp"


def _killed_save(sg, directory):
    """Run a save in another process that dies (as if killed) before its rename; the
    temporary file it leaves behind."""
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = (f"import os, {sg.__name__} as sg\n"
            "os.fsync = lambda fd: os._exit(17)\n"
            f"sg.save({{'w': sg.ones(3)}}, {str(directory / 'model.sgc')!r})\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=root,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                filter(None, [root, os.environ.get("PYTHONPATH")]))})
    assert proc.wait(timeout=120) == 17
    left = _tmp_leftovers(directory)
    assert len(left) == 1
    m = re.fullmatch(_TEMP, left[0])
    assert m and m["target"] == "model.sgc" and int(m["pid"]) == proc.pid, left
    return m


def test_save_removes_what_a_killed_save_left_and_nothing_else(sg, tmp_path):
    m = _killed_save(sg, tmp_path)
    stale = m.group(0)

    def variant(host=m["host"], pid=m["pid"]):
        return stale.replace(f".sgsave.{m['host']}-{m['pid']}.", f".sgsave.{host}-{pid}.")
    kept = {
        "live": variant(pid=os.getpid()),  # a save of this very process, under way
        "elsewhere_recent": variant(host="elsewhere-host"),  # liveness unknown: only age counts
        "not_ours": "notes.tmp", "near_miss": ".model.sgc.sgsave.tmp", "hidden": ".model.sgc.tmp",
    }
    removed = {"dead": stale, "elsewhere_old": variant(host="elsewhere-host2")}
    for name in list(kept.values()) + [removed["elsewhere_old"]]:
        (tmp_path / name).write_bytes(b"partial")
    day_ago = os.stat(tmp_path / stale).st_mtime - 24 * 3600
    os.utime(tmp_path / removed["elsewhere_old"], (day_ago, day_ago))
    (tmp_path / variant(pid=1)).mkdir()  # not a regular file: left alone even though it matches
    kept["directory"] = variant(pid=1)

    sg.save({"w": sg.zeros(2)}, tmp_path / "other.sgc")
    names = set(os.listdir(tmp_path))
    assert set(kept.values()) <= names
    assert not names & set(removed.values())
    assert sg.load(tmp_path / "other.sgc")["w"].tolist() == [0.0, 0.0]
