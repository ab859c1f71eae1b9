"""CUDA graphs: ``sg.cuda.CUDAGraph``, ``with sg.cuda.graph(g):``, ``graph_pool_handle``,
``is_current_stream_capturing``, ``make_graphed_callables`` and ``stagegrad train
--cuda-graph``.

The suite's own process has no GPU, so the cuda part runs ``cuda_graphs_worker.py`` in a
subprocess with the host emulation of CuPy (``tools/cuda_on_host``) first on
``PYTHONPATH``: there the emulated stream records each launch's arguments by value while
capturing and its graph replays the records, the path a GPU's driver takes. Every replayed
result is checked against the cpu device (the same steps run eagerly) or exact arithmetic;
no timing is asserted. Without a cuda device every stage refuses graphs, as a CPU-only
PyTorch build does.
"""
import argparse
from pathlib import Path

import numpy as np
import pytest

from stagegrad import train

from .emulation import run_emulated

WORKER = Path(__file__).with_name("cuda_graphs_worker.py")
CAPTURING = "operation not permitted when stream is capturing"
NOT_CAPTURED = "no graph has been captured"


@pytest.fixture(scope="module")
def emulated():
    """What the worker saw on stage 4's cuda device under the host emulation of CuPy."""
    return run_emulated([str(WORKER)])


def _seen(emulated, check):
    """One check's result; its traceback as the failure where it raised."""
    out = emulated[check]
    if "error" in out:
        pytest.fail(f"{check} raised under the emulation:\n{out['error']}")
    return out


def _close(got, want, rtol=1e-5, atol=1e-6):
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=rtol, atol=atol)


def test_replays_of_a_captured_training_step_match_eager_steps_on_the_cpu(emulated):
    """Two eager steps, then the step (forward, cross-entropy, backward, SGD with momentum)
    captured once and replayed for four batches copied into its static inputs: the six
    losses and the weights match six eager steps on the cpu device."""
    out = _seen(emulated, "step_replays")
    _close(out["replayed"], out["eager"])
    _close(out["gpu_weights"], out["cpu_weights"])
    assert out["capturing_inside"] is True and out["capturing_after"] is False


def test_a_replay_computes_on_the_values_copied_into_the_static_input(emulated):
    for values, y in _seen(emulated, "new_data")["seen"]:
        assert y == [2 * v + 1 for v in values]


def test_a_captured_copy_from_pinned_memory_reads_it_at_every_replay(emulated):
    for values, y in _seen(emulated, "pinned_input")["seen"]:
        assert y == [2 * v for v in values]


def test_memory_allocated_in_a_capture_is_not_handed_to_eager_tensors(emulated):
    """Intermediates freed inside the capture keep their memory for the graph: tensors of
    their size allocated and filled between replays keep their values, and the output
    (a sum, exact in float32) is right every time; a graph sharing the pool reads it."""
    out = _seen(emulated, "private_pool")
    assert len(out["rounds"]) == 3
    for r in out["rounds"]:
        assert r["junk_kept"], r
        assert r["y"] == r["want"] and r["z"] == r["want"] - 1, r
    assert out["pool_shared"] and out["handle"].startswith("<cuda graph pool")


def test_host_made_tensors_in_a_capture_are_replayed_with_their_captured_values(emulated):
    for x, y in _seen(emulated, "host_constants")["seen"]:
        assert y == [v + c * i + 0.5 for i, (v, c) in enumerate(zip(x, [1.0, 2.0, 3.0, 4.0]))]


def test_a_host_synchronization_inside_a_capture_is_refused_and_the_runtime_recovers(emulated):
    """``.item()``, ``synchronize()`` and ``.cpu()`` inside ``with sg.cuda.graph(g):`` raise
    RuntimeError naming the operation; the capture is over, the graph holds nothing to
    replay, and eager work and a new capture run right after. Captured by hand,
    ``capture_end`` says the capture was ended early. An AdamW step is refused inside a
    capture (its bias correction comes from its step count), an SGD step is not."""
    out = _seen(emulated, "sync_refused")
    for op, named in (("item", ".item()"), ("synchronize", "synchronize"), ("cpu", "device to host memory")):
        seen = out[op]
        assert CAPTURING in seen["error"] and named in seen["error"], seen["error"]
        assert seen["capturing_after"] is False
        assert NOT_CAPTURED in seen["replay"]
        assert seen["eager_after"] == [3.0] * 4
    assert CAPTURING in out["by_hand"]["error"] and "ended early" in out["by_hand"]["capture_end"]
    assert out["captured_after"] == [4.0] * 4 and out["after_reset"] == [6.0] * 4
    assert NOT_CAPTURED in out["replay_before_capture"]
    assert "captures do not nest" in out["nested"][0] and out["nested"][1] is False
    assert "already holds a capture" in out["capture_twice"]
    refused, capturing = out["adamw_step"]
    assert "graph capture of step() for an instance of AdamW" in refused and "step count" in refused
    assert capturing is False and out["sgd_step"] == [None, False]


def test_in_null_mode_each_replay_counts_the_launches_of_an_eager_step(emulated):
    out = _seen(emulated, "null_launches")
    step = out["eager"][-1]
    assert step > 10 and out["during_capture"] == 0
    assert out["replays"] == [step] * 3
    assert "null launch mode" in out["null_graph_in_driver_mode"]


def test_make_graphed_callables_trains_as_the_eager_module_on_the_cpu(emulated):
    """A module graphed by ``make_graphed_callables`` (forward and backward each one
    replay) trains as the eager module does on the cpu device, and in eval mode runs its
    own forward; a graphed function passes its input's gradient back."""
    out = _seen(emulated, "graphed_callables")
    _close(out["losses"]["gpu"], out["losses"]["cpu"])
    _close(out["weights"]["gpu"], out["weights"]["cpu"])
    _close(out["eval"]["gpu"], out["eval"]["cpu"])
    _close(out["function"]["gpu"], out["function"]["cpu"])


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_train_cuda_graph_matches_eager_training_on_the_cpu(emulated, optimizer):
    """``stagegrad train --cuda-graph`` (one capture, every full batch after the warm-up
    replayed, the short last batch of each epoch eager) ends where the same run on the
    cpu device does: its loss, accuracy and weights; with SGD at a constant rate the graph
    holds the optimizer's step, with AdamW on the cosine schedule the optimizer steps
    eagerly after each replay, with its step count and rate of the moment."""
    out = _seen(emulated, "train_cli")[optimizer]
    eager, graphed = out["eager"], out["graphed"]
    assert eager["graph_calls"] == {"capture_begin": 0, "replay": 0}
    # 72 images in batches of 16, two epochs: 3 eager steps, the capture, then 1 + 4 replays
    assert graphed["graph_calls"] == {"capture_begin": 1, "replay": 5}
    assert graphed["seen"] == eager["seen"] == 144
    np.testing.assert_allclose(graphed["final_loss"], eager["final_loss"], rtol=1e-5)
    assert abs(graphed["test_accuracy"] - eager["test_accuracy"]) <= 1 / 40
    assert graphed["weights"].keys() == eager["weights"].keys()
    _close([graphed["weights"][k] for k in eager["weights"]], list(eager["weights"].values()))


# ------------------------------------------------------------------ without a cuda device

def test_without_a_cuda_device_graphs_are_refused(sg):
    """As on a CPU-only PyTorch build: making a graph, a pool or graphed callables raises
    (an AssertionError and a RuntimeError, naming the call), and nothing is capturing."""
    if sg.cuda.is_available():
        pytest.skip(f"{sg.__name__} has a usable CUDA GPU here: graphs work (the emulated tests above)")
    calls = {"CUDAGraph": lambda: sg.cuda.CUDAGraph(), "graph": lambda: sg.cuda.graph(None),
             "graph_pool_handle": sg.cuda.graph_pool_handle,
             "make_graphed_callables": lambda: sg.cuda.make_graphed_callables(lambda x: x, (sg.ones(2),))}
    for name, call in calls.items():
        with pytest.raises(AssertionError, match=f"cuda.{name}:.*CPU") as e:
            call()
        assert isinstance(e.value, RuntimeError)
    assert sg.cuda.is_current_stream_capturing() is False


def _train_args(sg, *argv):
    p = argparse.ArgumentParser()
    train.add_arguments(p)
    return p.parse_args(["--stage", sg.__name__, "--subset", "16", "--test-subset", "16", *argv])


def test_train_cuda_graph_needs_a_cuda_device(sg):
    if sg.cuda.is_available():
        pytest.skip(f"{sg.__name__} has a usable CUDA GPU here")
    with pytest.raises(ValueError, match="--cuda-graph trains on the cuda device, which .* cannot use here"):
        train.run(_train_args(sg, "--cuda-graph"))


def test_train_cuda_graph_is_an_image_model_option(sg):
    with pytest.raises(ValueError, match="--cuda-graph.*the image models' options"):
        train.run(_train_args(sg, "--model", "gpt", "--cuda-graph"))


def test_a_captured_step_refuses_a_model_that_drops_units(sg):
    """A dropout mask is drawn on the host: captured, every replay would drop the same units."""
    from stagegrad.training import CapturedStep
    nn = sg.nn
    dropping = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    with pytest.raises(ValueError, match="--cuda-graph .* Dropout draws a new mask every step"):
        CapturedStep(sg, dropping, sg.optim.SGD(dropping.parameters(), lr=0.1))
    idle = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.0))  # drops nothing: nothing to freeze
    assert CapturedStep(sg, idle, sg.optim.SGD(idle.parameters(), lr=0.1)).graph is None
