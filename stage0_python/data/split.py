"""``random_split``: cut a dataset into non-overlapping random subsets."""
import math
import warnings

from .. import creation
from .dataset import Subset


def _counts(lengths, n):
    """Fractions summing to 1 become counts: each ``floor(n * f)``, then the items left
    over are handed out one at a time from the first split on (PyTorch's rule, so the
    sizes agree with PyTorch's for the same fractions)."""
    counts = []
    for i, frac in enumerate(lengths):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        counts.append(math.floor(n * frac))
    for i in range(n - sum(counts)):
        counts[i % len(counts)] += 1
    for i, c in enumerate(counts):
        if c == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.")
    return counts


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into ``len(lengths)`` ``Subset``\\ s of the given sizes, drawn
    without overlap from one ``randperm`` of its indices (on ``generator``, or the default
    generator). ``lengths`` are counts summing to ``len(dataset)`` or fractions summing to
    1 (``[0.8, 0.2]``)."""
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _counts(lengths, n)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = creation.randperm(n, generator=generator).tolist()
    splits, start = [], 0
    for length in lengths:
        splits.append(Subset(dataset, order[start:start + length]))
        start += length
    return splits
