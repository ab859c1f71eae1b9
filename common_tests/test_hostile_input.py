"""Hostile input never crashes or corrupts.

Random shapes (negative, zero, huge and overflowing sizes), window geometry and indices
are thrown at every creation, movement, indexing, padding, convolution and pooling entry
point. Each call either gives PyTorch's result or raises the promised exception
(ValueError for a shape that cannot exist, MemoryError for one that cannot exist on this
machine, IndexError for an index, TypeError for a type) naming the operation, and leaves
every input as it was. Calls that could crash the interpreter run in a subprocess, so a
crash fails a test instead of ending the run.
"""
import json
import math
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers_core import T, data, settled
from .oracle import torch

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
HUGE = (2**40, 2**62 + 1, 2**64 + 1)  # 2**40 elements fit an int64 but not a test machine's memory
MEMORY = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
SIZES = st.sampled_from((0, 1, 2, 3, -1, -6) + HUGE)
HOSTILE_SHAPES = st.lists(SIZES, min_size=0, max_size=4).map(tuple)


def expected_failure(shape, itemsize, allocates=True):
    """What the one shape rule (stage0_python/shapes.py) says of ``shape``: None when it
    can exist here, else the exception type."""
    if any(s < 0 for s in shape):
        return ValueError
    if math.prod(max(s, 1) for s in shape) > 2**63 - 1:
        return ValueError
    if allocates and math.prod(shape) * itemsize > MEMORY:
        return MemoryError
    return None


def raises_naming(exc, op, fn):
    """``fn()`` raises ``exc`` (a type or tuple) with ``op`` in its message."""
    with pytest.raises(exc) as info:
        fn()
    assert re.search(op, str(info.value)), f"the message does not name {op!r}: {info.value}"
    return info.value


def unchanged(tensors, before):
    assert [np.asarray(t.detach().numpy()).tolist() for t in tensors] == before


def snapshot(*tensors):
    return [np.asarray(t.detach().numpy()).tolist() for t in tensors]


# ---------------------------------------------------------------- creation

CREATION = {
    "zeros": lambda sg, s: sg.zeros(*s),
    "ones": lambda sg, s: sg.ones(s),
    "empty": lambda sg, s: sg.empty(s),
    "full": lambda sg, s: sg.full(s, 2.5),
    "rand": lambda sg, s: sg.rand(*s),
    "randn": lambda sg, s: sg.randn(s),
    "randint": lambda sg, s: sg.randint(0, 5, s),
    "normal": lambda sg, s: sg.normal(0.0, 1.0, s),
    "new_zeros": lambda sg, s: sg.ones(2).new_zeros(s),
    "new_ones": lambda sg, s: sg.ones(2).new_ones(*s),
    "new_full": lambda sg, s: sg.ones(2).new_full(s, 3.0),
}
ITEMSIZE = {"randint": 8}


@SETTINGS
@given(shape=HOSTILE_SHAPES, op=st.sampled_from(sorted(CREATION)))
def test_creation_accepts_only_shapes_that_can_exist(sg, shape, op):
    fail = expected_failure(shape, ITEMSIZE.get(op, 4))
    if fail is None:
        t = CREATION[op](sg, shape)
        assert tuple(t.shape) == shape
        if op in ("zeros", "full", "new_full"):
            value = {"zeros": 0.0, "full": 2.5, "new_full": 3.0}[op]
            assert np.all(t.numpy() == value)
    else:
        raises_naming(fail, op, lambda: CREATION[op](sg, shape))


@pytest.mark.parametrize("call, op, exc", [
    (lambda sg: sg.arange(2**62), "arange", MemoryError),
    (lambda sg: sg.arange(0, 2**64, 1), "arange", ValueError),
    (lambda sg: sg.arange(0.0, math.inf), "arange", ValueError),
    (lambda sg: sg.arange(0.0, math.nan), "arange", ValueError),
    (lambda sg: sg.linspace(0, 1, 2**62), "linspace", MemoryError),
    (lambda sg: sg.eye(-1), "eye", ValueError),
    (lambda sg: sg.eye(3, -2), "eye", ValueError),
    (lambda sg: sg.eye(2**40), "eye", ValueError),
    (lambda sg: sg.randperm(-1), "randperm", ValueError),
    (lambda sg: sg.randperm(2**62), "randperm", MemoryError),
    (lambda sg: sg.randint(0, 5, (2**32, 2**32)), "randint", ValueError),
    (lambda sg: sg.zeros(2**32, 2**32), "zeros", ValueError),
    (lambda sg: sg.zeros(0, 2**62, 2**62), "zeros", ValueError),  # the strides overflow
])
def test_ranges_and_special_creation_refuse_impossible_sizes(sg, call, op, exc):
    raises_naming(exc, op, lambda: call(sg))


# ---------------------------------------------------------------- movement

@SETTINGS
@given(target=HOSTILE_SHAPES, base=st.sampled_from([(), (1,), (2, 3), (0,), (1, 3)]))
def test_reshape_and_view_check_the_new_shape(sg, base, target):
    x = sg.zeros(base)
    n = math.prod(base)
    count = [s for s in target if s != -1]
    infer = target.count(-1) == 1 and math.prod(count) > 0 and n % math.prod(count) == 0
    resolved = tuple(n // math.prod(count) if s == -1 else s for s in target) if infer else target
    ok = (target.count(-1) <= 1 and all(s >= 0 for s in resolved) and math.prod(resolved) == n
          and expected_failure(resolved, 4, allocates=False) is None)
    for op in ("reshape", "view"):
        if ok:
            assert tuple(getattr(x, op)(target).shape) == resolved
        else:
            raises_naming(ValueError, "reshape|view", lambda: getattr(x, op)(target))


@SETTINGS
@given(target=HOSTILE_SHAPES)
def test_expand_is_a_view_or_a_clear_error(sg, target):
    x = sg.zeros(1)
    if not target:
        raises_naming(ValueError, "expand", lambda: x.expand(target))
        return
    fail = expected_failure(target, 4, allocates="views" in sg.LACKS)
    if any(s == -1 for s in target[:-1]):  # -1 in a new leading dim
        fail = ValueError
    elif target[-1] == -1:  # keeps the existing size
        fail = expected_failure(target[:-1] + (1,), 4, allocates="views" in sg.LACKS)
    if fail is None:
        out = x.expand(target)
        assert tuple(out.shape) == tuple(1 if s == -1 else s for s in target)
    else:
        raises_naming(fail, "expand", lambda: x.expand(target))


@SETTINGS
@given(counts=st.lists(SIZES, min_size=1, max_size=3).map(tuple))
def test_repeat_counts(sg, counts):
    x = T(sg, data((1,), seed=3))
    shape = counts[:-1] + (counts[-1],)
    fail = expected_failure(shape, 4)
    if fail is None:
        out = x.repeat(*counts)
        assert tuple(out.shape) == counts
        if math.prod(max(c, 1) for c in counts) <= 4096:  # NumPy can build the reference
            np.testing.assert_array_equal(out.numpy(), np.tile(x.numpy(), counts))
    else:
        raises_naming(fail, "repeat", lambda: x.repeat(*counts))


@pytest.mark.parametrize("make, op, exc", [
    (lambda sg: sg.zeros(1, 1).expand(2**32, 2**32), "expand", ValueError),
    (lambda sg: sg.zeros(2).expand(-2), "expand", ValueError),
    (lambda sg: sg.zeros(0).reshape(2**32, 2**32), "reshape", ValueError),
    (lambda sg: sg.zeros(0).reshape(0, 2**62, 2**62), "reshape", ValueError),
    (lambda sg: sg.zeros(2).repeat(-1), "repeat", ValueError),
    (lambda sg: sg.zeros(1).repeat(2**40), "repeat", MemoryError),
    (lambda sg: sg.zeros(2**20, 1) + sg.zeros(1, 2**20 + 1) * sg.zeros(2**20), "mul", ValueError),
    (lambda sg: sg.zeros(2**20, 1) + sg.zeros(1, 2**20), "add", MemoryError),
    (lambda sg: sg.where(sg.zeros(2**20, 1) > 0, sg.zeros(1, 2**20), 0.0), "where", MemoryError),
    (lambda sg: sg.zeros(2**20, 1) @ sg.zeros(1, 2**20), "matmul", MemoryError),
    (lambda sg: sg.cat([sg.zeros(2**20, 1).expand(2**20, 2**20)] * 2), "cat|expand", MemoryError),
    (lambda sg: sg.zeros(2).masked_fill(sg.zeros(3, dtype=sg.bool), 1.0), "masked_fill", ValueError),
    (lambda sg: sg.zeros(2).masked_fill(sg.zeros(3, 2, dtype=sg.bool), 1.0), "masked_fill", ValueError),
])
def test_broadcasts_and_products_refuse_impossible_results(sg, make, op, exc):
    raises_naming(exc, op, lambda: make(sg))


def test_masked_fill_keeps_the_input_dtype_as_pytorch(sg):
    x = sg.tensor([1, 2, 3])
    out = x.masked_fill(sg.tensor([True, False, True]), 7.9)
    assert out.dtype == sg.int64 and out.tolist() == [7, 2, 7]


# ---------------------------------------------------------------- gather, scatter, index_select, one_hot

INDEX_SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


def _torch_outcome(fn):
    try:
        return fn(), None
    except (RuntimeError, IndexError, ValueError, TypeError) as e:
        return None, e


@SETTINGS
@given(x_shape=INDEX_SHAPES, i_shape=INDEX_SHAPES, dim=st.integers(-3, 2),
       low=st.sampled_from([-4, -1, 0]), high=st.sampled_from([1, 3, 5]), seed=st.integers(0, 99))
def test_gather_and_scatter_add_follow_pytorch(sg, x_shape, i_shape, dim, low, high, seed):
    if torch is None:
        pytest.skip("PyTorch is not installed: the PyTorch comparison cannot run")
    x_np = data(x_shape, seed=seed)
    idx_np = np.random.default_rng(seed).integers(low, high, size=i_shape).astype(np.int64)
    src_np = data(i_shape, seed=seed + 1)
    x, idx, src = T(sg, x_np), T(sg, idx_np), T(sg, src_np)
    before = snapshot(x, idx, src)
    tx, tidx, tsrc = torch.tensor(x_np), torch.tensor(idx_np), torch.tensor(src_np)
    for op, ours, theirs in (
            ("gather", lambda: x.gather(dim, idx), lambda: tx.gather(dim, tidx)),
            ("scatter_add", lambda: x.scatter_add(dim, idx, src), lambda: tx.scatter_add(dim, tidx, tsrc))):
        want, err = _torch_outcome(theirs)
        if err is None:
            got = ours()
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        else:
            raises_naming((ValueError, IndexError), f"{op}|index|dimension",
                          lambda ours=ours: settled(ours()))
        unchanged((x, idx, src), before)


@pytest.mark.parametrize("call, op, exc", [
    (lambda sg, x: x.index_select(0, sg.tensor([-1])), "index|out of bounds", IndexError),
    (lambda sg, x: x.index_select(1, sg.tensor([4])), "index|out of bounds", IndexError),
    (lambda sg, x: x.index_select(0, sg.tensor([[0]])), "index_select", ValueError),
    (lambda sg, x: x.index_select(0, sg.tensor([0.0])), "index_select", TypeError),
    (lambda sg, x: x.scatter_add(0, sg.tensor([0]), x), "scatter_add", ValueError),
    (lambda sg, x: x.scatter_add(0, sg.tensor([[0, 1, 2, 0, 1]]), x), "scatter_add", ValueError),
    (lambda sg, x: x.scatter_add(0, sg.tensor([[0]]), 1.0), "scatter_add", TypeError),
    (lambda sg, x: x.gather(1, sg.tensor([[0], [1], [2], [0]])), "gather", ValueError),
])
def test_index_ops_check_shapes_dims_and_values(sg, call, op, exc):
    x = T(sg, data((3, 4), seed=8))
    before = snapshot(x)
    raises_naming(exc, op, lambda: settled(call(sg, x)))
    unchanged((x,), before)


@pytest.mark.parametrize("values, classes, exc", [
    ([3], 2, ValueError), ([-1], 2, ValueError), ([-1], -1, ValueError), ([0], -2, ValueError),
    ([], -1, ValueError), ([1], 2**62, MemoryError)])
def test_one_hot_refuses_classes_out_of_range(sg, values, classes, exc):
    t = sg.tensor(values, dtype=sg.int64)
    raises_naming(exc, "one_hot", lambda: sg.nn.functional.one_hot(t, classes))


def test_cross_entropy_names_itself_for_a_bad_target(sg):
    raises_naming(IndexError, "cross_entropy", lambda: settled(sg.nn.functional.cross_entropy(
        sg.zeros(2, 3), sg.tensor([0, 5]))))


def test_one_hot_matches_pytorch(sg):
    t = sg.tensor([[0, 2], [1, 1]])
    assert sg.nn.functional.one_hot(t).tolist() == np.eye(3, dtype=np.int64)[[[0, 2], [1, 1]]].tolist()
    assert sg.nn.functional.one_hot(t, 4).shape == (2, 2, 4)


# ---------------------------------------------------------------- padding, convolution, pooling

GEOMETRY = st.sampled_from([-2, -1, 0, 1, 2, 3])


@SETTINGS
@given(k=st.sampled_from([0, 1, 2, 3]), stride=GEOMETRY, padding=GEOMETRY, dilation=GEOMETRY)
def test_window_geometry_follows_pytorch(sg, k, stride, padding, dilation):
    if torch is None:
        pytest.skip("PyTorch is not installed: the PyTorch comparison cannot run")
    x_np, w_np = data((1, 2, 5, 5), seed=4), data((3, 2, k, k), seed=5)
    x, w = T(sg, x_np), T(sg, w_np)
    F, tF = sg.nn.functional, torch.nn.functional
    tx, tw = torch.tensor(x_np), torch.tensor(w_np)
    before = snapshot(x, w)
    cases = (
        ("conv2d", lambda: F.conv2d(x, w, stride=stride, padding=padding, dilation=dilation),
         lambda: tF.conv2d(tx, tw, stride=stride, padding=padding, dilation=dilation)),
        ("unfold", lambda: F.unfold(x, k, dilation=dilation, padding=padding, stride=stride),
         lambda: tF.unfold(tx, k, dilation=dilation, padding=padding, stride=stride)),
        ("max_pool2d", lambda: F.max_pool2d(x, k, stride=stride, padding=padding, dilation=dilation),
         lambda: tF.max_pool2d(tx, k, stride=stride, padding=padding, dilation=dilation)),
        ("avg_pool2d", lambda: F.avg_pool2d(x, k, stride=stride, padding=padding),
         lambda: tF.avg_pool2d(tx, k, stride=stride, padding=padding)))
    for op, ours, theirs in cases:
        want, err = _torch_outcome(theirs)
        if err is None:
            np.testing.assert_allclose(ours().numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
        else:
            raises_naming(ValueError, op, ours)
        unchanged((x, w), before)


@pytest.mark.parametrize("call, op, exc", [
    (lambda F, x: F.conv2d(x, x.new_zeros(1, 1, 1, 1), padding=2**62), "conv2d", ValueError),
    (lambda F, x: F.conv2d(x, x.new_zeros(1, 1, 1, 1), padding=2**23), "conv2d", MemoryError),
    (lambda F, x: F.conv1d(x[0], x.new_zeros(1, 1, 0), stride=1), "conv1d", ValueError),
    (lambda F, x: F.conv1d(x[0], x.new_zeros(1, 1, 2), stride=0), "conv1d", ValueError),
    (lambda F, x: F.unfold(x, 2, stride=0), "unfold", ValueError),
    (lambda F, x: F.unfold(x, 2, padding=2**23), "unfold", MemoryError),
    (lambda F, x: F.fold(x.new_zeros(1, 4, 4), (3, 3), 2, stride=0), "fold", ValueError),
    (lambda F, x: F.fold(x.new_zeros(1, 4, 4), (3, 3), 0), "fold", ValueError),
    (lambda F, x: F.fold(x.new_zeros(1, 4, 1), (2**40, 2**40), 2), "fold", ValueError),
    (lambda F, x: F.max_pool2d(x, 2, stride=0), "max_pool2d", ValueError),
    (lambda F, x: F.max_pool2d(x, 0), "max_pool2d", ValueError),
    (lambda F, x: F.max_pool2d(x, 2, dilation=0), "max_pool2d", ValueError),
    (lambda F, x: F.avg_pool2d(x, 2, padding=-1), "avg_pool2d", ValueError),
    (lambda F, x: F.adaptive_avg_pool2d(x, (2**40, 2**40)), "adaptive_avg_pool2d", ValueError),
    (lambda F, x: F.pad(x, (-5, 0)), "pad", ValueError),
    (lambda F, x: F.pad(x, (-2, -3)), "pad", ValueError),
    (lambda F, x: F.pad(x, (2**62, 0)), "pad", ValueError),
    (lambda F, x: F.pad(x, (2**40, 0)), "pad", MemoryError),
])
def test_window_geometry_and_padding_are_checked_before_any_work(sg, call, op, exc):
    x = T(sg, data((1, 1, 4, 4), seed=6))
    before = snapshot(x)
    raises_naming(exc, op, lambda: call(sg.nn.functional, x))
    unchanged((x,), before)


@SETTINGS
@given(lo=st.integers(-6, 3), hi=st.integers(-6, 3))
def test_constant_pad_matches_pytorch(sg, lo, hi):
    if torch is None:
        pytest.skip("PyTorch is not installed: the PyTorch comparison cannot run")
    a = data((2, 4), seed=7)
    want, err = _torch_outcome(lambda: torch.nn.functional.pad(torch.tensor(a), (lo, hi)))
    ours = lambda: sg.nn.functional.pad(T(sg, a), (lo, hi))  # noqa: E731
    if err is None:
        np.testing.assert_array_equal(ours().numpy(), want.numpy())
    else:
        raises_naming(ValueError, "pad", ours)


# ---------------------------------------------------------------- the shared generator

def test_default_generator_never_hands_two_threads_the_same_draw(sg):
    """Four threads drawing after one seed get, between them, exactly the numbers one
    thread gets from that seed: each draw is atomic, none is repeated or lost."""
    sizes = [257, 64, 1000, 3] * 10
    sg.manual_seed(1234)
    expected = sorted(v for n in sizes * 4 for v in sg.rand(n).tolist())
    sg.manual_seed(1234)
    got, barrier = [], threading.Barrier(4)

    def draw():
        barrier.wait()
        mine = [v for n in sizes for v in sg.rand(n).tolist()]
        got.extend(mine)
    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == expected


def test_generators_copy_and_pickle_with_a_lock_of_their_own(sg):
    import copy
    import pickle
    g = sg.Generator(5)
    for twin in (copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert twin.get_state() == g.get_state()
        assert sg.rand(4, generator=twin).tolist() == sg.rand(4, generator=copy.deepcopy(g)).tolist()


# ---------------------------------------------------------------- NumPy interop

@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_np_asarray_gives_a_numeric_array(sg, dtype):
    a = data((2, 3), dtype=dtype, seed=9)
    t = T(sg, a)
    got = np.asarray(t)
    assert got.dtype == a.dtype and got.tolist() == a.tolist()
    assert np.asarray(t.T).tolist() == a.T.tolist()
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array([t, t]).shape == (2, 2, 3)


@pytest.mark.capability("buffer_protocol")
def test_np_asarray_shares_memory_where_the_stage_exports_it(sg):
    t = sg.zeros(2, 3)
    arr = np.asarray(t)
    arr[1, 2] = 5.0
    assert t[1, 2].item() == 5.0 and arr.ctypes.data == t.data_ptr()


def test_np_asarray_of_a_tensor_that_requires_grad_is_refused(sg):
    with pytest.raises(RuntimeError, match="grad"):
        np.asarray(sg.ones(2, requires_grad=True))


# ---------------------------------------------------------------- crashes, in a subprocess

# Calls that crashed (or hung in) a stage before the checks above existed. Each runs in
# one subprocess per stage: a segfault fails the test and names the call.
CRASHERS = [
    ("zeros(2**62 + 1)", "sg.zeros(2**62 + 1)"),
    ("arange(2**62)", "sg.arange(2**62)"),
    ("zeros(2**32, 2**32)[5, 5]", "sg.zeros(2**32, 2**32)[5, 5].item()"),
    ("reshape to 2**64", "sg.zeros(0).reshape(2**32, 2**32)"),
    ("expand to 2**64", "sg.zeros(1, 1).expand(2**32, 2**32)"),
    ("randint 2**64", "sg.randint(0, 5, (2**32, 2**32))[0, 1].item()"),
    ("pad 2**62", "sg.nn.functional.pad(sg.zeros(2, 2), (2**62, 0))"),
    ("conv padding 2**62", "sg.nn.functional.conv2d(sg.zeros(1, 1, 3, 3), sg.zeros(1, 1, 1, 1), padding=2**62)"),
    ("scatter_add index ndim", "sg.zeros(3).scatter_add(0, sg.tensor([[0]]), sg.ones(3))"),
    ("scatter_add index > src", "sg.zeros(3).scatter_add(0, sg.tensor([0, 1, 2, 0, 0]), sg.ones(3))"),
    ("scatter_add index > self", "sg.zeros(2, 1).scatter_add(1, sg.zeros(5, 1, dtype=sg.int64), sg.ones(5, 1))"),
    ("unfold stride 0", "sg.nn.functional.unfold(sg.zeros(1, 1, 4, 4), 2, stride=0)"),
    ("backend full 2**61", "sg.backend.full((2**61,), 0.0, sg.float32)"),
    ("backend full past the pool's table", "sg.backend.full((2**46 + 1,), 0.0, sg.float32)"),
    ("backend expand 2**64", "sg.backend.expand(sg.zeros(1)._data, (2**32, 2**32))"),
    ("backend gather ndim", "sg.backend.gather(sg.zeros(3)._data, 0, sg.zeros(1, 1, dtype=sg.int64)._data)"),
    ("backend scatter_add src", "sg.backend.scatter_add((3,), 0, sg.zeros(5, dtype=sg.int64)._data, sg.ones(2)._data)"),
]
RUNNER = r"""
import json, sys, importlib
sg = importlib.import_module(sys.argv[1])
buffers = sys.modules[type(sg.zeros(1)._data).__module__]  # the stage's Buffer type lives here
for name, code in json.loads(sys.stdin.read()):
    print("START " + name, flush=True)
    try:
        r = eval(code)
        out = "ok " + str(getattr(r, "shape", r))[:80]
    except BaseException as e:
        out = type(e).__name__ + ": " + str(e)[:200]
    print("DONE " + json.dumps([name, out]), flush=True)
"""


def run_isolated(stage, cases, timeout=120):
    """Run ``(name, expression)`` cases in a fresh interpreter: {name: outcome}. A crash or
    a hang fails the test, naming the case that was running."""
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER, stage], input=json.dumps(cases),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        started = [ln[6:] for ln in (e.stdout or b"").decode().splitlines() if ln.startswith("START ")]
        pytest.fail(f"{stage} hung on {started[-1] if started else 'start-up'}")
    outcomes = dict(json.loads(ln[5:]) for ln in proc.stdout.splitlines() if ln.startswith("DONE "))
    if proc.returncode != 0:
        started = [ln[6:] for ln in proc.stdout.splitlines() if ln.startswith("START ")]
        pytest.fail(f"{stage} died (exit {proc.returncode}) on {started[-1] if started else '?'}: "
                    f"{proc.stderr[-500:]}")
    return outcomes


def test_calls_that_once_crashed_now_raise_clean_errors(sg):
    cases = [c for c in CRASHERS if not c[0].startswith("backend") or "buffer_protocol" not in sg.LACKS]
    outcomes = run_isolated(sg.__name__, cases)
    for name, _ in cases:
        out = outcomes[name]
        # ShapeError and ArgumentError are the stages' ValueErrors for shapes and arguments (also
        # RuntimeErrors, as PyTorch's)
        assert re.match(r"(ValueError|ShapeError|ArgumentError|MemoryError|IndexError|TypeError): ", out), \
            f"{name}: {out}"


@pytest.mark.capability("buffer_protocol")
def test_compiled_views_never_reach_outside_their_storage(sg):
    """The backstop under the frontend's checks: a view is made only if every element it
    addresses lies in its storage (an unpickled or hand-made layout included)."""
    cases = [
        ("stride past the end", "buffers.view(sg.zeros(4)._data, (2,), (4,), 0)"),
        ("negative reach", "buffers.view(sg.zeros(4)._data, (3,), (-1,), 1)"),
        ("offset past the end", "buffers.view(sg.zeros(4)._data, (1,), (1,), 4)"),
        ("overflowing reach", "buffers.view(sg.zeros(4)._data, (2**40, 2**40), (2**40, 1), 0)"),
        ("unpickled layout", "(lambda f, a: f(a[0], (5,), (1,), 0, a[4]))(*sg.zeros(2)._data.__reduce__())"),
        ("within bounds", "buffers.view(sg.zeros(4)._data, (2,), (-2,), 3).shape"),
    ]
    outcomes = run_isolated(sg.__name__, cases)
    for name, _ in cases[:-1]:
        assert outcomes[name].startswith("ValueError: "), f"{name}: {outcomes[name]}"
    assert outcomes["within bounds"] == "ok (2,)"
