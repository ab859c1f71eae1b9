"""nn.init and the layers' default initialisation: gains and fans against PyTorch,
distributions against their formulas (bounds and moments), and reproducibility from the
project's generator."""
import math

import numpy as np
import pytest

from .oracle import need_torch

SHAPE = (150, 200)  # 30,000 draws: moments are known to within about 1%


def _draws(sg, fn, *args, shape=SHAPE, dtype=None, **kwargs):
    t = sg.zeros(*shape, dtype=dtype or sg.float32)
    assert fn(t, *args, **kwargs) is t
    return t.numpy().astype(np.float64).ravel()


def _check_uniform(v, low, high):
    n = v.size
    # float32 rounding may move a value at the very end by half an ulp
    slack = 1e-7 * max(abs(low), abs(high))
    assert v.min() >= low - slack and v.max() <= high + slack, (v.min(), v.max(), low, high)
    width = high - low
    # the extremes come within a few expected gaps of the ends
    assert v.min() - low < 20 * width / n and high - v.max() < 20 * width / n
    sd = width / math.sqrt(12)
    assert abs(v.mean() - (low + high) / 2) < 5 * sd / math.sqrt(n)
    # the sample variance of a uniform has relative sd sqrt(0.8 / n)
    assert abs(v.var() / sd ** 2 - 1) < 5 * math.sqrt(0.8 / n)


def _check_normal(v, mean, std):
    n = v.size
    assert abs(v.mean() - mean) < 5 * std / math.sqrt(n)
    assert abs(v.var() / std ** 2 - 1) < 5 * math.sqrt(2.0 / n)
    # the share within one sd is 68.27%
    inside = np.mean(np.abs(v - mean) < std)
    assert abs(inside - 0.6827) < 5 * math.sqrt(0.6827 * 0.3173 / n)


NONLINEARITIES = [("linear", None), ("conv1d", None), ("conv2d", None), ("sigmoid", None),
                  ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                  ("leaky_relu", 1), ("selu", None), ("conv_transpose2d", None)]


@pytest.mark.parametrize("name,param", NONLINEARITIES)
def test_calculate_gain_matches_torch(sg, name, param):
    torch = need_torch()
    assert sg.nn.init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param),
                                                                    rel=1e-15)


def test_calculate_gain_errors(sg):
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        sg.nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        sg.nn.init.calculate_gain("leaky_relu", "big")


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2, 2), (2, 3, 4), (1, 1)])
def test_fans_match_torch(sg, shape):
    torch = need_torch()
    ours = sg.nn.init._calculate_fan_in_and_fan_out(sg.zeros(*shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(*shape))


def test_fans_need_two_dims(sg):
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        sg.nn.init.xavier_uniform_(sg.zeros(5))
    with pytest.raises(ValueError, match="fan_in, fan_out"):
        sg.nn.init.kaiming_uniform_(sg.zeros(2, 2), mode="fan_avg")


# fan_in = 200, fan_out = 150 for SHAPE
@pytest.mark.parametrize("fn,kwargs,bound", [
    ("xavier_uniform_", {}, math.sqrt(6 / 350)),
    ("xavier_uniform_", {"gain": 2.0}, 2 * math.sqrt(6 / 350)),
    ("kaiming_uniform_", {}, math.sqrt(2) * math.sqrt(3 / 200)),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, 1 / math.sqrt(200)),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2) * math.sqrt(3 / 150)),
    ("uniform_", {"a": -1.0, "b": 3.0}, None),
])
def test_uniform_initialisers(sg, fn, kwargs, bound):
    v = _draws(sg, getattr(sg.nn.init, fn), **kwargs)
    low, high = (-1.0, 3.0) if bound is None else (-bound, bound)
    _check_uniform(v, low, high)


@pytest.mark.parametrize("fn,kwargs,mean,std", [
    ("xavier_normal_", {}, 0.0, math.sqrt(2 / 350)),
    ("xavier_normal_", {"gain": 0.5}, 0.0, 0.5 * math.sqrt(2 / 350)),
    ("kaiming_normal_", {}, 0.0, math.sqrt(2) / math.sqrt(200)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "tanh"}, 0.0, 5 / 3 / math.sqrt(150)),
    ("normal_", {"mean": 1.0, "std": 0.5}, 1.0, 0.5),
    ("normal_", {}, 0.0, 1.0),
])
def test_normal_initialisers(sg, fn, kwargs, mean, std):
    _check_normal(_draws(sg, getattr(sg.nn.init, fn), **kwargs), mean, std)


def test_trunc_normal_moments(sg):
    mean, std, a, b = 0.5, 1.0, -0.5, 2.0
    v = _draws(sg, sg.nn.init.trunc_normal_, mean, std, a, b)
    assert v.min() >= a and v.max() <= b
    # moments of the truncated normal, from its standardised bounds
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m = mean + std * (pdf(alpha) - pdf(beta)) / z
    var = std ** 2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2)
    assert abs(v.mean() - m) < 5 * math.sqrt(var / v.size)
    assert abs(v.var() / var - 1) < 0.05


def test_constant_initialisers(sg):
    init = sg.nn.init
    assert set(_draws(sg, init.constant_, 0.25, shape=(3, 4))) == {0.25}
    assert set(_draws(sg, init.zeros_, shape=(3, 4))) == {0.0}
    assert set(_draws(sg, init.ones_, shape=(2, 2, 2))) == {1.0}


@pytest.mark.capability("float64")
def test_float64_draws_are_float64(sg):
    v = _draws(sg, sg.nn.init.uniform_, shape=(100,), dtype=sg.float64)
    t = sg.nn.init.uniform_(sg.zeros(100, dtype=sg.float64))
    assert t.dtype == sg.float64
    # 53-bit uniforms: a float32 rounding would leave these exactly representable in float32
    assert any(float(np.float32(x)) != x for x in t.tolist()) and v.size == 100


def test_initialisers_use_the_project_generator(sg):
    """Same seed, same values; the values are the generator's own uniform/normal draws
    (so every stage initialises identically); ``generator=`` selects another stream."""
    init = sg.nn.init
    sg.manual_seed(7)
    a = init.uniform_(sg.zeros(4, 5), -2.0, 3.0).tolist()
    sg.manual_seed(7)
    b = init.uniform_(sg.zeros(4, 5), -2.0, 3.0).tolist()
    sg.manual_seed(7)
    ref = (sg.rand(4, 5) * 5.0 - 2.0).numpy()
    assert a == b
    np.testing.assert_allclose(np.array(a, dtype=np.float32), ref, rtol=1e-6, atol=1e-6)
    sg.manual_seed(7)
    n = init.normal_(sg.zeros(6), 0.0, 1.0).tolist()
    sg.manual_seed(7)
    assert n == sg.randn(6).tolist()
    gen = sg.Generator(123)
    c = init.kaiming_normal_(sg.zeros(3, 3), generator=gen).tolist()
    d = init.kaiming_normal_(sg.zeros(3, 3), generator=sg.Generator(123)).tolist()
    e = init.kaiming_normal_(sg.zeros(3, 3)).tolist()
    assert c == d and c != e


def test_init_on_a_parameter_records_no_graph(sg):
    p = sg.nn.Parameter(sg.zeros(3, 4))
    for fn in (sg.nn.init.xavier_uniform_, sg.nn.init.normal_, sg.nn.init.zeros_,
               sg.nn.init.constant_):
        args = (0.5,) if fn is sg.nn.init.constant_ else ()
        fn(p, *args)
        assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_zero_element_tensor_warns(sg):
    t = sg.zeros(0, 3)
    with pytest.warns(UserWarning, match="zero-element"):
        assert sg.nn.init.kaiming_uniform_(t) is t


# ------------------------------------------------------------------ layers' defaults

@pytest.mark.parametrize("make,fan_in", [
    (lambda nn: nn.Linear(60, 50), 60),
    (lambda nn: nn.Conv2d(4, 40, 3, groups=2), 18),
    (lambda nn: nn.Conv1d(6, 50, 5), 30),
], ids=["linear", "conv2d_groups", "conv1d"])
def test_linear_and_conv_default_init(sg, make, fan_in):
    """PyTorch's default: weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    torch = need_torch()
    layer = make(sg.nn)
    bound = 1 / math.sqrt(fan_in)
    assert torch.nn.init._calculate_fan_in_and_fan_out(make(torch.nn).weight)[0] == fan_in
    w = layer.weight.detach().numpy().astype(np.float64).ravel()
    _check_uniform(w, -bound, bound)
    b = layer.bias.detach().numpy()
    assert np.all(np.abs(b) <= bound) and len(set(b.tolist())) == b.size
    assert layer.weight.requires_grad and layer.bias.requires_grad


def test_layer_init_is_reproducible(sg):
    sg.manual_seed(3)
    a = sg.nn.Sequential(sg.nn.Linear(4, 3), sg.nn.Conv2d(2, 2, 2), sg.nn.Embedding(5, 2))
    sg.manual_seed(3)
    b = sg.nn.Sequential(sg.nn.Linear(4, 3), sg.nn.Conv2d(2, 2, 2), sg.nn.Embedding(5, 2))
    c = sg.nn.Sequential(sg.nn.Linear(4, 3), sg.nn.Conv2d(2, 2, 2), sg.nn.Embedding(5, 2))
    va = {k: v.tolist() for k, v in a.state_dict().items()}
    assert va == {k: v.tolist() for k, v in b.state_dict().items()}
    assert va != {k: v.tolist() for k, v in c.state_dict().items()}


def test_embedding_default_init(sg):
    v = sg.nn.Embedding(300, 100).weight.detach().numpy().astype(np.float64).ravel()
    _check_normal(v, 0.0, 1.0)


@pytest.mark.parametrize("make", [
    lambda nn: nn.BatchNorm1d(3), lambda nn: nn.BatchNorm2d(3, momentum=None),
    lambda nn: nn.LayerNorm((2, 3)), lambda nn: nn.GroupNorm(1, 3), lambda nn: nn.RMSNorm(3),
], ids=["bn1d", "bn2d", "layernorm", "groupnorm", "rmsnorm"])
def test_norm_layer_default_state_matches_torch(sg, make):
    torch = need_torch()
    ours, theirs = make(sg.nn), make(torch.nn)
    mine = ours.state_dict()
    assert list(mine) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert mine[k].tolist() == v.tolist(), k
        assert mine[k].dtype.name == str(v.dtype).replace("torch.", ""), k


# ------------------------------------------------------------------ structured initialisers

@pytest.mark.parametrize("shape,groups", [((6, 6, 3), 1), ((4, 2, 3, 3), 2), ((8, 3, 2, 4), 1),
                                          ((6, 2, 3, 3, 3), 3), ((2, 5, 5), 1)])
def test_dirac_matches_torch(sg, shape, groups):
    torch = need_torch()
    t, tt = sg.full(shape, 7.0), torch.full(shape, 7.0)
    assert sg.nn.init.dirac_(t, groups=groups) is t
    torch.nn.init.dirac_(tt, groups=groups)
    np.testing.assert_array_equal(t.numpy(), tt.numpy())


def test_dirac_keeps_a_convolutions_input(sg):
    conv = sg.nn.Conv2d(3, 3, 3, padding=1, bias=False)
    sg.nn.init.dirac_(conv.weight)
    x = sg.randn(2, 3, 5, 5)
    np.testing.assert_allclose(conv(x).detach().numpy(), x.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2)])
def test_eye_matches_torch(sg, shape):
    torch = need_torch()
    t, tt = sg.full(shape, 3.0), torch.full(shape, 3.0)
    assert sg.nn.init.eye_(t) is t
    np.testing.assert_array_equal(t.numpy(), torch.nn.init.eye_(tt).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,gain", [((6, 6), 1.0), ((4, 10), 2.0), ((10, 4), 0.5), ((5, 2, 3), 1.0),
                                        ((3, 4, 2, 2), math.sqrt(2))])
def test_orthogonal_is_orthogonal_like_torch(sg, shape, gain, dtype):
    torch = need_torch()
    t = getattr(sg, "zeros")(*shape, dtype=getattr(sg, dtype))
    assert sg.nn.init.orthogonal_(t, gain=gain) is t
    tt = torch.nn.init.orthogonal_(torch.zeros(*shape, dtype=getattr(torch, dtype)), gain=gain)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for m in (t.numpy(), tt.numpy()):
        assert m.dtype == np.dtype(dtype)
        flat = m.reshape(shape[0], -1).astype(np.float64) / gain
        small = min(flat.shape)
        gram = flat @ flat.T if flat.shape[0] < flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(gram, np.eye(small), atol=tol)
    # a fresh draw differs: the matrix is random, not a fixed one
    other = sg.nn.init.orthogonal_(sg.zeros(*shape, dtype=getattr(sg, dtype)), gain=gain)
    assert not np.allclose(other.numpy(), t.numpy())


def test_orthogonal_is_reproducible_and_uniformly_signed(sg):
    """Haar-distributed: each entry's mean is about 0 over many draws, so no sign is preferred."""
    sg.manual_seed(3)
    a = sg.nn.init.orthogonal_(sg.zeros(4, 4)).numpy()
    sg.manual_seed(3)
    np.testing.assert_array_equal(a, sg.nn.init.orthogonal_(sg.zeros(4, 4)).numpy())
    draws = np.stack([sg.nn.init.orthogonal_(sg.zeros(3, 3)).numpy() for _ in range(400)])
    # each entry of a Haar 3x3 orthogonal matrix has variance 1/3
    assert np.abs(draws.mean(axis=0)).max() < 5 * math.sqrt(1 / 3 / 400)


@pytest.mark.parametrize("shape,sparsity", [((20, 30), 0.1), ((7, 50), 0.5), ((10, 10), 0.0), ((9, 4), 0.95)])
def test_sparse_zeros_per_column_like_torch(sg, shape, sparsity):
    torch = need_torch()
    t = sg.zeros(*shape)
    assert sg.nn.init.sparse_(t, sparsity, std=0.5) is t
    tt = torch.nn.init.sparse_(torch.zeros(*shape), sparsity, std=0.5)
    ours, theirs = (t.numpy() == 0).sum(axis=0), (tt.numpy() == 0).sum(axis=0)
    np.testing.assert_array_equal(ours, theirs)
    assert set(ours) == {math.ceil(sparsity * shape[0])}
    # the zeros fall on different rows in different columns
    if 0 < sparsity < 1 and shape[1] > 10:
        assert len({tuple(np.flatnonzero(c == 0)) for c in t.numpy().T}) > 1


def test_sparse_nonzeros_are_normal(sg):
    v = sg.nn.init.sparse_(sg.zeros(300, 100), 0.2, std=0.05).numpy().ravel()
    _check_normal(v[v != 0].astype(np.float64), 0.0, 0.05)


@pytest.mark.parametrize("name,args", [
    ("orthogonal_", ((3,), ())), ("sparse_", ((3, 3, 3), (0.1,))), ("sparse_", ((3,), (0.1,))),
    ("dirac_", ((3, 3), ())), ("dirac_", ((3, 3, 3, 3, 3, 3), ())), ("eye_", ((3, 3, 3), ())),
    ("eye_", ((3,), ())),
])
def test_structured_initialiser_errors_match_torch(sg, name, args):
    torch = need_torch()
    shape, extra = args
    with pytest.raises(ValueError) as theirs:
        getattr(torch.nn.init, name)(torch.zeros(*shape), *extra)
    with pytest.raises(ValueError, match=str(theirs.value)):
        getattr(sg.nn.init, name)(sg.zeros(*shape), *extra)


def test_dirac_groups_must_divide(sg):
    torch = need_torch()
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        torch.nn.init.dirac_(torch.zeros(3, 3, 3), groups=2)
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        sg.nn.init.dirac_(sg.zeros(3, 3, 3), groups=2)


def test_orthogonal_of_an_empty_tensor_is_a_no_op(sg):
    torch = need_torch()
    assert tuple(torch.nn.init.orthogonal_(torch.zeros(0, 3)).shape) == (0, 3)
    assert tuple(sg.nn.init.orthogonal_(sg.zeros(0, 3)).shape) == (0, 3)
