"""No host synchronization inside a training step on the cuda device: index values are
checked on the device and raised at the next synchronization, and
``sg.cuda.set_sync_debug_mode`` reports every operation that waits, as PyTorch's does.

The cuda part runs ``cuda_sync_worker.py`` in a subprocess with the host emulation of CuPy
(``tools/cuda_on_host``) first on ``PYTHONPATH``, since the suite's own process has no GPU;
every kernel runs there on the CPU. Its oracles: the same training step on the ``cpu``
device (stage 3's kernels) from the same weights, and the values the CPU computes. The
static part checks that the kernels' error codes and the runtime's table agree, and the
sync debug mode's names on every stage.
"""
import importlib
import os
import re
from pathlib import Path

import pytest

from .emulation import run_emulated

WORKER = Path(__file__).with_name("cuda_sync_worker.py")
ZOO = ("resnet18", "mobilenet_v2", "mnist_cnn", "gpt", "lstm_lm")  # the zoo's, and train's CNN
pytestmark = pytest.mark.xdist_group("cuda_sync")  # one worker runs the emulated program once
SUFFIX = r" \(checked on the cuda device by a {} kernel queued before this synchronization; .* run it\)$"


@pytest.fixture(scope="module")
def emulated():
    """What the worker saw on stage 4's cuda device under the host emulation of CuPy."""
    return run_emulated([str(WORKER)])


def _part(emulated, name):
    part = emulated[name]
    assert "error" not in part, part.get("error")
    return part


# ---------------------------------------------------------------- a training step, in "error" mode

@pytest.mark.parametrize("model", ZOO)
def test_a_zoo_training_step_on_cuda_makes_no_synchronization(emulated, model):
    """Forward, cross-entropy, backward and the optimizer's step (SGD with momentum for the
    image models, AdamW for the language models) under ``set_sync_debug_mode("error")``:
    nothing waits (any wait would have raised), and the loss and every parameter after the
    step match the same step on the cpu device."""
    got = _part(emulated, "steps")[model]
    assert "error" not in got, got.get("error")
    assert got["syncs"] == 0
    assert got["launches"] > 10
    assert got["loss"] == pytest.approx(got["cpu_loss"], rel=1e-4, abs=1e-5)
    assert got["param_diff"] <= 1e-4 * max(1.0, got["param_scale"]), got


# ---------------------------------------------------------------- out-of-range values

def _raised_at_read(got, op, text):
    """The operation neither waited nor raised; the read after it raised IndexError (and
    RuntimeError, PyTorch's type for a device-side assert) in the CPU's words, naming the
    kernel that found the value."""
    assert got["at_op"] is None and got["op_syncs"] == 0, got
    assert got["at_read"] is not None, got
    assert re.match(f"^{op}: {text}{SUFFIX.format(op)}", got["at_read"]), got["at_read"]
    assert {"IndexError", "RuntimeError"} <= set(got["read_type"])


def test_an_out_of_range_gather_index_raises_at_the_next_synchronization(emulated):
    got = _part(emulated, "checks")
    _raised_at_read(got["gather"], "gather", "index 9 is out of bounds for dimension 1 with size 4")
    assert got["gather_after"] == [[0.0, 3.0], [5.0, 6.0]]  # the device computes on after it


def test_an_out_of_range_embedding_index_raises_at_the_next_read(emulated):
    """Embedding's rows are a gather: the frontend does not read the indices first on this
    device, and a negative index is refused, not counted from the end."""
    got = _part(emulated, "checks")
    _raised_at_read(got["embedding"], "gather", "index 7 is out of bounds for dimension 0 with size 5")
    assert "embedding" in got["embedding"]["at_read"]
    _raised_at_read(got["embedding_negative"], "gather",
                    "index -2 is out of bounds for dimension 0 with size 5")
    assert got["embedding_after"] == [[12.0, 13.0, 14.0], [0.0, 1.0, 2.0]]


def test_an_out_of_range_cross_entropy_target_raises_at_the_next_read(emulated):
    got = _part(emulated, "checks")
    _raised_at_read(got["cross_entropy"], "cross_entropy", "target 4 is out of bounds for 4 classes")
    assert got["cross_entropy_after"] == pytest.approx(got["cross_entropy_cpu"], rel=1e-6)


def test_the_other_checking_kernels_raise_at_the_next_read(emulated):
    got = _part(emulated, "checks")
    _raised_at_read(got["scatter_add"], "scatter_add", "index 3 is out of bounds for dimension 0 with size 3")
    _raised_at_read(got["take"], "take", "index 6 is out of bounds for a tensor with size 6")
    _raised_at_read(got["put"], "put", "index -1 is out of bounds for a tensor with size 6")
    assert got["put_after"] == [0.0, 5.0, 0.0, 0.0, 0.0, 0.0]  # the bad value skipped, not wrapped


def test_the_first_failure_is_raised_once_and_the_device_stays_usable(emulated):
    got = _part(emulated, "checks")
    _raised_at_read(got["first_wins"], "gather", "index 5 is out of bounds for dimension 1 with size 4")
    for case in ("clear_after", "null_after"):
        assert got[case]["at_read"] is None, (case, got[case])


def test_checks_do_not_wait_in_error_mode_and_record_nothing_in_null_mode(emulated):
    got = _part(emulated, "checks")
    assert got["in_error_mode"]["at_op"] is None and got["in_error_mode"]["op_syncs"] == 0
    _raised_at_read(got["in_error_mode_read"], "gather",
                    "index 4 is out of bounds for dimension 1 with size 4")
    assert got["null"]["at_op"] is None and got["null"]["at_read"] is None  # no kernel ran


# ---------------------------------------------------------------- the sync debug mode

def test_item_warns_under_warn_raises_under_error_and_neither_by_default(emulated):
    got = _part(emulated, "modes")
    for key in ("item", "numbered"):
        default, warn, error = (got[key][m] for m in (("default", "warn", "error") if key == "item"
                                                        else ("0", "1", "2")))
        assert (default["mode"], warn["mode"], error["mode"]) == (0, 1, 2)
        assert default == {"mode": 0, "value": 6.0, "warnings": [], "error": None, "syncs": 1}
        assert warn["value"] == 6.0 and warn["error"] is None and warn["syncs"] == 1
        assert len(warn["warnings"]) == 1
        assert re.match(r"UserWarning: called a synchronizing CUDA operation: a read of 1 element\(s\) back",
                        warn["warnings"][0])
        assert error["value"] is None and error["warnings"] == [] and error["syncs"] == 0
        assert re.match(r"RuntimeError: called a synchronizing CUDA operation: a read of 1 element",
                        error["error"])


def test_the_mode_flags_reads_and_copies_but_not_an_explicit_synchronize(emulated):
    """As PyTorch's: ``torch.cuda.synchronize()`` is not flagged (it is counted here), a read
    back and a blocking copy to the host are; queued work is neither."""
    got = _part(emulated, "modes")
    assert got["synchronize"]["error"] is None and got["synchronize"]["syncs"] == 1
    assert "a read of 1 element" in got["tolist"]["error"]
    assert [w for w in got["cpu"]["warnings"] if "a blocking copy to the host" in w]
    assert got["queued"] == {"mode": 2, "value": [], "warnings": [], "error": None, "syncs": 0}
    assert got["refused"] == "invalid value of debug_mode, expected one of `default`, `warn`, `error`"
    assert got["after_refusal"] == 0


def test_every_sync_debug_mode_is_accepted_on_every_stage(sg):
    """The names and numbers PyTorch takes, and its refusals; a stage without a GPU keeps
    the mode (nothing there waits)."""
    before = sg.cuda.get_sync_debug_mode()
    try:
        for mode, number in (("warn", 1), ("error", 2), ("default", 0), (2, 2), (1, 1), (0, 0)):
            sg.cuda.set_sync_debug_mode(mode)
            assert sg.cuda.get_sync_debug_mode() == number
        for bad, words in (("loud", "expected one of `default`, `warn`, `error`"),
                           (3, "expected one of 0,1,2"), (1.0, "debug_mode type is float")):
            with pytest.raises(RuntimeError, match=re.escape(words)):
                sg.cuda.set_sync_debug_mode(bad)
        assert sg.cuda.get_sync_debug_mode() == 0
        assert sg.cuda.set_sync_debug_mode.__doc__ and sg.cuda.get_sync_debug_mode.__doc__
    finally:
        sg.cuda.set_sync_debug_mode(before)


# ---------------------------------------------------------------- the codes, statically

def test_the_kernels_error_codes_are_the_runtimes():
    """common.cuh's CHECK_* codes name the operations the runtime's CHECKS table names."""
    try:
        kernels = importlib.import_module("stage4_gpu.cuda.kernels")
        runtime = importlib.import_module("stage4_gpu.cuda.runtime")  # the module, not its function
    except ImportError as e:
        pytest.skip(f"stage4_gpu does not import here: {e}")
    with open(os.path.join(kernels.DIR, "common.cuh"), encoding="utf-8") as f:
        codes = {int(n): name.lower() for name, n in re.findall(r"#define CHECK_(\w+) (\d+)", f.read())}
    assert codes == {code: op for code, (op, _, _) in runtime.CHECKS.items()}
