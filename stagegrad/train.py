"""``stagegrad train``: train on MNIST with any installed stage.

The same program runs on every stage: only ``sg`` changes. Progress shows live loss and
throughput; the summary gives test accuracy, samples/s and wall time. ``--save`` writes a
checkpoint after every epoch and ``--resume`` continues from one, bit for bit: the
shuffling generator's state travels in the checkpoint.

Arguments are checked when they are parsed (a usage error, exit status 2): counts must be
positive, the learning rate finite and positive, the weight decay finite and not negative,
the seed in [0, 2**64), and ``--save`` must name a file in an existing, writable directory,
so that no run trains for an hour and then cannot write its result. A ``--resume`` file
that is missing or is not a checkpoint ``--save`` wrote is refused before training starts.
"""
import argparse
import math
import os
import time

from . import load_stage
from .progress import Progress


def build_model(sg, kind):
    nn = sg.nn
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    if kind == "cnn":  # LeNet-style
        return nn.Sequential(
            nn.Conv2d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 10))
    raise ValueError(f"unknown model {kind!r}: expected 'mlp' or 'cnn'")


def add_arguments(p):
    p.add_argument("--stage", default="0", help="stage number or package (default 0)")
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--epochs", type=_positive, default=1)
    p.add_argument("--batch-size", type=_positive, default=64)
    p.add_argument("--lr", type=_learning_rate, default=1e-3, help="AdamW learning rate")
    p.add_argument("--weight-decay", type=_weight_decay, default=0.0)
    p.add_argument("--subset", type=_count, default=6000,
                   help="train on the first N training images, or 'all' (default: 6000, which "
                        "keeps the pure-Python stages to about a minute per epoch)")
    p.add_argument("--test-subset", type=_count, default=None,
                   help="evaluate on the first N test images, or 'all' (default: all 10,000)")
    p.add_argument("--data", default=None, help="directory holding the MNIST IDX files")
    p.add_argument("--seed", type=_seed, default=0, help="an integer in [0, 2**64) (default 0)")
    p.add_argument("--save", type=_writable_file, default=None,
                   help="write a checkpoint here after every epoch")
    p.add_argument("--resume", default=None, help="continue from this checkpoint")


# argument types: each raises ArgumentTypeError, whose text argparse shows as it is

def _integer(text, low, high, expected):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not low <= n < high:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
    return n


def _positive(text):
    return _integer(text, 1, math.inf, "a positive integer")


def _count(text):
    return None if text == "all" else _integer(text, 1, math.inf, "a positive count or 'all'")


def _seed(text):
    # the generator reduces a seed modulo 2**64: a larger one would silently equal another
    return _integer(text, 0, 2**64, "a seed in [0, 2**64)")


def _real(text, ok, expected):
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not (math.isfinite(x) and ok(x)):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
    return x


def _learning_rate(text):
    return _real(text, lambda x: x > 0, "a finite positive learning rate")


def _weight_decay(text):
    return _real(text, lambda x: x >= 0, "a finite weight decay >= 0")


def _writable_file(text):
    """A path ``save`` can write: not a directory, in a directory that exists and is writable."""
    directory = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory; expected a file name")
    if not os.path.isdir(directory):
        raise argparse.ArgumentTypeError(f"cannot write {text}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: directory {directory} is not writable")
    return text


_CHECKPOINT_KEYS = ("model", "optimizer", "epoch", "model_kind", "shuffle_state")


def _training_checkpoint(sg, path, kind):
    """The checkpoint ``--resume`` names, checked to be one ``--save`` wrote for ``kind``."""
    try:
        ckpt = sg.load(path)
    except OSError as e:
        raise ValueError(f"cannot resume from {path}: {e.strerror or e}") from None
    if not isinstance(ckpt, dict) or not all(k in ckpt for k in _CHECKPOINT_KEYS):
        raise ValueError(f"cannot resume from {path}: it is a checkpoint, but not one that "
                         f"'stagegrad train --save' wrote (it holds {_contents(ckpt)}; a training "
                         f"checkpoint is a dict with keys {', '.join(_CHECKPOINT_KEYS)})")
    if ckpt["model_kind"] != kind:
        raise ValueError(f"{path} holds a {ckpt['model_kind']!r} model, not {kind!r}")
    epoch, state = ckpt["epoch"], ckpt["shuffle_state"]
    if not (type(epoch) is int and epoch >= 0 and type(state) is int and 0 <= state < 2**64):
        raise ValueError(f"cannot resume from {path}: its epoch ({epoch!r}) or shuffling state "
                         f"({state!r}) is not a count")
    return ckpt


def _contents(obj):
    if isinstance(obj, dict):
        keys = [repr(k) for k in list(obj)[:4]] + (["..."] if len(obj) > 4 else [])
        return f"a dict with keys {', '.join(keys)}" if keys else "an empty dict"
    return f"a {type(obj).__name__}"


def _resume(ckpt, path, model, opt, shuffle):
    """Restore ``ckpt`` into the run's objects; the epoch it was written after."""
    try:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
    except (TypeError, ValueError, RuntimeError) as e:
        raise ValueError(f"cannot resume from {path}: {e}") from None
    shuffle.set_state(ckpt["shuffle_state"])
    return ckpt["epoch"]


def evaluate(sg, model, dataset, batch_size=500):
    model.eval()
    correct = 0
    loader = sg.data.DataLoader(dataset, batch_size=batch_size)
    bar = Progress(len(loader), "  test")
    with sg.no_grad():
        for i, (x, y) in enumerate(loader, 1):
            correct += (model(x).argmax(dim=1) == y).sum().item()
            bar.update(i, acc=correct / min(i * batch_size, len(dataset)))
    return correct / len(dataset)


def run(args):
    sg = load_stage(args.stage)
    if args.epochs < 1 or args.batch_size < 1:
        raise ValueError("--epochs and --batch-size must be positive")
    ckpt = _training_checkpoint(sg, args.resume, args.model) if args.resume else None
    train_set = sg.datasets.MNIST(root=args.data, train=True)
    test_set = sg.datasets.MNIST(root=args.data, train=False)
    if args.subset is not None:
        train_set = sg.data.Subset(train_set, range(min(args.subset, len(train_set))))
    if args.test_subset is not None:
        test_set = sg.data.Subset(test_set, range(min(args.test_subset, len(test_set))))

    sg.manual_seed(args.seed)
    model = build_model(sg, args.model)
    opt = sg.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    shuffle = sg.Generator(args.seed)
    start_epoch = 0
    if ckpt is not None:
        start_epoch = _resume(ckpt, args.resume, model, opt, shuffle)
        print(f"resumed from {args.resume} after epoch {start_epoch}")
    loader = sg.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)

    print(f"stage {sg.__name__}, model {args.model} ({sum(p.numel() for p in model.parameters()):,} "
          f"parameters), {len(train_set):,} training images, batch {args.batch_size}")
    wall = time.perf_counter()
    train_time, seen, loss_value = 0.0, 0, float("nan")
    for epoch in range(start_epoch, args.epochs):
        model.train()
        bar = Progress(len(loader), f"epoch {epoch + 1}/{args.epochs}")
        t0 = time.perf_counter()
        for i, (x, y) in enumerate(loader, 1):
            loss = sg.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_value = loss.item()
            seen += x.shape[0]
            bar.update(i, loss=loss_value, **{"samples/s": seen / (train_time + time.perf_counter() - t0)})
        train_time += time.perf_counter() - t0
        if args.save:
            sg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch + 1,
                     "model_kind": args.model, "shuffle_state": shuffle.get_state()}, args.save)
            print(f"checkpoint written to {args.save}")
    accuracy = evaluate(sg, model, test_set)
    wall = time.perf_counter() - wall
    summary = {"stage": sg.__name__, "model": args.model, "train_images_seen": seen,
               "final_loss": loss_value, "test_accuracy": accuracy,
               "samples_per_s": seen / train_time if train_time else float("nan"), "wall_s": wall}
    print(f"test accuracy {accuracy:.2%} on {len(test_set):,} images | final train loss "
          f"{loss_value:.4f} | {summary['samples_per_s']:.0f} samples/s | wall time {wall:.1f} s")
    return summary
