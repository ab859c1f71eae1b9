"""``sg.memory``: allocation statistics on every stage, and (on stages with a pool)
reuse of dead tensors' memory that never disturbs a live tensor."""
import gc
import threading

import numpy as np
import pytest

from .helpers_core import T, assert_close, data

pool = pytest.mark.capability("pool")
KEYS = {"hits", "misses", "allocations", "bytes_in_use", "peak_bytes_in_use", "bytes_held_by_pool"}


@pytest.fixture(autouse=True)
def _fresh_pool(request):
    """Each test starts from an empty, enabled pool with the default limit, and leaves
    it that way. The pool is the host's: on a device run, these tests make their tensors
    on the CPU (the webgpu device's allocator has its own tests)."""
    if "sg" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("sg").set_default_device(None)
    mem = request.getfixturevalue("sg").memory
    gc.collect()
    mem.set_pool_enabled(True)
    mem.empty_cache()
    mem.reset_stats()
    yield
    mem.set_pool_enabled(True)
    mem.set_pool_limit(256 * 2**20)
    mem.empty_cache()


def test_stats_are_consistent(sg):
    s = sg.memory.stats()
    assert set(s) == KEYS
    assert all(isinstance(v, int) and v >= 0 for v in s.values())
    x = sg.ones(1000)  # float32: 4000 bytes
    s = sg.memory.stats()
    assert s["allocations"] == s["hits"] + s["misses"] >= 1
    assert s["bytes_in_use"] >= 4000
    assert s["peak_bytes_in_use"] >= s["bytes_in_use"]
    del x


@pytest.mark.capability("float64")
def test_bytes_in_use_falls_when_tensors_die(sg):
    base = sg.memory.stats()["bytes_in_use"]
    xs = [sg.zeros(500, dtype=sg.float64) for _ in range(4)]
    assert sg.memory.stats()["bytes_in_use"] >= base + 4 * 500 * 8
    del xs
    gc.collect()
    s = sg.memory.stats()
    assert s["bytes_in_use"] == base
    assert s["peak_bytes_in_use"] >= base + 4 * 500 * 8


def test_reset_stats_restarts_counting(sg):
    x = sg.ones(100)
    sg.memory.reset_stats()
    s = sg.memory.stats()
    assert s["allocations"] == s["hits"] == s["misses"] == 0
    assert s["peak_bytes_in_use"] == s["bytes_in_use"] >= 400
    del x


def test_pool_settings_check_their_argument(sg):
    with pytest.raises(ValueError):
        sg.memory.set_pool_limit(-1)


@pool
def test_freed_storage_is_reused(sg):
    x = sg.ones(2048)
    del x
    before = sg.memory.stats()
    assert before["bytes_held_by_pool"] >= 2048 * 4
    y = sg.full((2048,), 3.0)
    after = sg.memory.stats()
    assert after["hits"] == before["hits"] + 1
    assert after["bytes_held_by_pool"] == before["bytes_held_by_pool"] - 2048 * 4
    assert y.tolist() == [3.0] * 2048  # the old contents are overwritten


@pool
def test_reuse_never_corrupts_live_tensors(sg):
    rng = np.random.default_rng(0)
    live = {}
    for step in range(60):
        shape = (int(rng.integers(1, 4)), 8)
        a = rng.standard_normal(shape).astype(np.float32)
        t = T(sg, a) * 2.0 + 1.0  # temporaries die at once and feed the pool
        live[step] = (t, a * 2.0 + 1.0, t[:, ::3], t.t())
        if rng.random() < 0.5 and live:
            del live[int(rng.choice(list(live)))]
        for t, expected, cols, tr in live.values():
            assert_close(t, expected)
            assert_close(cols, expected[:, ::3])
            assert_close(tr, expected.T)
    assert sg.memory.stats()["hits"] > 0


@pool
def test_storage_of_a_live_view_is_not_reused(sg):
    a = data((64,), seed=1)
    v = T(sg, a)[10:20]  # the base tensor dies here, its storage lives on in v
    gc.collect()
    held = sg.memory.stats()["bytes_held_by_pool"]
    others = [sg.full((64,), 9.0) for _ in range(5)]
    assert_close(v, a[10:20])
    assert sg.memory.stats()["bytes_held_by_pool"] <= held
    del others


@pool
def test_disabled_pool_holds_and_reuses_nothing(sg):
    sg.memory.set_pool_enabled(False)
    for _ in range(5):
        x = sg.ones(300)
        del x
    s = sg.memory.stats()
    assert s["hits"] == 0 and s["bytes_held_by_pool"] == 0
    sg.memory.set_pool_enabled(True)
    x = sg.ones(300)
    del x
    y = sg.ones(300)
    assert sg.memory.stats()["hits"] == 1
    del y


@pool
def test_pool_limit_bounds_what_is_held(sg):
    xs = [sg.ones(1000 + i) for i in range(20)]  # about 80 KB in 20 size classes
    del xs
    assert sg.memory.stats()["bytes_held_by_pool"] > 40_000
    keep = sg.ones(1000)  # empties one class again
    sg.memory.set_pool_limit(10_000)
    assert sg.memory.stats()["bytes_held_by_pool"] <= 10_000
    ys = [sg.ones(3000) for _ in range(10)]
    del ys
    assert sg.memory.stats()["bytes_held_by_pool"] <= 10_000
    sg.memory.empty_cache()
    assert sg.memory.stats()["bytes_held_by_pool"] == 0
    assert keep.tolist() == [1.0] * 1000


@pool
def test_pool_is_safe_under_threads(sg):
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(40):
                a = rng.standard_normal((int(rng.integers(1, 5)), 16)).astype(np.float32)
                t = (T(sg, a) + 1.0) * 0.5
                np.testing.assert_allclose(t.numpy(), (a + 1.0) * 0.5, rtol=1e-6)
        except Exception as e:  # reported in the main thread
            errors.append(e)

    base = sg.memory.stats()["bytes_in_use"]
    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    gc.collect()
    s = sg.memory.stats()
    assert s["hits"] > 0
    assert s["bytes_in_use"] == base


@pool
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_training_reaches_a_steady_state_served_by_the_pool(sg, kind):
    """After its second step a training loop (data loading, forward, loss, backward, AdamW)
    takes no new memory from the system: every request is a pooled block."""
    from stagegrad.training import build_model
    sg.manual_seed(0)
    # small batches: the steady state is about which blocks are asked for, not their size
    dataset = sg.utils.data.TensorDataset(sg.randn(32, 1, 28, 28), sg.randint(0, 10, (32,)))
    loader = sg.utils.data.DataLoader(dataset, batch_size=8, shuffle=True)
    model = build_model(sg, kind)
    opt = sg.optim.AdamW(model.parameters(), lr=1e-3)
    for step, (x, y) in enumerate(b for epoch in range(2) for b in loader):
        if step == 2:
            sg.memory.reset_stats()
        loss = sg.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
    s = sg.memory.stats()
    assert s["misses"] == 0 and s["hits"] > 6 * 10, s
