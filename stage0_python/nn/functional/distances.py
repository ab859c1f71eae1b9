"""Norms and distances between vectors: ``normalize``, ``cosine_similarity`` and
``pairwise_distance``, with PyTorch's gradients at zero norms."""
import math

from ... import backend as B
from ...autograd import Function
from ...ops import where


class _PNorm(Function):
    """``(sum |x|**p) ** (1/p)`` over ``dim`` for a ``p`` other than 0, 1, 2 and inf. The
    backward is ``sign(x) |x|**(p-1) / norm**(p-1)``, set to 0 where the norm or x is 0:
    the composite's pow would give inf * 0 = nan there."""

    @staticmethod
    def forward(ctx, x, p, dim, keepdim):
        n = (x.abs() ** p).sum(dim=dim, keepdim=True) ** (1.0 / p)
        ctx.save_for_backward(x, n)
        ctx.p, ctx.dim, ctx.keepdim = p, dim, keepdim
        return n if keepdim else n.squeeze(dim)

    @staticmethod
    def backward(ctx, g):
        x, n = ctx.saved_tensors
        p = ctx.p
        if not ctx.keepdim:
            g = g.unsqueeze(ctx.dim)
        scale = where(n == 0, 0.0, g / n ** (p - 1))
        return where(x == 0, 0.0, x.sign() * x.abs() ** (p - 1) * scale), None, None, None


def _vector_norm(x, p, dim, keepdim):
    """The ``p``-norm over one dimension, with PyTorch's gradient (0 at a zero vector)."""
    if p == 2:
        return x.norm(2, dim=dim, keepdim=keepdim)
    if p == 1:
        return x.abs().sum(dim=dim, keepdim=keepdim)
    if p == math.inf:
        return x.abs().amax(dim=dim, keepdim=keepdim)
    if p == -math.inf:
        return x.abs().amin(dim=dim, keepdim=keepdim)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim=dim, keepdim=keepdim)
    return _PNorm.apply(x, float(p), dim, keepdim)


class _ClampMinValueOnly(Function):
    """``max(x, lo)`` in value, the identity for the gradient: PyTorch's cosine similarity
    clamps the norms in place under ``no_grad``, so its gradient flows as if unclamped."""

    @staticmethod
    def forward(ctx, x, lo):
        return x.clamp(min=lo)

    @staticmethod
    def backward(ctx, g):
        return g, None


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)``, the norm taken over ``dim``."""
    d = input._dim(dim, "normalize")
    result = input / _vector_norm(input, p, d, True).clamp(min=eps)
    return result if out is None else out.copy_(result)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim`` (after broadcasting
    them), each vector's norm taken as at least ``eps``."""
    shape = B.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    d = x1._dim(dim, "cosine_similarity")
    # each input divided by its own norm first, as PyTorch does: the result stays in [-1, 1]
    n1 = _ClampMinValueOnly.apply(_vector_norm(x1, 2, d, True), eps)
    n2 = _ClampMinValueOnly.apply(_vector_norm(x2, 2, d, True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim=d)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dimension (after broadcasting)."""
    diff = x1 - x2 + eps
    return _vector_norm(diff, p, max(diff.ndim - 1, 0), keepdim)
