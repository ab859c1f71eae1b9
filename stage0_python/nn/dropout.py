"""``Dropout`` and its channel-wise and alpha variants."""
from . import functional as F
from .module import Module


class Dropout(Module):
    """In training, zero each element with probability ``p`` and scale the others by
    1/(1-p); in eval mode, the identity."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """See torch.nn.Dropout1d: zero whole channels of (N, C, L) or (C, L)."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """See torch.nn.Dropout2d: zero whole channels of (N, C, H, W) (a 3-D input as (N, C, L))."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    """See torch.nn.AlphaDropout: dropout that keeps SELU's zero mean and unit variance."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)
