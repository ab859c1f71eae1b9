"""Real datasets, read from local files (see ``mnist`` and ``shakespeare`` for where they
are looked for and how they are downloaded). ``SAMPLE_ROOT`` is the folder of the small
slices the package carries: ``MNIST(SAMPLE_ROOT)`` and ``Shakespeare(SAMPLE_ROOT)``."""
from .mnist import MNIST, SAMPLE_ROOT, DatasetError
from .shakespeare import CharTokenizer, Shakespeare

__all__ = ["MNIST", "SAMPLE_ROOT", "DatasetError", "CharTokenizer", "Shakespeare"]
