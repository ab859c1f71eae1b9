"""``repr`` of a tensor against PyTorch's, character for character: the layout, the shared
number format, summarising a large tensor (a 300 x 300 one prints a few hundred
characters, not hundreds of thousands), the suffixes, and ``set_printoptions``."""
import numpy as np
import pytest

from .oracle import need_torch

RNG = np.random.default_rng(0)
CASES = {
    "matrix_300x300": RNG.standard_normal((300, 300)).astype(np.float32),
    "small_matrix": RNG.standard_normal((3, 4)).astype(np.float32),
    "scalar": np.array(3.5, np.float32),
    "whole_floats": np.array([[1.0, -2.0], [30.0, 0.0]], np.float32),
    "scientific": np.array([1e-5, 1.0, 1e9], np.float32),
    "large_ratio": np.array([0.5, 2000.0], np.float32),
    "nonfinite": np.array([0.0, np.nan, np.inf, -np.inf, 2.5], np.float32),
    "only_zeros_and_nan": np.array([0.0, np.nan], np.float32),
    "long_vector_wraps": np.arange(40) * 1000,
    "summarised_vector": np.arange(5000),
    "summarised_3d": np.arange(3000).reshape(10, 20, 15),
    "summarised_4d": RNG.standard_normal((7, 2, 9, 30)).astype(np.float32),
    "narrow_first_dim": RNG.standard_normal((2, 700)).astype(np.float32),
    "negative_ints": np.array([[-1, 20], [300, -4000]]),
    "bools": RNG.standard_normal((3, 5)) > 0,
    "float64": RNG.standard_normal((4, 3)),
    "int32": np.arange(-5, 5, dtype=np.int32).reshape(2, 5),
    "empty_vector": np.zeros(0, np.float32),
    "empty_matrix": np.zeros((2, 0, 3), np.float32),
    "empty_int64": np.zeros((0, 2), np.int64),
}


def _both(sg, torch, array, **kw):
    ours = sg.tensor(array.tolist(), dtype=getattr(sg, str(array.dtype)), device="cpu", **kw)
    theirs = torch.tensor(array.tolist(), dtype=getattr(torch, str(array.dtype)), **kw)
    return repr(ours), repr(theirs).replace("torch.", "stagegrad.")


@pytest.mark.parametrize("name", list(CASES))
def test_repr_matches_torch(sg, name):
    torch = need_torch()
    ours, theirs = _both(sg, torch, CASES[name])
    assert ours == theirs, f"\n{ours}\n{theirs}"


def test_large_tensor_is_summarised(sg):
    torch = need_torch()
    ours, theirs = _both(sg, torch, CASES["matrix_300x300"])
    assert ours == theirs
    lines = ours.split("\n")
    assert len(lines) == 7 and lines[3] == "        ...,"  # three rows, the cut, three rows
    assert all(line.count(",  ...,") == 1 for line in lines if line.strip() != "...,")
    assert len(ours) < 500  # every element would take over 800,000 characters


def test_requires_grad_and_suffix_lines(sg):
    torch = need_torch()
    for array in (np.array([1.5, 2.0], np.float32), RNG.standard_normal((2, 8)).astype(np.float32),
                  RNG.standard_normal((2, 8))):
        ours, theirs = _both(sg, torch, array, requires_grad=True)
        assert ours == theirs, f"\n{ours}\n{theirs}"


def test_device_is_named_before_the_dtype(sg):
    t = sg.tensor([[1, 2], [3, 4]], dtype=sg.int32)  # on the stage's default device
    on_cpu = "tensor([[1, 2],\n        [3, 4]], dtype=stagegrad.int32)"
    if t.device.type == "cpu":
        assert repr(t) == on_cpu
    else:
        assert repr(t) == on_cpu.replace(", dtype", f", device='{t.device}', dtype")


def test_printoptions_as_torch(sg):
    torch = need_torch()
    array = RNG.standard_normal((40, 50)).astype(np.float32) * 10
    settings = [dict(precision=2), dict(threshold=3000), dict(edgeitems=1), dict(edgeitems=0),
                dict(linewidth=40), dict(sci_mode=True), dict(profile="short"), dict(profile="full")]
    default = sg.get_printoptions()
    assert default == {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
    for kw in settings:
        with sg.printoptions(**kw), torch._tensor_str.printoptions(**kw):
            ours, theirs = _both(sg, torch, array)
            small_ours, small_theirs = _both(sg, torch, CASES["small_matrix"])
        assert (ours, small_ours) == (theirs, small_theirs), (kw, f"\n{ours}\n{theirs}")
        assert sg.get_printoptions() == default  # restored on leaving
    sg.set_printoptions(precision=1)
    try:
        assert repr(sg.tensor([0.25, 1.5], device="cpu")) == "tensor([0.2, 1.5])"
    finally:
        sg.set_printoptions(profile="default")
    assert sg.get_printoptions() == default


@pytest.mark.parametrize("kw,message", [
    (dict(precision=-1), "precision must be an integer >= 0"),
    (dict(edgeitems=1.5), "edgeitems must be an integer >= 0"),
    (dict(threshold="many"), "threshold must be a number >= 0"),
    (dict(profile="long"), "profile must be one of 'default', 'short', 'full'"),
    (dict(sci_mode=1), "sci_mode must be True, False or None"),
])
def test_bad_printoptions_are_refused(sg, kw, message):
    before = sg.get_printoptions()
    with pytest.raises(ValueError, match=message):
        sg.set_printoptions(**kw)
    assert sg.get_printoptions() == before
