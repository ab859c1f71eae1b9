"""Training an MNIST classifier, as ``stagegrad train`` does and the dashboard's runs do: the
models (``build_model``), the data (``mnist``), the training loop (``fit``) and its
``--cuda-graph`` step (``CapturedStep``), the test accuracy (``evaluate``), and a checkpoint
read back and restored (``load_training_checkpoint``, ``resume``). Every function takes the
library to train with, ``sg``: a stage, or PyTorch itself. The command that parses the
options and wires these together is ``train``; the language models are ``train_text``'s.
"""
import os
import time

from . import load_stage, zoo
from . import train_parts as P
from .progress import Progress
from .train_parts import is_torch

IMAGE_MODELS = ("mlp", "cnn", "resnet18", "mobilenetv2")
WARMUP_STEPS = 3  # --cuda-graph's eager steps before the capture: kernels compiled, optimizer state built


def build_model(sg, kind, width=1.0):
    """An MNIST classifier; ``width`` scales the zoo models' channels."""
    nn = sg.nn
    if kind == "resnet18":
        width = max(1, round(64 * width))
        return zoo.models(sg).resnet.resnet18(10, in_channels=1, small_input=True, width=width)
    if kind == "mobilenetv2":
        return zoo.models(sg).mobilenet.mobilenet_v2(10, in_channels=1, width_mult=width, small_input=True)
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    if kind == "cnn":  # LeNet's layout, twice as wide: 99% test accuracy in three epochs
        return nn.Sequential(
            nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))
    raise ValueError(f"unknown model {kind!r}: expected one of {', '.join(IMAGE_MODELS)}")


def mnist(sg, root, train):
    """The MNIST split as a dataset ``sg.utils.data`` can load.

    A stage reads it with its own ``sg.datasets.MNIST``. PyTorch has no MNIST reader of its
    own (that is torchvision's), so for it the IDX files are read, located and verified by
    ours, and their bytes become a ``TensorDataset`` of float32 images (N, 1, 28, 28) in
    [0, 1] and int64 labels: the very values a stage's dataset yields."""
    if not is_torch(sg):
        return sg.datasets.MNIST(root=root, train=train)
    source = load_stage("0").datasets.MNIST(root=root, train=train)
    images, labels = source.raw_bytes()
    x = sg.frombuffer(bytearray(images), dtype=sg.uint8).reshape(len(source), 1, 28, 28)
    y = sg.frombuffer(bytearray(labels), dtype=sg.uint8)
    return sg.utils.data.TensorDataset(x.float() / 255, y.long())


def load_training_checkpoint(sg, path, kind):
    """The checkpoint ``--resume`` names, checked to be one ``--save`` wrote for ``kind``."""
    try:
        ckpt = P.load_checkpoint(sg, path)
    except OSError as e:
        raise ValueError(f"cannot resume from {path}: {e.strerror or e}") from None
    if not isinstance(ckpt, dict) or not all(k in ckpt for k in P.CHECKPOINT_KEYS):
        raise ValueError(f"cannot resume from {path}: it is a checkpoint, but not one that "
                         f"'stagegrad train --save' wrote (it holds {P.contents(ckpt)}; a training "
                         f"checkpoint is a dict with keys {', '.join(P.CHECKPOINT_KEYS)})")
    if ckpt["model_kind"] != kind:
        raise ValueError(f"{path} holds a {ckpt['model_kind']!r} model, not {kind!r}")
    epoch = ckpt["epoch"]
    if not (type(epoch) is int and epoch >= 0):
        raise ValueError(f"cannot resume from {path}: its epoch ({epoch!r}) is not a count")
    bad = P.bad_shuffle_state(sg, ckpt["shuffle_state"])
    if bad:
        raise ValueError(f"cannot resume from {path}: {bad}")
    return ckpt


def resume(ckpt, path, model, opt, schedule, shuffle):
    """Restore ``ckpt`` into the run's objects; the epoch it was written after."""
    state = ckpt["scheduler"]
    if not isinstance(state, dict):
        raise ValueError(f"cannot resume from {path}: its scheduler state is a {type(state).__name__}, "
                         f"not a dict")
    steps, mine = state.get("T_max"), getattr(schedule, "T_max", None)
    if (steps is None) != (mine is None):
        raise ValueError(f"cannot resume from {path}: its learning rate was "
                         f"{'constant' if steps is None else 'on a cosine schedule'} and this run's is "
                         f"{'constant' if mine is None else 'on a cosine schedule'}; resume with "
                         f"--constant-lr as the run was started, or without")
    if steps != mine:  # the cosine would not end where this run does
        raise ValueError(f"cannot resume from {path}: its learning-rate schedule spans {steps} steps "
                         f"and this run's {mine}; resume with the --epochs, --subset and "
                         f"--batch-size it was started with")
    try:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        schedule.load_state_dict(ckpt["scheduler"])
        shuffle.set_state(ckpt["shuffle_state"])
    except (TypeError, ValueError, RuntimeError, KeyError) as e:
        raise ValueError(f"cannot resume from {path}: {e}") from None
    return ckpt["epoch"]


def fit(sg, model, opt, schedule, loader, epochs, start_epoch=0, on_step=None, on_epoch=None,
        sampler=None, world=1, quiet=False, step=None):
    """Train ``model`` on ``loader`` from ``start_epoch`` to ``epochs`` with cross-entropy,
    stepping ``schedule`` (or nothing, if None) after every optimizer step; a progress bar
    on standard error (drawn nowhere when ``quiet``). ``on_step(info)`` is called after
    every step with a dict (``epoch``, ``step`` in the epoch, ``steps`` per epoch, ``loss``,
    the batch's ``logits`` and ``targets``, ``samples_per_s``), ``on_epoch(n)`` after the
    n-th epoch. In a distributed run ``model`` is the DistributedDataParallel wrapper,
    ``sampler`` the DistributedSampler (its epoch is set) and ``world`` the number of
    ranks, each seeing its own batch. ``step(x, y)``, if given, makes each training step
    instead of the eager one here and returns (logits, loss): ``--cuda-graph``'s
    ``CapturedStep``. Returns the images seen, the training time in seconds and the last
    loss (this rank's batch's)."""
    train_time, seen, loss_value = 0.0, 0, float("nan")
    for epoch in range(start_epoch, epochs):
        model.train()
        if sampler is not None:
            sampler.set_epoch(epoch)
        bar = progress_bar(len(loader), f"epoch {epoch + 1}/{epochs}", quiet)
        t0 = time.perf_counter()
        for i, (x, y) in enumerate(loader, 1):
            if step is None:
                logits = model(x)
                loss = sg.nn.functional.cross_entropy(logits, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            else:
                logits, loss = step(x, y)
            if schedule is not None:
                schedule.step()
            loss_value = loss.item()
            seen += x.shape[0] * world
            rate = seen / (train_time + time.perf_counter() - t0)
            bar.update(i, loss=loss_value, **{"samples/s": rate})
            if on_step is not None:
                on_step({"epoch": epoch, "step": i, "steps": len(loader), "loss": loss_value,
                         "logits": logits, "targets": y, "samples_per_s": rate})
        train_time += time.perf_counter() - t0
        if on_epoch is not None:
            on_epoch(epoch + 1)
    return seen, train_time, loss_value


def evaluate(sg, model, dataset, batch_size=500, dist=None, quiet=False, device=None):
    """The accuracy of ``model`` on ``dataset``; with ``dist`` (``sg.distributed``,
    initialized), each rank counts every world-size-th image and the counts are summed.
    ``device``: where the model is, and each batch goes (None: where the data is)."""
    model.eval()
    correct = 0
    whole = len(dataset)
    if dist is not None:
        dataset = sg.utils.data.Subset(dataset, range(dist.get_rank(), whole, dist.get_world_size()))
    loader = sg.utils.data.DataLoader(dataset, batch_size=batch_size)
    bar = progress_bar(len(loader), "  test", quiet)
    with sg.no_grad():
        for i, (x, y) in enumerate(loader, 1):
            if device is not None:
                x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(dim=1) == y).sum().item()
            bar.update(i, acc=correct / min(i * batch_size, len(dataset)))
    if dist is not None:
        total = sg.tensor([correct], dtype=sg.int64)
        dist.all_reduce(total)
        correct = total.item()
    return correct / whole


class CapturedStep:
    """``--cuda-graph``'s training step: eager on the cuda device for the first
    ``WARMUP_STEPS`` batches, then captured once into a CUDA graph (forward, cross-entropy,
    backward and, with ``whole``, the optimizer step) and replayed for every batch of the
    captured shape, each copied into the static inputs the capture read. Without ``whole``
    the optimizer steps eagerly after each replay, from the gradients the replay wrote: its
    host-computed values (a bias correction, a scheduled rate) change every step. A batch
    of another shape (a smaller last one) steps eagerly, on the same parameters and
    optimizer state. Returns (logits, loss) on the device; a replay's are the graph's
    static outputs, overwritten by the next."""

    def __init__(self, sg, model, opt, device="cuda", whole=True):
        # a dropout mask is drawn on the host: a capture would freeze it, and every replay
        # would drop the same units
        dropping = sorted({type(m).__name__ for m in model.modules()
                           if "Dropout" in type(m).__name__ and getattr(m, "p", 0) > 0})
        if dropping:
            raise ValueError(f"--cuda-graph replays the training step with the values the host computed "
                             f"for it at capture, but the model's {', '.join(dropping)} draws a new mask every step "
                             f"(on the host), so every replay would drop the same units; train this model "
                             f"without --cuda-graph")
        self.sg, self.model, self.opt, self.device, self.whole = sg, model, opt, device, whole
        self.graph = None
        self.eager = 0

    def __call__(self, x, y):
        if self.graph is None and self.eager >= WARMUP_STEPS:
            self._capture(x, y)
        if self.graph is not None and tuple(x.shape) == tuple(self.x.shape):
            # the graph checks the targets too, but raises at the next wait, after the step: the
            # host's batch is checked here, before it
            low, high = y.min().item(), y.max().item()
            if low < 0 or high >= self.classes:
                raise IndexError(f"cross_entropy: target {low if low < 0 else high} is out of bounds for "
                                 f"{self.classes} classes")
            self.x.copy_(x)
            self.y.copy_(y)
            self.graph.replay()
            if not self.whole:
                # the gradients the replay wrote (an eager step since may have set others)
                for p, g in self.grads:
                    p.grad = g
                self.opt.step()
            return self.logits, self.loss
        self.eager += 1
        x, y = x.to(self.device), y.to(self.device)
        logits = self.model(x)
        loss = self.sg.nn.functional.cross_entropy(logits, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return logits, loss

    def _capture(self, x, y):
        """Capture the step on static copies of the batch (x, y), allocated before the
        capture; the gradients are dropped first, so the captured backward writes new ones
        (from the graph's pool), which each replay overwrites, rather than adding to the last
        eager step's."""
        sg = self.sg
        self.x, self.y = x.to(self.device), y.to(self.device)
        self.opt.zero_grad(set_to_none=True)
        self.graph = sg.cuda.CUDAGraph()
        with sg.cuda.graph(self.graph):
            self.logits = self.model(self.x)
            self.loss = sg.nn.functional.cross_entropy(self.logits, self.y)
            self.loss.backward()
            if self.whole:
                self.opt.step()
        # the gradients the captured backward writes (nothing ran yet: the first replay runs it)
        self.grads = [(p, p.grad) for p in self.model.parameters() if p.grad is not None]
        self.classes = self.logits.shape[-1]


def progress_bar(length, label, quiet):
    """A progress bar; on a rank other than 0 one that draws nowhere."""
    if not quiet:
        return Progress(length, label)
    return Progress(length, label, stream=open(os.devnull, "w"))  # noqa: SIM115  (lives as the bar does)
