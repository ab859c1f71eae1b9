"""``sg.cuda.amp``: PyTorch's older spellings of mixed precision, ``torch.cuda.amp.autocast``
and ``torch.cuda.amp.GradScaler``, which programs still use. Each is ``sg.amp``'s with the
device fixed to ``"cuda"``, and warns that it is deprecated, as PyTorch's do."""
import warnings

from . import amp as _amp
from .autocast import autocast as _autocast

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """See torch.cuda.amp.autocast: ``sg.autocast("cuda", ...)`` (deprecated there)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """See torch.cuda.amp.GradScaler: ``sg.amp.GradScaler("cuda", ...)`` (deprecated there)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
