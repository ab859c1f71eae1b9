"""The cuda device's convolution ladder (``stage4_gpu/cuda/kernels/conv.cu``), every rung,
under the host emulation of CuPy in a subprocess (the suite's own process has no GPU).

Each rung runs the forward and both gradients of convolutions with padding, stride,
dilation, tiles cut at the edges both ways and depths split across blocks, in float32 (the
CUDA-core path; every rung) and float16 (the tensor-core path; a rung of each loop), against
PyTorch CPU's float32 on the same (rounded) values. split_k must split where the tiles do not fill the (emulated) GPU,
as two launches, and no other rung may; an unknown rung is refused by name.
"""
import numpy as np
import pytest

from .emulation import REPO, run_emulated
from .oracle import need_torch

# one worker runs the program once for every test here
pytestmark = pytest.mark.xdist_group("cuda_conv")

PROGRAM = r'''
import json
import numpy as np
import torch
import stage4_gpu as sg
from stage4_gpu.cuda import conv
from stage4_gpu.cuda.runtime import runtime

CASES = [  # N, C, H, W, O, kernel, stride, padding, dilation
    (2, 3, 7, 9, 5, 3, 1, 1, 1),
    (2, 4, 9, 8, 5, 3, 2, 1, 2),
    (1, 64, 8, 8, 8, 3, 1, 1, 1),   # the forward: one tile, K = 576, split in two
    (2, 4, 16, 16, 4, 3, 1, 1, 1),  # the weight gradient: one tile, K = 512, split in two
    (2, 70, 5, 5, 66, 1, 1, 0, 1),  # tiles cut past 64 both ways
]
# float16 differs from float32 only in the multiplying core: a rung with one buffer and the
# rung with two, split, are its two loops
RUNGS = {"float32": conv.RUNGS, "float16": ("implicit", "split_k")}
rng = np.random.default_rng(0)
out = {"errors": [], "launches": {}}
for case in CASES:
    n, c, h, w, o, k, s, p, d = case
    oh, ow = ((size + 2 * p - d * (k - 1) - 1) // s + 1 for size in (h, w))
    shapes = ((n, c, h, w), (o, c, k, k), (o,), (n, o, oh, ow))
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    for dtype in ("float32", "float16"):
        rounded = [torch.tensor(a).to(getattr(torch, dtype)).float() for a in arrays]
        tx, tw, tb = (t.clone().requires_grad_() for t in rounded[:3])
        ty = torch.nn.functional.conv2d(tx, tw, tb, s, p, d)
        ty.backward(rounded[3])
        want = [t.detach().numpy() for t in (ty, tx.grad, tw.grad)]
        for rung in RUNGS[dtype]:
            conv.RUNG = rung
            x, wt, b = (sg.tensor(a, device="cuda").to(getattr(sg, dtype)).requires_grad_() for a in arrays[:3])
            g = sg.tensor(arrays[3], device="cuda").to(getattr(sg, dtype))
            before = runtime().launches
            y = sg.nn.functional.conv2d(x, wt, b, s, p, d)
            forward = runtime().launches - before
            before = runtime().launches
            wt.grad = None
            (gw,) = sg.autograd.grad(y, [wt], g, retain_graph=True)
            weight = runtime().launches - before
            y.backward(g)
            got = [t.detach().to("cpu").float().numpy() for t in (y, x.grad, wt.grad)]
            out["errors"].append([str(case), dtype, rung, [float(np.abs(a - e).max() / np.abs(e).max())
                                                            for a, e in zip(got, want)]])
            out["launches"][f"{case} {dtype} {rung}"] = [forward, weight]
conv.RUNG = "winograd"
try:
    sg.nn.functional.conv2d(sg.ones(1, 1, 3, 3, device="cuda"), sg.ones(1, 1, 3, 3, device="cuda"))
    out["refusal"] = None
except ValueError as e:
    out["refusal"] = str(e)
print(json.dumps(out))
'''

TOLERANCE = {"float32": 1e-5, "float16": 2.0 ** -10}  # float16: one rounding of each result


@pytest.fixture(scope="module")
def report():
    need_torch()
    return run_emulated(["-c", PROGRAM], timeout=900)


def test_every_rung_matches_pytorch_in_each_pass(report):
    rungs = {row[2] for row in report["errors"] if row[1] == "float32"}
    assert rungs == {"direct", "implicit", "offsets", "pipelined", "split_k"}
    for case, dtype, rung, errors in report["errors"]:
        for what, error in zip(("output", "input grad", "weight grad"), errors):
            assert error <= TOLERANCE[dtype], (case, dtype, rung, what, error)


@pytest.mark.parametrize("case,pass_", [("(1, 64, 8, 8, 8, 3, 1, 1, 1)", 0), ("(2, 4, 16, 16, 4, 3, 1, 1, 1)", 1)])
def test_split_k_splits_only_where_the_tiles_do_not_fill_the_gpu(report, case, pass_):
    for dtype, rungs in (("float32", ("direct", "offsets", "pipelined")), ("float16", ("implicit",))):
        launches = {rung: report["launches"][f"{case} {dtype} {rung}"][pass_] for rung in (*rungs, "split_k")}
        one = launches[rungs[0]]  # the pass's launches where the product is one launch
        assert launches.pop("split_k") == one + 1, launches  # the parts, then the fold
        assert all(n == one for n in launches.values()), launches
    for dtype, one in (("float32", "direct"), ("float16", "implicit")):  # depths of 70 and 50: too shallow
        key = f"(2, 70, 5, 5, 66, 1, 1, 0, 1) {dtype} "
        assert report["launches"][key + "split_k"] == report["launches"][key + one]


def test_an_unknown_rung_is_refused_by_name(report):
    assert report["refusal"] is not None and "winograd" in report["refusal"] and "split_k" in report["refusal"]


def test_the_rungs_are_conv_cu_s_enum_in_order():
    source = (REPO / "stage4_gpu/cuda/kernels/conv.cu").read_text()
    enum = source[source.index("enum Rung {"):].split("}")[0]
    names = [part.split("=")[0].strip().lower() for part in enum.split("{")[1].split(",")]
    values = [int(part.split("=")[1]) for part in enum.split("{")[1].split(",")]
    from stage4_gpu.cuda.conv import RUNGS
    assert names == list(RUNGS) and values == list(range(len(RUNGS)))
    assert np.all(np.diff(values) == 1)
