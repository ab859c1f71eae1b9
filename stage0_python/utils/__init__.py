"""PyTorch's ``torch.utils`` spelling: ``sg.utils.data`` holds the datasets and batching
of ``sg.data``, so that a program written for PyTorch (``torch.utils.data.DataLoader``)
runs on a stage with only the import changed."""
from . import data

__all__ = ["data"]
