"""``stagegrad train``: train on MNIST with any installed stage: an MLP, a CNN, or the zoo's
ResNet-18 and MobileNetV2 (``--model``). ``--model gpt`` and ``lstm`` train a language model
on Shakespeare's plays instead: ``train_text`` runs those.

The same program runs on every stage: only ``sg`` changes. Progress shows live loss and
throughput; the summary gives test accuracy, samples/s and wall time. ``--save`` writes a
checkpoint after every epoch and ``--resume`` continues from one, bit for bit: the
shuffling generator's and the learning-rate schedule's states travel in the checkpoint.
The learning rate falls from ``--lr`` to 0 along a cosine over the run's steps
(``CosineAnnealingLR``), which is worth a few tenths of a percent of test accuracy over a
constant rate: the CNN reaches 99% in three epochs.

``--stage torch`` runs the same program on PyTorch itself, so one command compares wall
time and accuracy, and the run checks that the stages' API is PyTorch's: the training
loop, the model, the optimizer, data loading, seeding and checkpoints are written in
PyTorch's names (``sg.utils.data``, ``sg.nn.functional``, ``sg.Generator().manual_seed``,
``sg.save``/``sg.load``), which every stage also exports. The one piece PyTorch lacks is
the MNIST reader: ``mnist`` reads the same IDX files with ours and hands PyTorch their
bytes as a ``TensorDataset``. PyTorch's checkpoints are its own (``torch.save``, loaded
with ``weights_only=True``); a stage's and PyTorch's do not resume in each other. The
header line names the threads each runs on (``OMP_NUM_THREADS`` sets them for both).
samples/s times the whole loop, data loading included: PyTorch's ``DataLoader`` indexes and
collates sample by sample, where a stage's MNIST hands over whole batches (``get_batch``).

``--cuda-graph`` trains on the cuda device and, after ``WARMUP_STEPS`` eager steps, captures
the training step into one CUDA graph and replays it for every batch of the captured size,
each batch first copied into the step's static input tensors (a smaller last batch steps
eagerly). A replay repeats the values the host computed at capture, so what the graph holds
depends on the optimizer: with ``--optimizer sgd --constant-lr`` the whole step (forward,
backward, optimizer step); otherwise forward and backward, and the optimizer steps eagerly
after each replay (one launch per parameter group), since AdamW's bias correction (from its
step count) and the cosine schedule's rate change every step.

``--nproc N`` trains on N processes of this machine, each on one thread: the command
starts itself again under ``mpirun`` (``stagegrad.mpi``), and each process (rank) trains
a replica wrapped in ``DistributedDataParallel`` on its ``DistributedSampler`` share of
the images, ``--batch-size`` of them per step, so a step sees N times as many. A
program that ``mpirun`` started (``mpirun -n N --hostfile hosts stagegrad train ...``,
across hosts) does the same without ``--nproc``. Rank 0 alone prints and writes the
checkpoint; every rank reads ``--resume`` and the data, which must be on every host. The
test images are split among the ranks and their counts summed.

``--data DIR`` is the one directory the data is read from (``datafiles``): a directory
that does not exist or lacks the dataset is an error naming it, and ``--download`` fetches
the dataset into it. Without ``--data`` the datasets' search path applies, and a dataset
found nowhere is downloaded into the user cache (offline, the error names the small slice
the package carries). Either way the run prints where its data came from.

Arguments are checked when they are parsed (a usage error, exit status 2): counts must be
positive, the learning rate finite and positive, the weight decay finite and not negative,
the seed in [0, 2**64), and ``--save`` must name a file in an existing, writable directory,
so that no run trains for an hour and then cannot write its result. A ``--resume`` file
that is missing or is not a checkpoint ``--save`` wrote is refused before training starts.
"""
import argparse
import os
import subprocess
import sys
import time

from . import datafiles, installed_text, load_stage, mpi, stage_type, train_text, zoo
from . import train_parts as P
from .train_parts import is_torch
from .progress import Progress, seconds, stat


IMAGE_MODELS = ("mlp", "cnn", "resnet18", "mobilenetv2")
TEXT_MODELS = ("gpt", "lstm")
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


def add_arguments(p):
    p.add_argument("--stage", default="0", type=stage_type(peers=True),
                   help=f"the stage to train with, by number or package: {installed_text()} are "
                        f"installed here; or 'torch' for PyTorch itself (default 0)")
    p.add_argument("--model", default="mlp", choices=IMAGE_MODELS + TEXT_MODELS,
                   help="mlp, cnn, resnet18 or mobilenetv2 train on MNIST; gpt and lstm on Shakespeare's "
                        "plays (default mlp)")
    p.add_argument("--width", type=P.width, default=1.0,
                   help="channel multiplier of resnet18 and mobilenetv2 (default 1.0, the papers' width)")
    p.add_argument("--epochs", type=P.positive, default=1, help="passes over the MNIST subset (default 1)")
    p.add_argument("--batch-size", type=P.positive, default=64,
                   help="images per training step (default 64)")
    p.add_argument("--lr", type=P.learning_rate, default=2e-3,
                   help="the learning rate at the start of the cosine schedule, or throughout with "
                        "--constant-lr (default 0.002)")
    p.add_argument("--weight-decay", type=P.weight_decay, default=0.0,
                   help="AdamW's decoupled weight decay (default 0); with --optimizer sgd, SGD's")
    p.add_argument("--optimizer", default="adamw", choices=("adamw", "sgd"),
                   help="adamw, or sgd with momentum 0.9 (default adamw)")
    p.add_argument("--constant-lr", action="store_true",
                   help="keep --lr for the whole run instead of a cosine schedule down to 0")
    p.add_argument("--cuda-graph", action="store_true",
                   help=f"train on the cuda device, the training step captured into a CUDA graph after "
                        f"{WARMUP_STEPS} eager steps and replayed for each batch: the whole step with "
                        f"--optimizer sgd --constant-lr, else forward and backward, the optimizer stepping "
                        f"eagerly (its bias correction and scheduled rate change every step)")
    p.add_argument("--subset", type=P.count, default=6000,
                   help="train on the first N training images, or 'all' (default: 6000, which "
                        "keeps the pure-Python stages to about a minute per epoch)")
    p.add_argument("--test-subset", type=P.count, default=None,
                   help="evaluate on the first N test images, or 'all' (default: all 10,000)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="the directory holding the MNIST IDX files (in DIR or DIR/mnist), or the "
                        "Shakespeare archive for gpt and lstm (in DIR or DIR/shakespeare); nothing "
                        "else is read when it is given (default: $STAGEGRAD_DATA, the shared "
                        "datasets folder beside the checkout, then the user cache, where it is "
                        "downloaded when found nowhere)")
    p.add_argument("--download", action="store_true",
                   help="fetch the dataset into --data if it is not there")
    p.add_argument("--seed", type=P.seed, default=0, help="an integer in [0, 2**64) (default 0)")
    p.add_argument("--save", type=P.writable_file, default=None,
                   help="write a checkpoint here after every epoch (default: none)")
    p.add_argument("--resume", default=None,
                   help="continue from this checkpoint, which --save wrote (default: start afresh)")
    p.add_argument("--nproc", type=P.positive, default=None, metavar="N",
                   help="train on N processes of this machine, one thread each, under mpirun (Open MPI): "
                        "each takes --batch-size images per step. Under `mpirun -n N stagegrad train` "
                        "(across hosts) leave it out (default: one process)")
    train_text.add_arguments(p.add_argument_group("language models (gpt, lstm)"))


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


def _training_checkpoint(sg, path, kind):
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


def _resume(ckpt, path, model, opt, schedule, shuffle):
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
        bar = _progress(len(loader), f"epoch {epoch + 1}/{epochs}", quiet)
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
    bar = _progress(len(loader), "  test", quiet)
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


def _captures_whole_step(args):
    """Whether ``--cuda-graph`` captures the optimizer step too: only when the values the
    host computes for it stay the same from step to step (SGD at a constant rate)."""
    return args.optimizer == "sgd" and args.constant_lr


def _check_capturable(sg, args):
    """``--cuda-graph``'s refusal: a stage without a cuda device."""
    if not sg.cuda.is_available():
        why = getattr(sg.cuda, "unavailable_reason", lambda: "")()
        raise ValueError(f"--cuda-graph trains on the cuda device, which {sg.__name__} cannot use here"
                         + (f" ({why})" if why else ""))


def _progress(length, label, quiet):
    """A progress bar; on a rank other than 0 one that draws nowhere."""
    if not quiet:
        return Progress(length, label)
    return Progress(length, label, stream=open(os.devnull, "w"))  # noqa: SIM115  (lives as the bar does)


def _launch(args):
    """``--nproc N``: this command again, without ``--nproc``, as N ranks under mpirun."""
    _check_distributable(args)
    cmd = mpi.mpirun_command(args.nproc, mpi.python_module("stagegrad", "train", *_rank_arguments(args)))
    print("launching: " + " ".join(cmd), flush=True)
    status = subprocess.run(cmd, check=False).returncode
    if status != 0:
        raise RuntimeError(f"the {args.nproc} training processes failed (mpirun exited with status {status}; "
                           f"their messages are above)")


def _check_distributable(args):
    if args.model in TEXT_MODELS:
        raise ValueError(f"--model {args.model} trains in one process; --nproc and mpirun train the image "
                         f"models ({', '.join(IMAGE_MODELS)})")
    if getattr(args, "cuda_graph", False):
        raise ValueError("--cuda-graph trains in one process, on its cuda device: leave out --nproc and "
                         "mpirun")
    if str(args.stage) == "torch":
        raise ValueError("--stage torch trains in one process: distributed training runs on the stages "
                         "(sg.distributed on MPI); PyTorch's CPU wheels have no MPI backend")


def _rank_arguments(args):
    """The command line each rank runs: every option that differs from its default,
    except ``--nproc``."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = []
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "nproc"):
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default:
            continue
        if action.nargs == 0:  # a flag
            out.append(action.option_strings[0])
        else:
            out += [action.option_strings[0], "all" if value is None else str(value)]
    return out


def run(args):
    if getattr(args, "nproc", None) is not None:
        if mpi.launched_by_mpirun():
            raise ValueError("--nproc starts mpirun itself; in a program mpirun started, leave it out")
        return _launch(args)
    if mpi.launched_by_mpirun():
        _check_distributable(args)
    if args.model in TEXT_MODELS:
        image_only = [flag for flag, on in (
            ("--cuda-graph", getattr(args, "cuda_graph", False)),
            ("--optimizer sgd", getattr(args, "optimizer", "adamw") != "adamw"),
            ("--constant-lr", getattr(args, "constant_lr", False))) if on]
        if image_only:
            raise ValueError(f"{', '.join(image_only)}: the image models' options; --model {args.model} "
                             f"trains with AdamW on a cosine schedule")
        return train_text.run(args)
    sg = load_stage(args.stage, peers=True)  # a stage, or PyTorch itself
    dist = None
    if mpi.launched_by_mpirun():
        dist = sg.distributed
        dist.init_process_group()
        try:
            summary = _train(sg, args, dist)
        except Exception:
            if dist.get_world_size() > 1:  # the other ranks would wait for this one forever
                sys.excepthook(*sys.exc_info())  # sg.distributed's: the traceback, then the job aborts
            raise
        dist.destroy_process_group()
        return summary
    return _train(sg, args, None)


def _train(sg, args, dist):
    if args.epochs < 1 or args.batch_size < 1:
        raise ValueError("--epochs and --batch-size must be positive")
    graphed = getattr(args, "cuda_graph", False)
    if graphed:
        _check_capturable(sg, args)
    device = "cuda" if graphed else None
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    quiet = rank != 0
    say = print if not quiet else (lambda *a, **k: None)
    ckpt = _training_checkpoint(sg, args.resume, args.model) if args.resume else None
    data = sg.utils.data
    root = datafiles.mnist_dir(args.data, args.download, say=say)
    say(f"data: MNIST from {root}")
    train_set, test_set = mnist(sg, root, train=True), mnist(sg, root, train=False)
    if args.subset is not None:
        train_set = data.Subset(train_set, range(min(args.subset, len(train_set))))
    if args.test_subset is not None:
        test_set = data.Subset(test_set, range(min(args.test_subset, len(test_set))))

    sg.manual_seed(args.seed)
    model = build_model(sg, args.model, args.width)
    if device is not None:
        model.to(device)
    sgd = getattr(args, "optimizer", "adamw") == "sgd"
    if sgd:
        opt = sg.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.weight_decay)
    else:
        opt = sg.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    shuffle = sg.Generator().manual_seed(args.seed)
    sampler = None
    if dist is not None:  # each rank its share, reshuffled each epoch by seed + epoch, alike on every rank
        sampler = data.DistributedSampler(train_set, world, rank, shuffle=True, seed=args.seed)
        loader = data.DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    else:
        loader = data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    constant = getattr(args, "constant_lr", False)
    if constant:  # a factor of 1: the rate stays --lr (and the checkpoint keeps a schedule's state)
        schedule = sg.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=0)
    else:
        schedule = sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(loader))
    start_epoch = 0
    if ckpt is not None:
        start_epoch = _resume(ckpt, args.resume, model, opt, schedule, shuffle)
        say(f"resumed from {args.resume} after epoch {start_epoch}")
    # the replicas: rank 0's weights are broadcast when wrapping; checkpoints hold the model itself
    net = sg.nn.parallel.DistributedDataParallel(model) if dist is not None else model

    threads = sg.get_num_threads()
    name = f"torch (PyTorch {sg.__version__})" if is_torch(sg) else sg.__name__
    ranks = f", {world} processes (MPI)" if dist is not None else ""
    say(f"stage {name}, {threads} thread{'s' if threads != 1 else ''}{ranks}, model {args.model} "
        f"({sum(p.numel() for p in model.parameters()):,} parameters), {len(train_set):,} "
        f"training images, batch {args.batch_size}{' per process' if ranks else ''}, "
        f"{'SGD' if sgd else 'AdamW'} lr {args.lr:g} ({'constant' if constant else 'cosine to 0'})"
        + (f", on cuda, {'the whole step' if _captures_whole_step(args) else 'forward and backward'} "
           f"captured into a CUDA graph" if graphed else ""))
    wall = time.perf_counter()

    def checkpoint(epoch):
        if args.save and rank == 0:
            sg.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": schedule.state_dict(), "epoch": epoch, "model_kind": args.model,
                     "width": args.width,
                     "shuffle_state": shuffle.get_state()}, args.save)
            say(f"checkpoint written to {args.save}")

    seen, train_time, loss_value = fit(sg, net, opt, schedule, loader, args.epochs, start_epoch,
                                       on_epoch=checkpoint, sampler=sampler, world=world, quiet=quiet,
                                       step=CapturedStep(sg, model, opt, whole=_captures_whole_step(args))
                                       if graphed else None)
    accuracy = evaluate(sg, model, test_set, dist=dist, quiet=quiet, device=device)
    wall = time.perf_counter() - wall
    summary = {"stage": sg.__name__, "model": args.model, "train_images_seen": seen,
               "final_loss": loss_value, "test_accuracy": accuracy,
               "samples_per_s": seen / train_time if train_time else float("nan"), "wall_s": wall}
    say(f"test accuracy {accuracy:.2%} on {len(test_set):,} images | final train loss "
        f"{loss_value:.4f} | {stat('samples/s', summary['samples_per_s'])} | wall time {seconds(wall)}")
    return summary
