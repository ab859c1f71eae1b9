"""``torch.utils.data``'s name for ``sg.data``: the same ``Dataset``, ``TensorDataset``,
``Subset``, ``DataLoader`` and ``default_collate`` objects, re-exported (not copies), so
``sg.utils.data.DataLoader is sg.data.DataLoader``."""
from ..data import *  # noqa: F403
from ..data import __all__  # noqa: F401
