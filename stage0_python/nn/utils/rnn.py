"""Variable-length sequences for the recurrent layers, as in ``torch.nn.utils.rnn``.

A batch of sequences of different lengths is either *padded*, one ``(T, B, *)`` tensor with
filler after each sequence's end, or *packed*: a ``PackedSequence`` whose ``data`` holds,
time step after time step, only the rows still running (sorted longest first), and whose
``batch_sizes[t]`` says how many rows step t has. The recurrent layers run a packed batch
without computing anything on the filler.

Every conversion is one ``index_select`` over the rows (plus a ``cat`` of a padding row),
with the index computed here in Python: the gradient flows back through it, and its
backward is one scatter-add rather than one per sequence or time step.
"""
import numbers
from collections import namedtuple

from ...creation import cat, tensor
from ...dtypes import float32, float64, int64
from ...shapes import ShapeError
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class SequenceLengthError(ValueError, RuntimeError):
    """Sequence lengths that cannot be packed (zero, or not in decreasing order when that
    is required). PyTorch raises ``RuntimeError`` for these; this is also a ``ValueError``,
    the project's error for bad values."""


def _index(values, like):
    """An int64 index tensor on ``like``'s device."""
    return tensor(list(values), dtype=int64, device=like.device)


def invert_permutation(permutation):
    """See torch.nn.utils.rnn.invert_permutation: the permutation that undoes
    ``permutation`` (``None`` stays ``None``)."""
    if permutation is None:
        return None
    order = permutation.tolist()
    inverse = [0] * len(order)
    for position, k in enumerate(order):
        inverse[k] = position
    return _index(inverse, permutation)


_Fields = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_Fields):
    """See torch.nn.utils.rnn.PackedSequence: ``data`` ``(sum(batch_sizes), *)`` holds the
    running rows of every time step in turn; ``batch_sizes`` (int64, one per step, never
    increasing) how many; ``sorted_indices`` the batch order that sorted the sequences by
    length (``None``: they came sorted) and ``unsorted_indices`` its inverse. Make one with
    ``pack_padded_sequence`` or ``pack_sequence`` rather than by hand."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)), PyTorch's older form
            if not isinstance(data, (tuple, list)) or len(data) != 2:
                raise TypeError("PackedSequence: expected data and batch_sizes")
            data, batch_sizes = data
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """A PackedSequence whose ``data`` is ``data.to(...)``; the integer fields follow it
        to its device only."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: t if t is None else t.to(device=data.device))
        return type(self)(data, move(self.batch_sizes), move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cpu(self):
        """``to("cpu")``."""
        return self.to(device="cpu")

    def float(self):
        """``data`` as float32."""
        return self.to(dtype=float32)

    def double(self):
        """``data`` as float64."""
        return self.to(dtype=float64)

    @property
    def is_cuda(self):
        """Whether ``data`` is on a CUDA device."""
        return self.data.is_cuda


def _lengths(lengths, op):
    """``lengths`` (a 1-D tensor or a sequence of integers) as a list of ints."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or lengths.dtype.is_floating_point:
            raise ShapeError(f"{op}: lengths must be a 1-D integer tensor, got shape "
                             f"{list(lengths.shape)} of {lengths.dtype}")
        return [int(n) for n in lengths.tolist()]
    lengths = list(lengths)
    if not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in lengths):
        raise TypeError(f"{op}: lengths must be integers, got {lengths}")
    return [int(n) for n in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """See torch.nn.utils.rnn.pack_padded_sequence: ``input`` ``(T, B, *)`` (or ``(B, T, *)`` with
    ``batch_first``) holding B sequences of the given lengths, packed. With
    ``enforce_sorted`` the lengths must not increase; otherwise the batch is sorted here and
    ``sorted_indices`` records how. Unlike PyTorch, a number of lengths other than B is an
    error rather than packing the first ones."""
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise ShapeError(f"pack_padded_sequence: expected a tensor of at least 2 dims (time and "
                         f"batch), got {getattr(input, 'shape', type(input).__name__)}")
    lengths = _lengths(lengths, "pack_padded_sequence")
    B, T = (input.shape[0], input.shape[1]) if batch_first else (input.shape[1], input.shape[0])
    if len(lengths) != B:
        raise ShapeError(f"pack_padded_sequence: {len(lengths)} lengths for a batch of {B} "
                         f"(input shape {list(input.shape)}, batch_first={batch_first})")
    if any(n <= 0 for n in lengths):
        raise SequenceLengthError("pack_padded_sequence: Length of all samples has to be greater than "
                                  f"0, but found an element in 'lengths' that is <= 0: {lengths}")
    if max(lengths, default=0) > T:
        raise ShapeError(f"pack_padded_sequence: a length of {max(lengths)} exceeds the {T} time "
                         f"steps of input shape {list(input.shape)}")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise SequenceLengthError(
                f"pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
                f"`enforce_sorted` is True, got {lengths}. Pass enforce_sorted=False to have the "
                f"batch sorted here.")
        order, sorted_indices = list(range(B)), None
    else:
        order = sorted(range(B), key=lambda b: -lengths[b])  # stable: ties keep their order
        sorted_indices = _index(order, input)
    batch_sizes = [sum(n > t for n in lengths) for t in range(max(lengths, default=0))]
    # the row of (time t, batch b) in input flattened to (T * B, *) or (B * T, *)
    row = (lambda t, b: b * T + t) if batch_first else (lambda t, b: t * B + b)
    rows = [row(t, order[s]) for t, n in enumerate(batch_sizes) for s in range(n)]
    data = input.reshape(B * T, *input.shape[2:]).index_select(0, _index(rows, input))
    return PackedSequence(data, _index(batch_sizes, input), sorted_indices)


def _padded(data, rows, shape, padding_value):
    """The rows of ``data`` listed in ``rows`` (``len(data)`` naming a padding row), as
    ``shape``."""
    pad = data.new_full((1, *data.shape[1:]), padding_value)
    return cat([data, pad]).index_select(0, _index(rows, data)).reshape(*shape, *data.shape[1:])


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """See torch.nn.utils.rnn.pad_packed_sequence: the inverse of ``pack_padded_sequence``.
    Returns the padded tensor ``(T, B, *)`` (or ``(B, T, *)``), in the batch order before packing,
    and the lengths (int64); ``total_length`` pads T further."""
    data, sizes = sequence.data, sequence.batch_sizes.tolist()
    T = len(sizes)
    B = sizes[0] if sizes else 0
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"pad_packed_sequence: Expected total_length to be at least the length "
                             f"of the longest sequence in input, but got total_length={total_length} "
                             f"and max sequence length being {T}")
        T_out = total_length
    else:
        T_out = T
    where = list(range(B)) if sequence.unsorted_indices is None else sequence.unsorted_indices.tolist()
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n)

    def row(t, b):  # original batch b sits at sorted position where[b]
        s = where[b]
        return offsets[t] + s if t < T and s < sizes[t] else data.shape[0]

    if batch_first:
        rows, shape = [row(t, b) for b in range(B) for t in range(T_out)], (B, T_out)
    else:
        rows, shape = [row(t, b) for t in range(T_out) for b in range(B)], (T_out, B)
    by_sorted = [sum(n > s for n in sizes) for s in range(B)]
    lengths = tensor([by_sorted[where[b]] for b in range(B)], dtype=int64)
    return _padded(data, rows, shape, padding_value), lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """See torch.nn.utils.rnn.pad_sequence: tensors ``(L_i, *)`` padded to the longest L and
    stacked into ``(L, B, *)`` (or ``(B, L, *)``); ``padding_side="left"`` puts the filler first."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    if any(not isinstance(s, Tensor) or s.ndim == 0 for s in sequences):
        raise ShapeError("pad_sequence: every sequence must be a tensor of at least 1 dim, got "
                         f"{[getattr(s, 'shape', type(s).__name__) for s in sequences]}")
    trailing = tuple(sequences[0].shape[1:])
    if any(tuple(s.shape[1:]) != trailing for s in sequences):
        raise ShapeError(f"pad_sequence: the sequences' trailing dims must match, got shapes "
                         f"{[list(s.shape) for s in sequences]}")
    lengths = [s.shape[0] for s in sequences]
    L, B, total = max(lengths), len(sequences), sum(lengths)
    starts = [sum(lengths[:b]) for b in range(B)]

    def row(t, b):
        skip = L - lengths[b] if padding_side == "left" else 0  # filler before the sequence
        return starts[b] + t - skip if skip <= t < skip + lengths[b] else total

    if batch_first:
        rows, shape = [row(t, b) for b in range(B) for t in range(L)], (B, L)
    else:
        rows, shape = [row(t, b) for t in range(L) for b in range(B)], (L, B)
    return _padded(cat(sequences), rows, shape, padding_value)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """See torch.nn.utils.rnn.unpad_sequence: the list of sequences that ``pad_sequence``
    padded (right-padded), each cut to its length."""
    lengths = _lengths(lengths, "unpad_sequence")
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    if len(lengths) != x.shape[0] or max(lengths, default=0) > x.shape[1]:
        raise ShapeError(f"unpad_sequence: lengths {lengths} do not fit padded shape "
                         f"{list(padded_sequences.shape)} (batch_first={batch_first})")
    return [x[b, :n] for b, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """See torch.nn.utils.rnn.pack_sequence: tensors ``(L_i, *)`` packed, as
    ``pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=...)``."""
    sequences = list(sequences)
    lengths = [s.shape[0] if isinstance(s, Tensor) and s.ndim else 0 for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """See torch.nn.utils.rnn.unpack_sequence: the list of tensors that was packed, in
    their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
