"""Products: ``matmul`` (the ``@`` operator) with its 2-d, batched and 1-d forms (``mm``,
``bmm``, ``dot``), one ``MatMul`` Function; and, composed from it, the products that name
their dims: ``einsum``, the BLAS-style ``addmm`` family (``addmm``, ``addmv``, ``addr``,
``baddbmm``, ``addbmm``), and ``cdist``.

The compositions are of differentiable Tensor operations (``diagonal``, ``sum``,
``permute``, ``reshape``, ``matmul``), so their gradients need no rules of their own.
``einsum`` takes a diagonal for a label repeated within an operand, sums a label no one
else needs, then contracts the operands left to right, each pair as one batched matmul.
"""
import math

from stage0_python.vocabulary import ArgumentError

from . import ops, shapes
from .autocast import lower as _lower
from .dtypes import bool_, int64
from .shapes import ShapeError
from .tensor_core import TensorCore

# ------------------------------------------------------------------ einsum

def _parse(equation, operands):
    """Each operand's labels (one character per dim, ``...`` spelled out as its own
    labels, aligned from the right) and the output's."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ArgumentError(f"einsum: the equation {equation!r} names {len(terms)} operands, "
                            f"{len(operands)} were given")
    labels, ellipsis_dims = [], 0
    for term, op in zip(terms, operands):
        if not isinstance(op, TensorCore):
            raise TypeError(f"einsum: operands must be Tensors, got {type(op).__name__}")
        named = term.replace("...", "")
        if not all(c.isalpha() for c in named) or term.count("...") > 1:
            raise ArgumentError(f"einsum: invalid subscripts {term!r} in {equation!r} (letters and one '...')")
        if "..." in term:
            k = op.ndim - len(named)
            if k < 0:
                raise ShapeError(f"einsum: {term!r} names more dims than the operand of shape "
                                 f"{list(op.shape)} has")
            ellipsis_dims = max(ellipsis_dims, k)
            # ellipsis dims get labels that cannot be letters, right-aligned across operands
            term = term.replace("...", "".join(chr(0x3000 - k + i) for i in range(k)))
        if len(term) != op.ndim:
            raise ShapeError(f"einsum: {term!r} names {len(term)} dims for an operand of shape "
                             f"{list(op.shape)}")
        labels.append(list(term))
    dots = [chr(0x3000 - ellipsis_dims + i) for i in range(ellipsis_dims)]
    if arrow:
        if rhs.count("...") > 1 or not all(c.isalpha() for c in rhs.replace("...", "")):
            raise ArgumentError(f"einsum: invalid output subscripts {rhs!r}")
        out = list(rhs.replace("...", "".join(dots)))
        if len(set(out)) != len(out):
            raise ArgumentError(f"einsum: output subscripts {rhs!r} repeat a label")
        missing = [c for c in out if c not in sum(labels, [])]
        if missing:
            raise ArgumentError(f"einsum: output label {missing[0]!r} appears in no operand")
    else:  # implicit: the ellipsis, then the labels used once, in alphabetical order
        counts = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = dots + sorted(c for c, n in counts.items() if n == 1 and c not in dots)
    return labels, out


def _diagonals(x, labels):
    """Take the diagonal for every label repeated within one operand."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ShapeError(f"einsum: label {c!r} has sizes {x.shape[i]} and {x.shape[j]} in one operand")
        x = x.diagonal(0, i, j)  # the diagonal becomes the last dim
        labels = [l for k, l in enumerate(labels) if k not in (i, j)] + [c]
    return x, labels


def _sum_out(x, labels, keep):
    axes = tuple(i for i, c in enumerate(labels) if c not in keep)
    if not axes:
        return x, labels
    return x.sum(dim=axes), [c for c in labels if c in keep]


def _contract(a, la, b, lb, keep):
    """``a`` and ``b`` multiplied over their shared labels, summing the shared labels not
    in ``keep``: one batched matmul of (batch, a's own, summed) by (batch, summed, b's own)."""
    sizes = {}
    for x, ls in ((a, la), (b, lb)):
        for c, n in zip(ls, x.shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ShapeError(f"einsum: label {c!r} has sizes {sizes[c]} and {n}")
            sizes[c] = max(sizes.get(c, 1), n)
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    a_own = [c for c in la if c not in lb]
    b_own = [c for c in lb if c not in la]

    def arrange(x, ls, order):
        x = x.permute([ls.index(c) for c in order])
        return x.expand([sizes[c] for c in order])  # size-1 dims broadcast, as PyTorch's
    size = lambda cs: math.prod(sizes[c] for c in cs)  # noqa: E731
    am = arrange(a, la, batch + a_own + summed).reshape(size(batch), size(a_own), size(summed))
    bm = arrange(b, lb, batch + summed + b_own).reshape(size(batch), size(summed), size(b_own))
    out = am.matmul(bm).reshape([sizes[c] for c in batch + a_own + b_own])
    return out, batch + a_own + b_own


def einsum(equation, *operands):
    """See torch.einsum: ``einsum("bij,bjk->bik", a, b)``, the operands also as one list;
    ``...`` for broadcast dims, a repeated label for a diagonal, the output implicit
    (labels used once, alphabetically) without ``->``."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: at least one operand is needed")
    labels, out = _parse(equation, operands)
    xs = []
    for k, (x, ls) in enumerate(zip(operands, labels)):
        x, ls = _diagonals(x, ls)
        # a label only this operand has and the output lacks is summed right away
        others = set(out).union(*(set(l) for j, l in enumerate(labels) if j != k))
        xs.append(_sum_out(x, ls, others))
    dtype = operands[0].dtype
    for x, _ in xs[1:]:
        if x.dtype is not dtype:
            raise TypeError(f"einsum: operands must have one dtype, got {dtype.name} and {x.dtype.name}")
    x, ls = xs[0]
    for k, (y, ly) in enumerate(xs[1:], start=1):
        later = set(out).union(*(set(l) for _, l in xs[k + 1:]))
        x, ls = _contract(x, ls, y, ly, later)
    x, ls = _sum_out(x, ls, set(out))
    return x.permute([ls.index(c) for c in out]) if ls != out else x


# ------------------------------------------------------------------ the addmm family

def _scaled(term, product, beta, alpha, op):
    if beta == 0:  # PyTorch ignores the input then: its nan and inf do not propagate
        return product * alpha if alpha != 1 else product
    if not isinstance(term, TensorCore):
        raise TypeError(f"{op}: input must be a Tensor, got {type(term).__name__}")
    return term * beta + product * alpha if beta != 1 or alpha != 1 else term + product


def _check_ndim(op, **tensors):
    for name, (t, nd) in tensors.items():
        if not isinstance(t, TensorCore) or t.ndim != nd:
            raise ShapeError(f"{op}: {name} must be {nd}-d, got shape {list(getattr(t, 'shape', []))}")


# ------------------------------------------------------------------ distances

def cdist(x1, x2, p=2.0, compute_mode=None):
    """See torch.cdist: the p-norm distance between each row of ``x1`` (..., P, M) and
    each row of ``x2`` (..., R, M), as (..., P, R); the gradient at a zero distance is 0,
    as PyTorch defines it. Computed from the differences (PyTorch may use a matmul form
    for p=2 on large inputs, which rounds differently)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist: expected (..., P, M) and (..., R, M), got shapes {list(x1.shape)} "
                         f"and {list(x2.shape)}")
    if p < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        # a count: its gradient is 0, but it stays in the graph as PyTorch's does
        return (diff != 0).to(x1.dtype).sum(dim=-1) + (diff * 0).sum(dim=-1)
    if p == 1:
        return diff.sum(dim=-1)
    if p == math.inf:
        return diff.amax(dim=-1)
    if p == 2:
        return ops.SafeSqrt.apply((diff * diff).sum(dim=-1))
    total = (diff ** p).sum(dim=-1)
    # d/dt t**(1/p) is infinite at 0; PyTorch's gradient there is 0
    zero = total == 0
    return total.masked_fill(zero, 1) ** (1.0 / p) * (~zero).to(total.dtype)


# ------------------------------------------------------------------ Tensor methods

class ContractionMethods:
    """Tensor's products: ``matmul`` and its forms, the methods of the addmm family, each
    also the package's function (``sg.addmm(c, a, b)`` is ``c.addmm(a, b)``, so its first
    parameter keeps the function's name, ``input``), and ``fill_diagonal_``."""

    __slots__ = ()

    def __matmul__(self, o):
        return self.matmul(o)

    def __rmatmul__(self, o):
        return self._infer(o).matmul(self)

    def matmul(self, other):
        """Matrix product with NumPy's rules for 1-D and batched operands (the ``@`` operator); see
        torch.matmul."""
        a, b = _lower(self, other)
        if not isinstance(b, TensorCore):
            raise TypeError(f"matmul: expected a Tensor, got {type(b).__name__}")
        if a.dtype is not b.dtype:
            raise TypeError(f"matmul: expected both operands to have the same dtype, got "
                            f"{a.dtype.name} and {b.dtype.name}")
        if a.dtype is bool_:
            raise TypeError("matmul: not supported for bool tensors")
        if not a.ndim or not b.ndim:
            raise ShapeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                             f"{list(a.shape)} and {list(b.shape)}")
        if a.shape[-1] != b.shape[-2 if b.ndim > 1 else -1]:
            raise ShapeError(f"matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                             f"multiplied ({a.shape[-1]} != {b.shape[-2 if b.ndim > 1 else -1]}; "
                             f"dtype {a.dtype.name})")
        if a.ndim == 1 and b.ndim == 1:
            return a.unsqueeze(0).matmul(b.unsqueeze(1)).reshape(())
        if a.ndim == 1:
            return a.unsqueeze(0).matmul(b).squeeze(-2)
        if b.ndim == 1:
            return a.matmul(b.unsqueeze(1)).squeeze(-1)
        if b.ndim == 2 and a.ndim > 2:
            # fold the batch into rows: one large matmul instead of a broadcast weight
            return a.reshape(-1, a.shape[-1]).matmul(b).reshape(*a.shape[:-1], b.shape[-1])
        try:
            batch = shapes.broadcast("matmul", a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ShapeError(f"matmul: batch dims of {list(a.shape)} and {list(b.shape)} cannot be "
                             f"broadcast (dtype {a.dtype.name})") from None
        shapes.check((*batch, a.shape[-2], b.shape[-1]), "matmul", a.dtype)
        if tuple(a.shape[:-2]) != batch:
            a = a.expand(*batch, *a.shape[-2:])
        if tuple(b.shape[:-2]) != batch:
            b = b.expand(*batch, *b.shape[-2:])
        return ops.MatMul.apply(a, b)

    def mm(self, other):
        """Product of two 2-D tensors; see torch.mm."""
        if self.ndim != 2 or other.ndim != 2:
            raise ShapeError(f"mm: expected 2-D tensors, got {list(self.shape)} and {list(other.shape)}")
        return self.matmul(other)

    def bmm(self, other):
        """Batched matrix product of two 3-D tensors; see torch.bmm."""
        if self.ndim != 3 or other.ndim != 3 or self.shape[0] != other.shape[0]:
            raise ShapeError(f"bmm: expected 3-D tensors with equal batch, got {list(self.shape)} "
                             f"and {list(other.shape)}")
        return self.matmul(other)

    def dot(self, other):
        """Inner product of two 1-D tensors; see torch.dot."""
        if self.ndim != 1 or other.ndim != 1:
            raise ShapeError(f"dot: expected 1-D tensors, got {list(self.shape)} and {list(other.shape)}")
        return self.matmul(other)

    def addmm(input, mat1, mat2, *, beta=1, alpha=1):
        """See torch.addmm: ``beta * input + alpha * (mat1 @ mat2)``."""
        input, mat1, mat2 = _lower(input, mat1, mat2)
        _check_ndim("addmm", mat1=(mat1, 2), mat2=(mat2, 2))
        return _scaled(input, mat1.mm(mat2), beta, alpha, "addmm")

    def addmv(input, mat, vec, *, beta=1, alpha=1):
        """See torch.addmv: ``beta * input + alpha * (mat @ vec)``."""
        _check_ndim("addmv", mat=(mat, 2), vec=(vec, 1))
        return _scaled(input, mat.matmul(vec), beta, alpha, "addmv")

    def addr(input, vec1, vec2, *, beta=1, alpha=1):
        """See torch.addr: ``beta * input + alpha * outer(vec1, vec2)``."""
        _check_ndim("addr", vec1=(vec1, 1), vec2=(vec2, 1))
        return _scaled(input, vec1.unsqueeze(1) * vec2.unsqueeze(0), beta, alpha, "addr")

    def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
        """See torch.baddbmm: ``beta * input + alpha * (batch1 @ batch2)``, batch by batch."""
        input, batch1, batch2 = _lower(input, batch1, batch2)
        _check_ndim("baddbmm", batch1=(batch1, 3), batch2=(batch2, 3))
        return _scaled(input, batch1.bmm(batch2), beta, alpha, "baddbmm")

    def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
        """See torch.addbmm: ``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
        input, batch1, batch2 = _lower(input, batch1, batch2)
        _check_ndim("addbmm", batch1=(batch1, 3), batch2=(batch2, 3))
        return _scaled(input, batch1.bmm(batch2).sum(dim=0), beta, alpha, "addbmm")

    def fill_diagonal_(self, fill_value, wrap=False):
        """See ``torch.Tensor.fill_diagonal_``: the main diagonal set to ``fill_value`` in place
        (every dim of the same size above 2-d; ``wrap`` restarts it below a tall matrix)."""
        if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
            raise ShapeError(f"fill_diagonal_: needs a 2-d tensor or all dims equal, got shape "
                             f"{list(self.shape)}")
        n = min(self.shape)
        step = sum(math.prod(self.shape[k + 1:]) for k in range(self.ndim))  # one step along every dim
        count = n
        if wrap and self.ndim == 2 and self.shape[0] > self.shape[1]:
            # PyTorch continues the diagonal every (cols + 1) rows below the square part
            count = (self.numel() + step - 1) // step
        pos = self._infer([i * step for i in range(count) if i * step < self.numel()], dtype=int64)
        pos = pos.to(self.device)
        value = self._scalar(fill_value, self.dtype)
        return self._inplace(lambda x: ops.IndexPut.apply(x.reshape(-1), pos, value).reshape(self.shape),
                             "fill_diagonal_")


# the package's functions: the methods, called with the tensor first
addmm, addmv, addr, baddbmm, addbmm = (ContractionMethods.addmm, ContractionMethods.addmv,
                                       ContractionMethods.addr, ContractionMethods.baddbmm,
                                       ContractionMethods.addbmm)
