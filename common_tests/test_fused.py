"""The fused kernels a stage offers (its backend's ``FUSED``), each against the composite
it replaces, run on the same stage with ``FUSED`` emptied, and against PyTorch.

Optimizer steps must give the composite's bits, step after step: they follow its order of
float operations. The others may round differently (they reduce in float64 where the
composite reduces in the tensor's dtype), so they are compared within float tolerances.
Only the stages under test whose backend fuses are run here (``fsg``); every stage runs
the composites through the rest of the suite.
"""
import contextlib
import importlib

import numpy as np
import pytest

from .conftest import _loaded, _selected
from .helpers_core import settled
from .oracle import need_torch

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


def pytest_generate_tests(metafunc):
    if "fsg" in metafunc.fixturenames:
        selected = _selected(metafunc.config)
        names = [n for n in selected if _loaded[n].backend.FUSED]
        params = [pytest.param(_loaded[n], id=n) for n in names] or [pytest.param(
            None, id="none", marks=pytest.mark.skip(reason=f"no stage under test ({', '.join(selected)}) "
                                                           "offers fused kernels"))]
        metafunc.parametrize("fsg", params)


@contextlib.contextmanager
def composite(sg):
    """Run the frontend's composites on ``sg``: its backend offers no fused kernel."""
    fused = sg.backend.FUSED
    sg.backend.FUSED = frozenset()
    try:
        yield
    finally:
        sg.backend.FUSED = fused


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _close(a, b, dtype):
    """Equal within rounding: relative to each element, and to the largest (a sum's
    rounding error scales with its terms, not with a result that cancels)."""
    a, b = np.asarray(a), np.asarray(b)
    finite = np.abs(b[np.isfinite(b)])
    scale = finite.max() if finite.size else 0.0
    tol = TOL[dtype]
    np.testing.assert_allclose(a, b, equal_nan=True, rtol=tol["rtol"], atol=tol["atol"] + tol["rtol"] * scale)


def _run(sg, fn, arrays, grads=True, fused=True):
    """``fn`` of stage tensors made from ``arrays`` (those floating need grad): its output
    and the inputs' gradients of ``sum(output * fixed weights)``."""
    with contextlib.nullcontext() if fused else composite(sg):
        ts = [sg.tensor(a) for a in arrays]
        for t in ts:
            if grads and t.dtype.is_floating_point:
                t.requires_grad_()
        out = fn(sg, *ts)
        got = [out.detach().numpy().copy()]
        if grads:
            seed = sg.tensor(_data(tuple(out.shape), np.float64, 7).astype(got[0].dtype))
            (out * seed).sum().backward()
            got += [None if t.grad is None else t.grad.numpy().copy() for t in ts]
    return got


def _torch(fn, arrays, grads=True):
    torch = need_torch()
    ts = [torch.tensor(a) for a in arrays]
    for t in ts:
        if grads and t.dtype.is_floating_point:
            t.requires_grad_()
    out = fn(torch, *ts)
    got = [out.detach().numpy()]
    if grads:
        seed = torch.tensor(_data(tuple(out.shape), np.float64, 7).astype(got[0].dtype))
        (out * seed).sum().backward()
        got += [None if t.grad is None else t.grad.numpy() for t in ts]
    return got


def check(sg, fn, arrays, dtype, grads=True):
    """Fused == composite == PyTorch, output and gradients."""
    fused, comp, ref = _run(sg, fn, arrays, grads), _run(sg, fn, arrays, grads, fused=False), _torch(fn, arrays, grads)
    for f, c, r in zip(fused, comp, ref):
        assert (f is None) == (c is None) == (r is None)
        if f is not None:
            _close(f, c, dtype)
            _close(f, r, dtype)


# ---------------------------------------------------------------- softmax

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_along_any_dim(fsg, fn, dim, dtype):
    x = _data((3, 70, 5), dtype) * 4
    check(fsg, lambda lib, t: getattr(lib.nn.functional, fn)(t, dim), [x], dtype)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_of_infinite_and_nan_rows(fsg, fn):
    x = np.array([[-np.inf] * 4, [0.0, -np.inf, 1.0, 2.0], [np.inf, 0.0, 1.0, 2.0], [np.nan, 0, 1, 2],
                  [1e30, -1e30, 0, 0]], dtype=np.float32)
    check(fsg, lambda lib, t: getattr(lib.nn.functional, fn)(t, 1), [x], "float32", grads=False)


# ---------------------------------------------------------------- cross-entropy

CROSS_ENTROPY = [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.1},
    {"ignore_index": 2}, {"ignore_index": 2, "label_smoothing": 0.3, "reduction": "sum"},
    {"weight": True}, {"weight": True, "label_smoothing": 0.2, "ignore_index": 1},
    {"weight": True, "reduction": "none", "label_smoothing": 1.0},
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("options", CROSS_ENTROPY, ids=str)
def test_cross_entropy(fsg, options, dtype):
    x = _data((37, 11), dtype) * 3
    target = np.random.default_rng(1).integers(0, 11, 37)
    weight = np.random.default_rng(2).random(11).astype(dtype) + 0.1
    kw = {k: v for k, v in options.items() if k != "weight"}

    def fn(lib, t, y, w=None):
        return lib.nn.functional.cross_entropy(t, y, weight=w.detach() if w is not None else None, **kw)
    check(fsg, fn, [x, target] + ([weight] if "weight" in options else []), dtype)


def test_cross_entropy_int32_targets_and_all_rows_ignored(fsg):
    x = _data((4, 3), "float32")
    target = np.array([1, 1, 1, 1], dtype=np.int32)
    check(fsg, lambda lib, t, y: lib.nn.functional.cross_entropy(t, y.long()), [x, target], "float32")
    got = fsg.nn.functional.cross_entropy(fsg.tensor(x), fsg.tensor(target.astype(np.int64)), ignore_index=1)
    assert np.isnan(got.item())  # 0 / 0, as PyTorch


def test_cross_entropy_names_the_first_target_out_of_range(fsg):
    """The first bad target, in the CPU's words. The cuda device checks the targets on the
    device and raises at the next synchronization, naming the first failure a thread
    recorded (on a GPU the rows run at once, so any bad target), and saying where it was
    found."""
    x = fsg.tensor(_data((5, 3), "float32"))
    on_device = x.device.type == "cuda"
    for targets, bad in (([0, 1, 7, -2, 1], [7, -2]), ([0, -1, 1, 1, 3], [-1, 3])):
        for fused, ctx in ((True, contextlib.nullcontext()), (False, composite(fsg))):
            named = "|".join(map(str, bad)) if on_device and fused else str(bad[0])
            with ctx, pytest.raises(IndexError, match=f"^cross_entropy: target ({named}) is out of bounds "
                                                      r"for 3 classes( \(checked on the cuda device .*\))?$"):
                settled(fsg.nn.functional.cross_entropy(x, fsg.tensor(targets)))


# ---------------------------------------------------------------- views

VIEWS = {  # each reads rows of its operands from the middle of their storage
    "softmax": lambda lib, t: lib.nn.functional.softmax(t[2:5], -1),
    "log_softmax of a column slice": lambda lib, t: lib.nn.functional.log_softmax(t[:, 1:6], 0),
    "cross_entropy": lambda lib, t, y: lib.nn.functional.cross_entropy(t[3:9], y[1:7]),
    "layer_norm": lambda lib, t, w, b: lib.nn.functional.layer_norm(t[1:4], (7,), w[1:8], b[2:9]),
}


@pytest.mark.parametrize("name", VIEWS)
def test_fused_kernels_read_views_at_an_offset(fsg, name):
    """A row slice is contiguous but starts inside its storage: a kernel that binds the
    storage must start at the view's offset (or be given a copy)."""
    arrays = [_data((10, 7), "float32") * 3]
    if name == "cross_entropy":
        arrays.append(np.random.default_rng(1).integers(0, 7, 10))
    if name == "layer_norm":
        arrays += [_data((10,), "float32", 1), _data((10,), "float32", 2)]
    check(fsg, VIEWS[name], arrays, "float32")


# ---------------------------------------------------------------- linear


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 9), (2, 3, 9), (9,), (0, 9)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear(fsg, shape, bias, dtype):
    arrays = [_data(shape, dtype), _data((5, 9), dtype, 1)] + ([_data((5,), dtype, 2)] if bias else [])
    check(fsg, lambda lib, x, w, b=None: lib.nn.functional.linear(x, w, b), arrays, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(3, 70, 5), (7,), (), (0, 4)], ids=str)
def test_gelu(fsg, shape, approximate, dtype):
    """GELU in both forms, forward and backward each one kernel pass, far into both tails."""
    x = _data(shape, dtype) * 4
    check(fsg, lambda lib, t: lib.nn.functional.gelu(t, approximate=approximate), [x], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_backward(fsg, dtype):
    """ReLU's backward in one pass from its output; zeros in the input (no gradient, as
    PyTorch's) and a non-contiguous input among the cases."""
    x = _data((64, 33), dtype) * 4
    x[::7] = 0.0
    check(fsg, lambda lib, t: t.relu(), [x], dtype)
    check(fsg, lambda lib, t: t.T.relu(), [x], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("act", ["ReLU", "GELU", "GELU_tanh"])
@pytest.mark.parametrize("rows, hidden, threads", [(10, 16, 1), (0, 16, 1), (700, 37, 1), (700, 37, 2)])
def test_sequential_fuses_linear_and_its_activation(fsg, act, dtype, rows, hidden, threads):
    """The activation's derivative and the bias's gradient come from one pass in the backward:
    many rows (blocks of partial sums, split among threads) and a width off the vector's."""
    torch = need_torch()
    rng = np.random.default_rng(3)
    w1, b1 = rng.standard_normal((hidden, 8)).astype(dtype), rng.standard_normal(hidden).astype(dtype)
    w2, b2 = rng.standard_normal((4, hidden)).astype(dtype), rng.standard_normal(4).astype(dtype)
    x = rng.standard_normal((rows, 8)).astype(dtype)
    results, before = [], fsg.get_num_threads()
    for lib, ctx in ((fsg, contextlib.nullcontext()), (fsg, composite(fsg)), (torch, contextlib.nullcontext())):
        with ctx:
            nn = lib.nn
            activation = nn.GELU(approximate="tanh") if act == "GELU_tanh" else getattr(nn, act)()
            model = nn.Sequential(nn.Linear(8, hidden), activation, nn.Linear(hidden, 4), nn.ReLU())
            model = model.to(getattr(lib, dtype))
            model.load_state_dict({"0.weight": lib.tensor(w1), "0.bias": lib.tensor(b1),
                                   "2.weight": lib.tensor(w2), "2.bias": lib.tensor(b2)})
            xt = lib.tensor(x).requires_grad_()
            fsg.set_num_threads(threads)
            try:
                out = model(xt)
                (out * out).sum().backward()
            finally:
                fsg.set_num_threads(before)
            results.append([out.detach().numpy(), xt.grad.numpy()] +
                           [p.grad.numpy() for p in model.parameters()])
    for f, c, r in zip(*results):
        _close(f, c, dtype)
        _close(f, r, dtype)


def test_sequential_keeps_hooks_of_fused_layers(fsg):
    nn = fsg.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    seen = []
    model[1].register_forward_hook(lambda m, args, out: seen.append(args[0].shape))
    model(fsg.randn(2, 3))
    assert seen == [(2, 4)]  # the ReLU ran as a module of its own, with its hook


def test_fused_relu_output_changed_in_place_is_caught_at_backward(fsg):
    model = fsg.nn.Sequential(fsg.nn.Linear(3, 4), fsg.nn.ReLU())
    out = model(fsg.randn(2, 3))
    y = out * 1
    with fsg.no_grad():
        out.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---------------------------------------------------------------- layer norm

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("shape,normalized", [((4, 33), (33,)), ((2, 3, 4, 5), (4, 5))], ids=str)
def test_layer_norm(fsg, shape, normalized, affine, dtype):
    arrays = [_data(shape, dtype) * 3 + 1]
    if affine in ("both", "weight"):
        arrays.append(_data(normalized, dtype, 1))
    if affine in ("both", "bias"):
        arrays.append(_data(normalized, dtype, 2))

    def fn(lib, x, *params):
        w = params[0] if affine in ("both", "weight") else None
        b = params[-1] if affine in ("both", "bias") else None
        return lib.nn.functional.layer_norm(x, normalized, w, b, eps=1e-5)
    check(fsg, fn, arrays, dtype)


# ---------------------------------------------------------------- the LSTM cell

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("options", [{}, {"batch_first": True, "bidirectional": True}, {"proj_size": 3}])
def test_lstm_cell(fsg, options, dtype):
    """A two-layer LSTM with fixed weights: its output and final state, and the gradients of
    the input and the initial state (which pass through every step's cell backward)."""
    weights = {}
    reference = need_torch().nn.LSTM(5, 7, num_layers=2, **options).to(getattr(need_torch(), dtype))
    for k, (name, p) in enumerate(reference.named_parameters()):
        weights[name] = _data(tuple(p.shape), dtype, 10 + k)
    dirs, hidden = (2 if options.get("bidirectional") else 1), options.get("proj_size") or 7
    arrays = [_data((3, 6, 5) if options.get("batch_first") else (6, 3, 5), dtype),
              _data((2 * dirs, 3, hidden), dtype, 1), _data((2 * dirs, 3, 7), dtype, 2)]

    def lstm(lib, x, h0, c0):
        m = lib.nn.LSTM(5, 7, num_layers=2, **options).to(getattr(lib, dtype))
        with lib.no_grad():
            for name, p in m.named_parameters():
                p.copy_(lib.tensor(weights[name]))
        out, (h, c) = m(x, (h0, c0))
        return lib.cat([out.reshape(-1), h.reshape(-1), c.reshape(-1)])

    check(fsg, lstm, arrays, dtype)


# ---------------------------------------------------------------- attention

def _masks(lead, L, S):
    rng = np.random.default_rng(5)
    keep = rng.random(lead[:1] + (1, L, S)) > 0.3
    keep[..., 1, :] = False  # a row no key takes part in: zeros, and no NaN in any gradient
    additive = np.where(rng.random((L, S)) > 0.3, rng.standard_normal((L, S)), -np.inf)
    additive[0] = -np.inf
    return {"bool per batch": keep, "bool plane": keep[0, 0], "additive plane": additive,
            "additive row": rng.standard_normal((1, S))}


ATTENTION = {  # name: (query shape, key shape, value shape, options)
    "plain": ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), {}),
    "causal": ((2, 3, 7, 8), (2, 3, 7, 8), (2, 3, 7, 8), {"is_causal": True}),
    "causal L < S": ((2, 4, 8), (2, 9, 8), (2, 9, 8), {"is_causal": True}),
    "causal L > S": ((2, 9, 8), (2, 4, 8), (2, 4, 3), {"is_causal": True}),
    "unbatched, one key": ((5, 17), (1, 17), (1, 4), {"scale": 0.3}),
    "one query": ((3, 1, 16), (3, 40, 16), (3, 40, 16), {}),
    "gqa": ((2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 8), {"enable_gqa": True, "is_causal": True}),
    "empty batch": ((0, 2, 5, 8), (0, 2, 6, 8), (0, 2, 6, 8), {}),
    # more than one tile of queries, keys and head dims (a device kernel's tiles are 32 wide),
    # and heads wider than one pass of its accumulators (128)
    "several tiles, gqa": ((1, 4, 40, 36), (1, 2, 70, 36), (1, 2, 70, 20), {"enable_gqa": True}),
    "several tiles, causal": ((2, 45, 8), (2, 70, 8), (2, 70, 8), {"is_causal": True}),
    "wide heads": ((1, 5, 140), (1, 6, 140), (1, 6, 130), {}),
    # stage 3's blocks of 64 queries and tiles of up to 256 keys: a row's maximum and sum carried
    # from tile to tile (the online softmax), and block rows off the micro-kernel's
    "query blocks, key tiles": ((2, 130, 16), (2, 300, 16), (2, 300, 8), {}),
    "query blocks, key tiles, causal": ((1, 300, 16), (1, 300, 16), (1, 300, 8), {"is_causal": True}),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(ATTENTION) + ["mask: " + m for m in _masks((2,), 5, 7)])
def test_attention(fsg, case, dtype):
    """scaled_dot_product_attention on the fused kernel: output and the gradients of query,
    key and value against the composite and PyTorch, with every kind of mask."""
    if case.startswith("mask: "):
        q, k, v, options = ATTENTION["plain"]
        mask = _masks((2,), 5, 7)[case[6:]]
        options = dict(options, attn_mask=mask.astype(dtype) if mask.dtype != bool else mask)
    else:
        q, k, v, options = ATTENTION[case]
    arrays = [_data(q, dtype), _data(k, dtype, 1), _data(v, dtype, 2)]

    def fn(lib, *qkv):
        opts = dict(options)
        if "attn_mask" in opts:
            opts["attn_mask"] = lib.tensor(opts["attn_mask"])
        return lib.nn.functional.scaled_dot_product_attention(*qkv, **opts)
    check(fsg, fn, arrays, dtype)


def test_attention_is_the_kernel_in_a_transformer_step(fsg, monkeypatch):
    """nn.MultiheadAttention and the GPT's causal attention take the fused kernel."""
    attention = importlib.import_module(fsg.__name__ + ".nn.functional.attention")
    x = fsg.randn(2, 5, 8)
    if not fused_on(fsg, x):
        pytest.skip(f"{fsg.__name__}'s device {x.device} offers no attention kernel")
    calls = []
    original = attention._Attention.apply
    monkeypatch.setattr(attention._Attention, "apply", lambda *a: calls.append(a[4]) or original(*a))
    layer = fsg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    layer(x, src_mask=fsg.nn.Transformer.generate_square_subsequent_mask(5), is_causal=True).sum().backward()
    assert calls, "the encoder layer's attention did not reach the kernel"


def fused_on(sg, x):
    return importlib.import_module(sg.__name__ + ".nn.functional.image_kernels")._takes("attention", x)


# ---------------------------------------------------------------- a recurrent layer's whole time loop

RECURRENT = {"LSTM": ("LSTM", {}), "GRU": ("GRU", {}), "RNN_tanh": ("RNN", {}),
             "RNN_relu": ("RNN", {"nonlinearity": "relu"})}
SEQUENCES = {
    "padded": {}, "batch_first+bidirectional": {"batch_first": True, "bidirectional": True},
    "no_bias": {"bias": False}, "packed": {"bidirectional": True}, "one_step": {}, "batch_of_one": {},
    "projection": {"proj_size": 3, "bidirectional": True}, "packed_projection": {"proj_size": 3},
}
RECURRENT_CASES = [(layer, case) for layer in RECURRENT for case in SEQUENCES
                   if layer == "LSTM" or "projection" not in case]


def _recurrent_run(lib, cls, options, case, arrays, weights, fused=True, hidden=7):
    """The layer's outputs and final states, then the gradients of the input, the initial
    states and every weight, from ``sum(outputs * fixed weights)``."""
    ctx = contextlib.nullcontext() if fused or lib.__name__ == "torch" else composite(lib)
    with ctx:
        m = getattr(lib.nn, cls)(5, hidden, num_layers=2, **options).to(getattr(lib, str(arrays[0].dtype)))
        with lib.no_grad():
            for name, p in m.named_parameters():
                p.copy_(lib.tensor(weights[name]))
        x, *state = [lib.tensor(a).requires_grad_() for a in arrays]
        hx = tuple(state) if cls == "LSTM" else state[0]
        if case.startswith("packed"):  # sequences of lengths 6, 2, 4, 1, not sorted
            seq = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor([6, 2, 4, 1]), enforce_sorted=False)
            out, final = m(seq, hx)
            out = lib.nn.utils.rnn.pad_packed_sequence(out)[0]
        else:
            out, final = m(x, hx)
        parts = [out] + (list(final) if cls == "LSTM" else [final])
        got = [p.detach().numpy().copy() for p in parts]
        loss = sum((p * lib.tensor(_data(tuple(p.shape), str(arrays[0].dtype), 20 + k))).sum()
                   for k, p in enumerate(parts))
        loss.backward()
        got += [t.grad.numpy().copy() for t in [x, *state]]
        got += [p.grad.numpy().copy() for _, p in m.named_parameters()]
    return got


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layer,case", RECURRENT_CASES)
def test_recurrent_layer(fsg, layer, case, dtype):
    """A two-layer LSTM (with projections too), GRU or RNN whose time loop and backward
    through time are one backend call per layer and direction: outputs, final states and
    every gradient (input, initial states, each weight and bias) against the Python loop and
    PyTorch."""
    cls, kind = RECURRENT[layer]
    options = dict(kind, **SEQUENCES[case])
    torch = need_torch()
    reference = getattr(torch.nn, cls)(5, 7, num_layers=2, **options)
    weights = {name: _data(tuple(p.shape), dtype, 10 + k) * 0.5 for k, (name, p) in
               enumerate(reference.named_parameters())}
    steps, batch = {"one_step": (1, 3), "batch_of_one": (4, 1), "packed": (6, 4),
                    "packed_projection": (6, 4)}.get(case, (6, 3))
    dirs = 2 if options.get("bidirectional") else 1
    x_shape = (batch, steps, 5) if options.get("batch_first") else (steps, batch, 5)
    widths = [options.get("proj_size") or 7] + ([7] if cls == "LSTM" else [])  # h's, c's
    states = [_data((2 * dirs, batch, n), dtype, 1 + k) for k, n in enumerate(widths)]
    arrays = [_data(x_shape, dtype)] + states
    fused = _recurrent_run(fsg, cls, options, case, arrays, weights)
    comp = _recurrent_run(fsg, cls, options, case, arrays, weights, fused=False)
    ref = _recurrent_run(torch, cls, options, case, arrays, weights)
    assert len(fused) == len(comp) == len(ref)
    for f, c, r in zip(fused, comp, ref):
        _close(f, c, dtype)
        _close(f, r, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hidden", [1, 16, 33, 64])
@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN_tanh"])
def test_recurrent_layer_at_every_vector_width(fsg, layer, hidden, dtype):
    """Hidden sizes that reach each branch of the recurrent kernels' loads and stores (with
    7 above): less than a vector, whole vectors of every ISA's width (16 float32 lanes at
    most) and whole vectors with a tail; outputs, final states and gradients against
    PyTorch."""
    if not importlib.import_module(fsg.__name__ + ".nn.rnn")._takes("recurrent", fsg.zeros(1)):
        pytest.skip(f"{fsg.__name__} offers no recurrent kernel: its layers are composites, checked above")
    cls, kind = RECURRENT[layer]
    torch = need_torch()
    reference = getattr(torch.nn, cls)(5, hidden, num_layers=2, **kind)
    weights = {name: _data(tuple(p.shape), dtype, 10 + k) * 0.5 for k, (name, p) in
               enumerate(reference.named_parameters())}
    states = [_data((2, 3, hidden), dtype, 1 + k) for k in range(2 if cls == "LSTM" else 1)]
    arrays = [_data((6, 3, 5), dtype)] + states
    fused = _recurrent_run(fsg, cls, kind, "padded", arrays, weights, hidden=hidden)
    ref = _recurrent_run(torch, cls, kind, "padded", arrays, weights, hidden=hidden)
    assert len(fused) == len(ref)
    for f, r in zip(fused, ref):
        _close(f, r, dtype)


def test_recurrent_layer_is_one_call(fsg, monkeypatch):
    """The fused path is the one taken: no cell kernel and no per-step Python loop runs."""
    rnn = importlib.import_module(fsg.__name__ + ".nn.rnn")
    calls = []
    original = rnn._Recurrent.apply
    monkeypatch.setattr(rnn._Recurrent, "apply", lambda *a: calls.append(a[6]) or original(*a))
    x = fsg.randn(5, 2, 3)
    if not rnn._takes("recurrent", x):
        pytest.skip(f"{fsg.__name__}'s device {x.device} offers no recurrent kernel")
    m = fsg.nn.GRU(3, 4, num_layers=2, bidirectional=True)
    out, h = m(x)
    out.sum().backward()
    assert calls == ["GRU"] * 4 and tuple(out.shape) == (5, 2, 8)


# ---------------------------------------------------------------- optimizers

OPTIMIZERS = [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.4), maximize=True)),  # lerp's second form: weight >= 0.5
    ("AdamW", dict(lr=0.01)), ("AdamW", dict(lr=0.01, weight_decay=0.5, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, momentum=0.9, maximize=True)),
]
SHAPES = [(37,), (5, 300), (3,), (1,)]


def _steps(lib, name, options, dtype, steps=5, params=None):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    ps = params(lib, arrays) if params else [lib.tensor(a).requires_grad_() for a in arrays]
    opt = getattr(lib.optim, name)(ps, **options)
    history = []
    for _ in range(steps):
        for p in ps:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
        history.append([p.detach().numpy().copy() for p in ps])
    return history


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,options", OPTIMIZERS, ids=str)
def test_optimizer_step_is_the_composites_bits_step_by_step(fsg, name, options, dtype):
    torch = need_torch()
    fused = _steps(fsg, name, options, dtype)
    with composite(fsg):
        comp = _steps(fsg, name, options, dtype)
    ref = _steps(torch, name, options, dtype)
    for step, (f, c, r) in enumerate(zip(fused, comp, ref)):
        for a, b, t in zip(f, c, r):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step + 1}")
            _close(a, t, dtype)


def test_optimizer_steps_a_group_in_one_backend_call(fsg, monkeypatch):
    """A group's fused step is one call of the backend with all of its parameters, which
    takes it: stage 3 steps every tensor in one pass (``csrc/fused.hpp``'s over_tensors), a
    device in one launch per group or per parameter (test_gpu_devices counts them)."""
    backend = importlib.import_module(fsg.__name__ + ".optim.adam").B  # the stage's backend, as the optimizers see it
    calls = []

    def counted(name):
        original = getattr(backend, name)

        def call(*args, **kwargs):
            done = original(*args, **kwargs)
            calls.append((name, len(args[0]), done))
            return done
        return call
    for name in ("adam_step", "sgd_step", "rmsprop_step"):
        monkeypatch.setattr(backend, name, counted(name))
    ps = [fsg.randn(*s, requires_grad=True) for s in SHAPES]
    for opt in (fsg.optim.Adam(ps), fsg.optim.SGD(ps, lr=0.1, momentum=0.9), fsg.optim.RMSprop(ps)):
        for p in ps:
            p.grad = fsg.ones_like(p)
        opt.step()
    assert calls == [("adam_step", 4, True), ("sgd_step", 4, True), ("rmsprop_step", 4, True)]


def test_optimizer_falls_back_to_the_composite_for_strided_parameters(fsg):
    # a transposed parameter is not contiguous: the fused step refuses it, the composite runs
    def transposed(lib, arrays):
        return [lib.tensor(a.T.copy()).t().detach().requires_grad_() if a.ndim == 2
                else lib.tensor(a).requires_grad_() for a in arrays]
    torch = need_torch()
    got = _steps(fsg, "Adam", dict(lr=0.01), "float32", params=transposed)
    ref = _steps(torch, "Adam", dict(lr=0.01), "float32", params=transposed)
    for a, t in zip(got[-1], ref[-1]):
        _close(a, t, "float32")


def test_optimizer_steps_a_parameter_that_starts_inside_its_storage(fsg):
    # a row slice made a parameter: the step must write its elements, not the storage's
    # first ones, and leave the rest of the storage alone
    def sliced(lib, arrays):
        sliced.flat = lib.tensor(np.concatenate([np.zeros(3, np.float32), arrays[1].ravel()]))
        return [sliced.flat[3:].view(arrays[1].shape).detach().requires_grad_()]
    torch = need_torch()
    for name, options in (("Adam", dict(lr=0.01)), ("SGD", dict(lr=0.1, momentum=0.9)),
                          ("RMSprop", dict(lr=0.01))):
        got = _steps(fsg, name, options, "float32", params=sliced)
        assert sliced.flat[:3].tolist() == [0.0, 0.0, 0.0]
        ref = _steps(torch, name, options, "float32", params=lambda lib, arrays: [
            lib.tensor(arrays[1]).requires_grad_()])
        _close(got[-1][0], ref[-1][0], "float32")


def test_fused_step_bumps_versions_as_the_composite_does(fsg):
    p = fsg.randn(4, requires_grad=True)
    x = fsg.randn(4, requires_grad=True)
    y = x * p.detach()  # saves a tensor sharing p's storage
    opt = fsg.optim.SGD([p], lr=0.1)
    p.grad = fsg.ones(4)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
