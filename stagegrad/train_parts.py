"""What ``train`` and ``train_text`` share: the types of their command-line options (each
raises ``ArgumentTypeError``, whose text argparse shows as it is) and the reading of a training
checkpoint."""
import argparse
import math
import os
import pickle


def integer(text, low, high, expected):
    """An integer in [low, high), or argparse's error naming what was ``expected``."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not low <= n < high:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
    return n


def positive(text):
    """A positive integer."""
    return integer(text, 1, math.inf, "a positive integer")


def count(text):
    """A positive count, or None for ``all``."""
    return None if text == "all" else integer(text, 1, math.inf, "a positive count or 'all'")


def seed(text):
    """A seed in [0, 2**64)."""
    # the generator reduces a seed modulo 2**64: a larger one would silently equal another
    return integer(text, 0, 2**64, "a seed in [0, 2**64)")


def real(text, ok, expected):
    """A finite float for which ``ok`` holds."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not (math.isfinite(x) and ok(x)):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
    return x


def width(text):
    """A channel multiplier in (0, 4]."""
    return real(text, lambda x: 0 < x <= 4, "a channel multiplier in (0, 4]")


def learning_rate(text):
    """A finite positive learning rate."""
    return real(text, lambda x: x > 0, "a finite positive learning rate")


def weight_decay(text):
    """A finite weight decay >= 0."""
    return real(text, lambda x: x >= 0, "a finite weight decay >= 0")


def writable_file(text):
    """A path ``save`` can write: not a directory, in a directory that exists and is writable."""
    directory = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory; expected a file name")
    if not os.path.isdir(directory):
        raise argparse.ArgumentTypeError(f"cannot write {text}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: directory {directory} is not writable")
    return text


CHECKPOINT_KEYS = ("model", "optimizer", "scheduler", "epoch", "model_kind", "shuffle_state")
STAGE_MAGIC = b"\x89SGRAD\r\n"  # how a file ``sg.save`` wrote begins


def is_torch(sg):
    """Whether ``sg`` is PyTorch itself rather than one of our stages."""
    return sg.__name__ == "torch"


def load_checkpoint(sg, path):
    """What ``path`` holds, read as ``sg`` reads a training checkpoint (PyTorch: weights only)."""
    if not is_torch(sg):
        # a training checkpoint is the stage's own format: sg.load would also read a
        # PyTorch file's weights, but not resume PyTorch's generator and optimizer from it
        return sg.load(path, format="stagegrad")
    try:
        return sg.load(path, weights_only=True)  # never runs code from the file
    except (pickle.UnpicklingError, EOFError, RuntimeError, ValueError) as e:
        with open(path, "rb") as f:
            ours = f.read(len(STAGE_MAGIC)) == STAGE_MAGIC
        why = ("it is a checkpoint a stage wrote; resume it with that stage (a stage's checkpoints "
               "and PyTorch's do not load in each other)" if ours else
               f"torch.load cannot read it ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
        raise ValueError(f"cannot resume from {path}: {why}") from None


def bad_shuffle_state(sg, state):
    """Why ``state`` cannot be the shuffling generator's state, or None if it can."""
    if is_torch(sg):
        if isinstance(state, sg.Tensor) and state.dtype == sg.uint8 and state.dim() == 1:
            return None
        return f"its shuffling state (of type {type(state).__name__}) is not a torch.Generator state"
    if type(state) is int and 0 <= state < 2**64:
        return None
    return f"its shuffling state ({state!r}) is not a count"


def contents(obj):
    """A short description of ``obj`` for an error message: a dict's first keys, else its type."""
    if isinstance(obj, dict):
        keys = [repr(k) for k in list(obj)[:4]] + (["..."] if len(obj) > 4 else [])
        return f"a dict with keys {', '.join(keys)}" if keys else "an empty dict"
    return f"a {type(obj).__name__}"
