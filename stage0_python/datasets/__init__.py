"""Real datasets, read from local files (see ``mnist`` and ``shakespeare`` for where they
are looked for)."""
from .mnist import MNIST, DatasetError
from .shakespeare import CharTokenizer, Shakespeare

__all__ = ["MNIST", "DatasetError", "CharTokenizer", "Shakespeare"]
