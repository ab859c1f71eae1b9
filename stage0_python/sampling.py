"""``multinomial``: indices drawn from rows of (unnormalised) category weights.

The draws come from the project's generator (``random.py``) through plain Python, so a
seed gives the same samples on every stage. The stream is not PyTorch's: tests compare
frequencies, not samples.
"""
from bisect import bisect_right

from . import backend as B
from . import random as R
from .device import place
from .dtypes import int64
from .shapes import ShapeError
from .tensor_core import TensorCore


class InvalidDistributionError(ValueError, RuntimeError):
    """Weights that are no distribution (negative, inf, nan, all zero): PyTorch raises
    RuntimeError, Python code expects ValueError; this is both."""


def _draw(weights, num_samples, replacement, uniforms):
    n = len(weights)
    if replacement:
        cum, total = [], 0.0
        for w in weights:
            total += w
            cum.append(total)
        last = max(i for i, w in enumerate(weights) if w > 0)
        # the first category whose running total exceeds u * total: never a zero weight
        return [min(bisect_right(cum, u * total), last) for u in uniforms]
    weights = list(weights)
    left = list(range(n))  # not drawn yet
    out = []
    for u in uniforms:
        total = sum(weights)
        if total <= 0:  # only zero weights remain: PyTorch then draws those too
            pick = left[min(int(u * len(left)), len(left) - 1)]
        else:
            target, acc, pick = u * total, 0.0, None
            for i in range(n):
                if weights[i] > 0:
                    pick = i
                    acc += weights[i]
                    if acc > target:
                        break
        out.append(pick)
        weights[pick] = 0.0  # drawn: never again
        left.remove(pick)
    return out


class SamplingMethods:
    """Tensor's sampling method, also the package's function (``sg.multinomial(w, 2)`` is
    ``w.multinomial(2)``): its first parameter keeps the function's name, ``input``. This
    module loads before Tensor exists (Tensor lists this class among its bases), so it tests
    and makes tensors through Tensor's base, as tensor_core does."""

    __slots__ = ()

    def multinomial(input, num_samples, replacement=False, generator=None):
        """See torch.multinomial: ``num_samples`` category indices per row of the 1-d or 2-d
        weights ``input``. Inverse-CDF sampling from this project's generator (the same samples
        on every stage, not PyTorch's); without replacement each draw renormalises the rest, and
        once only zero weights remain they are drawn uniformly, as PyTorch also returns them."""
        op = "multinomial"
        if not isinstance(input, TensorCore):
            raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
        if not input.dtype.is_floating_point:
            raise TypeError(f"{op}: only floating-point weights are supported, got {input.dtype.name}")
        if input.ndim not in (1, 2):
            raise ShapeError(f"{op}: input must be 1-d or 2-d, got shape {list(input.shape)} "
                             f"({input.dtype.name})")
        if not isinstance(num_samples, int) or isinstance(num_samples, bool):
            raise TypeError(f"{op}: num_samples must be an int, got {type(num_samples).__name__}")
        n = input.shape[-1]
        if num_samples <= 0:
            raise ShapeError(f"{op}: cannot sample num_samples={num_samples} <= 0 samples")
        if n == 0:
            raise ShapeError(f"{op}: input of shape {list(input.shape)} has no categories")
        if not replacement and num_samples > n:
            raise ShapeError(f"{op}: cannot sample {num_samples} > {n} categories (input shape "
                             f"{list(input.shape)}) without replacement")
        rows = input.detach().reshape(-1, n).tolist()
        gen = generator or R.default_generator
        out = []
        for r, row in enumerate(rows):
            if any(w != w or w in (float("inf"), float("-inf")) or w < 0 for w in row):
                raise InvalidDistributionError(f"{op}: row {r} of input (shape {list(input.shape)}, "
                                               f"{input.dtype.name}) holds inf, nan or a negative weight")
            if sum(row) <= 0:
                raise InvalidDistributionError(f"{op}: row {r} of input (shape {list(input.shape)}) sums "
                                               f"to 0: no category can be drawn")
        for row in rows:  # only once every row is valid: a refused call draws nothing
            out += _draw(row, num_samples, replacement, gen.uniform(num_samples, double=True))
        shape = (num_samples,) if input.ndim == 1 else (len(rows), num_samples)
        return TensorCore._make(place(B.from_list(out, shape, int64), input.device))


multinomial = SamplingMethods.multinomial
