"""``torch.nn.modules`` as programs import it (``from torch.nn.modules.loss import _Loss``):
every layer, as in ``nn``, and the files that define them under PyTorch's module names
(``loss``, ``conv``, ``linear``, ``batchnorm`` for ``normalization``, and so on), so that the
private base classes programs subclass (``_Loss``, ``_ConvNd``) are where they look."""
import sys

from .. import *  # noqa: F401, F403  (every layer)
from .. import Module, Parameter  # noqa: F401

# isort: split
# the nn files, each under PyTorch's name for it
from .. import (  # noqa: F401
    activation,
    container,
    conv,
    distance,
    dropout,
    flatten,
    linear,
    loss,
    module,
    normalization,
    padding,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)

batchnorm = instancenorm = normalization

_SUBMODULES = {"activation": activation, "batchnorm": batchnorm, "container": container, "conv": conv,
               "distance": distance, "dropout": dropout, "flatten": flatten, "instancenorm": instancenorm,
               "linear": linear, "loss": loss, "module": module, "normalization": normalization,
               "padding": padding, "pooling": pooling, "rnn": rnn, "sparse": sparse, "transformer": transformer,
               "upsampling": upsampling}
for _name, _module in _SUBMODULES.items():
    sys.modules[f"{__name__}.{_name}"] = _module  # `import ...nn.modules.loss` finds it
