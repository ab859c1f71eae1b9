"""``pad``: constant, reflect, replicate and circular padding of the last dims."""
from stage0_python.vocabulary import ArgumentError, UnknownModeError

from ... import shapes
from ...creation import cat
from ...dtypes import int64
from ...shapes import ShapeError
from .helpers import _const, _narrow


def _pad_constant(x, dim, lo, hi, value):
    if lo < 0:
        x, lo = _narrow(x, dim, -lo, x.shape[dim] + lo), 0
    if hi < 0:
        x, hi = _narrow(x, dim, 0, x.shape[dim] + hi), 0
    parts = []
    for n in (lo, None, hi):
        if n is None:
            parts.append(x)
        elif n:
            shape = list(x.shape)
            shape[dim] = n
            parts.append(x.new_full(tuple(shape), value))
    return x if len(parts) == 1 else cat(parts, dim)


def _pad_index(x, dim, lo, hi, mode):
    """Reflect and replicate map each output position through the original edges, so a
    negative side just starts or stops inside; circular crops first and wraps what is
    left, as PyTorch does."""
    if mode == "circular" and (lo < 0 or hi < 0):
        x = _narrow(x, dim, max(-lo, 0), x.shape[dim] + min(lo, 0) + min(hi, 0))
        lo, hi = max(lo, 0), max(hi, 0)
    n = x.shape[dim]
    if mode == "reflect" and (lo >= n or hi >= n):
        raise ShapeError(f"pad: reflect padding ({lo}, {hi}) must be smaller than the dimension "
                         f"size {n}")
    if mode == "circular" and (lo > n or hi > n):
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) must be at most the dimension size {n}")
    positions = []
    for i in range(-lo, n + hi):
        if mode == "replicate":
            positions.append(min(max(i, 0), n - 1))
        elif mode == "reflect":
            positions.append(-i if i < 0 else (2 * (n - 1) - i if i >= n else i))
        else:
            positions.append(i % n)
    index = _const(positions, (len(positions),), x, int64)
    return x[(slice(None),) * dim + (index,)]


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions: ``pad`` is (last_left, last_right,
    second_last_left, ...). Modes: constant, reflect, replicate, circular."""
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ArgumentError(f"pad: padding length must be even and at most twice the number of "
                            f"dimensions ({input.ndim}), got {pad}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise UnknownModeError(f"pad: unknown mode {mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise ArgumentError(f"pad: a padding value is only valid with mode 'constant', got mode {mode!r}")
    out = list(input.shape)
    for i in range(len(pad) // 2):
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = out[-1 - i]
        if n + min(lo, 0) + min(hi, 0) < 0:
            raise ValueError(f"pad: padding ({lo}, {hi}) would cut more than the {n} elements of "
                             f"dimension {input.ndim - 1 - i} (input shape {list(input.shape)})")
        out[-1 - i] = n + lo + hi
    shapes.check(out, "pad", input.dtype)
    x = input
    for i in range(len(pad) // 2):
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo == hi == 0:
            continue
        dim = x.ndim - 1 - i
        if mode == "constant":
            x = _pad_constant(x, dim, lo, hi, 0.0 if value is None else value)
        else:
            x = _pad_index(x, dim, lo, hi, mode)
    return x
