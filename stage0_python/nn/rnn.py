"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their one-step cells, as in ``torch.nn``.

Built from differentiable Tensor operations (``linear``, ``sigmoid``, ``tanh``, ``cat``),
so the backward pass is autograd's. Per layer and direction, the input projection of
every time step is one matmul over the whole sequence; only the hidden projection, which
needs the previous step's output, runs in the Python loop over time.

A sequence is handled internally as *packed* rows (see ``nn.utils.rnn``): ``x`` of shape
(sum(batch_sizes), features) and ``batch_sizes[t]`` rows at step t, longest sequences
first. A padded (T, B, F) input is the special case ``batch_sizes = [B] * T``, so one
loop serves both: at step t only the first ``batch_sizes[t]`` rows advance.

Where the backend offers it (``FUSED``: stage 3), a whole layer and direction is one call
(``_Recurrent``): the time loop, and backpropagation through time, run in the backend, so
the Python loop above is the reference it is tested against. Failing that (2-byte floats),
the LSTM cell's elementwise part after its hidden projection (three sigmoids, two tanhs,
the cell and output updates) is one kernel forward and one backward (``_LSTMCell``).

Gates are in PyTorch's order (LSTM: input, forget, cell, output; GRU: reset, update,
new, with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``), so PyTorch's weights load
unchanged.
"""
import math
import numbers
import warnings
from collections import namedtuple

from .. import backend as B
from ..autograd import Function
from ..creation import cat, stack, zeros
from ..dtypes import float32, float64
from ..shapes import ShapeError
from ..tensor import Tensor
from . import functional as F
from . import init
from .functional.image_kernels import _takes
from .module import Module, Parameter, _empty, _with_options
from .utils.rnn import PackedSequence

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNDTypeError(TypeError, ValueError):
    """An input or state whose dtype differs from the layer's weights. A ``TypeError``, the
    project's error for dtypes, and a ``ValueError``, PyTorch's for this mistake."""


class _Split(Function):
    """``x.split(sizes, dim)`` as one graph node. Slicing piece by piece would make each
    piece's backward a zero tensor as large as ``x``: quadratic in the sequence length.
    Here the backward is one ``cat``."""

    @staticmethod
    def forward(ctx, x, sizes, dim):
        ctx.dim = dim
        return tuple(p.clone() for p in x.split(sizes, dim))

    @staticmethod
    def backward(ctx, *grads):
        return cat(list(grads), ctx.dim), None, None


def _split(x, sizes, dim=0):
    return _Split.apply(x, list(sizes), dim)


# ------------------------------------------------------------------ one time step
# Each step function takes the input projection ``gi`` (x @ W_ih^T + b_ih) of this step,
# the state tuple ((h,) or (h, c)) and the weights; it returns the next state tuple.

_Weights = namedtuple("_Weights", ["ih", "hh", "b_ih", "b_hh", "hr"])


def _rnn_tanh(gi, state, w):
    return ((gi + F.linear(state[0], w.hh, w.b_hh)).tanh(),)


def _rnn_relu(gi, state, w):
    return ((gi + F.linear(state[0], w.hh, w.b_hh)).relu(),)


class _LSTMCell(Function):
    """(h', c') from the gates before activation (rows, 4H) and c (rows, H), on the backend's
    kernel: c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c')."""

    @staticmethod
    def forward(ctx, pre, c):
        h, c_next, act, tc = B.lstm_cell(pre._data, c._data)
        ctx.act, ctx.tc = act, tc
        ctx.save_for_backward(c)
        return Tensor._make(h), Tensor._make(c_next)

    @staticmethod
    def backward(ctx, gh, gc):
        (c,) = ctx.saved_tensors
        gpre, gc_prev = B.lstm_cell_backward(gh._data, gc._data, ctx.act, ctx.tc, c._data)
        return Tensor._make(gpre), Tensor._make(gc_prev)


class _Recurrent(Function):
    """One layer and direction over packed rows on the backend's kernel: (output rows, final h
    (, final c for the LSTM)) from every row's input projection ``gi``, the initial state and
    the hidden weights (and the LSTM's projection). Its backward runs through time in the
    backend too."""

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, b_hh, w_hr, mode, reverse, batch_sizes):
        data = [None if t is None else t._data for t in (gi, h0, c0, w_hh, b_hh, w_hr)]
        out, h, c, ctx.saved = B.recurrent(mode, reverse, batch_sizes, *data)
        ctx.args, ctx.bias = (mode, reverse, batch_sizes), b_hh is not None
        ctx.save_for_backward(w_hh, w_hr)
        outputs = (Tensor._make(out), Tensor._make(h)) + ((Tensor._make(c),) if c is not None else ())
        # an unused output's gradient: zeros made in backward on the outputs' device (the
        # engine's would be the host's, which a device's kernel cannot take)
        ctx.set_materialize_grads(False)
        ctx.meta = [(tuple(t.shape), t.dtype, t.device) for t in outputs]
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        g_out, g_h, g_c = [g if g is not None else zeros(*shape, dtype=dtype, device=device)
                           for g, (shape, dtype, device) in zip(grads, ctx.meta)] + [None] * (3 - len(grads))
        w, w_hr = ctx.saved_tensors
        grads = B.recurrent_backward(*ctx.args, g_out._data, g_h._data, None if g_c is None else g_c._data,
                                     ctx.saved, w._data, ctx.bias, None if w_hr is None else w_hr._data)
        return tuple(None if g is None else Tensor._make(g) for g in grads) + (None, None, None)


def _fused_scan(mode, gi, batch_sizes, init, w, reverse):
    """``_scan`` as one backend call, or None when the backend's kernel does not take it."""
    c0 = init[1] if mode == "LSTM" else None
    if gi.dtype not in (float32, float64) or not _takes("recurrent", gi, init[0], c0, w.hh, w.b_hh, w.hr):
        return None
    out, *final = _Recurrent.apply(gi, init[0], c0, w.hh, w.b_hh, w.hr, mode, reverse, list(batch_sizes))
    return out, final


def _lstm(gi, state, w):
    h, c = state
    H = c.shape[-1]
    pre = gi + F.linear(h, w.hh, w.b_hh)
    if _takes("lstm_cell", pre, c):
        h, c = _LSTMCell.apply(pre, c)
    else:
        i, f, g, o = _split(pre, [H] * 4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
    return (h if w.hr is None else F.linear(h, w.hr)), c


def _gru(gi, state, w):
    (h,) = state
    H = h.shape[-1]
    ir, iz, in_ = _split(gi, [H] * 3, -1)
    hr, hz, hn = _split(F.linear(h, w.hh, w.b_hh), [H] * 3, -1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (n + z * (h - n),)  # (1 - z) * n + z * h


_STEP = {"RNN_TANH": _rnn_tanh, "RNN_RELU": _rnn_relu, "LSTM": _lstm, "GRU": _gru}


def _scan(mode, x, batch_sizes, init, w, reverse):
    """Run the steps of ``mode`` over packed rows ``x`` in one direction from the states
    ``init`` (each (B, *)). Returns the output rows, packed like ``x``, and the final states,
    where each sequence's final state is the one after its own last step."""
    gi = F.linear(x, w.ih, w.b_ih)  # every step's input projection: one matmul
    fused = _fused_scan(mode, gi, batch_sizes, init, w, reverse)
    if fused is not None:
        return fused
    step, steps = _STEP[mode], _split(gi, batch_sizes)
    outs = [None] * len(batch_sizes)
    if not reverse:
        state, ended = list(init), []
        for t, n in enumerate(batch_sizes):
            if n < state[0].shape[0]:  # the last rows' sequences are over: keep their state
                ended.append([s[n:] for s in state])
                state = [s[:n] for s in state]
            state = step(steps[t], state, w)
            outs[t] = state[0]
        # rows that ended later are higher in the batch: put them back in order
        final = [cat([s] + [e[k] for e in reversed(ended)]) if ended else s for k, s in enumerate(state)]
    else:
        n = batch_sizes[-1]
        state = [s[:n] if n < s.shape[0] else s for s in init]
        for t in reversed(range(len(batch_sizes))):
            n = batch_sizes[t]
            if n > state[0].shape[0]:  # sequences whose last step is t start here, from init
                state = [cat([s, s0[s.shape[0]:n]]) for s, s0 in zip(state, init)]
            state = step(steps[t], state, w)
            outs[t] = state[0]
        final = state
    return cat(outs), final


def _check_size(layer, name, value, minimum=1):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{layer}: {name} should be of type int, got: {type(value).__name__}")
    if value < minimum:
        bound = "greater than zero" if minimum == 1 else f"at least {minimum}"
        raise ValueError(f"{layer}: {name} must be {bound}, got {value}")


def _check_dtype(layer, what, t, weight):
    if t.dtype is not weight.dtype:
        raise RNNDTypeError(f"{layer}: {what} dtype ({t.dtype}) does not match weight dtype "
                            f"({weight.dtype}). Convert the input with .to({weight.dtype}) or the "
                            f"model with .to({t.dtype})")


# ------------------------------------------------------------------ layers

class RNNBase(Module):
    """See torch.nn.RNNBase: the multi-layer, optionally bidirectional recurrence that
    ``RNN``, ``LSTM`` and ``GRU`` configure with ``mode`` ("RNN_TANH", "RNN_RELU", "LSTM",
    "GRU"). Parameters per layer k and direction (suffix ``_reverse`` for the backward one):
    ``weight_ih_lk``, ``weight_hh_lk``, ``bias_ih_lk``, ``bias_hh_lk`` and, for an LSTM with
    ``proj_size``, ``weight_hr_lk``: PyTorch's names, shapes and order. All start as
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), drawn from the project's generator."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        if mode not in _GATES:
            raise ValueError(f"RNNBase: unknown mode {mode!r}; expected one of {sorted(_GATES)}")
        if (not isinstance(dropout, numbers.Real) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError(f"{name}: dropout should be a number in range [0, 1] representing the "
                             f"probability of an element being zeroed, got {dropout!r}")
        _check_size(name, "input_size", input_size)
        _check_size(name, "hidden_size", hidden_size)
        _check_size(name, "num_layers", num_layers)
        _check_size(name, "proj_size", proj_size, minimum=0)
        if proj_size and mode != "LSTM":
            raise ValueError(f"{name}: proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size has to be smaller than hidden_size, got "
                             f"proj_size={proj_size} and hidden_size={hidden_size}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero "
                          f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=3)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bool(bias), bool(batch_first)
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bool(bidirectional), proj_size
        gates, out = _GATES[mode] * hidden_size, proj_size or hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for suffix in self._suffixes(layer):
                shapes = [("weight_ih", (gates, input_size if layer == 0 else out * self._dirs)),
                          ("weight_hh", (gates, out))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for p, shape in shapes:
                    setattr(self, p + suffix, Parameter(_empty(shape, dtype, device)))
                    self._flat_weights_names.append(p + suffix)
        self.reset_parameters()

    @property
    def _dirs(self):
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer):
        return [f"_l{layer}", f"_l{layer}_reverse"][:self._dirs]

    def reset_parameters(self):
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def flatten_parameters(self):
        """Nothing to do. PyTorch copies the weights into one contiguous buffer for cuDNN
        here (and programs call it after ``.to()`` or in ``DataParallel``); these layers
        read each parameter where it is."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters grouped per layer and direction, as in PyTorch."""
        per = len(self._flat_weights_names) // (self.num_layers * self._dirs)
        flat = self._flat_weights
        return [flat[k:k + per] for k in range(0, len(flat), per)]

    def _weights(self, suffix):
        get = (lambda n: self._parameters.get(n + suffix))
        return _Weights(get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr"))

    def _state_shapes(self, batch):
        n, h = self.num_layers * self._dirs, self.proj_size or self.hidden_size
        return [(n, batch, h), (n, batch, self.hidden_size)][:2 if self.mode == "LSTM" else 1]

    def _initial_state(self, hx, batch, like):
        """The states as a list ([h] or [h, c]), zeros where ``hx`` is None; shapes checked."""
        shapes = self._state_shapes(batch)
        if hx is None:
            return [zeros(*s, dtype=like.dtype, device=like.device) for s in shapes]
        hx = list(hx) if self.mode == "LSTM" else [hx]
        for k, (t, shape) in enumerate(zip(hx, shapes)):
            what = f"hidden[{k}]" if self.mode == "LSTM" else "hidden"
            if not isinstance(t, Tensor):
                raise TypeError(f"{self._get_name()}: {what} must be a Tensor, got {type(t).__name__}")
            if tuple(t.shape) != shape:
                raise ShapeError(f"{self._get_name()}: Expected {what} size {shape}, got {list(t.shape)}")
            _check_dtype(self._get_name(), what, t, like)
        return hx

    def _check_hx_dims(self, hx, ndim, input_ndim):
        if hx is None:
            return
        if self.mode == "LSTM":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
            dims = [getattr(t, "ndim", None) for t in hx]
        elif not isinstance(hx, Tensor):
            raise TypeError(f"{self._get_name()}: hx must be a Tensor, got {type(hx).__name__}")
        else:
            dims = [hx.ndim]
        if any(d != ndim for d in dims):
            kind = "unbatched 2-D" if input_ndim == 2 else "batched 3-D"
            raise ShapeError(f"{self._get_name()}: For {kind} input, hx should also be {ndim}-D but got "
                             f"{', '.join(f'{d}-D' for d in dims)}")

    def forward(self, input, hx=None):
        """``input`` (T, B, input_size) (``batch_first``: (B, T, input_size)), unbatched
        (T, input_size) or a ``PackedSequence``; ``hx`` the initial state(s), zeros if None.
        Returns (output, h_n) (LSTM: (output, (h_n, c_n))), shaped as PyTorch's."""
        name = self._get_name()
        packed = isinstance(input, PackedSequence)
        x = input.data if packed else input
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}: expected a Tensor or PackedSequence input, got {type(x).__name__}")
        if x.ndim not in ((2,) if packed else (2, 3)):
            raise ShapeError(f"{name}: Expected input to be " + ("2D packed data" if packed else "2D or 3D")
                             + f", got {x.ndim}D instead (shape {list(x.shape)})")
        if x.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {x.shape[-1]} (input shape {list(x.shape)})")
        _check_dtype(name, "input", x, self.weight_ih_l0)
        unbatched = not packed and x.ndim == 2
        if packed:
            batch_sizes = input.batch_sizes.tolist()
            batch = batch_sizes[0]
            self._check_hx_dims(hx, 3, 3)
        else:
            self._check_hx_dims(hx, 2 if unbatched else 3, x.ndim)
            if unbatched:  # a batch of one
                x = x.unsqueeze(1)
                hx = None if hx is None else self._map_states(hx, lambda t: t.unsqueeze(1))
            elif self.batch_first:
                x = x.transpose(0, 1)
            T, batch = x.shape[0], x.shape[1]
            if T == 0:
                raise ShapeError(f"{name}: Expected sequence length to be larger than 0, got input "
                                 f"shape {list(input.shape)}")
            x = x.reshape(T * batch, self.input_size)
            batch_sizes = [batch] * T
        state = self._initial_state(hx, batch, x)
        if packed and hx is not None and input.sorted_indices is not None:  # into the packed order
            state = [s.index_select(1, input.sorted_indices) for s in state]
        out, final = self._layers(x, batch_sizes, state)
        h_n = final[0] if self.mode != "LSTM" else tuple(final)
        if packed:
            if input.unsorted_indices is not None:  # back to the caller's batch order
                h_n = self._map_states(h_n, lambda t: t.index_select(1, input.unsorted_indices))
            return PackedSequence(out, input.batch_sizes, input.sorted_indices, input.unsorted_indices), h_n
        out = out.reshape(T, batch, out.shape[-1])
        if unbatched:
            return out.squeeze(1), self._map_states(h_n, lambda t: t.squeeze(1))
        return (out.transpose(0, 1) if self.batch_first else out), h_n

    def _map_states(self, hx, fn):
        return tuple(fn(t) for t in hx) if self.mode == "LSTM" else fn(hx)

    def _layers(self, x, batch_sizes, state):
        """Every layer over packed rows ``x``; returns the last layer's rows and the final
        states stacked over (layer, direction)."""
        finals = [[] for _ in state]
        for layer in range(self.num_layers):
            if layer:  # dropout between layers, never after the last
                x = F.dropout(x, self.dropout, self.training)
            outs = []
            for d, suffix in enumerate(self._suffixes(layer)):
                k = layer * self._dirs + d
                out, final = _scan(self.mode, x, batch_sizes, [s[k] for s in state], self._weights(suffix),
                                   reverse=d == 1)
                outs.append(out)
                for f, s in zip(finals, final):
                    f.append(s)
            x = outs[0] if len(outs) == 1 else cat(outs, dim=1)
        return x, [stack(f) for f in finals]

    def extra_repr(self):
        return _with_options(
            f"{self.input_size}, {self.hidden_size}", ("proj_size", self.proj_size, self.proj_size != 0),
            ("num_layers", self.num_layers, self.num_layers != 1), ("bias", self.bias, self.bias is not True),
            ("batch_first", self.batch_first, self.batch_first is not False),
            ("dropout", self.dropout, self.dropout != 0),
            ("bidirectional", self.bidirectional, self.bidirectional is not False))


class RNN(RNNBase):
    """See torch.nn.RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with
    ``nonlinearity`` "tanh" or "relu", over ``num_layers`` layers (optionally
    bidirectional, with ``dropout`` between layers in training)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """See torch.nn.LSTM: gates i, f, g, o (in that order in the weights),
    ``c_t = f * c_{t-1} + i * g``, ``h_t = o * tanh(c_t)``, projected by ``weight_hr`` to
    ``proj_size`` features when that is set. ``hx`` is the pair (h_0, c_0)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """See torch.nn.GRU: gates r, z, n (in that order in the weights),
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h_t = (1 - z) * n + z * h_{t-1}``."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


# ------------------------------------------------------------------ cells

class RNNCellBase(Module):
    """See torch.nn.RNNCellBase: one time step of a recurrence, with parameters
    ``weight_ih`` (gates * hidden_size, input_size), ``weight_hh`` (gates * hidden_size,
    hidden_size), ``bias_ih`` and ``bias_hh``, from U(-1/sqrt(hidden_size),
    1/sqrt(hidden_size)). Input (B, input_size) or unbatched (input_size,)."""
    _mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True, num_chunks=1, device=None, dtype=None):
        super().__init__()
        name = self._get_name()
        _check_size(name, "input_size", input_size)
        _check_size(name, "hidden_size", hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bool(bias)
        self.weight_ih = Parameter(_empty((num_chunks * hidden_size, input_size), dtype, device))
        self.weight_hh = Parameter(_empty((num_chunks * hidden_size, hidden_size), dtype, device))
        if bias:
            self.bias_ih = Parameter(_empty((num_chunks * hidden_size,), dtype, device))
            self.bias_hh = Parameter(_empty((num_chunks * hidden_size,), dtype, device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _step(self, input, hx):
        """Check shapes, add the batch dim an unbatched input lacks, run one step; returns
        the new state tuple, shaped like the input's batch."""
        name, n_states = self._get_name(), (2 if self._mode == "LSTM" else 1)
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected a Tensor input, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ShapeError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead "
                             f"(shape {list(input.shape)})")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input has inconsistent input_size: got {input.shape[-1]} expected "
                             f"{self.input_size} (input shape {list(input.shape)})")
        _check_dtype(name, "input", input, self.weight_ih)
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        batch = x.shape[0]
        if hx is None:
            state = [zeros(batch, self.hidden_size, dtype=x.dtype, device=x.device)] * n_states
        else:
            state = list(hx) if n_states == 2 else [hx]
            if len(state) != n_states or not all(isinstance(s, Tensor) for s in state):
                raise TypeError(f"{name}: hx must be " + ("a tuple (h_0, c_0) of Tensors" if n_states == 2
                                                          else "a Tensor"))
            want = (self.hidden_size,) if unbatched else (batch, self.hidden_size)
            for k, s in enumerate(state):
                if tuple(s.shape) != want:
                    raise ShapeError(f"{name}: hidden[{k}] of shape {list(s.shape)} does not fit input of "
                                     f"shape {list(input.shape)}: expected {list(want)}")
                _check_dtype(name, f"hidden[{k}]", s, self.weight_ih)
            if unbatched:
                state = [s.unsqueeze(0) for s in state]
        w = _Weights(self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, None)
        new = _STEP[self._mode](F.linear(x, w.ih, w.b_ih), state, w)
        return tuple(s.squeeze(0) for s in new) if unbatched else tuple(new)

    def extra_repr(self):
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        return _with_options(f"{self.input_size}, {self.hidden_size}", ("bias", self.bias, not self.bias),
                             ("nonlinearity", nonlinearity, nonlinearity != "tanh"))


class RNNCell(RNNCellBase):
    """See torch.nn.RNNCell: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, ``act`` tanh
    or relu; ``hx`` defaults to zeros."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: Unknown nonlinearity: {nonlinearity}. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"

    def forward(self, input, hx=None):
        """``input`` (B, input_size) or (input_size,); returns h', (B, hidden_size) or (hidden_size,)."""
        return self._step(input, hx)[0]


class LSTMCell(RNNCellBase):
    """See torch.nn.LSTMCell: one LSTM step; ``hx`` is (h, c), zeros if None; returns
    (h', c')."""
    _mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        """``input`` (B, input_size) or (input_size,), ``hx`` (h, c); returns (h', c')."""
        return self._step(input, hx)


class GRUCell(RNNCellBase):
    """See torch.nn.GRUCell: one GRU step (gates r, z, n as in ``GRU``); returns h'."""
    _mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        """``input`` (B, input_size) or (input_size,); returns h', (B, hidden_size) or (hidden_size,)."""
        return self._step(input, hx)[0]
