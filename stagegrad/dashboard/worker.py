"""One training run in its own process: ``python -m stagegrad.dashboard.worker OUT_DIR [DATA_DIR]``.

The settings (already checked by ``settings.check``) arrive as JSON on standard input.
Progress leaves as JSON lines on the standard output the process started with: ``start``
(the steps to come, the parameter count), ``point`` (loss, accuracy, samples/s, learning
rate, at most about ten a second, and at every evaluation), then ``done`` with the final
metrics and the files written to ``OUT_DIR``, or ``error``. Everything else the training
code prints goes to ``OUT_DIR/log.txt``. The loops are ``stagegrad train``'s own
(``training.fit``, ``train_text.train_step``), so a run here computes what that command does.
"""
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

from .. import datafiles, load_stage, train_text, training
from . import architecture

# the language models' size in the dashboard: small enough to learn something in minutes
TEXT_CONFIG = {"gpt": {"n_layer": 2, "n_head": 4, "n_embd": 64, "n_kv_head": None, "positions": "learned",
                       "dropout": 0.0},
               "lstm": {"n_embd": 64, "hidden": 128, "n_layer": 1, "dropout": 0.0}}
POINT_INTERVAL = 0.1  # seconds between progress messages (the last step of an epoch always sends)
EVAL_BATCHES = 5


def _clean(value):
    """A number JSON (and the browser's JSON.parse) can carry: not finite becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Reporter:
    """Writes the protocol's messages, one JSON object a line."""

    def __init__(self, stream):
        self.stream = stream
        self.last = 0.0

    def send(self, event, **fields):
        fields = {k: _clean(v) for k, v in fields.items()}
        self.stream.write(json.dumps({"event": event, **fields}) + "\n")
        self.stream.flush()

    def due(self, force=False):
        """Whether a point is due now: ``POINT_INTERVAL`` since the last, or ``force``."""
        now = time.perf_counter()
        if force or now - self.last >= POINT_INTERVAL:
            self.last = now
            return True
        return False


def optimizer(sg, settings, params):
    """The optimizer the settings name, at their learning rate."""
    lr = settings["lr"]
    if settings["optimizer"] == "sgd":
        return sg.optim.SGD(params, lr=lr, momentum=0.9)
    return (sg.optim.Adam if settings["optimizer"] == "adam" else sg.optim.AdamW)(params, lr=lr)


def schedule(sg, settings, opt, total):
    """The learning-rate schedule over ``total`` steps, stepped once a step; None if constant."""
    if settings["schedule"] == "cosine":
        return sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    if settings["schedule"] == "step":  # halve the rate at each quarter of the run
        return sg.optim.lr_scheduler.StepLR(opt, step_size=max(1, total // 4), gamma=0.5)
    return None


def _save(sg, model, about, example, out, exported=None):
    """Write the checkpoint ``stagegrad deploy`` serves (the weights and ``about``: what
    rebuilds the model), the weights as safetensors and, where the export works, ONNX of
    ``exported`` (default ``model``); what was written."""
    sg.save(dict(model=model.state_dict(), **about), str(out / "model.ckpt"))
    files = {"checkpoint": "model.ckpt"}
    state = {k: v for k, v in model.state_dict().items() if isinstance(v, sg.Tensor)}
    sg.save_safetensors(state, str(out / "model.safetensors"))
    files["safetensors"] = "model.safetensors"
    model.eval()
    try:
        sg.onnx.export(exported or model, (example,), str(out / "model.onnx"), input_names=["input"],
                       output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        files["onnx"] = "model.onnx"
    except Exception as e:  # the export covers most layers, not all; the page says why it is absent
        (out / "model.onnx").unlink(missing_ok=True)
        files["onnx_error"] = f"{type(e).__name__}: {e}"
    return files


def _logits_only(sg, model):
    """``model`` with only its logits as output (the LSTM's also returns its state), for ONNX."""
    class Logits(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            return train_text.logits_of(self.model, x)
    return Logits()


def run_mnist(sg, s, data, out, report):
    """Train an MNIST classifier as the settings ``s`` say; the final metrics."""
    root = datafiles.mnist_dir(data)
    print(f"data: MNIST from {root}")
    tdata = sg.utils.data
    train_set, test_set = sg.datasets.MNIST(root=root, train=True), sg.datasets.MNIST(root=root, train=False)
    # a subset larger than the data found (a slice of MNIST) is the whole of it, as in train
    train_set = tdata.Subset(train_set, range(min(s["subset"], len(train_set))))
    test_set = tdata.Subset(test_set, range(min(s["test_subset"], len(test_set))))
    sg.manual_seed(s["seed"])
    model = (architecture.build(sg, s["architecture"]) if s["model"] == "custom" else
             training.build_model(sg, s["model"], s.get("width", 1.0)))
    opt = optimizer(sg, s, model.parameters())
    loader = tdata.DataLoader(train_set, batch_size=s["batch_size"], shuffle=True,
                              generator=sg.Generator().manual_seed(s["seed"]))
    total = s["epochs"] * len(loader)
    sched = schedule(sg, s, opt, total)
    parameters = sum(p.numel() for p in model.parameters())
    report.send("start", total=total, parameters=parameters, stage=sg.__name__)
    t0 = time.perf_counter()
    tally = {"correct": 0, "seen": 0, "test_accuracy": float("nan")}

    def on_step(info):
        if info["step"] == 1:
            tally["correct"] = tally["seen"] = 0
        tally["correct"] += (info["logits"].argmax(dim=1) == info["targets"]).sum().item()
        tally["seen"] += info["targets"].shape[0]
        if report.due(info["step"] == info["steps"]):
            report.send("point", step=info["epoch"] * info["steps"] + info["step"], epoch=info["epoch"] + 1,
                        loss=info["loss"], accuracy=tally["correct"] / tally["seen"],
                        samples_per_s=info["samples_per_s"], lr=opt.param_groups[0]["lr"],
                        elapsed=time.perf_counter() - t0)

    def on_epoch(epoch):
        tally["test_accuracy"] = training.evaluate(sg, model, test_set)
        report.send("point", step=epoch * len(loader), epoch=epoch, test_accuracy=tally["test_accuracy"],
                    elapsed=time.perf_counter() - t0)

    seen, train_time, loss = training.fit(sg, model, opt, sched, loader, s["epochs"], on_step=on_step,
                                       on_epoch=on_epoch)
    about = {"model_kind": s["model"], "width": s.get("width", 1.0)}
    if s["model"] == "custom":
        about["architecture"] = s["architecture"]
    files = _save(sg, model, about, train_set[0][0].unsqueeze(0), out)
    return {"final_loss": loss, "train_accuracy": tally["correct"] / max(tally["seen"], 1),
            "test_accuracy": tally["test_accuracy"],
            "samples_per_s": seen / train_time if train_time else None,
            "parameters": parameters, "files": files}


def run_text(sg, s, data, out, report):
    """Train a character-level language model on Shakespeare; the final metrics."""
    root = datafiles.shakespeare_dir(data)
    print(f"data: Shakespeare from {root}")
    context = s["context"]
    train_tokens, val_tokens, tokenizer = train_text.corpus(sg, root, context, None)
    sg.manual_seed(s["seed"])
    config = dict(TEXT_CONFIG[s["model"]], context=context)
    model = train_text.build_model(sg, s["model"], tokenizer.vocab_size, config)
    opt = optimizer(sg, s, model.parameters())
    total = s["steps"]
    sched = schedule(sg, s, opt, total)
    batches = sg.Generator().manual_seed(s["seed"])
    parameters = sum(p.numel() for p in model.parameters())
    report.send("start", total=total, parameters=parameters, stage=sg.__name__)
    every = max(1, total // 5)
    t0, seen, loss, val_loss = time.perf_counter(), 0, float("nan"), float("nan")
    model.train()
    for step in range(1, total + 1):
        x, y = train_text.get_batch(sg, train_tokens, s["batch_size"], context, batches)
        loss, logits = train_text.train_step(sg, model, opt, sched, x, y)
        seen += x.numel()
        elapsed = time.perf_counter() - t0
        if report.due(step == total):
            accuracy = (logits.argmax(dim=-1) == y).float().mean().item()
            report.send("point", step=step, epoch=1, loss=loss, accuracy=accuracy,
                        samples_per_s=seen / elapsed,
                        lr=opt.param_groups[0]["lr"], elapsed=elapsed)
        if step % every == 0 or step == total:
            val_loss = train_text.estimate_loss(sg, model, val_tokens, s["batch_size"], context, EVAL_BATCHES)
            report.send("point", step=step, epoch=1, val_loss=val_loss, elapsed=time.perf_counter() - t0)
    about = {"model_kind": s["model"], "config": config, "vocab": "".join(tokenizer.chars)}
    files = _save(sg, model, about, x[:1], out, _logits_only(sg, model))
    return {"final_loss": loss, "val_loss": val_loss, "samples_per_s": seen / (time.perf_counter() - t0),
            "parameters": parameters, "files": files}


def main(argv=None):
    """The worker's entry point; its exit status (0 when the run finished)."""
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0])
    data = argv[1] if len(argv) > 1 and argv[1] else None
    settings = json.loads(sys.stdin.read())
    protocol = os.fdopen(os.dup(1), "w")
    # what the training code prints (progress bars, notes) goes to the log, not the protocol
    log = open(out / "log.txt", "w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    report = Reporter(protocol)
    wall = time.perf_counter()
    try:
        sg = load_stage(settings["stage"])
        run = run_text if settings["dataset"] == "shakespeare" else run_mnist
        final = run(sg, settings, data, out, report)
        final["threads"] = sg.get_num_threads()  # what samples/s was measured with
    except Exception as e:
        traceback.print_exc()
        report.send("error", message=f"{type(e).__name__}: {e}")
        return 1
    files = final.pop("files")
    report.send("done", final={k: _clean(v) for k, v in final.items()}, files=files,
                wall_s=time.perf_counter() - wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
