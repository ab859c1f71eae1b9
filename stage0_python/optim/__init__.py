"""Optimizers and learning-rate schedulers (``torch.optim``'s names and arithmetic).

Every optimizer accepts PyTorch's ``foreach=``, ``fused=``, ``capturable=`` and
``differentiable=`` where PyTorch's does, and keeps them in its groups, but the stage
picks its own path: stage 3 runs SGD, Adam, AdamW and RMSprop through fused
multi-tensor kernels, stage 4's ``cuda`` device in one launch per parameter group, every
other case updates one parameter at a time.
``differentiable=True`` is refused (a step never records autograd history).
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta",
           "LBFGS", "lr_scheduler"]


def __getattr__(name):
    from ..missing_names import no_attribute
    raise no_attribute(__name__, name)
