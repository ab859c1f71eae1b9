"""Weights in and out: safetensors files written and read by stagegrad's own code, checked
against the ``safetensors`` package and PyTorch; PyTorch ``.pt`` files loaded through
PyTorch; and clear errors for files that cannot be trusted."""
import importlib
import io
import json
import struct
import sys
import zipfile

import numpy as np
import pytest

from .oracle import assert_close, need_torch, np_, random_array

DTYPES = {"bool": "BOOL", "int32": "I32", "int64": "I64", "float32": "F32", "float64": "F64"}
VALUES = {
    "float32": np.array([0.0, -0.0, 1.5, 1e-45, 3.4028235e38, np.inf, -np.inf, np.nan], np.float32),
    "float64": np.array([0.0, -0.0, 5e-324, 1.7976931348623157e308, -np.inf, np.nan, 1 / 3]),
    "int32": np.array([0, -1, 2**31 - 1, -2**31, 12345], np.int32),
    "int64": np.array([0, -1, 2**63 - 1, -2**63, 2**40 + 3], np.int64),
    "bool": np.array([True, False, False, True]),
}


def _oracle():
    """``safetensors.numpy``: the reference reader and writer (it needs NumPy only)."""
    pytest.importorskip("safetensors", reason="the safetensors package is the oracle for these files")
    return importlib.import_module("safetensors.numpy")


def _stage_lacks(sg):
    """What the stage lacks (loading makes CPU tensors, whatever the default device lacks)."""
    return set(sg.LACKS) - set(getattr(sg, "DEVICE_LACKS", ()))


def _sgdtype(sg, name):
    return sg.bool if name == "bool" else getattr(sg, name)


def _module(sg, name):
    return importlib.import_module(f"{sg.__name__}.{name}")


def _bits_equal(t, expected):
    a = np_(t)
    assert a.dtype == expected.dtype and a.shape == expected.shape
    assert a.tobytes() == expected.tobytes()  # bit for bit: -0.0 and NaN included


def _file(header, data=b"", length=None):
    """A safetensors file from a header (a dict, or the raw bytes) and the data section."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


# ------------------------------------------------------------------ round trips

@pytest.mark.parametrize("dtype", list(DTYPES))
def test_round_trip_of_every_dtype_matches_the_reference(sg, tmp_path, dtype):
    st = _oracle()
    random = random_array(dtype)
    cases = {"special": VALUES[dtype], "random": random, "scalar": np.array(VALUES[dtype][2]),
             "empty": np.zeros((0, 3), dtype), "empty1": np.zeros(0, dtype)}
    sd = {k: sg.tensor(v.tolist(), dtype=_sgdtype(sg, dtype)) for k, v in cases.items()}
    sd["empty"] = sg.zeros(0, 3, dtype=_sgdtype(sg, dtype))  # tolist() would lose the 3
    path = tmp_path / "t.safetensors"
    sg.save_safetensors(sd, path)
    theirs = st.load_file(str(path))
    for k, v in cases.items():
        _bits_equal_np(theirs[k], v)
    back = sg.load_safetensors(path)
    assert list(back) == list(cases)  # the order saved
    for k, v in cases.items():
        assert back[k].dtype is _sgdtype(sg, dtype) and back[k].is_contiguous()
        _bits_equal(back[k], v)
    # and the reference's own file reads the same
    st.save_file(cases, str(tmp_path / "ref.safetensors"))
    for k, v in sg.load_safetensors(tmp_path / "ref.safetensors").items():
        _bits_equal(v, cases[k])


def _bits_equal_np(a, expected):
    assert a.dtype == expected.dtype and a.shape == expected.shape
    assert a.tobytes() == expected.tobytes()


@pytest.mark.capability("float64")
def test_file_layout(sg, tmp_path):
    sd = {"b": sg.tensor([True, False, True]), "w": sg.tensor([[1.0, 2.0]]),
          "d": sg.tensor([3.0], dtype=sg.float64), "i": sg.tensor([7, 8], dtype=sg.int32)}
    path = tmp_path / "l.safetensors"
    sg.save_safetensors(sd, path, metadata={"format": "pt"})
    blob = path.read_bytes()
    (hlen,) = struct.unpack_from("<Q", blob)
    assert (8 + hlen) % 8 == 0 and blob[8:9] == b"{"
    header = json.loads(blob[8:8 + hlen])
    assert list(header) == ["__metadata__", "b", "w", "d", "i"]  # the caller's order
    assert header["__metadata__"] == {"format": "pt"}
    assert header["w"] == {"dtype": "F32", "shape": [1, 2], "data_offsets": header["w"]["data_offsets"]}
    data = blob[8 + hlen:]
    spans = sorted(tuple(header[k]["data_offsets"]) for k in sd)
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # back to back
    for k, code in (("b", "|b1"), ("w", "<f4"), ("d", "<f8"), ("i", "<i4")):
        begin, end = header[k]["data_offsets"]
        assert begin % np.dtype(code).itemsize == 0  # aligned: widest dtype first
        assert np.frombuffer(data[begin:end], code).tolist() == np.ravel(np_(sd[k])).tolist()


def test_views_and_shared_storage_are_saved_as_their_values(sg, tmp_path):
    st = _oracle()
    base = sg.arange(24, dtype=sg.float32).reshape(4, 6)
    sd = {"base": base, "same": base, "t": base.t(), "cols": base[:, 1::2], "row": base[2],
          "perm": base.reshape(2, 2, 6).permute(2, 0, 1), "elem": base[1, 3]}
    path = tmp_path / "v.safetensors"
    sg.save_safetensors(sd, path)
    expected = np.arange(24, dtype=np.float32).reshape(4, 6)
    want = {"base": expected, "same": expected, "t": expected.T, "cols": expected[:, 1::2],
            "row": expected[2], "perm": expected.reshape(2, 2, 6).transpose(2, 0, 1),
            "elem": expected[1, 3]}
    theirs = st.load_file(str(path))
    ours = sg.load_safetensors(path)
    for k, v in want.items():
        np.testing.assert_array_equal(theirs[k], v)
        assert_close(ours[k], v)
    ours["base"].add_(1)  # loaded tensors are independent copies
    assert ours["same"].tolist() == expected.tolist()


def test_file_objects_and_paths_as_strings(sg, tmp_path):
    sd = {"w": sg.tensor([1.0, 2.0])}
    buf = io.BytesIO()
    sg.save_safetensors(sd, buf)
    buf.seek(0)
    assert sg.load_safetensors(buf)["w"].tolist() == [1.0, 2.0]
    sg.save_safetensors(sd, str(tmp_path / "s.safetensors"))
    assert sg.load_safetensors(str(tmp_path / "s.safetensors"))["w"].tolist() == [1.0, 2.0]
    if sg.cuda.is_available():
        assert sg.load_safetensors(str(tmp_path / "s.safetensors"), device="cuda")["w"].device.type == "cuda"
    else:
        with pytest.raises(_module(sg, "device").DeviceError, match="cuda"):
            sg.load_safetensors(str(tmp_path / "s.safetensors"), device="cuda")


# ------------------------------------------------------------------ with PyTorch

def _cnn(nn):
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 3 * 3, 5), nn.ReLU(), nn.Linear(5, 3))


def _x(seed=0):
    return np.random.default_rng(seed).standard_normal((2, 2, 6, 6)).astype(np.float32)


def _trained_stage_cnn(sg):
    model = _cnn(sg.nn)
    model.train()
    model(sg.tensor(_x(1).tolist()))  # running statistics and num_batches_tracked move
    return model.eval()


def _trained_torch_cnn(torch):
    torch.manual_seed(0)
    model = _cnn(torch.nn)
    model.train()
    model(torch.from_numpy(_x(1)))
    return model.eval()


def _same_outputs(sg, ours, theirs, torch):
    with torch.no_grad():
        expected = theirs(torch.from_numpy(_x()))
    assert_close(ours(sg.tensor(_x().tolist())), expected, rtol=1e-5, atol=1e-5)


def test_our_state_dict_loads_in_pytorch(sg, tmp_path):
    torch = need_torch()
    st_torch = pytest.importorskip("safetensors.torch", reason="the safetensors package reads the file")
    ours = _trained_stage_cnn(sg)
    path = tmp_path / "cnn.safetensors"
    sg.save_safetensors(ours.state_dict(), path, metadata={"epoch": "3"})
    theirs = _cnn(torch.nn)
    loaded = st_torch.load_file(str(path))
    assert loaded["1.num_batches_tracked"].dtype == torch.int64 and int(loaded["1.num_batches_tracked"]) == 1
    theirs.load_state_dict(loaded)
    theirs.eval()
    _same_outputs(sg, ours, theirs, torch)
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        assert f.metadata() == {"epoch": "3"}


def test_pytorch_state_dict_loads_here(sg, tmp_path):
    torch = need_torch()
    st_torch = pytest.importorskip("safetensors.torch", reason="the safetensors package writes the file")
    theirs = _trained_torch_cnn(torch)
    path = tmp_path / "cnn.safetensors"
    st_torch.save_file(theirs.state_dict(), str(path), metadata={"framework": "pt", "note": "ünïcode"})
    ours = _cnn(sg.nn)
    state = sg.load_safetensors(path)
    assert state["1.num_batches_tracked"].dtype is sg.int64
    ours.load_state_dict(state)
    ours.eval()
    _same_outputs(sg, ours, theirs, torch)
    assert sg.safetensors_metadata(path) == {"framework": "pt", "note": "ünïcode"}
    st_torch.save_file({"w": torch.ones(1)}, str(tmp_path / "plain.safetensors"))
    assert sg.safetensors_metadata(tmp_path / "plain.safetensors") is None  # as safe_open's


def test_pt_state_dict_and_checkpoint_load(sg, tmp_path):
    torch = need_torch()
    theirs = _trained_torch_cnn(torch)
    torch.save(theirs.state_dict(), tmp_path / "cnn.pt")
    ours = _cnn(sg.nn)
    ours.load_state_dict(sg.load(tmp_path / "cnn.pt"))
    ours.eval()
    _same_outputs(sg, ours, theirs, torch)

    # a whole checkpoint: nested containers, numbers and strings come through
    opt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    theirs(torch.from_numpy(_x())).sum().backward()
    opt.step()
    ck = {"model": theirs.state_dict(), "epoch": 3, "name": "cnn", "opt": opt.state_dict(),
          "shape": torch.Size([2, 3]), "pair": (1.5, None), "dtype": torch.float64}
    torch.save(ck, tmp_path / "ck.pt")
    back = sg.load(tmp_path / "ck.pt")
    assert back["epoch"] == 3 and back["name"] == "cnn" and back["pair"] == (1.5, None)
    assert back["shape"] == (2, 3) and back["dtype"] is sg.float64
    assert back["opt"]["param_groups"][0]["lr"] == 0.1
    assert back["opt"]["param_groups"][0]["params"] == ck["opt"]["param_groups"][0]["params"]
    for i, s in ck["opt"]["state"].items():
        assert_close(back["opt"]["state"][i]["momentum_buffer"], s["momentum_buffer"])
    for k, v in ck["model"].items():
        assert_close(back["model"][k], v)


def test_pt_files_of_every_kind(sg, tmp_path):
    torch = need_torch()
    sd = {"f": torch.randn(3, 4), "d": torch.randn(2, dtype=torch.float64),
          "i": torch.tensor([1, -2], dtype=torch.int32),
          "l": torch.tensor(2**40), "b": torch.tensor([True, False]), "e": torch.zeros(0, 3),
          "view": torch.arange(12.0).reshape(3, 4).t(), "p": torch.nn.Parameter(torch.ones(2))}
    torch.save(sd, tmp_path / "new.pt")
    torch.save(sd, tmp_path / "old.pt", _use_new_zipfile_serialization=False)  # before PyTorch 1.6
    buf = io.BytesIO()
    torch.save(sd, buf)
    for source in (tmp_path / "new.pt", tmp_path / "old.pt", io.BytesIO(buf.getvalue())):
        back = sg.load(source)
        assert list(back) == list(sd)
        for k, v in sd.items():
            assert_close(back[k], v)
            assert back[k].dtype is _sgdtype(sg, str(v.dtype).rpartition(".")[2])
        assert back["p"].requires_grad and not back["f"].requires_grad
    assert sg.load(io.BytesIO(buf.getvalue()), format="torch")["l"].item() == 2**40
    # map_location applies to every format
    seen = []
    sg.load(tmp_path / "new.pt", map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cpu"] * len(sd)


def test_pt_of_a_dtype_this_stage_lacks(sg, tmp_path):
    torch = need_torch()
    torch.save({"ok": torch.ones(2), "h": torch.tensor([1.5, 65504], dtype=torch.float16)}, tmp_path / "h.pt")
    if "float16" in _stage_lacks(sg):
        with pytest.raises(sg.CapabilityError, match=r"\['h'\].*float16"):
            sg.load(tmp_path / "h.pt")
    else:
        h = sg.load(tmp_path / "h.pt")["h"]
        assert h.dtype is sg.float16 and h.tolist() == [1.5, 65504]
    torch.save({"c": torch.ones(2, dtype=torch.complex64)}, tmp_path / "c.pt")
    with pytest.raises(sg.CapabilityError, match="complex64"):
        sg.load(tmp_path / "c.pt")


def test_pt_needs_pytorch(sg, tmp_path, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # torch.save's layout; no PyTorch needed to make one
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    (tmp_path / "m.pt").write_bytes(buf.getvalue())
    monkeypatch.setitem(sys.modules, "torch", None)  # as if PyTorch were not installed
    with pytest.raises(ImportError, match=r"needs PyTorch \(pip install torch\)"):
        sg.load(tmp_path / "m.pt")


def test_a_broken_pt_file_is_a_checkpoint_error(sg, tmp_path):
    need_torch()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("notes.txt", "no checkpoint here")
    (tmp_path / "z.pt").write_bytes(buf.getvalue())
    with pytest.raises(sg.serialization.CheckpointError, match="PyTorch could not load it"):
        sg.load(tmp_path / "z.pt")


# ------------------------------------------------------------------ format= and detection

def test_save_and_load_formats(sg, tmp_path):
    st = _oracle()
    sd = {"w": sg.tensor([[1.0, 2.0]]), "n": sg.tensor([3], dtype=sg.int64)}
    Error = sg.serialization.CheckpointError
    sg.save(sd, tmp_path / "a.safetensors", format="safetensors")
    assert {k: v.tolist() for k, v in st.load_file(str(tmp_path / "a.safetensors")).items()} == \
        {"w": [[1.0, 2.0]], "n": [3]}
    sg.save(sd, tmp_path / "a.sgc")
    sg.save(sd, tmp_path / "b.sgc", format="stagegrad")
    assert (tmp_path / "a.sgc").read_bytes() == (tmp_path / "b.sgc").read_bytes()
    for name in ("a.safetensors", "a.sgc"):  # told apart by their first bytes
        back = sg.load(tmp_path / name)
        assert {k: v.tolist() for k, v in back.items()} == {"w": [[1.0, 2.0]], "n": [3]}
        back["w"].mul_(2)  # a loaded tensor is a fresh one, never a view, on every stage
        assert back["w"].tolist() == [[2.0, 4.0]]
    assert sg.load(tmp_path / "a.safetensors", format="safetensors")["n"].tolist() == [3]
    with pytest.raises(Error, match="not a stagegrad checkpoint"):
        sg.load(tmp_path / "a.safetensors", format="stagegrad")
    with pytest.raises(Error, match="safetensors"):
        sg.load(tmp_path / "a.sgc", format="safetensors")
    with pytest.raises(Error, match="safetensors"):
        sg.load_safetensors(tmp_path / "a.sgc")
    with pytest.raises(ValueError, match="format"):
        sg.save(sd, tmp_path / "c", format="onnx")
    with pytest.raises(ValueError, match="format"):
        sg.load(tmp_path / "a.sgc", format="pickle")
    assert not (tmp_path / "c").exists()
    buf = io.BytesIO()
    sg.save(sd, buf, format="safetensors")
    assert sg.load(io.BytesIO(buf.getvalue()))["w"].tolist() == [[1.0, 2.0]]


def test_names_are_the_same_on_every_stage(sg):
    ser = _module(sg, "safetensors_io")
    for name in ("save_safetensors", "load_safetensors", "safetensors_metadata"):
        fn = getattr(sg, name)
        assert fn is getattr(ser, name) and fn.__doc__
        assert fn.__module__ == f"{sg.__name__}.safetensors_io"
    assert sg.save is sg.serialization.save and sg.load is sg.serialization.load


# ------------------------------------------------------------------ refusals

def test_only_a_flat_dict_of_tensors_can_be_saved(sg, tmp_path):
    path = tmp_path / "x.safetensors"
    model = sg.nn.Linear(2, 2)
    opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(sg.ones(1, 2)).sum().backward()
    opt.step()
    cases = [([sg.ones(2)], "dict"), ((("w", sg.ones(2)),), "dict"),
             ({"w": sg.ones(2), "step": 3}, "'step' is a int"),
             ({"w": {"inner": sg.ones(2)}}, "nested"), (opt.state_dict(), "nested"),
             ({1: sg.ones(2)}, "key 1")]
    for obj, why in cases:
        with pytest.raises(TypeError, match=why):
            sg.save_safetensors(obj, path)
        with pytest.raises(TypeError, match=why):
            sg.save(obj, path, format="safetensors")
    with pytest.raises(ValueError, match="metadata"):
        sg.save_safetensors({"__metadata__": sg.ones(1)}, path)
    for metadata in ({"k": 1}, {2: "v"}, ["k", "v"]):
        with pytest.raises(TypeError, match="metadata"):
            sg.save_safetensors({"w": sg.ones(1)}, path, metadata=metadata)
    assert not path.exists()


def test_a_failed_save_leaves_the_old_file(sg, tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    sg.save_safetensors({"w": sg.ones(2)}, path)
    before = path.read_bytes()
    ser = _module(sg, "safetensors_io")

    def broken(t):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(ser, "_tensor_bytes", broken)
    with pytest.raises(OSError, match="No space"):
        sg.save_safetensors({"w": sg.zeros(2)}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]


@pytest.mark.parametrize("code,name", [("F16", "float16"), ("BF16", "bfloat16"), ("U8", "uint8"),
                                       ("I8", "int8"), ("I16", "int16")])
def test_dtypes_this_stage_lacks_raise_capability_error(sg, tmp_path, code, name):
    itemsize = 1 if code in ("U8", "I8") else 2
    header = {"ok": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
              "half": {"dtype": code, "shape": [2], "data_offsets": [4, 4 + 2 * itemsize]}}
    (tmp_path / "h.safetensors").write_bytes(_file(header, bytes(4 + 2 * itemsize)))
    if name not in sg.LACKS:  # a stage that computes in it loads it
        half = sg.load_safetensors(tmp_path / "h.safetensors")["half"]
        assert half.dtype is getattr(sg, name) and half.tolist() == [0.0, 0.0]
        return
    for load in (sg.load_safetensors, sg.load):
        message = rf"'half' has dtype {code} \({name}\).*{sg.__name__} lacks {name}"
        with pytest.raises(sg.CapabilityError, match=message):
            load(tmp_path / "h.safetensors")
    assert name in sg.LACKS


def test_a_reference_float16_file_raises_capability_error(sg, tmp_path):
    st = _oracle()
    h = np.array([1.5, -2.0, 1000.0], np.float16)
    st.save_file({"h": h}, str(tmp_path / "h.safetensors"))
    if "float16" in _stage_lacks(sg):
        with pytest.raises(sg.CapabilityError, match="'h' has dtype F16"):
            sg.load_safetensors(tmp_path / "h.safetensors")
    else:  # and what it writes, the reference reads
        ours = sg.load_safetensors(tmp_path / "h.safetensors")["h"]
        assert ours.dtype is sg.float16 and ours.tolist() == h.tolist()
        sg.save_safetensors({"h": ours * 2}, tmp_path / "h2.safetensors")
        np.testing.assert_array_equal(st.load_file(str(tmp_path / "h2.safetensors"))["h"], h * 2)
    header = {"u": {"dtype": "U32", "shape": [1], "data_offsets": [0, 4]}}
    (tmp_path / "u.safetensors").write_bytes(_file(header, bytes(4)))
    with pytest.raises(sg.CapabilityError, match="'u' has dtype U32"):
        sg.load_safetensors(tmp_path / "u.safetensors")


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


BAD_FILES = {
    "short length": (b"\x10\x00\x00", "truncated"),
    "header too large": (_file(b"{}", length=2**40), "too large"),
    "header cut short": (_file(b'{"a":{}}', length=100), "truncated"),
    "not an object": (_file(b"[1, 2]"), "does not start with"),
    "leading space": (_file(b' {"a": 1}'), "does not start with"),
    "bad json": (_file(b'{"a": {"dtype": '), "not valid JSON"),
    "bad utf-8": (_file(b'{"\xff": 1}'), "not valid JSON"),
    "nan": (_file(b'{"a": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 0]}}'), "not valid JSON"),
    "deeply nested": (_file(b'{"a":' + b"[" * 100000 + b"]" * 100000 + b"}"), "nested|JSON|object"),
    "repeated name": (_file(b'{"a": ' + json.dumps(_entry()).encode() + b', "a": '
                            + json.dumps(_entry()).encode() + b"}", bytes(8)), "twice"),
    "entry not an object": (_file({"a": 3}, bytes(8)), "needs an object"),
    "missing field": (_file({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)), "needs an object"),
    "unknown dtype": (_file({"a": _entry(dtype="F33")}, bytes(8)), "unknown dtype"),
    "negative dim": (_file({"a": _entry(shape=(-2,))}, bytes(8)), "shape"),
    "float dim": (_file({"a": _entry(shape=(2.0,))}, bytes(8)), "shape"),
    "bool dim": (_file({"a": _entry(shape=(True, 2))}, bytes(8)), "shape"),
    "reversed offsets": (_file({"a": _entry(offsets=(8, 0))}, bytes(8)), "begin <= end"),
    "one offset": (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8]}}, bytes(8)),
                   "data_offsets"),
    "past the end": (_file({"a": _entry(offsets=(0, 8))}, bytes(4)), "truncated"),
    "huge offsets": (_file({"a": _entry(shape=(2**61,), offsets=(0, 2**63))}, bytes(8)), "truncated"),
    "size mismatch": (_file({"a": _entry(shape=(3,), offsets=(0, 8))}, bytes(8)), "needs 12 bytes"),
    "overlap": (_file({"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(4, 12))}, bytes(12)), "overlaps"),
    "gap": (_file({"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(12, 20))}, bytes(20)), "no tensor"),
    "hole at start": (_file({"a": _entry(offsets=(4, 12))}, bytes(12)), "no tensor"),
    "trailing bytes": (_file({"a": _entry()}, bytes(12)), "4 trailing bytes"),
    "metadata not strings": (_file({"__metadata__": {"k": 1}, "a": _entry()}, bytes(8)), "__metadata__"),
    "metadata not an object": (_file({"__metadata__": "k", "a": _entry()}, bytes(8)), "__metadata__"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_untrustworthy_files_raise_checkpoint_error(sg, tmp_path, case):
    blob, message = BAD_FILES[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(sg.serialization.CheckpointError, match=message):
        sg.load_safetensors(path)
    with pytest.raises(sg.serialization.CheckpointError):
        sg.safetensors_metadata(path)
    if blob[8:9] == b"{":  # detected as safetensors by its first bytes
        with pytest.raises(sg.serialization.CheckpointError, match=message):
            sg.load(path)


# the reference keeps the last of two tensors with one name; a file like that is refused here
@pytest.mark.parametrize("case", [c for c in BAD_FILES if c != "repeated name"])
def test_the_reference_refuses_the_same_files(tmp_path, case):
    st = _oracle()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(BAD_FILES[case][0])
    with pytest.raises(Exception):  # noqa: B017  (its errors are its own types)
        st.load_file(str(path))


def test_truncated_files_raise(sg, tmp_path):
    sg.save_safetensors({"w": sg.randn(4, 4), "b": sg.ones(3)}, tmp_path / "good.safetensors")
    blob = (tmp_path / "good.safetensors").read_bytes()
    for cut in (0, 3, 8, 20, 8 + struct.unpack_from("<Q", blob)[0], len(blob) // 2 + 40, len(blob) - 1):
        (tmp_path / "cut").write_bytes(blob[:cut])
        with pytest.raises(sg.serialization.CheckpointError, match="truncated"):
            sg.load_safetensors(tmp_path / "cut")


def test_an_empty_file_and_tensors_are_valid(sg, tmp_path):
    st = _oracle()
    sg.save_safetensors({}, tmp_path / "none.safetensors")
    assert sg.load_safetensors(tmp_path / "none.safetensors") == {}
    assert st.load_file(str(tmp_path / "none.safetensors")) == {}
    header = {"a": _entry(shape=(0, 2), offsets=(0, 0)), "b": _entry(shape=(), dtype="I64", offsets=(0, 8))}
    blob = _file(header, struct.pack("<q", -5))
    (tmp_path / "e.safetensors").write_bytes(blob)
    back = sg.load_safetensors(tmp_path / "e.safetensors")
    assert back["a"].shape == (0, 2) and back["b"].shape == () and back["b"].item() == -5
    assert st.load_file(str(tmp_path / "e.safetensors"))["b"] == -5
