"""Samplers: what order a ``DataLoader`` visits a dataset's indices in, and how they are
grouped into batches (PyTorch's ``Sampler`` family)."""

from .. import creation
from .. import random as R
from ..dtypes import float64
from ..sampling import multinomial


class Sampler:
    """Base class of every sampler: an iterable of dataset indices (or, for a batch
    sampler, of lists of indices). Subclasses implement ``__iter__`` and usually
    ``__len__``."""

    def __init__(self, data_source=None):
        # PyTorch takes and ignores ``data_source`` here; subclasses keep what they need
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """The indices from 0 to ``len(data_source) - 1``, in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


_CHUNK = 32  # draws with replacement made at once (PyTorch's chunk too)


class RandomSampler(Sampler):
    """Indices in random order.

    Without replacement, each pass over the dataset is a fresh ``randperm`` (``num_samples``
    larger than the dataset takes several passes; smaller, a prefix of one). With
    ``replacement=True``, ``num_samples`` independent draws from ``[0, len)``. The draws
    come from ``generator`` or, without one, from the default generator, so
    ``sg.manual_seed`` makes them reproducible (PyTorch instead seeds a private generator
    from the default one: the same reproducibility, a different stream).
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        n = self.num_samples
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={n!r}")

    @property
    def num_samples(self):
        """How many indices one pass yields: ``len(data_source)`` unless set."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, total = len(self.data_source), self.num_samples
        gen = self.generator or R.default_generator
        if self.replacement:  # drawn lazily, a chunk at a time as PyTorch does: num_samples may be huge
            for start in range(0, total, _CHUNK):
                yield from creation.randint(0, n, (min(_CHUNK, total - start),), generator=gen).tolist()
            return
        for _ in range(total // n):
            yield from creation.randperm(n, generator=gen).tolist()
        if total % n:
            yield from creation.randperm(n, generator=gen).tolist()[:total % n]

    def __len__(self):
        return self.num_samples


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (a 1-d
    sequence or tensor, one per dataset element), with replacement by default, as
    ``torch.utils.data.WeightedRandomSampler``: ``multinomial`` from ``generator`` or the
    default generator, so ``sg.manual_seed`` makes the draws reproducible (PyTorch's stream
    differs). Bad weights are refused when the draws are made, as PyTorch's are."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        if hasattr(weights, "detach"):  # a tensor
            w = weights.detach().to("cpu", dtype=float64)
        else:
            w = creation.tensor(weights, dtype=float64, device="cpu")
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights, self.num_samples = w, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        gen = self.generator
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=gen).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``; the last, shorter list
    is dropped when ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

