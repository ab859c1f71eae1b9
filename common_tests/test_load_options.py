"""``sg.load``'s ``map_location`` and ``weights_only``, and nested checkpoints, against
``torch.save``/``torch.load`` on the same objects."""
import io

import numpy as np
import pytest

from .helpers_nested import assert_same_nested
from .oracle import need_torch


def _nested(lib, dtype="float64"):
    """A checkpoint-like object: tensors inside dicts, lists and tuples, beside numbers,
    strings and None; one empty tensor of ``dtype``."""
    return {"model": {"w": lib.tensor([[1.5, -2.0], [0.25, 3.0]]), "b": lib.tensor([1, 2, 3])},
            "epoch": 7, "lr": 0.001, "name": "mlp", "best": None, "flag": True,
            "history": [lib.tensor(0.5), (1, lib.tensor([True, False]), "x"), [[], {}]],
            3: (None, 2.5, lib.tensor([], dtype=getattr(lib, dtype)))}


def _round_trip(lib, obj, **load_args):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_args)


@pytest.mark.needs_torch
@pytest.mark.parametrize("where", ["none", "cpu", "device", "dict", "dict_device", "callable"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nested_round_trip_with_map_location_as_torch(sg, where, dtype):
    torch = need_torch()

    def location(lib):
        return {"none": None, "cpu": "cpu", "device": lib.device("cpu"),
                "dict": {"cuda:0": "cpu"}, "dict_device": {"cuda:1": lib.device("cpu")},
                "callable": lambda storage, loc: storage}[where]

    ours = _round_trip(sg, _nested(sg, dtype), map_location=location(sg))
    theirs = _round_trip(torch, _nested(torch, dtype), map_location=location(torch))
    assert_same_nested(ours, theirs, torch)


@pytest.mark.needs_torch
@pytest.mark.parametrize("weights_only", [None, True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_weights_only_is_accepted(sg, tmp_path, weights_only, dtype):
    torch = need_torch()
    sg.save(_nested(sg, dtype), tmp_path / "ours.ckpt")
    torch.save(_nested(torch, dtype), tmp_path / "theirs.pt")
    assert_same_nested(sg.load(tmp_path / "ours.ckpt", weights_only=weights_only),
          torch.load(tmp_path / "theirs.pt", weights_only=weights_only), torch)
    with pytest.raises(TypeError, match="weights_only"):
        sg.load(tmp_path / "ours.ckpt", weights_only="yes")


def test_map_location_callable_sees_each_tensor(sg):
    seen = []

    def double(t, location):
        seen.append(location)
        return t * 2

    out = _round_trip(sg, {"a": sg.tensor([1.0, 2.0]), "b": [sg.tensor(3), "s"]}, map_location=double)
    assert seen == ["cpu", "cpu"]
    assert out["a"].tolist() == [2.0, 4.0] and out["b"][0].item() == 6 and out["b"][1] == "s"
    with pytest.raises(TypeError, match="map_location returned"):
        _round_trip(sg, [sg.tensor(1.0)], map_location=lambda t, loc: None)


@pytest.mark.needs_torch
@pytest.mark.parametrize("where", ["cuda", "cuda:0", "device", "dict", "callable"])
def test_gpu_map_location_refused(sg, where):
    torch = need_torch()

    def location(lib):
        return {"cuda": "cuda", "cuda:0": "cuda:0", "device": lib.device("cuda"),
                "dict": {"cpu": "cuda:0"}, "callable": lambda storage, loc: storage.cuda()}[where]

    if not torch.cuda.is_available():
        with pytest.raises(Exception):  # PyTorch's CPU build refuses too (its error type varies by path)
            _round_trip(torch, _nested(torch, "float32"), map_location=location(torch))
    if sg.cuda.is_available():  # a stage with a usable GPU loads onto it
        loaded = _round_trip(sg, [sg.tensor([1.0, 2.0])], map_location=location(sg))
        assert loaded[0].device.type == "cuda" and loaded[0].tolist() == [1.0, 2.0]
        return
    with pytest.raises(RuntimeError, match="(?s)'cuda(:0)?'.*CPU"):
        _round_trip(sg, _nested(sg, "float32"), map_location=location(sg))


@pytest.mark.capability("float64")
def test_map_location_keeps_values_bit_identical(sg, tmp_path):
    x = sg.tensor(np.random.default_rng(0).standard_normal((3, 4)).tolist(), dtype=sg.float64)
    sg.save({"x": x}, tmp_path / "c.ckpt")
    y = sg.load(tmp_path / "c.ckpt", map_location="cpu", weights_only=True)["x"]
    assert y.dtype is sg.float64 and y.tolist() == x.tolist()
    # "cpu:0" names the same CPU here (PyTorch's load does not take it)
    assert sg.load(tmp_path / "c.ckpt", map_location="cpu:0")["x"].tolist() == x.tolist()
