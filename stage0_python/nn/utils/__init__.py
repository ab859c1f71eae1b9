"""Gradient clipping and flat parameter vectors, as in ``torch.nn.utils``; variable-length
sequences for the recurrent layers in ``nn.utils.rnn``."""
import math

from ...autograd import no_grad
from ...creation import cat, stack
from ...tensor import Tensor
from . import rnn  # noqa: F401  (nn.utils.rnn, as in torch)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so that their joint ``norm_type``-norm is at most
    ``max_norm``; returns the norm before clipping (a 0-d tensor)."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._infer(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.abs().amax() for g in grads]
            total = norms[0] if len(norms) == 1 else stack(norms).amax()
        else:
            norms = [g.norm(norm_type) for g in grads]
            total = stack(norms).norm(norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                               f"is non-finite, so it cannot be clipped. To disable this error and "
                               f"scale the gradients by the non-finite norm anyway, set "
                               f"`error_if_nonfinite=False`")
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters):
    """All parameters, flattened and concatenated."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into the parameters (the inverse of the above)."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got {type(vec).__name__}")
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            if offset + n > vec.numel():
                raise ValueError(f"vector_to_parameters: vector of length {vec.numel()} is too short "
                                 f"for the parameters")
            p.copy_(vec[offset:offset + n].reshape(p.shape))
            offset += n
    if offset != vec.numel():
        raise ValueError(f"vector_to_parameters: vector of length {vec.numel()} is longer than the "
                         f"{offset} parameter elements")
