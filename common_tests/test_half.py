"""float16 and bfloat16 against PyTorch on the CPU: every 2-byte pattern widened, float32
narrowed bit for bit (ties, subnormals, overflow, NaN), arithmetic, reductions, products
and a training step in the 2-byte dtypes, promotion, and interop. A stage that lacks
them (its ``LACKS`` names them) is skipped with that reason."""
import numpy as np
import pytest

from .helpers_half import f32, two_byte_dtypes
from .oracle import need_torch

pytestmark = pytest.mark.needs_torch

half = two_byte_dtypes(["float16", "bfloat16"])


def _same_bits(ours, theirs):
    a, b = f32(ours), f32(theirs)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    keep = ~np.isnan(a)
    bad = np.flatnonzero(a[keep].view(np.uint32) != b[keep].view(np.uint32))
    assert bad.size == 0, f"{bad.size} differ, first: ours {a[keep][bad[:5]]} vs {b[keep][bad[:5]]}"


def _ulp(half):
    return 2.0 ** -10 if half == "float16" else 2.0 ** -7


@pytest.mark.capability("dlpack")
def test_every_pattern_widens_exactly(sg, half):
    torch = need_torch()
    bits = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16)
    theirs = bits.view(getattr(torch, half))
    ours = sg.from_dlpack(theirs)
    assert ours.dtype is getattr(sg, half)
    _same_bits(ours.float(), theirs.float())
    np.testing.assert_array_equal(np.asarray(ours.double().tolist()), theirs.double().numpy())


def test_float32_narrows_bit_for_bit(sg, half):
    torch = need_torch()
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 1e30, -3.4e38,
                        2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 3 * 2.0 ** -26, 2.0 ** -14,
                        1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1e-40],
                       np.float32)
    # every kind of float32: random bit patterns, and values near 1 where ties are dense
    x = np.concatenate([special, -special, rng.integers(0, 2 ** 32, 100_000, dtype=np.uint32).view(np.float32),
                        (1 + rng.integers(0, 2 ** 16, 20_000) * 2.0 ** -23).astype(np.float32)])
    ours, theirs = sg.tensor(x).to(getattr(sg, half)), torch.tensor(x).to(getattr(torch, half))
    _same_bits(ours, theirs)


def test_casts_from_and_to_the_other_dtypes(sg, half):
    torch = need_torch()
    d64 = np.array([1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -8 + 2.0 ** -40, 1e300, -2.5, 7e-6, 0.1], np.float64)
    ints = np.array([0, 1, -7, 2049, 65519, 65521, 2 ** 40 + 1, -(2 ** 62)], np.int64)
    for values in (d64, ints, np.array([True, False, True])):
        _same_bits(sg.tensor(values).to(getattr(sg, half)), torch.tensor(values).to(getattr(torch, half)))
    h = np.array([0.0, -0.0, 1.5, -2.75, 300.5, -1e4, 0.2], np.float32)
    ours, theirs = sg.tensor(h).to(getattr(sg, half)), torch.tensor(h).to(getattr(torch, half))
    for name in ("int32", "int64", "bool", "float64"):
        assert ours.to(getattr(sg, name)).tolist() == theirs.to(getattr(torch, name)).tolist(), name
    other = "bfloat16" if half == "float16" else "float16"
    _same_bits(ours.to(getattr(sg, other)), theirs.to(getattr(torch, other)))
    with pytest.raises(ValueError, match="nan or inf"):
        sg.tensor([float("nan")]).to(getattr(sg, half)).long()


def _pair(sg, torch, half, shape, scale=4.0, seed=0, positive=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale
    x = np.abs(x) + 0.1 if positive else x
    return sg.tensor(x).to(getattr(sg, half)), torch.tensor(x).to(getattr(torch, half))


def test_arithmetic_rounds_once_as_torch(sg, half):
    torch = need_torch()
    (a, ta), (b, tb) = _pair(sg, torch, half, (64, 33)), _pair(sg, torch, half, (33,), seed=1)
    for op in ("__add__", "__sub__", "__mul__", "__truediv__"):
        out = getattr(a, op)(b)
        assert out.dtype is a.dtype, op
        _same_bits(out, getattr(ta, op)(tb))
    _same_bits(a.abs().sqrt(), ta.abs().sqrt())
    _same_bits(a * 3 + 0.5, ta * 3 + 0.5)
    _same_bits(sg.maximum(a, b), torch.maximum(ta, tb))
    _same_bits(sg.where(a > b, a, b), torch.where(ta > tb, ta, tb))


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "sigmoid", "sin", "rsqrt", "erf"])
def test_math_within_one_unit_in_the_last_place(sg, half, op):
    torch = need_torch()
    x, tx = _pair(sg, torch, half, (500,), scale=2.0, positive=op in ("log", "rsqrt"))
    out = getattr(x, op)()
    assert out.dtype is x.dtype
    np.testing.assert_allclose(f32(out), f32(getattr(tx, op)()), rtol=_ulp(half), atol=1e-6)


def test_reductions_products_and_rows(sg, half):
    torch = need_torch()
    x, tx = _pair(sg, torch, half, (16, 40), scale=1.0)
    w, tw = _pair(sg, torch, half, (40, 24), scale=1.0, seed=2)
    tol = dict(rtol=4 * _ulp(half), atol=4 * _ulp(half))
    checks = [
        (x.sum(), tx.sum()), (x.mean(dim=1), tx.mean(dim=1)), (x.amax(dim=0), tx.amax(dim=0)),
        (x.cumsum(dim=1), tx.cumsum(dim=1)), (x @ w, tx @ tw), (x.softmax(dim=1), tx.softmax(dim=1)),
        (x.log_softmax(dim=1), tx.log_softmax(dim=1)), (x.sort(dim=1)[0], tx.sort(dim=1)[0]),
        (sg.nn.functional.layer_norm(x, (40,)), torch.nn.functional.layer_norm(tx, (40,))),
    ]
    for i, (ours, theirs) in enumerate(checks):
        assert ours.dtype is x.dtype and ours.shape == tuple(theirs.shape), i
        scale = max(1.0, float(np.abs(f32(theirs)).max()))
        np.testing.assert_allclose(f32(ours), f32(theirs), rtol=tol["rtol"], atol=tol["atol"] * scale,
                                   err_msg=str(i))
    assert x.argmax(dim=1).tolist() == tx.argmax(dim=1).tolist()
    target = [3, 0, 39, 7] * 4
    loss = sg.nn.functional.cross_entropy(x, sg.tensor(target))
    tloss = torch.nn.functional.cross_entropy(tx, torch.tensor(target))
    assert loss.dtype is x.dtype
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=4 * _ulp(half))


def test_a_training_step_in_the_dtype(sg, half):
    torch = need_torch()
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, 8)
    layers = []
    for lib in (sg, torch):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.ReLU(), lib.nn.Linear(5, 3))
        layers.append(net)
    with torch.no_grad():
        for p, q in zip(layers[0].parameters(), layers[1].parameters()):
            q.copy_(torch.tensor(np.asarray(p.detach().tolist(), np.float32)))
    results = []
    for lib, net in zip((sg, torch), layers):
        net = getattr(net, "half" if half == "float16" else half)()
        opt = lib.optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(net(lib.tensor(x).to(getattr(lib, half))), lib.tensor(y))
            loss.backward()
            opt.step()
        assert all(p.dtype is getattr(lib, half) and p.grad.dtype is getattr(lib, half) for p in net.parameters())
        results.append([f32(p.detach()) for p in net.parameters()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=8 * _ulp(half), atol=8 * _ulp(half))


def test_promotion_as_torch(sg, half):
    torch = need_torch()
    names = [half, "float16" if half == "bfloat16" else "bfloat16", "float32", "float64", "int64", "bool"]
    for a in names:
        for b in names:
            for zero_dim in (False, True):
                ours = sg.ones(2, dtype=getattr(sg, a)) + sg.ones((), dtype=getattr(sg, b)) if zero_dim else \
                    sg.ones(2, dtype=getattr(sg, a)) + sg.ones(2, dtype=getattr(sg, b))
                theirs = torch.result_type(torch.ones(2, dtype=getattr(torch, a)),
                                           torch.ones((), dtype=getattr(torch, b)) if zero_dim else
                                           torch.ones(2, dtype=getattr(torch, b)))
                assert ours.dtype.name == str(theirs).rpartition(".")[2], (a, b, zero_dim)
    assert (sg.ones(2, dtype=getattr(sg, half)) * 2.5).dtype is getattr(sg, half)


def test_interop_and_values(sg, half, tmp_path):
    torch = need_torch()
    t = sg.tensor([[1.5, -2.25], [65504.0, 1e-3]], dtype=getattr(sg, half))
    theirs = torch.tensor([[1.5, -2.25], [65504.0, 1e-3]], dtype=getattr(torch, half))
    assert t.tolist() == theirs.tolist() and t[1, 1].item() == theirs[1, 1].item()
    assert t.element_size() == 2 and t.is_floating_point()
    assert t.T.contiguous().tolist() == theirs.T.contiguous().tolist()  # a 2-byte strided copy
    assert sg.cat([t, t[:1]]).tolist() == torch.cat([theirs, theirs[:1]]).tolist()
    assert t[sg.tensor([1, 0])].tolist() == theirs[torch.tensor([1, 0])].tolist()
    sg.save({"t": t}, tmp_path / "t.sg")
    back = sg.load(tmp_path / "t.sg")["t"]
    assert back.dtype is t.dtype and back.tolist() == t.tolist()
    if half == "bfloat16":  # NumPy has no bfloat16, and PyTorch refuses too
        with pytest.raises(TypeError, match="bfloat16"):
            t.numpy()
        with pytest.raises(TypeError):
            theirs.numpy()
    elif "buffer_protocol" not in sg.LACKS:
        a = t.numpy()
        a[0, 0] = 3.0  # shared memory, as PyTorch's numpy() shares it
        assert a.dtype == np.float16 and t[0, 0].item() == 3.0
        assert sg.tensor(np.array([0.5, 2.0], np.float16)).dtype is sg.float16


@pytest.mark.parametrize("shapes", [((1000,), (1000,)), ((37, 300), (300,)), ((37, 300), (37, 1)),
                                    ((3, 5, 7), ()), ((), (700,)), ((300, 37), (37, 300))], ids=repr)
def test_arithmetic_on_every_layout_bit_for_bit(sg, half, shapes):
    """Contiguous rows (computed a register at a time, with a tail), broadcasts, a scalar
    and a transposed operand (a block at a time), NaN and infinities among the values."""
    torch = need_torch()
    rng = np.random.default_rng(len(repr(shapes)))
    a, b = (rng.standard_normal(s).astype(np.float32) * scale for s, scale in zip(shapes, (100.0, 3.0)))
    if a.size > 3:
        a.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, 3e38]
    ours = [sg.tensor(v).to(getattr(sg, half)) for v in (a, b)]
    theirs = [torch.tensor(v).to(getattr(torch, half)) for v in (a, b)]
    if shapes[0] == (300, 37):  # a transposed, strided operand
        ours[0], theirs[0] = ours[0].T, theirs[0].T
    for op in ("add", "sub", "mul", "div", "maximum", "minimum"):
        _same_bits(getattr(ours[0], op)(ours[1]), getattr(theirs[0], op)(theirs[1]))
