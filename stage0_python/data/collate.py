"""``default_collate``: turn a list of samples into a batch, as PyTorch's does."""
from collections.abc import Mapping, Sequence

from .. import creation
from ..dtypes import float64
from ..tensor import Tensor


def default_collate(batch):
    """Tensors are stacked along a new first dimension; Python ints (and bools) become an
    int64 (bool) tensor, floats a float64 tensor; strings stay a list; dicts, tuples and
    lists are collated field by field (a tuple of fields becomes a list, as in PyTorch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return creation.stack(batch, 0)
    if isinstance(elem, float):
        return creation.tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return creation.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple keeps its type
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numbers, strings, dicts or lists; "
                    f"found {type(elem).__name__}")
