"""Checkpoints of NumPy arrays, whole modules and custom objects, as PyTorch 2.13 writes and
reads them: for each payload and each way of loading, PyTorch's own answer (accepted or
refused, and the value) is computed live and every writer/reader pairing must give it."""
import contextlib
import importlib
import io
import pickle

import numpy as np
import pytest

from .oracle import need_torch_at_least


class Point:
    """A user's class, found again by its name, as pickle and the checkpoint save it."""

    def __init__(self):
        self.x, self.label, self.items = 1.5, "p", [1, (2, None)]


def _numpy_globals(*arrays):
    """What PyTorch's loader asks to be allowed before it rebuilds these arrays."""
    return [np.zeros(1).__reduce__()[0], np.ndarray, np.dtype, *dict.fromkeys(type(a.dtype) for a in arrays)]


def _module(lib):
    """A whole module with the same weights in either library."""
    m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Dropout(0.25))
    rng = np.random.default_rng(0)
    m.load_state_dict({"0.weight": lib.tensor(rng.standard_normal((3, 2)).astype(np.float32)),
                       "0.bias": lib.tensor(rng.standard_normal(3).astype(np.float32))})
    return m


def _payload(name, lib):
    """``(object, the globals a weights_only load must be allowed)`` for ``lib``."""
    a, b, c = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2]), np.array(True)
    if name == "ndarray":
        return a, _numpy_globals(a)
    if name == "dict_of_arrays":
        return {"a": a, "b": b}, _numpy_globals(a, b)
    if name == "list_and_tuple":
        return [a, (c, 1.5, "s")], _numpy_globals(a, c)
    if name == "tensors":
        return {"w": lib.tensor([[1.5, -2.0]]), "n": [lib.tensor([1, 2]), (lib.tensor(True),)],
                "at": lib.device("cpu")}, []
    if name == "module":
        m = _module(lib)
        return m, [type(m), type(m[0]), type(m[1])]
    return Point(), [Point]


def _plain(x):
    """``x`` as plain Python values, alike whichever library made it."""
    if hasattr(x, "detach"):  # a tensor of either library
        return ("tensor", str(x.dtype).rpartition(".")[2], x.detach().cpu().tolist(), bool(x.requires_grad))
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.shape, x.tolist())
    if type(x).__name__ == "device":
        return ("device", str(x))
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    if hasattr(x, "state_dict"):
        return ("module", type(x).__name__, x.training,
                [(type(m).__name__, getattr(m, "p", None)) for m in x.children()],
                [(k, type(p).__name__, _plain(p)) for k, p in x.named_parameters()])
    if isinstance(x, Point):
        return ("Point", _plain(vars(x)))
    return x


@contextlib.contextmanager
def _allowing(ser, mode, allowed):
    """Run a load under ``mode``: the ``load`` arguments it takes, with the library's
    allowlist set as the mode says, and restored afterwards."""
    if mode == "safe_globals":
        with ser.safe_globals(allowed):
            yield {}
        return
    before = ser.get_safe_globals()
    if mode.startswith("add_safe_globals"):
        ser.add_safe_globals(allowed[:-1] if mode.endswith("but_one") else allowed)
    try:
        yield {"weights_only": False} if mode == "weights_only_false" else {}
    finally:
        ser.clear_safe_globals()
        ser.add_safe_globals(before)


def _outcome(save, load, ser, obj, mode, allowed):
    """``("ok", plain value)`` or ``("refused", message)`` for one save and load."""
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    with _allowing(ser, mode, allowed) as kwargs:
        try:
            return "ok", _plain(load(buf, **kwargs))
        except pickle.UnpicklingError as e:
            return "refused", str(e)


PAYLOADS = ["ndarray", "dict_of_arrays", "list_and_tuple", "tensors", "module", "custom"]
# add_safe_globals_but_one: every global PyTorch asks for but the last, which it refuses
MODES = ["default", "weights_only_false", "add_safe_globals", "safe_globals", "add_safe_globals_but_one"]


@pytest.mark.needs_torch
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("payload", PAYLOADS)
def test_save_and_load_as_pytorch(sg, payload, mode):
    torch = need_torch_at_least("2.6", "weights_only loading by default and safe_globals")
    theirs, their_globals = _payload(payload, torch)
    ours, our_globals = _payload(payload, sg)
    tser, oser = torch.serialization, sg.serialization
    expected = _outcome(torch.save, torch.load, tser, theirs, mode, their_globals)
    pairs = {"sg -> sg": _outcome(sg.save, sg.load, oser, ours, mode, our_globals),
             # a PyTorch file names PyTorch's classes: those are what the stage's allowlist must hold
             "torch -> sg": _outcome(torch.save, sg.load, oser, theirs, mode, their_globals)}
    if payload in ("module", "custom"):  # PyTorch's format would pickle the stage's classes
        with pytest.raises(TypeError, match="format='torch' holds tensors, NumPy arrays and plain data"):
            sg.save(ours, io.BytesIO(), format="torch")
    else:
        pairs["sg -> torch"] = _outcome(lambda o, f: sg.save(o, f, format="torch"), torch.load, tser, ours, mode,
                                        our_globals)
    for pair, (status, value) in pairs.items():
        assert status == expected[0], (pair, value)
        if status == "ok":
            assert value == expected[1], pair
        else:  # PyTorch's advice, with this library's names
            assert "weights_only" in value and "add_safe_globals" in value and "safe_globals" in value, pair
    refused = mode in ("default", "add_safe_globals_but_one") and payload != "tensors"
    assert expected[0] == ("refused" if refused else "ok")


def test_weights_only_load_imports_nothing_from_the_file(sg, monkeypatch):
    buf = io.BytesIO()
    sg.save({"p": Point(), "f": np.sum}, buf)
    ser, load = sg.serialization, sg.load  # reached before import_module is refused below

    def refuse(*a, **k):
        raise AssertionError("a weights_only load imported a module the file names")
    monkeypatch.setattr(importlib, "import_module", refuse)
    buf.seek(0)
    with pytest.raises(ser.WeightsOnlyError, match=r"add_safe_globals\(\[common_tests\.\S*Point"):
        load(buf)
    buf.seek(0)
    with ser.safe_globals([Point, np.sum]):  # built from the allowlist itself
        back = load(buf)
    assert type(back["p"]) is Point and vars(back["p"]) == vars(Point()) and back["f"] is np.sum
    assert ser.get_safe_globals() == []  # the context left nothing behind


def test_whole_module_keeps_shared_parts_and_runs(sg):
    torch = need_torch_at_least("2.6", "weights_only loading by default and safe_globals")
    m = _module(sg).eval()
    holder = sg.nn.ModuleDict({"a": m, "b": m})  # one module in two places, as tied weights are
    buf = io.BytesIO()
    sg.save(holder, buf)
    buf.seek(0)
    back = sg.load(buf, weights_only=False)
    assert back["a"] is back["b"] and isinstance(back["a"][0].weight, sg.nn.Parameter)
    assert not back["a"].training
    x = np.random.default_rng(1).standard_normal((4, 2)).astype(np.float32)
    expected = _module(torch).eval()(torch.tensor(x)).detach().numpy()
    where = back["a"][0].weight.device  # a checkpoint loads on the CPU (load's map_location), any default
    np.testing.assert_allclose(np.asarray(back["a"](sg.tensor(x, device=where)).tolist()), expected,
                               rtol=1e-6, atol=1e-6)


def test_what_no_load_can_read_is_refused_at_save(sg):
    for bad, why in ((lambda: 0, "lambda"), (np.array([object()]), "dtype object"),
                     (frozenset([1]), "frozenset")):
        with pytest.raises(TypeError, match=why):
            sg.save({"x": bad}, io.BytesIO())


@pytest.mark.needs_torch
@pytest.mark.parametrize("payload", PAYLOADS)
def test_unsafe_globals_in_checkpoint_as_pytorch(sg, payload):
    torch = need_torch_at_least("2.6", "get_unsafe_globals_in_checkpoint")
    (theirs, _), (ours, our_globals) = _payload(payload, torch), _payload(payload, sg)
    files = {}
    for lib, obj in ((torch, theirs), (sg, ours)):
        files[lib] = io.BytesIO()
        lib.save(obj, files[lib])
        files[lib].seek(0)
    expected = torch.serialization.get_unsafe_globals_in_checkpoint(files[torch])
    got = sg.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(files[sg].getvalue()))
    # PyTorch's static scan misses the dtype classes, which its loader asks for all the same
    dtype_classes = {f"{g.__module__}.{g.__qualname__}" for g in our_globals
                     if isinstance(g, type) and issubclass(g, np.dtype) and g is not np.dtype}
    # the same classes, each under its own library's module
    assert sorted(n.rpartition(".")[2] for n in set(got) - dtype_classes) == sorted(
        n.rpartition(".")[2] for n in expected)
    assert set(got) >= dtype_classes and got == sorted(got)
    with sg.serialization.safe_globals(our_globals):
        assert sg.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(files[sg].getvalue())) == []
    # a PyTorch file goes to PyTorch's scan
    assert sorted(sg.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(files[torch].getvalue()))) == sorted(
        expected)
