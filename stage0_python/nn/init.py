"""Parameter initialisation, as in ``torch.nn.init``: same formulas, same bounds.

Values come from the project's generator (``manual_seed`` makes them reproducible, and
every stage draws the same numbers); ``generator=`` selects another stream. Each
function fills its tensor in place, without recording autograd history, and returns it.
"""
import math
import warnings

from .. import backend as B
from .. import random as _random
from ..autograd import no_grad as _no_grad
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "sparse_"]


def _gen(generator):
    return _random.default_generator if generator is None else generator


def _fill(tensor, buf):
    with _no_grad():
        tensor.copy_(Tensor._make(buf))
    return tensor


def _is_empty(tensor):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return True
    return False


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with values drawn from U(a, b)."""
    if _is_empty(tensor):
        return tensor
    return _fill(tensor, B.uniform(tuple(tensor.shape), float(a), float(b), tensor.dtype, _gen(generator)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with values drawn from N(mean, std**2)."""
    if std < 0:
        raise ValueError(f"normal_: std must be non-negative, got {std}")
    if _is_empty(tensor):
        return tensor
    buf = B.normal(tuple(tensor.shape), float(mean), float(std), tensor.dtype, _gen(generator))
    return _fill(tensor, buf)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std**2) restricted to [a, b]: out-of-range draws are redrawn."""
    if not a < b:
        raise ValueError(f"trunc_normal_: expected a < b, got a={a}, b={b}")
    if _is_empty(tensor):
        return tensor
    gen = _gen(generator)
    n = tensor.numel()
    vals = []
    while len(vals) < n:
        draw = B.normal((n - len(vals),), float(mean), float(std), tensor.dtype, gen)
        vals.extend(v for v in Tensor._make(draw).tolist() if a <= v <= b)
    return _fill(tensor, B.from_list(vals, tuple(tensor.shape), tensor.dtype))


def constant_(tensor, val):
    """Fill with the value ``val``."""
    with _no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor):
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fill with ones."""
    return constant_(tensor, 1.0)


def eye_(tensor):
    """Fill a 2-D tensor with the identity (ones on the diagonal of a rectangle too)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    vals = [1.0 if i == j else 0.0 for i in range(rows) for j in range(cols)]
    return _fill(tensor, B.from_list(vals, (rows, cols), tensor.dtype))


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta: a convolution with it
    keeps its input's channels (each of ``groups`` keeps as many as it can)."""
    shape = tuple(tensor.shape)
    if len(shape) not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = shape[0] // groups
    kernel = math.prod(shape[2:])
    center = 0  # the flat index of the kernel's centre
    for size in shape[2:]:
        center = center * size + size // 2
    vals = [0.0] * math.prod(shape)
    for g in range(groups):
        for d in range(min(per_group, shape[1])):
            vals[((g * per_group + d) * shape[1] + d) * kernel + center] = 1.0
    return _fill(tensor, B.from_list(vals, shape, tensor.dtype))


def _orthonormal_columns(columns):
    """Gram-Schmidt on a list of columns (each a list), twice over so rounding leaves them
    orthogonal: the Q of a QR factorisation whose R has a positive diagonal."""
    basis = []
    for col in columns:
        v = list(col)
        for _ in range(2):
            for q in basis:
                dot = math.fsum(a * b for a, b in zip(q, v))
                v = [a - dot * b for a, b in zip(v, q)]
        norm = math.sqrt(math.fsum(a * a for a in v))
        basis.append([a / norm for a in v])
    return basis


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix (Saxe et al., 2013) times ``gain``: the QR
    factorisation of a normal draw, the tensor viewed as ``(shape[0], rest)``; its rows are
    orthonormal when there are fewer rows than columns, else its columns."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor  # nothing to fill
    rows = tuple(tensor.shape)[0]
    cols = tensor.numel() // rows
    draw = Tensor._make(B.normal((rows, cols), 0.0, 1.0, tensor.dtype, _gen(generator))).tolist()
    # orthonormalise the shorter side's vectors: they are the ones that can be orthonormal
    vectors = draw if rows < cols else [list(c) for c in zip(*draw)]
    basis = _orthonormal_columns(vectors)
    matrix = basis if rows < cols else [list(r) for r in zip(*basis)]
    vals = [gain * v for row in matrix for v in row]
    return _fill(tensor, B.from_list(vals, tuple(tensor.shape), tensor.dtype))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor from N(0, std**2), then zero ``ceil(sparsity * rows)`` entries of
    each column, at rows chosen at random (Martens, 2010)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    gen = _gen(generator)
    num_zeros = int(math.ceil(sparsity * rows))
    vals = Tensor._make(B.normal((rows, cols), 0.0, float(std), tensor.dtype, gen)).tolist()
    for c in range(cols):
        for r in gen.randperm(rows)[:num_zeros]:
            vals[r][c] = 0.0
    return _fill(tensor, B.from_list([v for row in vals for v in row], (rows, cols), tensor.dtype))


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {shape})")
    receptive = 1
    for s in shape[2:]:
        receptive *= s
    return shape[1] * receptive, shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015)."""
    if _is_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std**2) with std = gain / sqrt(fan)."""
    if _is_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)
