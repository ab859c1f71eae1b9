"""What several parts of ``nn.functional`` share: argument tuples, constant tensors, the
``inplace=True`` form, a slice along one dim, the batched view of an input, and the
optional operands and gradients of the Functions on fused kernels (``_buffer``,
``_tensors``)."""
import numbers

from ...tensor_core import TensorCore


def _ntuple(value, n, name, what):
    """``value`` as ``n`` ints: an int repeated, or a tuple of one or ``n`` (ValueError
    naming ``name``'s argument ``what`` otherwise)."""
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    value = tuple(value)
    if len(value) == 1:
        return value * n
    if len(value) != n or not all(isinstance(v, numbers.Integral) for v in value):
        raise ValueError(f"{name}: {what} must be an int or a tuple of {n} ints, got {value}")
    return tuple(int(v) for v in value)


def _buffer(t):
    """``t``'s backend buffer, None for no tensor (an optional weight, bias or saved output)."""
    return None if t is None else t._data


def _tensors(*bufs):
    """The buffers a fused backward returns as tensors, None (a gradient not asked for) kept."""
    return tuple(None if b is None else TensorCore._make(b) for b in bufs)


def _const(values, shape, like, dtype=None):
    """A constant tensor (no grad) with ``like``'s dtype unless ``dtype`` is given."""
    return like.new_tensor(values, dtype=dtype or like.dtype).reshape(shape)


def _inplace(fn, input, op="inplace=True"):
    """The ``inplace=True`` form: write ``fn(input)`` into ``input`` and return it, which then
    stands in the graph for ``fn``'s result. ``fn`` reads a copy of the old contents (taken
    by the in-place write itself, under grad mode), so what its backward saved is not the
    tensor being overwritten."""
    return input._inplace(fn, op)


def _narrow(x, dim, start, length):
    """``x``'s elements ``start`` to ``start + length`` along ``dim``."""
    return x[(slice(None),) * dim + (slice(start, start + length),)]


def _batched(input, nd, name):
    """Accept (N, C, *spatial) or unbatched (C, *spatial); return a batched view and whether
    the input was batched."""
    if input.ndim == nd + 2:
        return input, True
    if input.ndim == nd + 1:
        return input.unsqueeze(0), False
    raise ValueError(f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, "
                     f"got shape {tuple(input.shape)}")
