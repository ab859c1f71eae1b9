"""The program ``test_cuda_sync.py`` runs on stage 4's cuda device under the host emulation
of CuPy (``tools/cuda_on_host`` first on ``PYTHONPATH``): ``python cuda_sync_worker.py``.
It prints one JSON object of what it saw as its last line, one entry per part; a part that
raised holds the error instead, so that each test reports its own part's failure.

- ``steps``: one training step (forward, cross-entropy, backward, optimizer step) of every
  model of the zoo, small, and of ``stagegrad train``'s MNIST CNN, on ``cuda`` under
  ``set_sync_debug_mode("error")`` and on the ``cpu`` device from the same weights: the
  step's launches and synchronizations, its loss (read after the mode is set back) and its
  parameters after the step, on both;
- ``checks``: out-of-range index values on ``cuda`` (gather, embedding, cross-entropy
  targets, scatter_add, and the take and put primitives): whether the operation waited or
  raised, what the next synchronization raised, and what the device computed after it;
- ``modes``: ``.item()`` and the other synchronizing calls under each sync debug mode.
"""
import json
import traceback
import warnings

import numpy as np

import stage4_gpu as sg
from stagegrad import zoo


def _cnn():
    """``stagegrad train``'s MNIST CNN, the zoo-steps table's model beside the zoo's."""
    from stagegrad.training import build_model
    return build_model(sg, "cnn")


def _tokens(shape, vocab, seed):
    return np.random.default_rng(seed).integers(0, vocab, shape).astype(np.int64)


def _images(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# each model of the zoo, small: (build, input, targets, optimizer); the language models'
# targets are the next tokens, one per position. The image models see one image: with more,
# a convolution's weight gradient is a sum over the batch with one block of 256 threads per
# weight, which the emulation runs thread by thread (minutes for MobileNetV2's head)
MODELS = {
    "resnet18": (lambda z: z.resnet.resnet18(5, in_channels=1, small_input=True, width=4),
                 _images((1, 1, 12, 12), 1), np.array([1]), "sgd"),
    "mobilenet_v2": (lambda z: z.mobilenet.mobilenet_v2(num_classes=4, in_channels=1, width_mult=0.1,
                                                        small_input=True, dropout=0.0),
                     _images((1, 1, 32, 32), 2), np.array([3]), "sgd"),
    "mnist_cnn": (lambda z: _cnn(), _images((1, 1, 28, 28), 7), np.array([6]), "sgd"),
    "gpt": (lambda z: z.gpt.GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8, dropout=0.0),
            _tokens((2, 6), 11, 3), _tokens((2, 6), 11, 4), "adamw"),
    "lstm_lm": (lambda z: z.lstm_lm.LSTMLanguageModel(9, n_embd=4, hidden_size=6, num_layers=1),
                _tokens((2, 5), 9, 5), _tokens((2, 5), 9, 6), "adamw"),
}


def _loss(model, x, y):
    """Cross-entropy of the logits over every sample (and every position of a sequence)."""
    out = model(x)
    logits = out[0] if isinstance(out, tuple) else out  # the LSTM returns its state too
    return sg.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _step(name, device):
    """One training step of model ``name`` on ``device`` from the same initial weights."""
    build, x_np, y_np, kind = MODELS[name]
    sg.manual_seed(0)
    model = build(zoo.models(sg)).to(device)
    model.train()
    params = list(model.parameters())
    # AdamW's eps is large so that its first step is continuous in the gradient: with a tiny
    # eps it moves by about lr whatever the gradient's size, so a gradient near 0 whose sign
    # rounding decides would decide a whole step
    opt = (sg.optim.SGD(params, lr=0.1, momentum=0.9) if kind == "sgd"
           else sg.optim.AdamW(params, lr=1e-2, eps=1e-3))
    x, y = sg.from_numpy(x_np).to(device), sg.from_numpy(y_np).to(device)
    cuda = device == "cuda"
    if cuda:
        sg.cuda.synchronize()  # the copies and the initial weights, before counting
        syncs, launches = sg.cuda._sync_count(), sg.cuda._launch_count()
        sg.cuda.set_sync_debug_mode("error")
    try:
        opt.zero_grad()
        loss = _loss(model, x, y)
        loss.backward()
        opt.step()
    finally:
        if cuda:
            sg.cuda.set_sync_debug_mode("default")
    out = {}
    if cuda:  # counted before anything is read back
        out["syncs"] = sg.cuda._sync_count() - syncs
        out["launches"] = sg.cuda._launch_count() - launches
    out["loss"] = loss.item()
    out["params"] = [p.detach().cpu().numpy().ravel().tolist() for p in params]
    return out


def steps():
    """Each zoo model's step on cuda, in "error" mode, and on the cpu device."""
    out = {}
    for name in MODELS:
        try:
            ours, cpu = _step(name, "cuda"), _step(name, "cpu")
            cpu_params = np.concatenate([np.asarray(p, np.float64) for p in cpu["params"]])
            cuda_params = np.concatenate([np.asarray(p, np.float64) for p in ours["params"]])
            out[name] = {"loss": ours["loss"], "cpu_loss": cpu["loss"], "syncs": ours["syncs"],
                         "launches": ours["launches"],
                         "param_diff": float(np.max(np.abs(cuda_params - cpu_params))),
                         "param_scale": float(np.max(np.abs(cpu_params)))}
        except Exception:  # noqa: BLE001  (reported to the test, which shows it)
            out[name] = {"error": traceback.format_exc(limit=-6)}
    return out


def _deferred(make, read):
    """``make()`` (an operation with an out-of-range value) and then ``read(result)``: the
    synchronizations and launches the operation made, what it raised, and what the read
    raised."""
    syncs = sg.cuda._sync_count()
    got = {"at_op": None, "at_read": None, "read_type": None}
    try:
        result = make()
    except Exception as e:  # noqa: BLE001  (what the operation raised is the finding)
        got["at_op"] = f"{type(e).__name__}: {e}"
        return got
    got["op_syncs"] = sg.cuda._sync_count() - syncs
    try:
        read(result)
    except Exception as e:  # noqa: BLE001  (what the read raised is the finding)
        got["at_read"] = str(e)
        got["read_type"] = [t.__name__ for t in type(e).__mro__]
    return got


def checks():
    """Out-of-range values on cuda: raised at the next synchronization, the device usable
    after it."""
    F = sg.nn.functional
    dev = "cuda"
    out = {}
    x = sg.arange(12.0, device=dev).reshape(3, 4)
    out["gather"] = _deferred(lambda: x.gather(1, sg.tensor([[0, 9], [1, 2]], device=dev)),
                              lambda r: sg.cuda.synchronize())
    out["gather_after"] = x.gather(1, sg.tensor([[0, 3], [1, 2]], device=dev)).tolist()
    weight = sg.arange(15.0, device=dev).reshape(5, 3)
    out["embedding"] = _deferred(lambda: F.embedding(sg.tensor([[1, 7]], device=dev), weight),
                                 lambda r: r.sum().item())
    out["embedding_negative"] = _deferred(lambda: F.embedding(sg.tensor([-2, 0], device=dev), weight),
                                          lambda r: r.tolist())
    out["embedding_after"] = F.embedding(sg.tensor([4, 0], device=dev), weight).tolist()
    logits = sg.from_numpy(_images((3, 4), 7)).to(dev)
    out["cross_entropy"] = _deferred(lambda: F.cross_entropy(logits, sg.tensor([0, 4, 1], device=dev)),
                                     lambda r: r.item())
    out["cross_entropy_after"] = F.cross_entropy(logits, sg.tensor([0, 3, 1], device=dev)).item()
    out["cross_entropy_cpu"] = F.cross_entropy(logits.cpu(), sg.tensor([0, 3, 1])).item()
    src = sg.ones(1, 2, device=dev)
    into = sg.zeros(3, 4, device=dev)
    out["scatter_add"] = _deferred(lambda: into.scatter_add(0, sg.tensor([[1, 3]], device=dev), src),
                                   lambda r: r.tolist())
    B = sg.backend
    flat = B.reshape(sg.arange(6.0, device=dev)._data, (6,))
    out["take"] = _deferred(lambda: B.take(flat, sg.tensor([2, 6], device=dev)._data), lambda r: r.tolist())
    dst = sg.zeros(6, device=dev)
    out["put"] = _deferred(lambda: B.put(dst._data, sg.tensor([1, -1], device=dev)._data,
                                         sg.tensor([5.0, 7.0], device=dev)._data),
                           lambda r: sg.cuda.synchronize())
    out["put_after"] = dst.tolist()  # the bad value was skipped, the good one written
    # two failures before one synchronization: the first recorded is raised, then nothing
    def two():
        x.gather(1, sg.tensor([[5]], device=dev))
        F.cross_entropy(logits, sg.tensor([0, 9, 1], device=dev))
    out["first_wins"] = _deferred(two, lambda r: sg.cuda.synchronize())
    out["clear_after"] = _deferred(lambda: None, lambda r: sg.cuda.synchronize())
    # in "error" mode the checking ops still run (they do not wait); the raise is at the read
    sg.cuda.set_sync_debug_mode("error")
    try:
        out["in_error_mode"] = _deferred(lambda: x.gather(1, sg.tensor([[4]], device=dev)), lambda r: None)
    finally:
        sg.cuda.set_sync_debug_mode("default")
    out["in_error_mode_read"] = _deferred(lambda: None, lambda r: sg.cuda.synchronize())
    # null launch mode: no kernel runs, so nothing is recorded
    sg.cuda._set_launch_mode("null")
    try:
        out["null"] = _deferred(lambda: x.gather(1, sg.tensor([[4]], device=dev)),
                                lambda r: sg.cuda.synchronize())
    finally:
        sg.cuda._set_launch_mode("driver")
    out["null_after"] = _deferred(lambda: None, lambda r: sg.cuda.synchronize())
    return out


def _under(mode, call):
    """``call()`` under sync debug ``mode``: (value, warnings' messages, error), and the
    synchronizations it made."""
    sg.cuda.set_sync_debug_mode(mode)
    got = {"mode": sg.cuda.get_sync_debug_mode(), "value": None, "warnings": [], "error": None}
    before = sg.cuda._sync_count()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got["value"] = call()
        got["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    except Exception as e:  # noqa: BLE001  (what the mode raised is the finding)
        got["error"] = f"{type(e).__name__}: {e}"
    finally:
        sg.cuda.set_sync_debug_mode("default")
    got["syncs"] = sg.cuda._sync_count() - before
    return got


def modes():
    """``.item()`` and the other synchronizing calls under each mode."""
    t = sg.arange(4.0, device="cuda").sum()
    out = {"item": {m: _under(m, t.item) for m in ("default", "warn", "error")},
           "numbered": {n: _under(n, t.item) for n in (0, 1, 2)},
           "synchronize": _under("error", sg.cuda.synchronize),
           "tolist": _under("error", lambda: t.reshape(1).tolist()),
           "cpu": _under("warn", lambda: t.cpu().item()),
           "queued": _under("error", lambda: (t * 2 + 1).shape)}
    try:
        sg.cuda.set_sync_debug_mode("loud")
        out["refused"] = None
    except RuntimeError as e:
        out["refused"] = str(e)
    out["after_refusal"] = sg.cuda.get_sync_debug_mode()
    return out


def main():
    assert sg.cuda.is_available(), sg.cuda.unavailable_reason()
    report = {}
    for part in (steps, checks, modes):
        try:
            report[part.__name__] = part()
        except Exception:  # noqa: BLE001  (reported to the test, which shows it)
            report[part.__name__] = {"error": traceback.format_exc(limit=-8)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
