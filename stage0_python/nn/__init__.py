"""Neural-network layers, containers, initialisation and functional forms, with
``torch.nn``'s names and semantics."""
from . import functional, init, utils
from .activation import (CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh,
                         LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid, SiLU,
                         Softmax, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold)
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss,
                   NLLLoss, SmoothL1Loss)
from .module import Module, Parameter, StateDictError
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .pooling import AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .sparse import Embedding
