"""Real datasets, read from local files (see ``mnist`` for where they are looked for)."""
from .mnist import MNIST, DatasetError

__all__ = ["MNIST", "DatasetError"]
