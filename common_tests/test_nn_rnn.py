"""Recurrent layers (RNN, LSTM, GRU), their cells and ``nn.utils.rnn`` (packing and padding)
against PyTorch with copied weights: outputs, final states, and the gradients of the input,
of the initial states and of every parameter under a random upstream, float32 and float64.
Sizes are tiny (stage 0 runs them in pure Python)."""
import warnings

import numpy as np
import pytest

from .helpers_core import T, upstream
from .helpers_nn import compare_grads, same_layer, tol
from .oracle import assert_close, need_torch

# PyTorch's own notice that its oneDNN path lacks LSTM projections says nothing about the stage
pytestmark = [pytest.mark.needs_torch, pytest.mark.filterwarnings("ignore:LSTM with projections")]

DTYPES = ["float32", "float64"]
IN, HID, SEQ, BATCH = 3, 4, 4, 2
MODES = {"RNN_TANH": ("RNN", {"nonlinearity": "tanh"}), "RNN_RELU": ("RNN", {"nonlinearity": "relu"}),
         "LSTM": ("LSTM", {}), "GRU": ("GRU", {})}


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed + 31 * sum(shape)).uniform(-1.5, 1.5, shape).astype(dtype)


def _maker(cls, dtype, *args, **kwargs):
    """``make(nn)`` for ``same_layer``: the layer in ``dtype`` (PyTorch's and ours)."""
    def make(nn):
        layer = getattr(nn, cls)(*args, **kwargs)
        return layer.double() if dtype == "float64" else layer
    return make


def _layers(sg, mode, dtype, **options):
    """The stage's layer of ``mode`` over ``IN`` features with ``HID`` hidden, and PyTorch's,
    with ``options`` and the same weights (PyTorch's initial ones)."""
    cls, kw = MODES[mode]
    return same_layer(sg, _maker(cls, dtype, IN, HID, **options, **kw), randomize=False)


def _flat(out):
    """A module's output (tensors nested in tuples) as a flat list of tensors."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(sg, ours, theirs, arrays, call, dtype, train=False, rtol=None, atol=None):
    """``call(layer, tensors)`` on both sides with ``arrays`` as tensors that require grad;
    compare every output, then backpropagate one random upstream per output and compare
    the gradients of every input and every parameter."""
    torch = need_torch()
    ours.train(train)
    theirs.train(train)
    xs = [T(sg, a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs, touts = _flat(call(ours, xs)), _flat(call(theirs, ts))
    assert len(outs) == len(touts)
    r, a = tol(dtype, rtol, atol)
    for o, t in zip(outs, touts):
        assert_close(o, t, rtol=r, atol=a)
    grads = [upstream(tuple(t.shape), dtype, 100 + k) for k, t in enumerate(touts)]
    total = None
    for o, g in zip(outs, grads):
        term = (o * T(sg, g)).sum()
        total = term if total is None else total + term
    total.backward()
    torch.autograd.backward(touts, [torch.tensor(g) for g in grads])
    for k, (x, t) in enumerate(zip(xs, ts)):
        assert x.grad is not None, f"input {k}: no gradient"
        assert_close(x.grad, t.grad, rtol=r, atol=a)
    compare_grads(ours, theirs, r, a)
    return outs


def _states(mode, n, batch, hidden, dtype, proj=0):
    """Initial states (h0, or h0 and c0) as arrays; ``batch`` None for unbatched."""
    lead = (n,) if batch is None else (n, batch)
    h = [_data((*lead, proj or hidden), dtype, 7)]
    return h + [_data((*lead, hidden), dtype, 8)] if mode == "LSTM" else h


def _call(mode):
    """How to call a layer on [input, *states]: LSTM takes the states as a pair."""
    def call(layer, args):
        if len(args) == 1:
            return layer(args[0])
        return layer(args[0], tuple(args[1:]) if mode == "LSTM" else args[1])
    return call


# ------------------------------------------------------------------ layers

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("mode", list(MODES))
def test_layer_matches_torch(sg, mode, num_layers, bidirectional, batch_first, dtype):
    ours, theirs = _layers(sg, mode, dtype, num_layers=num_layers, bidirectional=bidirectional,
                           batch_first=batch_first)
    x = _data((BATCH, SEQ, IN) if batch_first else (SEQ, BATCH, IN), dtype)
    # the two-layer cases also start from given states (and check their gradients)
    states = _states(mode, num_layers * (1 + bidirectional), BATCH, HID, dtype) if num_layers == 2 else []
    _compare(sg, ours, theirs, [x, *states], _call(mode), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("num_layers,bidirectional", [(1, False), (2, True)])
def test_lstm_proj_size_matches_torch(sg, num_layers, bidirectional, dtype):
    make = _maker("LSTM", dtype, IN, HID, num_layers=num_layers, bidirectional=bidirectional, proj_size=2)
    ours, theirs = same_layer(sg, make, randomize=False)
    states = _states("LSTM", num_layers * (1 + bidirectional), BATCH, HID, dtype, proj=2)
    out = _compare(sg, ours, theirs, [_data((SEQ, BATCH, IN), dtype), *states], _call("LSTM"), dtype)
    assert tuple(out[0].shape) == (SEQ, BATCH, 2 * (1 + bidirectional))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", list(MODES))
def test_layer_without_bias_matches_torch(sg, mode, dtype):
    ours, theirs = _layers(sg, mode, dtype, num_layers=2, bias=False)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _compare(sg, ours, theirs, [_data((SEQ, BATCH, IN), dtype)], _call(mode), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", list(MODES))
def test_unbatched_input_matches_torch(sg, mode, dtype):
    ours, theirs = _layers(sg, mode, dtype, num_layers=2, bidirectional=True)
    x = _data((SEQ, IN), dtype)
    _compare(sg, ours, theirs, [x], _call(mode), dtype)
    ours.zero_grad()
    theirs.zero_grad()
    out = _compare(sg, ours, theirs, [x, *_states(mode, 4, None, HID, dtype)], _call(mode), dtype)
    assert tuple(out[0].shape) == (SEQ, 2 * HID) and tuple(out[1].shape) == (4, HID)


@pytest.mark.capability("float64")
def test_dropout_in_eval_matches_torch(sg):
    ours, theirs = same_layer(sg, _maker("LSTM", "float64", IN, HID, num_layers=3, dropout=0.5),
                              randomize=False)
    _compare(sg, ours, theirs, [_data((SEQ, BATCH, IN), "float64")], _call("LSTM"), "float64", train=False)


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_dropout_in_training_is_between_layers_only(sg, mode):
    """PyTorch's masks cannot be reproduced; what can: the first layer's final state is
    untouched by dropout, the second layer's is not; the same seed gives the same output;
    and a single layer has no dropout at all."""
    cls, _ = MODES[mode]
    layer = getattr(sg.nn, cls)(IN, HID, num_layers=2, dropout=0.5)
    x = T(sg, _data((SEQ, BATCH, IN), "float32"))
    h = (lambda out: out[1][0] if mode == "LSTM" else out[1])
    ev = layer.eval()(x)
    sg.manual_seed(3)
    tr = layer.train()(x)
    sg.manual_seed(3)
    again = layer(x)
    assert tuple(tr[0].shape) == tuple(ev[0].shape) == (SEQ, BATCH, HID)
    assert_close(h(tr)[0], h(ev)[0].detach().numpy())  # layer 0 sees no dropout
    assert not np.allclose(h(tr)[1].detach().numpy(), h(ev)[1].detach().numpy())
    assert_close(tr[0], again[0].detach().numpy(), rtol=0, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's warning: dropout with one layer does nothing
        single = getattr(sg.nn, cls)(IN, HID, num_layers=1, dropout=0.5)
    assert_close(single.train()(x)[0], single.eval()(x)[0].detach().numpy(), rtol=0, atol=0)


def test_dropout_with_one_layer_warns_as_torch(sg):
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        sg.nn.GRU(IN, HID, dropout=0.2)


def test_no_grad_forward(sg):
    layer = sg.nn.LSTM(IN, HID, bidirectional=True)
    with sg.no_grad():
        out, (h, c) = layer(T(sg, _data((SEQ, BATCH, IN), "float32")))
    assert not out.requires_grad and tuple(h.shape) == (2, BATCH, HID)


@pytest.mark.capability("float64")
def test_gradcheck_lstm_projection(sg):
    """Finite differences (float64) through the stage's own gradcheck, PyTorch aside."""
    layer = sg.nn.LSTM(2, 3, proj_size=2, bidirectional=True).to(sg.float64)
    x = T(sg, _data((3, 1, 2), "float64"), requires_grad=True)
    assert sg.autograd.gradcheck(lambda t: layer(t)[0], [x])


# ------------------------------------------------------------------ cells

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}),
         ("GRUCell", {"bias": False}), ("LSTMCell", {"bias": False})]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_hx", [False, True], ids=["zeros", "hx"])
@pytest.mark.parametrize("cls,kw", CELLS, ids=[f"{c}-{k}" for c, k in CELLS])
def test_cell_matches_torch(sg, cls, kw, with_hx, batched, dtype):
    ours, theirs = same_layer(sg, _maker(cls, dtype, IN, HID, **kw), randomize=False)
    batch = (BATCH,) if batched else ()
    states = [_data((*batch, HID), dtype, 5 + k) for k in range(2 if cls == "LSTMCell" else 1)]

    def call(layer, args):
        if len(args) == 1:
            return layer(args[0])
        return layer(args[0], tuple(args[1:]) if cls == "LSTMCell" else args[1])
    _compare(sg, ours, theirs, [_data((*batch, IN), dtype), *(states if with_hx else [])], call, dtype)


# ------------------------------------------------------------------ packed sequences

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", list(MODES))
def test_packed_unsorted_matches_torch(sg, mode, dtype):
    """Lengths out of order (enforce_sorted=False), two bidirectional layers, given states:
    pack, run, pad back; gradients reach the padded input through the packing."""
    torch = need_torch()
    ours, theirs = _layers(sg, mode, dtype, num_layers=2, bidirectional=True)
    lengths = [2, 4, 1]

    def call(layer, args):
        rnn = sg.nn.utils.rnn if isinstance(layer, sg.nn.Module) else torch.nn.utils.rnn
        packed = rnn.pack_padded_sequence(args[0], lengths, enforce_sorted=False)
        states = (tuple(args[1:]) if mode == "LSTM" else args[1]) if len(args) > 1 else None
        out, h = layer(packed, states)
        assert isinstance(out, rnn.PackedSequence)
        padded, got = rnn.pad_packed_sequence(out, total_length=SEQ + 1)
        assert got.tolist() == lengths
        return padded, h

    x = _data((SEQ, 3, IN), dtype)
    _compare(sg, ours, theirs, [x], call, dtype)
    ours.zero_grad()
    theirs.zero_grad()
    _compare(sg, ours, theirs, [x, *_states(mode, 4, 3, HID, dtype)], call, dtype)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.capability("float64")
def test_packed_sorted_batch_first_matches_torch(sg, mode):
    torch = need_torch()
    cls, _ = MODES[mode]
    ours, theirs = same_layer(sg, _maker(cls, "float64", IN, HID, batch_first=True, bidirectional=True),
                              randomize=False)

    def call(layer, args):
        rnn = sg.nn.utils.rnn if isinstance(layer, sg.nn.Module) else torch.nn.utils.rnn
        packed = rnn.pack_padded_sequence(args[0], [4, 3, 3, 1], batch_first=True)
        out, h = layer(packed)
        return rnn.pad_packed_sequence(out, batch_first=True, padding_value=-1.0)[0], h

    _compare(sg, ours, theirs, [_data((4, SEQ, IN), "float64")], call, "float64")


def test_packed_sequence_fields_match_torch(sg):
    torch = need_torch()
    x = _data((SEQ, 3, 2), "float32")
    for lengths, sort in (([4, 2, 1], True), ([1, 4, 3], False), ([2, 2, 3], False)):
        ours = sg.nn.utils.rnn.pack_padded_sequence(T(sg, x), lengths, enforce_sorted=sort)
        theirs = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), torch.tensor(lengths),
                                                         enforce_sorted=sort)
        assert ours._fields == theirs._fields
        assert_close(ours.data, theirs.data)
        assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
        for a, b in ((ours.sorted_indices, theirs.sorted_indices),
                     (ours.unsorted_indices, theirs.unsorted_indices)):
            assert (a is None) == (b is None) and (a is None or a.tolist() == b.tolist())
        padded, got = sg.nn.utils.rnn.pad_packed_sequence(ours)
        tpadded, tgot = torch.nn.utils.rnn.pad_packed_sequence(theirs)
        assert_close(padded, tpadded)
        assert got.tolist() == tgot.tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_matches_torch(sg, batch_first, padding_side, dtype):
    torch = need_torch()
    arrays = [_data((n, 2), dtype, n) for n in (3, 1, 4)]

    def call(layer, args):
        pad = sg.nn.utils.rnn.pad_sequence if layer is None else torch.nn.utils.rnn.pad_sequence
        return pad(args, batch_first=batch_first, padding_value=0.5, padding_side=padding_side)
    xs = [T(sg, a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = call(None, xs), call(1, ts)
    assert_close(out, tout)
    g = upstream(tuple(tout.shape), dtype)
    out.backward(T(sg, g))
    tout.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        assert_close(x.grad, t.grad)


@pytest.mark.capability("float64")
def test_pack_sequence_and_back_matches_torch(sg):
    torch = need_torch()
    arrays = [_data((n, 2), "float64", n) for n in (2, 4, 3)]
    xs = [T(sg, a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours = sg.nn.utils.rnn.pack_sequence(xs, enforce_sorted=False)
    theirs = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    assert_close(ours.data, theirs.data)
    back = sg.nn.utils.rnn.unpack_sequence(ours)
    for b, a in zip(back, arrays):
        assert_close(b, a)
    g = upstream(tuple(theirs.data.shape), "float64")
    ours.data.backward(T(sg, g))
    theirs.data.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        assert_close(x.grad, t.grad)
    unpadded = sg.nn.utils.rnn.unpad_sequence(sg.nn.utils.rnn.pad_sequence(xs), [2, 4, 3])
    assert [tuple(u.shape) for u in unpadded] == [(2, 2), (4, 2), (3, 2)]
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        sg.nn.utils.rnn.pack_sequence(xs)


# ------------------------------------------------------------------ parameters, repr, init

CONFIGS = [("RNN", dict(num_layers=2, nonlinearity="relu", bidirectional=True)),
           ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
           ("LSTM", dict(bias=False, batch_first=True, dropout=0.25, num_layers=2)),
           ("GRU", dict(num_layers=3, bias=False)), ("GRU", {}), ("RNNCell", dict(nonlinearity="relu")),
           ("LSTMCell", dict(bias=False)), ("GRUCell", {})]


@pytest.mark.parametrize("cls,kw", CONFIGS, ids=[f"{c}-{k}" for c, k in CONFIGS])
def test_state_dict_and_repr_match_torch(sg, cls, kw):
    torch = need_torch()
    ours, theirs = getattr(sg.nn, cls)(IN, HID, **kw), getattr(torch.nn, cls)(IN, HID, **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: T(sg, v.detach().numpy()) for k, v in theirs.state_dict().items()})
    if hasattr(theirs, "all_weights"):
        assert [[tuple(p.shape) for p in w] for w in ours.all_weights] == \
            [[tuple(p.shape) for p in w] for w in theirs.all_weights]
        ours.flatten_parameters()  # a no-op, there for the programs that call it


def test_init_is_uniform_and_the_same_on_every_stage(sg):
    import stage0_python
    bound = 1 / HID ** 0.5
    sg.manual_seed(5)
    ours = sg.nn.LSTM(IN, HID, num_layers=2)
    stage0_python.manual_seed(5)
    ref = stage0_python.nn.LSTM(IN, HID, num_layers=2)
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        v = p.detach().numpy()
        assert np.all(np.abs(v) <= bound) and v.std() > bound / 4, name
        assert_close(v, q.detach().numpy(), rtol=0, atol=0)


# ------------------------------------------------------------------ errors

def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_constructor_errors(sg):
    nn = sg.nn
    _raises(ValueError, "hidden_size must be greater than zero", lambda: nn.LSTM(3, 0))
    _raises(ValueError, "input_size must be greater than zero", lambda: nn.GRU(-1, 4))
    _raises(ValueError, "num_layers must be greater than zero", lambda: nn.RNN(3, 4, num_layers=0))
    _raises(TypeError, "hidden_size should be of type int", lambda: nn.RNN(3, 4.0))
    for p in (-0.1, 1.5, "0.5"):
        _raises(ValueError, "dropout should be a number in range", lambda: nn.LSTM(3, 4, 2, dropout=p))
    _raises(ValueError, "proj_size has to be smaller than hidden_size", lambda: nn.LSTM(3, 4, proj_size=4))
    _raises(ValueError, "proj_size must be at least 0", lambda: nn.LSTM(3, 4, proj_size=-1))
    _raises(ValueError, "only supported for LSTM", lambda: nn.RNNBase("GRU", 3, 4, proj_size=2))
    _raises(ValueError, "Unknown nonlinearity", lambda: nn.RNN(3, 4, nonlinearity="sigmoid"))
    _raises(ValueError, "Unknown nonlinearity", lambda: nn.RNNCell(3, 4, nonlinearity="gelu"))
    _raises(ValueError, "hidden_size must be greater than zero", lambda: nn.GRUCell(3, -2))


def test_forward_errors_name_the_layer_and_shapes(sg):
    lstm, gru = sg.nn.LSTM(3, 4), sg.nn.GRU(3, 4, num_layers=2)
    x = sg.zeros(5, 2, 3)

    def shape_error(match, fn):  # PyTorch raises RuntimeError for these; the project ValueError
        _raises(ValueError, match, fn)
        _raises(RuntimeError, match, fn)
    shape_error(r"LSTM: input.size\(-1\) must be equal to input_size. Expected 3, got 5",
                lambda: lstm(sg.zeros(5, 2, 5)))
    shape_error(r"LSTM: Expected input to be 2D or 3D, got 4D", lambda: lstm(sg.zeros(1, 5, 2, 3)))
    shape_error(r"LSTM: Expected input to be 2D or 3D, got 1D", lambda: lstm(sg.zeros(3)))
    shape_error(r"Expected hidden\[0\] size \(1, 2, 4\), got \[1, 3, 4\]",
                lambda: lstm(x, (sg.zeros(1, 3, 4), sg.zeros(1, 2, 4))))
    shape_error(r"Expected hidden\[1\] size \(1, 2, 4\), got \[1, 2, 5\]",
                lambda: lstm(x, (sg.zeros(1, 2, 4), sg.zeros(1, 2, 5))))
    shape_error(r"GRU: Expected hidden size \(2, 2, 4\), got \[1, 2, 4\]", lambda: gru(x, sg.zeros(1, 2, 4)))
    shape_error("For batched 3-D input, hx should also be 3-D", lambda: gru(x, sg.zeros(2, 4)))
    shape_error("For unbatched 2-D input, hx should also be 2-D",
                lambda: gru(sg.zeros(5, 3), sg.zeros(2, 1, 4)))
    shape_error("sequence length to be larger than 0", lambda: gru(sg.zeros(0, 2, 3)))
    _raises(TypeError, "hx must be a tuple", lambda: lstm(x, sg.zeros(1, 2, 4)))
    _raises(TypeError, "hx must be a Tensor", lambda: gru(x, (sg.zeros(2, 2, 4),)))
    packed = sg.nn.utils.rnn.pack_padded_sequence(sg.zeros(5, 3, 3), [2, 5, 1], enforce_sorted=False)
    for batch in (2, 4):  # checked before the states are put in the packed order
        shape_error(rf"GRU: Expected hidden size \(2, 3, 4\), got \[2, {batch}, 4\]",
                    lambda: gru(packed, sg.zeros(2, batch, 4)))
    cell = sg.nn.LSTMCell(3, 4)
    shape_error("LSTMCell: input has inconsistent input_size: got 5 expected 3", lambda: cell(sg.zeros(2, 5)))
    shape_error("LSTMCell: Expected input to be 1D or 2D, got 3D", lambda: cell(sg.zeros(1, 2, 3)))
    shape_error(r"hidden\[0\] of shape \[3, 4\]",
                lambda: cell(sg.zeros(2, 3), (sg.zeros(3, 4), sg.zeros(2, 4))))
    shape_error(r"expected \[4\]", lambda: sg.nn.GRUCell(3, 4)(sg.zeros(3), sg.zeros(1, 4)))


@pytest.mark.capability("float64")
def test_forward_refuses_an_input_or_state_of_another_dtype(sg):
    lstm, gru = sg.nn.LSTM(3, 4), sg.nn.GRU(3, 4, num_layers=2)
    _raises(TypeError, "dtype", lambda: lstm(sg.zeros(5, 2, 3, dtype=sg.float64)))
    _raises(ValueError, "dtype", lambda: gru(sg.zeros(5, 2, 3), sg.zeros(2, 2, 4, dtype=sg.float64)))


def test_packing_errors(sg):
    rnn = sg.nn.utils.rnn
    x = sg.zeros(4, 3, 2)
    _raises(RuntimeError, "sorted in decreasing order", lambda: rnn.pack_padded_sequence(x, [4, 2, 3]))
    _raises(ValueError, "sorted in decreasing order", lambda: rnn.pack_padded_sequence(x, [3, 4, 1]))
    for sort in (True, False):
        _raises(RuntimeError, "greater than 0",
                lambda: rnn.pack_padded_sequence(x, [4, 3, 0], enforce_sorted=sort))
    _raises(ValueError, "2 lengths for a batch of 3", lambda: rnn.pack_padded_sequence(x, [4, 3]))
    _raises(ValueError, "exceeds the 4 time steps", lambda: rnn.pack_padded_sequence(x, [5, 3, 1]))
    _raises(ValueError, "at least 2 dims", lambda: rnn.pack_padded_sequence(sg.zeros(4), [4]))
    packed = rnn.pack_padded_sequence(x, [4, 3, 1])
    _raises(ValueError, "total_length=3 and max sequence length being 4",
            lambda: rnn.pad_packed_sequence(packed, total_length=3))
    _raises(ValueError, "trailing dims must match",
            lambda: rnn.pad_sequence([sg.zeros(2, 3), sg.zeros(3, 4)]))
    _raises(ValueError, "empty list", lambda: rnn.pad_sequence([]))
    _raises(ValueError, "Expected input to be 2D packed data|input_size",
            lambda: sg.nn.GRU(3, 4)(packed))
