"""Datasets and batching: ``Dataset``, ``TensorDataset``, ``Subset``, ``DataLoader``."""
from .collate import default_collate
from .dataset import Dataset, Subset, TensorDataset
from .loader import DataLoader

__all__ = ["Dataset", "TensorDataset", "Subset", "DataLoader", "default_collate"]
