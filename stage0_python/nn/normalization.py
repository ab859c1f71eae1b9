"""Normalization layers: batch, instance, layer, group, RMS and local response norm."""
import numbers

from ..creation import tensor
from ..dtypes import int64
from ..shapes import ShapeError
from . import functional as F
from . import init
from .functional.normalization import _batch_norm
from .module import Module, Parameter, _empty


class _Affine(Module):
    """A norm layer's optional elementwise scale (initialised to ones) and shift (zeros)."""

    def _affine(self, shape, affine, bias, dtype, device):
        self.register_parameter("weight", Parameter(_empty(shape, dtype, device)) if affine else None)
        self.register_parameter("bias", Parameter(_empty(shape, dtype, device))
                                if affine and bias else None)

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)
        if getattr(self, "bias", None) is not None:
            init.zeros_(self.bias)


class _BatchNorm(_Affine):
    """Per-channel normalisation over the batch. In training the batch statistics are
    used and the running ones updated (``momentum=None``: a cumulative average); in eval
    mode the running statistics are used."""
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self._affine((num_features,), affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", _empty((num_features,), dtype, device))
            self.register_buffer("running_var", _empty((num_features,), dtype, device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        super().reset_parameters()

    def forward(self, input):
        return self._forward_then(input, None)

    def _forward_then(self, input, act):
        """The layer then ``act`` (None, "relu" or "relu6"): ``Sequential`` fuses the pair."""
        if input.ndim not in self._dims or input.shape[1] != self.num_features:
            dims = " or ".join(f"{d}-D" for d in self._dims)
            raise ShapeError(f"{self._get_name()}({self.num_features}): expected a {dims} input with "
                             f"{self.num_features} channels in dim 1, got shape {tuple(input.shape)}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / self.num_batches_tracked.item()
        # without running statistics, batch statistics are used in eval mode too
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return _batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                           self.weight, self.bias, use_batch, factor, self.eps, act)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Input (N, C) or (N, C, L)."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Input (N, C, H, W)."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Input (N, C, D, H, W)."""
    _dims = (5,)


def _shape_tuple(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


def _check_trailing(layer, input):
    ns = layer.normalized_shape
    if input.ndim < len(ns) or tuple(input.shape[input.ndim - len(ns):]) != ns:
        raise ValueError(f"{layer._get_name()}({layer.extra_repr()}): expected an input whose trailing "
                         f"dimensions are {ns}, got shape {tuple(input.shape)}")


class LayerNorm(_Affine):
    """Normalise over the trailing ``normalized_shape`` dims; elementwise scale and shift."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._affine(self.normalized_shape, elementwise_affine, bias, dtype, device)
        self.reset_parameters()

    def forward(self, input):
        _check_trailing(self, input)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(_Affine):
    """Split the channels into ``num_groups`` groups and normalise each over its channels
    and spatial dims; per-channel scale and shift."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self._affine((num_channels,), affine, bias, dtype, device)
        self.reset_parameters()

    def forward(self, input):
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise ValueError(f"{self._get_name()}({self.extra_repr()}): expected an input (N, "
                             f"{self.num_channels}, *), got shape {tuple(input.shape)}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(_Affine):
    """Divide by the root mean square over the trailing dims; elementwise scale. ``eps``
    defaults to the machine epsilon of the input's dtype."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(self.normalized_shape, dtype, device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def forward(self, input):
        _check_trailing(self, input)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _InstanceNorm(_BatchNorm):
    """Per-(sample, channel) normalisation over the spatial dims; PyTorch's defaults
    differ from batch norm's (no affine, no running statistics), and an unbatched input
    is taken as a batch of one."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        nd = self._dims[1]
        if input.ndim not in self._dims:
            raise ShapeError(f"{self._get_name()}({self.num_features}): expected a {nd - 1}-D (unbatched) or "
                             f"{nd}-D (batched) input, got shape {tuple(input.shape)}")
        if input.ndim == nd - 1:
            return self.forward(input.unsqueeze(0)).squeeze(0)
        if input.shape[1] != self.num_features and self.affine:
            raise ShapeError(f"{self._get_name()}({self.num_features}): expected {self.num_features} "
                             f"channels in dim 1, got input of shape {tuple(input.shape)}")
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               0.0 if self.momentum is None else self.momentum, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """See torch.nn.InstanceNorm1d: input (N, C, L) or (C, L)."""
    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """See torch.nn.InstanceNorm2d: input (N, C, H, W) or (C, H, W)."""
    _dims = (3, 4)


class LocalResponseNorm(Module):
    """See torch.nn.LocalResponseNorm."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
