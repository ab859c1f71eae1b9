"""In-place writes: ``add_ sub_ mul_ div_ pow_ clamp_ ...``, the in-place twin of each
elementwise method that has one in PyTorch, the ``+= -= *= /=`` operators, and the writes
of new contents: ``copy_ fill_ zero_ uniform_ normal_``.

Each computes its result out of place and writes it into the tensor's elements
(``_inplace``, which is ``views.inplace``: the tensor, and any view sharing its memory,
gets its new place in the autograd graph). The methods are ``InplaceMethods``, a base of
``Tensor``.
"""
from . import backend as B
from . import ops, views
from . import random as _random
from .arguments import check_fits
from .device import place
from .method_forms import inplace_form
from .shapes import ShapeError
from .tensor_core import TensorCore

wrap = TensorCore._make


class InplaceMethods:
    """Tensor's in-place methods and operators."""

    __slots__ = ()

    def _inplace(self, compute, op, fill=False):
        """Write ``compute(old self)`` into this tensor's elements (see ``views.inplace``)."""
        return views.inplace(self, compute, op, fill)

    def _sync_view(self):
        """Re-derive this view's place in the graph from its base (see ``views.sync``)."""
        views.sync(self)

    def add_(self, other, alpha=1):
        """In-place ``add``; see ``torch.Tensor.add_``."""
        return self._inplace(lambda x: x.add(other, alpha=alpha), "add_")

    def sub_(self, other, alpha=1):
        """In-place ``sub``; see ``torch.Tensor.sub_``."""
        return self._inplace(lambda x: x.sub(other, alpha=alpha), "sub_")

    def mul_(self, other):
        """In-place ``mul``; see ``torch.Tensor.mul_``."""
        return self._inplace(lambda x: x * other, "mul_")

    def div_(self, other, rounding_mode=None):
        """In-place ``div``: with a ``rounding_mode`` an integer tensor stays an integer one."""
        return self._inplace(lambda x: x.div(other, rounding_mode=rounding_mode), "div_")

    def pow_(self, other):
        """In-place ``pow``; see ``torch.Tensor.pow_``."""
        return self._inplace(lambda x: x ** other, "pow_")

    def clamp_(self, min=None, max=None):
        """In-place ``clamp``; see ``torch.Tensor.clamp_``."""
        return self._inplace(lambda x: x.clamp(min, max), "clamp_")

    def addcmul_(self, tensor1, tensor2, value=1):
        """In-place ``addcmul``; see ``torch.Tensor.addcmul_``."""
        return self._inplace(lambda x: x.addcmul(tensor1, tensor2, value), "addcmul_")

    def addcdiv_(self, tensor1, tensor2, value=1):
        """In-place ``addcdiv``; see ``torch.Tensor.addcdiv_``."""
        return self._inplace(lambda x: x.addcdiv(tensor1, tensor2, value), "addcdiv_")

    def maximum_(self, other):
        """In-place ``maximum``."""
        return self._inplace(lambda x: x.maximum(other), "maximum_")

    def lerp_(self, end, weight):
        """In-place ``lerp``; see ``torch.Tensor.lerp_``."""
        return self._inplace(lambda x: x.lerp(end, weight), "lerp_")

    def masked_fill_(self, mask, value):
        """In-place ``masked_fill``; see ``torch.Tensor.masked_fill_``."""
        return self._inplace(lambda x: x.masked_fill(mask, value), "masked_fill_")

    def sqrt_(self):
        """In-place ``sqrt``; see ``torch.Tensor.sqrt_``."""
        return self._inplace(lambda x: x.sqrt(), "sqrt_")

    def exp_(self):
        """In-place ``exp``; see ``torch.Tensor.exp_``."""
        return self._inplace(lambda x: x.exp(), "exp_")

    def relu_(self):
        """In-place ``relu``; see ``torch.relu_``."""
        return self._inplace(lambda x: x.relu(), "relu_")

    def neg_(self):
        """In-place ``neg``; see ``torch.Tensor.neg_``."""
        return self._inplace(lambda x: -x, "neg_")

    def copy_(self, src, non_blocking=False):
        """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor; see
        ``torch.Tensor.copy_``. ``non_blocking`` as ``to``'s: from page-locked memory to a
        device the host does not wait for the copy."""
        if not isinstance(src, TensorCore):
            raise TypeError(f"copy_: expected a Tensor, got {type(src).__name__}")
        if B.broadcast_shapes(self.shape, src.shape) != tuple(self.shape):
            raise ShapeError(f"copy_: source of shape {list(src.shape)} cannot be broadcast to "
                             f"{list(self.shape)}")
        # from any device, as PyTorch's copy_ (the one in-place write that moves data)
        return self._inplace(lambda x: ops.Overwrite.apply(
            x, src.to(self.device, self.dtype, non_blocking=non_blocking)), "copy_")

    def fill_(self, value):
        """Fill with ``value`` in place; see ``torch.Tensor.fill_``."""
        value = value.item() if isinstance(value, TensorCore) else value
        check_fits([value], self.dtype)
        return self._inplace(lambda x: ops.Overwrite.apply(x, self._scalar(value, self.dtype)), "fill_",
                             fill=True)

    def zero_(self):
        """Fill with zeros in place; see ``torch.Tensor.zero_``."""
        return self.fill_(0)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        """Fill in place with samples of U(a, b) from the project's generator (a seed gives the same values
        on every stage, not PyTorch's); see ``torch.Tensor.uniform_``."""
        from .autograd import no_grad  # here: autograd builds on Tensor
        gen = generator or _random.default_generator
        with no_grad():
            return self._inplace(lambda x: wrap(place(B.uniform(self.shape, a, b, self.dtype, gen), x.device)),
                                 "uniform_")

    def normal_(self, mean=0.0, std=1.0, generator=None):
        """Fill in place with samples of N(mean, std²) from the project's generator (a seed gives the same
        values on every stage, not PyTorch's); see ``torch.Tensor.normal_``."""
        from .autograd import no_grad  # here: autograd builds on Tensor
        gen = generator or _random.default_generator
        with no_grad():
            return self._inplace(lambda x: wrap(place(B.normal(self.shape, mean, std, self.dtype, gen),
                                                               x.device)),
                                 "normal_")

    def __iadd__(self, o):
        return self.add_(o)

    def __isub__(self, o):
        return self.sub_(o)

    def __imul__(self, o):
        return self.mul_(o)

    def __itruediv__(self, o):
        return self.div_(o)

    # the in-place twin of each elementwise method (ElementwiseMethods) that has one in PyTorch
    abs_ = inplace_form("abs")
    sign_ = inplace_form("sign")
    reciprocal_ = inplace_form("reciprocal")
    square_ = inplace_form("square")
    log_ = inplace_form("log")
    log1p_ = inplace_form("log1p")
    rsqrt_ = inplace_form("rsqrt")
    erf_ = inplace_form("erf")
    sin_ = inplace_form("sin")
    cos_ = inplace_form("cos")
    tanh_ = inplace_form("tanh")
    sigmoid_ = inplace_form("sigmoid")
    floor_ = inplace_form("floor")
    ceil_ = inplace_form("ceil")
    round_ = inplace_form("round")
    clamp_min_ = inplace_form("clamp_min")
    clamp_max_ = inplace_form("clamp_max")
