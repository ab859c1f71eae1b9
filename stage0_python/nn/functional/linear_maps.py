"""Linear and bilinear maps: ``linear``, whose ``_linear`` also applies an activation in the
same fused kernel where the backend offers one (``nn.Linear`` and ``Sequential``'s fused
pairs use it), and ``bilinear``."""
from ... import backend as B
from ...autocast import lower as _lower
from ...autograd import Function
from ...device import fused
from ...functional import gelu as _gelu
from ...shapes import ShapeError
from ...tensor import Tensor
from .helpers import _buffer, _tensors


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input``."""
    return _linear(input, weight, bias, None)


def _linear(input, weight, bias, act):
    """``linear`` then ``act`` (None, "relu", "gelu" or "gelu_tanh"): one fused Function where the
    backend offers it for these operands, else the composite. Under autocast the operands
    are lowered here, so ``nn.Linear`` is cast as ``F.linear`` is."""
    input, weight, bias = _lower(input, weight, bias)
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{tuple(weight.shape)}")
    if input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ShapeError(f"linear: input of shape {tuple(input.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}: the last input dimension must be {weight.shape[1]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"linear: bias of shape {tuple(bias.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}")
    same = input.dtype is weight.dtype and (bias is None or bias.dtype is weight.dtype)
    if fused("linear", input._data, weight._data) and same and weight.dtype.is_floating_point:
        return _Linear.apply(input, weight, bias, act)
    out = input.matmul(weight.transpose(0, 1))
    return _ACTIVATIONS[act](out if bias is None else out + bias)


class _Linear(Function):
    """``act(x @ w.T + b)`` on the backend's fused kernels: the bias and the activation
    are applied to the GEMM's output while it is in cache, and the backward is the
    activation's derivative, two GEMMs on transposed views and a column sum."""

    @staticmethod
    def forward(ctx, x, w, b, act):
        y, pre = B.linear(x._data, w._data, _buffer(b), act)
        out = Tensor._make(y)
        need_x, need_w = ctx.needs_input_grad[:2]
        # relu's derivative comes from the output, gelu's from the values before it
        ctx.act, ctx.pre = act, pre
        ctx.save_for_backward(x if need_w else None, w if need_x else None, out if act == "relu" else None)
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        saved = out._data if ctx.act == "relu" else ctx.pre
        grads = B.linear_backward(g._data, _buffer(x), _buffer(w), saved, ctx.act, *need[:3])
        return (*_tensors(*grads), None)


_ACTIVATIONS = {None: lambda y: y, "relu": lambda y: y.relu(), "gelu": lambda y: y.gelu(),
                "gelu_tanh": lambda y: _gelu(y, approximate="tanh")}


def bilinear(input1, input2, weight, bias=None):
    """See torch.nn.functional.bilinear: y[..., o] = x1 @ weight[o] @ x2 + bias[o]."""
    if weight.ndim != 3:
        raise ShapeError(f"bilinear: weight must be 3-D (out, in1, in2), got shape {tuple(weight.shape)}")
    O, I1, I2 = weight.shape
    if input1.ndim < 1 or input1.shape[-1] != I1 or input2.ndim < 1 or input2.shape[-1] != I2 \
            or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise ShapeError(f"bilinear: inputs of shapes {tuple(input1.shape)} and {tuple(input2.shape)} do "
                         f"not fit weight {tuple(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (O,):
        raise ShapeError(f"bilinear: bias must have shape ({O},), got {tuple(bias.shape)}")
    t = input1.matmul(weight.permute(1, 0, 2).reshape(I1, O * I2))  # (..., O * I2)
    y = (t.reshape(*input1.shape[:-1], O, I2) * input2.unsqueeze(-2)).sum(dim=-1)
    return y if bias is None else y + bias
