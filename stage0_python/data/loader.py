"""``DataLoader``: batches from a map-style dataset, optionally shuffled."""
from .. import creation
from .collate import default_collate


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` samples.

    ``shuffle`` draws a new permutation at the start of every epoch from ``generator`` (an
    ``sg.Generator``) or, without one, from the default generator (so ``sg.manual_seed``
    makes it reproducible). The permutation is ``randperm(len(dataset))``: the same seed gives
    the same order on every stage. ``batch_size=None`` yields single samples, uncollated.
    Loading happens in the calling thread (there are no worker processes).
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 generator=None):
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer value or None, but got "
                             f"batch_size={batch_size!r}")
        if batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self.generator = generator

    def _order(self):
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        return creation.randperm(n, generator=self.generator).tolist()

    def __iter__(self):
        order = self._order()
        if self.batch_size is None:
            for i in order:
                yield self.dataset[i]
            return
        fast = getattr(self.dataset, "get_batch", None) if self.collate_fn is default_collate else None
        bs = self.batch_size
        stop = len(order) - len(order) % bs if self.drop_last else len(order)
        for start in range(0, stop, bs):
            idx = order[start:start + bs]
            if fast is not None:
                yield fast(idx)
            else:
                yield self.collate_fn([self.dataset[i] for i in idx])

    def __len__(self):
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
