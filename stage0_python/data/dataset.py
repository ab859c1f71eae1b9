"""Map-style datasets: anything with ``__getitem__(i)`` and ``__len__``."""
from .. import creation
from ..dtypes import int64
from ..tensor import Tensor


class Dataset:
    """Base class of a map-style dataset. Subclasses implement ``__getitem__`` and ``__len__``.

    A dataset may also offer ``get_batch(indices)``, returning the batch already collated
    (what ``default_collate`` would make of the samples); ``DataLoader`` uses it with the
    default collate, which saves the per-sample work that dominates in pure Python.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of tensors that share their first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset expects Tensors, got {type(t).__name__}")
            if t.ndim == 0:
                raise ValueError("TensorDataset: a 0-dim tensor has no first dimension to index")
        sizes = [t.shape[0] for t in tensors]
        if any(n != sizes[0] for n in sizes):
            raise ValueError(f"Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]

    def get_batch(self, indices):
        """The rows at ``indices``, one gather per tensor."""
        index = creation.tensor(list(indices), dtype=int64)
        return tuple(t[index] for t in self.tensors)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)
        if hasattr(dataset, "get_batch"):
            self.get_batch = lambda idx: dataset.get_batch([self.indices[i] for i in idx])

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)
