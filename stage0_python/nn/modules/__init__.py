"""``torch.nn.modules`` as programs import it (``from torch.nn.modules.loss import _Loss``):
every layer, as in ``nn``, and the files that define them under PyTorch's module names
(``loss``, ``conv``, ``linear``, ``batchnorm`` for ``normalization``, and so on), so that the
private base classes programs subclass (``_Loss``, ``_ConvNd``) are where they look."""
import importlib
import sys

from .. import *  # noqa: F401, F403  (every layer)
from .. import Module, Parameter  # noqa: F401

# PyTorch's submodule name -> the nn file that holds those classes here
_FILES = {"activation": "activation", "batchnorm": "normalization", "container": "container",
          "conv": "conv", "distance": "distance", "dropout": "dropout", "flatten": "flatten",
          "instancenorm": "normalization", "linear": "linear", "loss": "loss", "module": "module",
          "normalization": "normalization", "padding": "padding", "pooling": "pooling", "rnn": "rnn",
          "sparse": "sparse", "transformer": "transformer", "upsampling": "upsampling"}
for _name, _file in _FILES.items():
    _module = importlib.import_module(f"{__package__.rpartition('.')[0]}.{_file}")
    globals()[_name] = _module
    sys.modules[f"{__name__}.{_name}"] = _module  # `import ...nn.modules.loss` finds it
