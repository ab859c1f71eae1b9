"""``DistributedSampler``: each rank of a data-parallel job visits its own share of a
dataset, the shares together covering it once per epoch (PyTorch's
``torch.utils.data.distributed``)."""
import math
import operator

from .. import creation
from .. import random as R
from .sampler import Sampler


class DistributedSampler(Sampler):
    """The indices of ``dataset`` that rank ``rank`` of ``num_replicas`` visits; see
    torch.utils.data.distributed.DistributedSampler.

    Every rank gets ``ceil(len(dataset) / num_replicas)`` indices: the (shuffled, when
    ``shuffle``) index list is padded with its own first entries to a multiple of
    ``num_replicas`` and rank ``r`` takes every ``num_replicas``-th entry from ``r``, as in
    PyTorch, so every rank runs the same number of steps. ``drop_last`` drops the tail
    instead of padding. The shuffle is ``randperm`` from a generator seeded with ``seed +
    epoch``: the same on every rank, another each epoch once ``set_epoch`` is called
    (the permutation is this project's generator's, not PyTorch's). ``num_replicas`` and
    ``rank`` default to the process group's.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from .. import distributed
            if not distributed.is_initialized():
                raise RuntimeError("DistributedSampler: num_replicas and rank default to the process "
                                   "group's, which is not initialized: call "
                                   "sg.distributed.init_process_group() or pass both")
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        num_replicas, rank = operator.index(num_replicas), operator.index(rank)
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be positive, got {num_replicas}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed = seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            gen = R.Generator().manual_seed(self.seed + self.epoch)
            indices = creation.randperm(n, generator=gen).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Make the next pass shuffle differently (seed ``seed + epoch``), the same on every
        rank; call it at the start of every epoch."""
        self.epoch = epoch
