"""Datasets, samplers and batching: ``Dataset``, ``TensorDataset``, ``Subset``,
``random_split``, the ``Sampler`` family (``DistributedSampler`` among them) and ``DataLoader``."""
from .collate import default_collate
from .dataset import Dataset, Subset, TensorDataset
from .distributed import DistributedSampler
from .loader import DataLoader
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, WeightedRandomSampler
from .split import random_split

__all__ = ["Dataset", "TensorDataset", "Subset", "DataLoader", "default_collate", "random_split",
           "Sampler", "SequentialSampler", "RandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DistributedSampler"]
