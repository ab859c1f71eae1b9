"""ONNX export against ONNX Runtime: every layer type, written out by ``sg.onnx.export``,
checked by ``onnx.checker``, run by ONNX Runtime on the example input and, for dynamic
axes, on inputs of other sizes; its outputs must equal the stage's within float32
tolerance. Then the zoo's models, the ops a forward composes by hand, and the errors for
what cannot be exported."""
import numpy as np
import pytest

from stagegrad import zoo

from .oracle import assert_close

onnx = pytest.importorskip("onnx", reason="ONNX export needs the onnx extra: pip install 'stagegrad[onnx]'")
ort = pytest.importorskip("onnxruntime", reason="the export's oracle is ONNX Runtime: pip install "
                          "'stagegrad[onnx]'")

RTOL, ATOL = 1e-4, 1e-5


def _inputs(sg, specs, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        if spec[0] == "i":  # ("i", shape, high): integer tokens
            out.append(sg.tensor(rng.integers(0, spec[2], spec[1]).tolist(), dtype=sg.int64))
        elif spec[0] == "u8":  # ("u8", shape): image bytes
            out.append(sg.tensor(rng.integers(0, 256, spec[1]).tolist(), dtype=sg.uint8))
        else:
            out.append(sg.tensor(rng.standard_normal(spec[1]).astype(np.float32).tolist()))
    return out


def _flat(sg, out):
    if isinstance(out, sg.Tensor):
        return [out]
    return [t for o in (out.values() if isinstance(out, dict) else out) for t in _flat(sg, o)]


def roundtrip(sg, model, specs, dynamic_axes=None, other_specs=(), **kw):
    """Export ``model`` on inputs made from ``specs``, run it in ONNX Runtime on those and
    on each of ``other_specs`` (other sizes of the dynamic axes), compare with the stage."""
    if hasattr(model, "eval"):
        model.eval()
    inputs = _inputs(sg, specs)
    proto = sg.onnx.export(model, tuple(inputs), dynamic_axes=dynamic_axes, **kw)
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for k, s in enumerate((specs,) + tuple(other_specs)):
        args = inputs if k == 0 else _inputs(sg, s, seed=k)
        with sg.no_grad():
            ours = _flat(sg, model(*args))
        theirs = session.run(None, {n: np.array(a.tolist(), dtype=a.dtype.name) for n, a in zip(names, args)})
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert tuple(a.shape) == b.shape and a.dtype.name == b.dtype.name
            if a.dtype.is_floating_point:
                assert_close(a, b, rtol=RTOL, atol=ATOL, check_dtype=False)
            else:  # integers and bools exactly, never through floats
                assert a.tolist() == b.tolist()
    return proto


def _ops(proto):
    return {n.op_type for n in proto.graph.node}


F = ("f", (2, 3, 9, 9))
BATCH = {"x": {0: "batch"}}
LAYERS = {
    "linear": (lambda nn: nn.Linear(6, 5), [("f", (4, 6))], BATCH, [[("f", (7, 6))]], {"Gemm"}),
    "linear_3d_nobias": (lambda nn: nn.Linear(6, 5, bias=False), [("f", (2, 3, 6))], None, (), {"MatMul"}),
    "conv1d": (lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), [("f", (2, 3, 11))], None, (), {"Conv"}),
    "conv2d_grouped_dilated": (lambda nn: nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2),
                               [("f", (2, 4, 9, 9))], BATCH, [[("f", (3, 4, 9, 9))]], {"Conv"}),
    "conv2d_same": (lambda nn: nn.Conv2d(3, 2, (4, 3), padding="same"), [F], None, (), {"Conv"}),
    "conv2d_reflect": (lambda nn: nn.Conv2d(3, 2, 3, padding=1, padding_mode="reflect"), [F], None, (),
                       {"Conv"}),
    "conv2d_unbatched": (lambda nn: nn.Conv2d(3, 2, 3, stride=2), [("f", (3, 9, 9))], None, (), {"Conv"}),
    "conv_transpose1d": (lambda nn: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1),
                         [("f", (2, 3, 7))], None, (), {"ConvTranspose"}),
    "conv_transpose2d_grouped": (lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2),
                                 [("f", (2, 4, 5, 5))], BATCH, [[("f", (1, 4, 5, 5))]], {"ConvTranspose"}),
    "max_pool2d": (lambda nn: nn.MaxPool2d(3, stride=2, padding=1), [F], BATCH, [[("f", (5, 3, 9, 9))]],
                   {"MaxPool"}),
    "max_pool2d_ceil_dilated": (lambda nn: nn.MaxPool2d(2, stride=2, dilation=2, ceil_mode=True), [F], None,
                                (), {"MaxPool"}),
    "max_pool1d": (lambda nn: nn.MaxPool1d(2), [("f", (2, 3, 9))], None, (), {"MaxPool"}),
    "avg_pool2d": (lambda nn: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [F], None, (),
                   {"AveragePool"}),
    "avg_pool2d_ceil": (lambda nn: nn.AvgPool2d(2, ceil_mode=True), [F], None, (), {"AveragePool"}),
    "avg_pool1d": (lambda nn: nn.AvgPool1d(3, stride=1, padding=1), [("f", (2, 3, 9))], None, (),
                   {"AveragePool"}),
    "adaptive_avg_pool2d": (lambda nn: nn.AdaptiveAvgPool2d((3, 2)), [F], BATCH, [[("f", (1, 3, 9, 9))]],
                            None),
    "adaptive_avg_pool_global": (lambda nn: nn.AdaptiveAvgPool2d(1), [F], None, (), None),
    "adaptive_max_pool2d": (lambda nn: nn.AdaptiveMaxPool2d((2, 4)), [F], None, (), None),
    "batch_norm2d": (lambda nn: nn.BatchNorm2d(3), [F], BATCH, [[("f", (4, 3, 9, 9))]],
                     {"BatchNormalization"}),
    "batch_norm1d": (lambda nn: nn.BatchNorm1d(6), [("f", (4, 6))], None, (), {"BatchNormalization"}),
    "batch_norm_no_affine": (lambda nn: nn.BatchNorm2d(3, affine=False), [F], None, (),
                             {"BatchNormalization"}),
    "batch_norm_batch_stats": (lambda nn: nn.BatchNorm2d(3, track_running_stats=False), [F], None, (), None),
    "layer_norm": (lambda nn: nn.LayerNorm((9, 9)), [F], BATCH, [[("f", (1, 3, 9, 9))]],
                   {"LayerNormalization"}),
    "group_norm": (lambda nn: nn.GroupNorm(3, 6), [("f", (2, 6, 5))], BATCH, [[("f", (3, 6, 5))]], None),
    "instance_norm": (lambda nn: nn.InstanceNorm2d(3, affine=True), [F], None, (), None),
    "rms_norm": (lambda nn: nn.RMSNorm(9), [F], None, (), None),
    "embedding": (lambda nn: nn.Embedding(10, 4, padding_idx=0), [("i", (3, 5), 10)], BATCH,
                  [[("i", (6, 5), 10)]], {"Gather"}),
    "dropout_eval": (lambda nn: nn.Sequential(nn.Dropout(0.5), nn.Linear(4, 3)), [("f", (2, 4))], None, (),
                     None),
    "flatten": (lambda nn: nn.Flatten(), [F], BATCH, [[("f", (1, 3, 9, 9))]], None),
    "upsample_nearest": (lambda nn: nn.Upsample(scale_factor=2), [("f", (1, 2, 3, 4))], None, (), None),
    "upsample_bilinear": (lambda nn: nn.Upsample(size=(5, 7), mode="bilinear", align_corners=False),
                          [("f", (1, 2, 3, 4))], None, (), None),
    "pixel_shuffle": (lambda nn: nn.PixelShuffle(2), [("f", (1, 8, 3, 3))], None, (), None),
    "zero_pad": (lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), [F], None, (), None),
}
ACTIVATIONS = ["ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "LeakyReLU", "ELU", "SELU", "CELU", "Softplus",
               "Hardswish", "Hardsigmoid", "Hardtanh", "ReLU6", "Mish", "Softsign", "Tanhshrink", "PReLU",
               "LogSigmoid"]
for _name in ACTIVATIONS:
    LAYERS[_name] = (lambda nn, n=_name: getattr(nn, n)(), [("f", (3, 7))], BATCH, [[("f", (5, 7))]], None)
LAYERS["gelu_tanh"] = (lambda nn: nn.GELU(approximate="tanh"), [("f", (3, 7))], None, (), None)
LAYERS["Softmin"] = (lambda nn: nn.Softmin(dim=1), [("f", (3, 7))], None, (), None)
LAYERS["softmax"] = (lambda nn: nn.Softmax(dim=1), [("f", (3, 7))], BATCH, [[("f", (5, 7))]], {"Softmax"})
LAYERS["log_softmax"] = (lambda nn: nn.LogSoftmax(dim=-1), [("f", (3, 7))], None, (), {"LogSoftmax"})


X = ("f", (3, 7))
LAYERS.update({
    "identity": (lambda nn: nn.Identity(), [X], None, (), None),
    "unflatten": (lambda nn: nn.Unflatten(1, (7, 1)), [X], None, (), None),
    "glu": (lambda nn: nn.GLU(), [("f", (3, 8))], None, (), None),
    "threshold": (lambda nn: nn.Threshold(0.1, 20.0), [X], None, (), None),
    "hardshrink": (lambda nn: nn.Hardshrink(), [X], None, (), None),
    "softshrink": (lambda nn: nn.Softshrink(0.3), [X], None, (), None),
    "alpha_dropout_eval": (lambda nn: nn.AlphaDropout(0.2), [X], None, (), None),
    "dropout2d_eval": (lambda nn: nn.Dropout2d(0.2), [F], None, (), None),
    "dropout1d_eval": (lambda nn: nn.Dropout1d(0.2), [("f", (2, 3, 5))], None, (), None),
    "instance_norm1d": (lambda nn: nn.InstanceNorm1d(3), [("f", (2, 3, 6))], None, (), None),
    "local_response_norm": (lambda nn: nn.LocalResponseNorm(2), [F], None, (), None),
    "adaptive_avg_pool1d": (lambda nn: nn.AdaptiveAvgPool1d(4), [("f", (2, 3, 9))], None, (), None),
    "adaptive_max_pool1d": (lambda nn: nn.AdaptiveMaxPool1d(3), [("f", (2, 3, 9))], None, (), None),
    "pixel_unshuffle": (lambda nn: nn.PixelUnshuffle(2), [("f", (1, 2, 4, 6))], None, (), None),
    "upsampling_nearest2d": (lambda nn: nn.UpsamplingNearest2d(scale_factor=2), [("f", (1, 2, 3, 4))], None,
                             (), None),
    "upsampling_bilinear2d": (lambda nn: nn.UpsamplingBilinear2d(size=(5, 6)), [("f", (1, 2, 3, 4))], None,
                              (), None),
    "upsample_nearest_exact": (lambda nn: nn.Upsample(scale_factor=1.5, mode="nearest-exact"),
                               [("f", (1, 2, 4, 4))], None, (), None),
    "zero_pad1d": (lambda nn: nn.ZeroPad1d(2), [("f", (2, 3, 5))], None, (), None),
    "constant_pad1d": (lambda nn: nn.ConstantPad1d((1, 2), 0.5), [("f", (2, 3, 5))], None, (), None),
    "constant_pad2d": (lambda nn: nn.ConstantPad2d((1, 0, 2, 1), -1.0), [F], BATCH, [[("f", (1, 3, 9, 9))]],
                       None),
    "reflection_pad1d": (lambda nn: nn.ReflectionPad1d(2), [("f", (2, 3, 5))], None, (), None),
    "reflection_pad2d": (lambda nn: nn.ReflectionPad2d((1, 2, 2, 1)), [F], None, (), None),
    "replication_pad1d": (lambda nn: nn.ReplicationPad1d((3, 1)), [("f", (2, 3, 5))], None, (), None),
    "replication_pad2d": (lambda nn: nn.ReplicationPad2d(2), [F], None, (), None),
    "circular_pad1d": (lambda nn: nn.CircularPad1d(2), [("f", (2, 3, 5))], None, (), None),
    "circular_pad2d": (lambda nn: nn.CircularPad2d((1, 1, 2, 0)), [F], None, (), None),
    "bilinear": (lambda nn: nn.Bilinear(4, 5, 3), [("f", (2, 4)), ("f", (2, 5))], None, (), None),
    "cosine_similarity": (lambda nn: nn.CosineSimilarity(dim=1), [X, X], None, (), None),
    "pairwise_distance": (lambda nn: nn.PairwiseDistance(), [X, X], None, (), None),
    "rnn_cell": (lambda nn: nn.RNNCell(7, 4), [X], None, (), None),
    "lstm_cell": (lambda nn: nn.LSTMCell(7, 4), [X], None, (), None),
    "gru_cell": (lambda nn: nn.GRUCell(7, 4), [X], None, (), None),
    "transformer": (lambda nn: nn.Transformer(8, 2, 1, 1, dim_feedforward=16, dropout=0.0),
                    [("f", (4, 2, 8)), ("f", (3, 2, 8))], None, (), None),
    "mse_loss": (lambda nn: nn.MSELoss(), [X, X], None, (), None),
    "l1_loss": (lambda nn: nn.L1Loss(reduction="sum"), [X, X], None, (), None),
    "smooth_l1_loss": (lambda nn: nn.SmoothL1Loss(beta=0.5), [X, X], None, (), None),
    "huber_loss": (lambda nn: nn.HuberLoss(reduction="none"), [X, X], None, (), None),
    "cross_entropy_loss": (lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1), [X, ("i", (3,), 7)], None, (),
                           None),
    "nll_loss": (lambda nn: nn.NLLLoss(), [X, ("i", (3,), 7)], None, (), None),
    "kl_div_loss": (lambda nn: nn.KLDivLoss(reduction="batchmean", log_target=True), [X, X], None, (), None),
    "bce_with_logits_loss": (lambda nn: nn.BCEWithLogitsLoss(), [X, X], None, (), None),
})


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_runs_in_onnxruntime(sg, name):
    make, specs, dynamic, others, ops = LAYERS[name]
    sg.manual_seed(0)
    names = ["x", "y"][:len(specs)]
    proto = roundtrip(sg, make(sg.nn), specs, dynamic, others, input_names=names)
    if ops:
        assert ops <= _ops(proto)


PAIRS = [("Linear", "relu", "Relu"), ("Linear", "gelu", "Erf"), ("Linear", "gelu_tanh", "Tanh"),
         ("BatchNorm1d", "relu", "Relu"), ("BatchNorm1d", "relu6", "Clip")]


@pytest.mark.parametrize("layer,act,op", PAIRS, ids=[f"{p[0]}-{p[1]}" for p in PAIRS])
def test_a_layer_with_its_fused_activation(sg, layer, act, op):
    """A Linear or batch norm carrying the activation that Sequential fuses into it: the
    entry point's handler writes the activation into the graph."""
    sg.manual_seed(0)

    class Pair(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = sg.nn.Linear(7, 5) if layer == "Linear" else sg.nn.BatchNorm1d(7)

        def forward(self, x):
            return self.inner._forward_then(x, act)

    model = Pair()
    if layer == "BatchNorm1d":
        with sg.no_grad():  # outputs past ReLU6's 6 too
            model.inner.weight.copy_(sg.tensor([4.0] * 7))
            model.inner.running_var.copy_(sg.tensor([0.5] * 7))
    proto = roundtrip(sg, model, [("f", (6, 7))])
    assert op in _ops(proto)


# ------------------------------------------------------------------ sequences and attention

SEQ = {"x": {0: "seq", 1: "batch"}}


RECURRENT = [("RNN", {}), ("RNN", {"nonlinearity": "relu", "bias": False}), ("LSTM", {}),
             ("LSTM", {"batch_first": True, "bidirectional": False}), ("GRU", {}),
             ("GRU", {"num_layers": 1, "batch_first": True})]


@pytest.mark.parametrize("kind,kw", RECURRENT, ids=[f"{k}-{','.join(kw) or 'default'}" for k, kw in RECURRENT])
def test_recurrent_layers(sg, kind, kw):
    """ONNX's RNN, LSTM and GRU operators, one a layer, both directions in one: the
    sequence length and the batch both stay dynamic; initial states given or zeros."""
    sg.manual_seed(0)
    kw = {"num_layers": 2, "bidirectional": True, **kw}
    layer = getattr(sg.nn, kind)(5, 6, **kw)
    dirs = 2 if kw["bidirectional"] else 1

    class Outputs(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = layer

        def forward(self, x, h0=None):
            out, state = self.rnn(x, None if h0 is None else (h0, h0 * 0.5) if kind == "LSTM" else h0)
            return (out,) + (state if isinstance(state, tuple) else (state,))

    seq = (1, 0) if kw.get("batch_first") else (0, 1)
    shape = lambda T, B: (B, T, 5) if kw.get("batch_first") else (T, B, 5)  # noqa: E731
    axes = {"x": {seq[0]: "seq", seq[1]: "batch"}}
    proto = roundtrip(sg, Outputs(), [("f", shape(4, 3))], axes, [[("f", shape(7, 2))], [("f", shape(1, 5))]])
    assert {kind} <= _ops(proto)
    state = ("f", (kw["num_layers"] * dirs, 3, 6))
    roundtrip(sg, Outputs(), [("f", shape(4, 3)), state], None)


def test_packed_sequences_unroll(sg):
    """A PackedSequence runs the stage's own loop, whose steps are recorded one by one."""
    sg.manual_seed(0)
    nn = sg.nn

    class Packed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 4)

        def forward(self, x):
            packed = nn.utils.rnn.pack_padded_sequence(x, [4, 2, 1])
            out, (h, c) = self.lstm(packed)
            return nn.utils.rnn.pad_packed_sequence(out)[0], h, c

    proto = roundtrip(sg, Packed(), [("f", (4, 3, 3))])
    assert "LSTM" not in _ops(proto)


def test_lstm_batch_first_with_projection(sg):
    sg.manual_seed(0)
    roundtrip(sg, sg.nn.LSTM(4, 8, batch_first=True, proj_size=3), [("f", (2, 5, 4))])


def test_multihead_attention_with_masks(sg):
    sg.manual_seed(0)
    nn = sg.nn

    class Attend(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x):
            T = x.shape[1]
            causal = sg.ones(T, T, dtype=sg.bool).triu(1)
            return self.mha(x, x, x, attn_mask=causal)

    roundtrip(sg, Attend(), [("f", (2, 5, 8))], {"x": {0: "batch", 1: "seq"}},
              [[("f", (3, 4, 8))], [("f", (1, 6, 8))]])


def test_transformer_layers(sg):
    sg.manual_seed(0)
    nn = sg.nn
    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1, batch_first=True, norm_first=True)
    roundtrip(sg, nn.TransformerEncoder(enc, 2), [("f", (2, 5, 8))], {"src": {0: "batch", 1: "seq"}},
              [[("f", (3, 7, 8))]])
    dec = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu")
    roundtrip(sg, dec, [("f", (4, 2, 8)), ("f", (5, 2, 8))])


# ------------------------------------------------------------------ composed by hand

@pytest.mark.parametrize("opset", [17, 18, 21])
def test_tensor_ops_a_forward_composes(sg, opset):
    """Reshape, permute, slice, concat, gather, indexing, reductions, comparisons and
    elementwise ops written directly in a forward, at each opset's form of the reductions."""

    class Mixed(sg.nn.Module):
        def forward(self, x, idx):
            B = x.shape[0]
            y = x.reshape(B, 3, 4).permute(0, 2, 1)                 # (B, 4, 3)
            z = sg.cat([y[:, 1:, :], y[:, :1, :] * 2.0], dim=1)      # rotate rows
            g = z.gather(2, idx.reshape(B, 1, 1).expand(B, 4, 1))       # one column per row
            m = z.max(dim=-1).values - z.mean(dim=(1, 2), keepdim=True).squeeze(-1)  # (B, 4)
            w = sg.where(z > 0, z.exp(), -z.abs().sqrt())
            s = (w.sum(-1) / (1 + z.var(-1))).clamp(-3, 3)
            c = z.cumsum(1)[:, -1].sum(-1) + z.argmax(-1).float().sum(-1)
            return g.squeeze(-1) + m + s + c.sin().unsqueeze(-1) ** 2, z.flatten(1)[:, ::2]

    proto = roundtrip(sg, Mixed(), [("f", (2, 12)), ("i", (2,), 3)], {"x": {0: "b"}, "idx": {0: "b"}},
                      [[("f", (5, 12)), ("i", (5,), 3)]], opset_version=opset)
    assert proto.opset_import[0].version == opset


def test_index_tensors_from_the_inputs(sg):
    """Indices the caller passes in: advanced indexing, index_select, scatter_add and a
    loss over targets. The stage checks their range on the example; the graph leaves it
    to the runtime."""

    class Picks(sg.nn.Module):
        def forward(self, x, idx):
            rows = x[idx] + x.index_select(0, idx)
            spread = sg.zeros(4, 3).scatter_add(0, idx.unsqueeze(1).expand(-1, 3), rows)
            return spread, sg.nn.functional.cross_entropy(rows, idx % 3)

    roundtrip(sg, Picks(), [("f", (4, 3)), ("i", (4,), 4)], {"idx": {0: "n"}}, [[("f", (4, 3)), ("i", (6,), 4)]])


def test_indexed_writes(sg):
    class Writes(sg.nn.Module):
        def forward(self, x):
            y = x.clone()
            y[0, 1:] = 0.0
            y[:, 0] = x[:, 2] * 2
            return y.index_add(0, sg.tensor([1, 1, 0]), x[:3])

    roundtrip(sg, Writes(), [("f", (4, 3))])


def test_in_place_activation_and_constants(sg):
    nn = sg.nn

    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.register_buffer("offset", sg.arange(4).float())

        def forward(self, x):
            h = self.fc(x)
            h.relu_()
            return h + self.offset + sg.ones(x.shape[0], 1)

    roundtrip(sg, InPlace(), [("f", (3, 4))], BATCH, [[("f", (6, 4))]])


# ------------------------------------------------------------------ the zoo

def _zoo_cases():
    return {
        "resnet18": (lambda z: z.resnet.resnet18(5, in_channels=1, small_input=True, width=4),
                     [("f", (2, 1, 12, 12))], {"x": {0: "batch"}}, [[("f", (3, 1, 12, 12))]]),
        "mobilenet_v2": (lambda z: z.mobilenet.mobilenet_v2(num_classes=4, in_channels=1, width_mult=0.1,
                                                            small_input=True),
                         [("f", (2, 1, 16, 16))], None, ()),
        # the export traces again at 2 x seq + 3 positions: within the context of 16
        "gpt": (lambda z: z.gpt.GPT(vocab_size=11, block_size=16, n_layer=2, n_head=4, n_embd=16),
                [("i", (2, 5), 11)], {"idx": {0: "batch", 1: "seq"}}, [[("i", (3, 9), 11)], [("i", (1, 16), 11)]]),
        "gpt_rotary_gqa": (lambda z: z.gpt.GPT(vocab_size=11, block_size=16, n_layer=1, n_head=4, n_embd=16,
                                               n_kv_head=2, positions="rotary"),
                           [("i", (2, 6), 11)], {"idx": {0: "batch", 1: "seq"}}, [[("i", (1, 16), 11)]]),
        "lstm_lm": (lambda z: z.lstm_lm.LSTMLanguageModel(11, n_embd=8, hidden_size=12, num_layers=2),
                    [("i", (2, 6), 11)], {"idx": {0: "batch"}}, [[("i", (3, 6), 11)]]),
    }


@pytest.mark.parametrize("name", list(_zoo_cases()))
def test_zoo_model_runs_in_onnxruntime(sg, name):
    build, specs, dynamic, others = _zoo_cases()[name]
    sg.manual_seed(0)
    roundtrip(sg, build(zoo.models(sg)), specs, dynamic, others)


# ------------------------------------------------------------------ the file, names, opsets, errors

def test_writes_a_file_with_names_and_opset(sg, tmp_path):
    sg.manual_seed(0)
    model = sg.nn.Sequential(sg.nn.Linear(3, 2), sg.nn.Tanh())
    path = tmp_path / "m.onnx"
    sg.onnx.export(model, (sg.randn(4, 3),), path, input_names=["features"], output_names=["scores"],
                   opset_version=17, dynamic_axes={"features": {0: "n"}, "scores": {0: "n"}})
    proto = onnx.load(str(path))
    assert proto.opset_import[0].version == 17
    assert [i.name for i in proto.graph.input] == ["features"]
    assert [o.name for o in proto.graph.output] == ["scores"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "n"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "n"
    assert {t.name for t in proto.graph.initializer} == {"0.weight", "0.bias"}  # state_dict names
    assert model.training  # the mode is restored


def test_unsupported_operations_raise_naming_them(sg):
    ExportError = sg.onnx.ExportError

    class Reads(sg.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum().item() > 0 else x

    with pytest.raises(ExportError, match="item"):
        sg.onnx.export(Reads(), (sg.randn(3),))

    class Masks(sg.nn.Module):  # the result's shape depends on the values
        def forward(self, x):
            return x[x > 0]

    with pytest.raises(ExportError, match="nonzero"):
        sg.onnx.export(Masks(), (sg.randn(3),))

    class Unfolds(sg.nn.Module):
        def forward(self, x):
            return sg.nn.functional.unfold(x, 2)

    with pytest.raises(ExportError, match="unfold"):
        sg.onnx.export(Unfolds(), (sg.randn(1, 1, 4, 4),))

    bags = sg.nn.EmbeddingBag(10, 4)  # its bags are Python lists built from the indices
    with pytest.raises(ExportError, match="tolist"):
        sg.onnx.export(bags, (sg.tensor([[1, 2], [3, 4]]),))

    class Atan2(sg.nn.Module):
        def forward(self, x):
            return sg.atan2(x, x + 1)

    with pytest.raises(ExportError, match="atan2"):
        sg.onnx.export(Atan2(), (sg.randn(3),))

    class Branches(sg.nn.Module):
        def forward(self, x):
            return x.sum(0) if x.shape[0] > 2 else x.mean(0)

    with pytest.raises(ExportError, match="other operations"):
        sg.onnx.export(Branches(), (sg.randn(2, 2),), dynamic_axes={"x": [0]})


def test_bad_arguments(sg):
    model = sg.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="opset_version"):
        sg.onnx.export(model, (sg.randn(1, 2),), opset_version=9)
    with pytest.raises(ValueError, match="neither inputs"):
        sg.onnx.export(model, (sg.randn(1, 2),), dynamic_axes={"nope": [0]})
    with pytest.raises(sg.onnx.ExportError, match="tensors"):
        sg.onnx.export(model, (sg.randn(1, 2), 3))


def test_the_stage_is_left_as_it_was(sg):
    """Tracing wraps the backend's functions, nn.functional's and the Tensor's reads for one
    export; after it, and after an export that failed, every one is the original again."""
    import importlib
    B = importlib.import_module(sg.__name__ + ".backend")
    F = importlib.import_module(sg.__name__ + ".nn.functional")
    owners = (B, F, sg.Tensor, sg.nn.Conv1d, sg.nn.Conv2d)
    before = [dict(vars(o)) for o in owners]

    class Fails(sg.nn.Module):
        def forward(self, x):
            return sg.atan2(self.conv(x), x)

    model = Fails()
    model.conv = sg.nn.Conv2d(1, 1, 1)
    sg.onnx.export(model.conv, (sg.randn(1, 1, 2, 2),))
    with pytest.raises(sg.onnx.ExportError):
        sg.onnx.export(model, (sg.randn(1, 1, 2, 2),))
    after = [dict(vars(o)) for o in owners]
    for old, new in zip(before, after):
        assert old.keys() == new.keys()
        assert all(new[k] is old[k] for k in old)
    y = model.conv(sg.randn(1, 1, 2, 2))  # and the stage still computes
    assert tuple(y.shape) == (1, 1, 2, 2)


def test_writes_through_views(sg):
    """Where views alias their base, an in-place write changes every view of that memory,
    which the graph cannot follow: refused. Stage 0 copies, so the view keeps its values
    and the graph is exact."""

    class Alias(sg.nn.Module):
        def forward(self, x):
            y = x * 1
            v = y[0]
            y.add_(1)
            return v * 2

    if "views" in sg.LACKS:
        roundtrip(sg, Alias(), [("f", (3, 2))])
    else:
        with pytest.raises(sg.onnx.ExportError, match="view"):
            sg.onnx.export(Alias(), (sg.randn(3, 2),))


# ------------------------------------------------------------------ where ONNX's operators differ

def test_reductions_with_nan_and_empty_groups(sg):
    """ONNX Runtime's max, min and arg-extremes skip NaN, where the stage lets it win; any
    over an empty group is False; any and all read floats as truth values."""

    class Reduce(sg.nn.Module):
        def forward(self, x):
            y = sg.where(x > 1.0, float("nan"), x)
            z = sg.where(x.abs() < 0.3, 0.0, y * 0.1)
            e = x[:, :0]
            return (z.any(1), z.all(1), e.any(1), e.all(1), y.amax(1), y.min(1).values, y.argmax(1),
                    y.argmin(1), (x > 0).amax(1), (x > 0) < (x < 1))

    roundtrip(sg, Reduce(), [("f", (6, 5))])


def test_division_as_the_stage_rounds(sg):
    """Floor division and remainder exactly for int64 beyond 2**53, and Python's rounding
    for floats (1.0 // 0.1 is 9.0)."""

    class Divide(sg.nn.Module):
        def forward(self, x, i):
            big = (i - 50) * 2 ** 56 + 1  # beyond float64's 53 bits
            return (big // 3, big % -7, (i - 50) // 4, x // 0.1, x % -0.7, x // (x * 0 + 0.1),
                    sg.div(big, 3, rounding_mode="trunc"))

    roundtrip(sg, Divide(), [("f", (6,)), ("i", (6,), 100)])


def test_float_ranges_and_small_arguments(sg):
    """A float arange as the stage computes it (no accumulated step), and log1p/expm1 of
    tiny values with their digits kept."""

    class Ranges(sg.nn.Module):
        def forward(self, x):
            tiny = x * 1e-6
            return (sg.arange(0.0, 300.0, 0.1)[-6:] + x[:1], sg.arange(x.shape[0]).float() * 0.3,
                    tiny.log1p() * 1e6, tiny.expm1() * 1e6)

    roundtrip(sg, Ranges(), [("f", (6,))], {"x": [0]}, [[("f", (6,))]])


def test_one_tensor_passed_twice_is_two_inputs(sg):
    f = lambda a, b: a - 2 * b  # noqa: E731
    x = sg.randn(3)
    proto = sg.onnx.export(f, (x, x), input_names=["a", "b"])
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    a, b = np.float32([1, 2, 3]), np.float32([10, 20, 30])
    assert_close(session.run(None, {"a": a, "b": b})[0], a - 2 * b)


def test_the_model_state_is_the_one_before_the_export(sg):
    """A forward that writes into its own buffer: the graph starts from the state before
    the export, which leaves the model as it found it."""

    class Counts(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", sg.tensor([1.0]))
            self.inner = sg.nn.BatchNorm1d(2).eval()  # a submodule frozen by the caller

        def forward(self, x):
            self.count.add_(1.0)
            return self.inner(x) * self.count

    model = Counts()
    model.train()
    model.inner.eval()
    proto = sg.onnx.export(model, (sg.randn(3, 2),), input_names=["x"], dynamic_axes={"x": [0]})
    assert model.count.tolist() == [1.0]
    assert model.training and not model.inner.training
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = sg.randn(5, 2)
    with sg.no_grad():
        expected = model.eval()(x)  # the first call after the export sees count 2, as the graph does
    assert_close(session.run(None, {"x": np.float32(x.tolist())})[0], expected)


def test_a_slice_clamped_to_a_dynamic_axis_is_refused(sg):
    class Head(sg.nn.Module):
        def forward(self, x):
            return x[:, :5] * 2

    with pytest.raises(sg.onnx.ExportError, match="does not follow|other operations"):
        sg.onnx.export(Head(), (sg.randn(2, 3),), input_names=["x"], dynamic_axes={"x": {1: "T"}})


def test_names_and_opsets(sg):
    class Named(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("v1", sg.tensor([100.0, 200.0]))  # a name the trace might use

        def forward(self, x):
            return x * 2 + self.v1

    roundtrip(sg, Named(), [("f", (2,))])
    with pytest.raises(ValueError, match="also names of the model's state"):
        sg.onnx.export(Named(), (sg.randn(2),), input_names=["v1"])

    class Bits(sg.nn.Module):
        def forward(self, i):
            return i & 6

    with pytest.raises(sg.onnx.ExportError, match="BitwiseAnd needs opset 18"):
        sg.onnx.export(Bits(), (sg.tensor([1, 7]),), opset_version=17)
    with pytest.raises(TypeError, match="dict or a list"):
        sg.onnx.export(Bits(), (sg.tensor([1, 7]),), dynamic_axes={"i": 0})


@pytest.mark.capability("uint8")
def test_a_model_taking_image_bytes(sg):
    """uint8 in, scaled by the model itself (as a program reading MNIST's bytes does)."""
    class Bytes(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = sg.nn.Linear(6, 3)

        def forward(self, x):
            return self.fc(x.float() / 255)

    proto = roundtrip(sg, Bytes(), [("u8", (4, 6))], BATCH, [[("u8", (2, 6))]])
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.UINT8
