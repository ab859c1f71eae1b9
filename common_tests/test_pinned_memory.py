"""Pinned (page-locked) host memory and the copies the host need not wait for:
``Tensor.pin_memory()``, ``is_pinned()``, ``to(..., non_blocking=True)`` and
``DataLoader(pin_memory=True)``.

Without a cuda device every stage answers as a PyTorch build without an accelerator does:
pinning is refused, nothing is pinned, the loader warns and leaves its batches as they are.
The cuda part runs in a subprocess with the host emulation of CuPy (``tools/cuda_on_host``)
first on ``PYTHONPATH``, since the suite's own process has no GPU: there pinned memory
comes from the stand-in's pinned pool, which, like CuPy's, hands a block back when its
last reference dies and tells page-locked addresses apart (``pointerGetAttributes``).
Every value is checked against NumPy; no timing is asserted (the bandwidth is
``stagegrad devices``'s to measure, on a real GPU).
"""
import json

import numpy as np
import pytest

from .emulation import run_emulated

NO_ACCELERATOR = "Cannot access accelerator device when none is available"
LOADER_WARNING = "'pin_memory' argument is set as true but no accelerator is found"


def test_without_a_cuda_device_pinning_is_refused_as_pytorch_refuses_it(sg):
    if sg.cuda.is_available():
        pytest.skip(f"a cuda device is usable here ({sg.cuda.get_device_name()}): pinning works")
    x = sg.arange(6.0, device="cpu").reshape(3, 2)
    with pytest.raises(RuntimeError, match=NO_ACCELERATOR):
        x.pin_memory()
    assert x.is_pinned() is False
    assert x.to("cpu", non_blocking=True) is x  # nothing to move, nothing to overlap
    data = sg.utils.data
    loader = data.DataLoader(data.TensorDataset(x, sg.tensor([7, 8, 9], device="cpu")), batch_size=2,
                             pin_memory=True)
    with pytest.warns(UserWarning, match=LOADER_WARNING):
        batches = list(loader)
    assert [[t.tolist() for t in b] for b in batches] == [[[[0.0, 1.0], [2.0, 3.0]], [7, 8]],
                                                          [[[4.0, 5.0]], [9]]]
    assert not any(t.is_pinned() for b in batches for t in b)
    naming = data.DataLoader(data.TensorDataset(x), pin_memory=True, pin_memory_device="cuda")
    with pytest.warns(UserWarning, match=LOADER_WARNING), \
            pytest.warns(UserWarning, match="pin_memory_device is deprecated"):
        assert [b[0].tolist() for b in naming] == [[[0.0, 1.0]], [[2.0, 3.0]], [[4.0, 5.0]]]


# the program run under the emulation: it prints one JSON object of what it saw
PROGRAM = r'''
import gc, json, sys
import numpy as np
import cupy
import stage4_gpu as sg

assert sg.cuda.is_available(), sg.cuda.unavailable_reason()
pool = cupy.get_default_pinned_memory_pool()
out = {}


def page_locked(t):
    """What the driver says of the tensor's address (not what the tensor says of itself)."""
    return cupy.cuda.runtime.pointerGetAttributes(t.data_ptr()).type == cupy.cuda.runtime.memoryTypeHost


def tensor(values, dtype):
    if dtype == "bfloat16":  # NumPy has none: its values come as float32, exact in bfloat16
        return sg.from_numpy(np.asarray(values, np.float32)).to(sg.bfloat16)
    return sg.from_numpy(np.asarray(values, dtype))


def plain(t):
    return (t.float() if t.dtype == sg.bfloat16 else t).tolist()


VALUES = json.loads(sys.argv[1])
for dtype, values in VALUES.items():
    x = tensor(values, dtype)
    p = x.pin_memory()
    c = p.to("cuda", non_blocking=True)
    back = c.to("cpu", non_blocking=True)
    sg.cuda.synchronize()  # both copies were only queued: read after this
    out[dtype] = {
        "pinned": plain(p), "is_pinned": p.is_pinned(), "source_is_pinned": x.is_pinned(),
        "page_locked": page_locked(p), "source_page_locked": page_locked(x),
        "own_memory": p.data_ptr() != x.data_ptr(), "again_is_itself": p.pin_memory() is p,
        "on": str(c.device), "back": plain(back), "back_is_pinned": back.is_pinned(),
        "back_page_locked": page_locked(back), "blocking_back": plain(c.cpu()),
        "blocking_back_is_pinned": c.cpu().is_pinned(), "device_is_pinned": c.is_pinned(),
        "pageable_non_blocking": plain(x.cuda(non_blocking=True).cpu()),
    }

# views: a transposed device view comes back in row-major order; a slice of pinned memory
# is pinned memory
m = sg.from_numpy(np.arange(15, dtype=np.float32).reshape(3, 5))
g = m.pin_memory().to("cuda", non_blocking=True)
t = g.t().to("cpu", non_blocking=True)
sg.cuda.synchronize()
out["transposed"] = t.tolist()
out["transposed_blocking"] = g[1:, 2:].t().cpu().tolist()
out["slice_is_pinned"] = m.pin_memory()[1:, 1:].is_pinned()
e = sg.zeros(0, 3).pin_memory()
out["empty"] = [list(e.shape), e.is_pinned(), e.to("cuda", non_blocking=True).cpu().tolist()]

# lifetime: the block goes back to the pool when the last view of the storage dies, and
# not while a copy the host did not wait for may still read it
p = sg.from_numpy(np.arange(1000, dtype=np.float32)).pin_memory()
view = p[10:13]
free = pool.n_free_blocks()
del p
gc.collect()
out["view_keeps_block"] = [pool.n_free_blocks() - free, view.tolist()]
del view
gc.collect()
out["last_view_frees_block"] = pool.n_free_blocks() - free
p = sg.from_numpy(np.full(1000, 2.5, np.float32)).pin_memory()
free = pool.n_free_blocks()
c = p.to("cuda", non_blocking=True)
del p
gc.collect()
out["held_while_copying"] = pool.n_free_blocks() - free
sg.cuda.synchronize()
gc.collect()
out["released_after_synchronize"] = pool.n_free_blocks() - free
out["copied"] = sorted(set(c.cpu().tolist()))


class Samples:
    def __len__(self):
        return 3

    def __getitem__(self, i):
        return {"x": sg.from_numpy(np.arange(4, dtype=np.float32) + 10 * i), "y": i,
                "pair": (sg.tensor(float(i)), "name")}


data = sg.utils.data
batches = list(data.DataLoader(Samples(), batch_size=2, pin_memory=True))
out["loader"] = [{"x": b["x"].tolist(), "x_pinned": b["x"].is_pinned(), "y": b["y"].tolist(),
                  "y_pinned": b["y"].is_pinned(), "pair": [b["pair"][0].tolist(), b["pair"][1]],
                  "pair_pinned": b["pair"][0].is_pinned()} for b in batches]
tuples = data.DataLoader(data.TensorDataset(sg.arange(6.0).reshape(3, 2)), batch_size=3, pin_memory=True,
                         collate_fn=lambda s: (sg.stack([x for x, in s]), "tag"))
b = next(iter(tuples))
out["tuple_batch"] = [type(b).__name__, b[0].tolist(), b[0].is_pinned(), b[1]]
out["unpinned_loader"] = next(iter(data.DataLoader(Samples(), batch_size=2)))["x"].is_pinned()
print(json.dumps(out))
'''

VALUES = {"float32": [1.5, -2.25, 0.0, -0.0, 3e38, 1e-40, float("inf")],
          "float64": [1e-300, -2.5, 0.1, 7.0],
          "float16": [0.5, -65504.0, 6e-8, 1.0],
          "bfloat16": [1.0, -0.5, 1.5 * 2.0 ** 127, 2.0 ** -130],
          "int64": [2 ** 62, -3, 0, 7],
          "int32": [2 ** 31 - 1, -2 ** 31, 5],
          "bool": [True, False, True]}


def _numpy(dtype, values):
    """The oracle: the values as the tensor holds them (bfloat16 values are exact in it)."""
    return np.asarray(values, np.float32 if dtype == "bfloat16" else dtype).tolist()


@pytest.fixture(scope="module")
def emulated():
    """What ``PROGRAM`` saw on stage 4's cuda device under the host emulation of CuPy."""
    return run_emulated(["-c", PROGRAM, json.dumps(VALUES)], timeout=600)


@pytest.mark.parametrize("dtype", list(VALUES))
def test_pinned_copies_round_trip_through_the_cuda_device(emulated, dtype):
    """``pin_memory()`` copies into memory the driver calls page-locked (the tensor's own,
    not the source's); ``to("cuda", non_blocking=True)`` from it and ``to("cpu",
    non_blocking=True)`` back (into new pinned memory) give the values after a synchronize;
    the blocking and the pageable paths give them too."""
    seen, want = emulated[dtype], _numpy(dtype, VALUES[dtype])
    for key in ("pinned", "back", "blocking_back", "pageable_non_blocking"):
        assert seen[key] == want, key
    assert seen["is_pinned"] and seen["page_locked"] and seen["own_memory"] and seen["again_is_itself"]
    assert not seen["source_is_pinned"] and not seen["source_page_locked"]
    assert seen["on"] == "cuda:0"
    assert seen["back_is_pinned"] and seen["back_page_locked"]  # non_blocking to the CPU: pinned
    assert not seen["blocking_back_is_pinned"] and not seen["device_is_pinned"]


def test_views_and_empty_tensors_are_copied_and_pinned(emulated):
    m = np.arange(15, dtype=np.float32).reshape(3, 5)
    assert emulated["transposed"] == m.T.tolist()
    assert emulated["transposed_blocking"] == m[1:, 2:].T.tolist()
    assert emulated["slice_is_pinned"] is True
    assert emulated["empty"] == [[0, 3], True, []]


def test_pinned_memory_goes_back_to_the_pool_only_when_nothing_can_read_it(emulated):
    """A view keeps its storage's block; the last view's death frees it to the pinned pool;
    a copy queued from it holds it until a synchronize."""
    assert emulated["view_keeps_block"] == [0, [10.0, 11.0, 12.0]]
    assert emulated["last_view_frees_block"] == 1
    assert emulated["held_while_copying"] == 0
    assert emulated["released_after_synchronize"] == 1
    assert emulated["copied"] == [2.5]


def test_the_loader_pins_every_tensor_of_each_batch(emulated):
    """``DataLoader(pin_memory=True)``: tensors in dicts and lists pinned, other values as
    they were; a tuple batch becomes a list, as PyTorch's loader makes it."""
    x = np.arange(4, dtype=np.float32)
    assert emulated["loader"] == [
        {"x": [x.tolist(), (x + 10).tolist()], "x_pinned": True, "y": [0, 1], "y_pinned": True,
         "pair": [[0.0, 1.0], ["name", "name"]], "pair_pinned": True},
        {"x": [(x + 20).tolist()], "x_pinned": True, "y": [2], "y_pinned": True,
         "pair": [[2.0], ["name"]], "pair_pinned": True}]
    assert emulated["tuple_batch"] == ["list", np.arange(6.0).reshape(3, 2).tolist(), True, "tag"]
    assert emulated["unpinned_loader"] is False
