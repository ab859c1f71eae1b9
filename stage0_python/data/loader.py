"""``DataLoader``: batches from a map-style dataset, in the order its sampler gives."""
import copy
import warnings
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence

from .collate import default_collate
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers):
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                         "multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing. Let "
                         "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` samples, as PyTorch's does.

    The order comes from ``sampler`` (any iterable of indices with a length) or, without
    one, from a ``RandomSampler`` when ``shuffle`` (a new permutation every epoch, drawn
    from ``generator`` or the default generator: ``randperm(len(dataset))``, the same on
    every stage for the same seed) and a ``SequentialSampler`` otherwise. ``batch_sampler``
    gives whole batches of indices instead, and excludes ``batch_size``, ``shuffle``,
    ``sampler`` and ``drop_last``. ``batch_size=None`` yields single samples, uncollated.

    With the default collate and a dataset that has ``get_batch(indices)``, each batch is
    gathered in one call rather than sample by sample.

    ``num_workers``, ``prefetch_factor``, ``persistent_workers``, ``worker_init_fn`` and
    ``timeout`` are checked as PyTorch checks them and then have no effect: every batch is
    loaded in the calling process, in order (a stage's kernels already use the cores).

    ``pin_memory=True`` puts every tensor of each batch (in tuples, lists, dicts and
    namedtuples too, as PyTorch's ``pin_memory`` walks them) in page-locked memory, from
    which ``to("cuda", non_blocking=True)`` need not wait: on stage 4 with a usable cuda
    device. Elsewhere it warns once per iteration, as PyTorch does without an accelerator,
    and the batches are left as they are. ``pin_memory_device`` is deprecated, as in PyTorch:
    naming one warns, and the cuda device (the only one memory is pinned for) is used.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device=""):
        _check_workers(num_workers, timeout, prefetch_factor, persistent_workers)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")
        if sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self._per_sample = collate_fn
        self.generator = generator

    def __iter__(self):
        pinning = False
        if self.pin_memory and self.pin_memory_device:  # PyTorch's words: programs filter them
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the "
                          f"device,ignore pin_memory_device='{self.pin_memory_device}'.", stacklevel=2)
        if self.pin_memory:
            from .. import cuda  # the stage's own: pinned memory is its cuda device's
            pinning = cuda.is_available()
            if not pinning:
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                              "device pinned memory won't be used.", stacklevel=2)
        for batch in self._batches():
            yield pin_memory(batch) if pinning else batch

    def _batches(self):
        if self.batch_sampler is None:
            # without batching PyTorch hands each sample to a given collate_fn alone
            for i in self.sampler:
                yield self.dataset[i] if self._per_sample is None else self._per_sample(self.dataset[i])
            return
        fast = getattr(self.dataset, "get_batch", None) if self.collate_fn is default_collate else None
        for idx in self.batch_sampler:
            if fast is not None:
                yield fast(idx)
            else:
                yield self.collate_fn([self.dataset[i] for i in idx])

    def __len__(self):
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


def pin_memory(data):
    """``data`` with every tensor in it pinned (``Tensor.pin_memory``), walking mappings,
    namedtuples and sequences as PyTorch's loader does: a mapping or list keeps its type
    where it can be copied, a namedtuple its type, a plain tuple becomes a list (PyTorch's
    choice, kept for programs that rely on it); strings and anything else pass unchanged."""
    from ..tensor import Tensor  # the stage's own Tensor
    if isinstance(data, Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        pinned = {k: pin_memory(v) for k, v in data.items()}
        if isinstance(data, MutableMapping):
            clone = copy.copy(data)
            clone.update(pinned)
            return clone
        return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(v) for v in data))
    if isinstance(data, tuple):
        return [pin_memory(v) for v in data]
    if isinstance(data, MutableSequence):
        clone = copy.copy(data)
        for i, v in enumerate(data):
            clone[i] = pin_memory(v)
        return clone
    if isinstance(data, Sequence):
        return [pin_memory(v) for v in data]
    return data
