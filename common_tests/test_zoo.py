"""The model zoo against PyTorch: the same model file built on the stage and on PyTorch,
PyTorch's weights copied into the stage's, then outputs, every parameter gradient and the
batch-norm statistics compared; parameter names against torchvision's; the GPT's KV cache
against its full forward; the position encodings against their formulas in NumPy.

Sizes are small (a narrow ResNet on 12x12 images, a two-layer GPT of width 16) so that the
pure-Python stages finish in seconds; the full-size models are checked for their names and
parameter counts on PyTorch and the fastest stage."""
import sys

import numpy as np
import pytest

from stagegrad import zoo

from .helpers_core import T, upstream
from .helpers_nn import compare_grads, compare_state, load_from_torch, rand
from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch
RTOL, ATOL = 1e-8, 1e-10  # float64


def _pair(sg, build):
    """``build(models)`` on PyTorch and on the stage in float64 (float32 rounding, amplified
    by a dozen batch norms, would hide the comparison), the stage's loaded with PyTorch's
    weights."""
    torch = need_torch()
    torch.manual_seed(0)
    theirs = build(zoo.models(torch)).double()
    ours = build(zoo.models(sg)).double()
    load_from_torch(sg, ours, theirs)
    return ours, theirs


def _compare(sg, ours, theirs, x, train=True):
    """Forward ``x`` (a NumPy array) through both, backpropagate one random upstream,
    compare outputs, parameter gradients and buffers."""
    torch = need_torch()
    ours.train(train)
    theirs.train(train)
    x = x.astype(np.float64) if x.dtype.kind == "f" else x
    xs, xt = T(sg, x), torch.tensor(x)
    out, tout = ours(xs), theirs(xt)
    assert_close(out, tout, rtol=RTOL, atol=ATOL)
    g = upstream(tuple(tout.shape), "float64")
    out.backward(T(sg, g))
    tout.backward(torch.tensor(g))
    compare_grads(ours, theirs, RTOL, ATOL)
    compare_state(ours, theirs, RTOL, ATOL)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.capability("float64")
def test_resnet18_matches_torch(sg, train):
    ours, theirs = _pair(sg, lambda z: z.resnet.resnet18(5, in_channels=1, small_input=True, width=4))
    _compare(sg, ours, theirs, rand((2, 1, 12, 12)), train)


@pytest.mark.capability("float64")
def test_resnet18_imagenet_stem_matches_torch(sg):
    ours, theirs = _pair(sg, lambda z: z.resnet.resnet18(num_classes=3, width=2))
    _compare(sg, ours, theirs, rand((2, 3, 32, 32)))


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.capability("float64")
def test_mobilenet_v2_matches_torch(sg, train):
    ours, theirs = _pair(sg, lambda z: z.mobilenet.mobilenet_v2(num_classes=4, in_channels=1, width_mult=0.1,
                                                                small_input=True, dropout=0.0))
    _compare(sg, ours, theirs, rand((2, 1, 16, 16)), train)


def test_full_size_names_and_counts_are_torchvisions():
    """torchvision's resnet18 and mobilenet_v2 (1000 classes): their parameter counts and
    state_dict keys, of which a sample is spelled out here."""
    torch = need_torch()
    z = zoo.models(torch)
    resnet, mobilenet = z.resnet.resnet18(), z.mobilenet.mobilenet_v2()
    assert sum(p.numel() for p in resnet.parameters()) == 11_689_512
    assert sum(p.numel() for p in mobilenet.parameters()) == 3_504_872
    keys = list(resnet.state_dict())
    assert len(keys) == 122 and keys[:6] == ["conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean",
                                             "bn1.running_var", "bn1.num_batches_tracked"]
    assert {"layer2.0.downsample.0.weight", "layer2.0.downsample.1.running_var", "layer4.1.bn2.bias",
            "fc.weight", "fc.bias"} <= set(keys)
    keys = list(mobilenet.state_dict())
    assert len(keys) == 314
    assert {"features.0.0.weight", "features.1.conv.0.0.weight", "features.1.conv.1.weight",
            "features.1.conv.2.running_mean", "features.2.conv.0.0.weight", "features.2.conv.1.0.weight",
            "features.2.conv.3.bias", "features.17.conv.2.weight", "features.18.1.num_batches_tracked",
            "classifier.1.weight"} <= set(keys)


def test_the_same_file_builds_the_same_names_on_the_stage(sg):
    torch = need_torch()
    for build in (lambda z: z.resnet.resnet18(10, 1, True, 8),
                  lambda z: z.mobilenet.mobilenet_v2(10, 1, 0.25)):
        ours, theirs = build(zoo.models(sg)), build(zoo.models(torch))
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]


# ------------------------------------------------------------------ GPT

def _gpt(z, **kw):
    cfg = dict(vocab_size=11, block_size=8, n_layer=2, n_head=4, n_embd=16, dropout=0.0)
    cfg.update(kw)
    return z.gpt.GPT(**cfg)


def _tokens(shape, vocab=11, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, shape).astype(np.int64)


GPT_FORMS = [dict(), dict(positions="rotary"), dict(positions="sinusoidal"), dict(n_kv_head=2),
             dict(n_kv_head=1, positions="rotary"), dict(tie_weights=False, bias=False)]


@pytest.mark.parametrize("kw", GPT_FORMS, ids=[",".join(f"{k}={v}" for k, v in f.items()) or "default"
                                                for f in GPT_FORMS])
@pytest.mark.capability("float64")
def test_gpt_matches_torch(sg, kw):
    ours, theirs = _pair(sg, lambda z: _gpt(z, **kw))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _compare(sg, ours, theirs, _tokens((2, 7)))
    if kw.get("tie_weights", True):  # one parameter, two uses: its gradient sums both
        assert ours.lm_head.weight is ours.wte.weight


@pytest.mark.parametrize("kw", [dict(), dict(positions="rotary", n_kv_head=2), dict(positions="sinusoidal")])
def test_gpt_kv_cache_decodes_as_the_full_forward(sg, kw):
    """Logits from a prompt then one token at a time (and in uneven chunks) through the
    cache equal those of one forward over the whole sequence."""
    z = zoo.models(sg)
    model = _gpt(z, **kw).eval()
    idx = T(sg, _tokens((2, 8)))
    with sg.no_grad():
        full = model(idx)
        cache = z.gpt.KVCache(2)
        steps = [model(idx[:, :3], cache)] + [model(idx[:, i:i + 1], cache) for i in range(3, 8)]
        chunks_cache = z.gpt.KVCache(2)
        chunks = [model(idx[:, a:b], chunks_cache) for a, b in ((0, 2), (2, 5), (5, 8))]
    assert len(cache) == 8
    assert_close(sg.cat(steps, dim=1), full.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(sg.cat(chunks, dim=1), full.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="exceed the context"):
        model(idx[:, :1], cache)


def test_gpt_generate_is_reproducible_and_respects_top_k(sg):
    z = zoo.models(sg)
    model = _gpt(z, n_kv_head=2)
    prompt = T(sg, _tokens((2, 3)))
    a = model.generate(prompt, 12, top_k=1, generator=sg.Generator().manual_seed(5))
    b = model.generate(prompt, 12, top_k=1, generator=sg.Generator().manual_seed(6))
    assert tuple(a.shape) == (2, 15) and a[:, :3].tolist() == prompt.tolist()
    assert a.tolist() == b.tolist()  # top_k=1 is greedy: the seed does not matter
    # greedy decoding through the cache picks each step's argmax of the full forward
    with sg.no_grad():
        for t in range(3, 8):
            assert model(a[:, :t])[:, -1].argmax(dim=-1).tolist() == a[:, t].tolist()
    c = model.generate(prompt, 12, temperature=2.0, generator=sg.Generator().manual_seed(5))
    d = model.generate(prompt, 12, temperature=2.0, generator=sg.Generator().manual_seed(5))
    tokens = [t for row in c.tolist() for t in row]
    assert c.tolist() == d.tolist() and 0 <= min(tokens) and max(tokens) < 11
    with pytest.raises(ValueError, match="temperature"):
        model.generate(prompt, 1, temperature=0.0)


@pytest.mark.capability("float64")
def test_rotary_and_sinusoidal_match_their_formulas(sg):
    z = zoo.models(sg).gpt
    length, dim = 6, 8
    pos = np.arange(length)[:, None]
    freq = 10000.0 ** (-np.arange(0, dim, 2) / dim)
    expected = np.zeros((length, dim))
    expected[:, 0::2], expected[:, 1::2] = np.sin(pos * freq), np.cos(pos * freq)
    assert_close(z.sinusoidal_encoding(length, dim), expected.astype(np.float32), rtol=1e-5, atol=1e-6)

    x = rand((2, 3, length, dim))
    out = z.RotaryEmbedding(dim, 16)(T(sg, x), start=2)
    angle = (pos + 2) * freq  # (length, dim/2): pair (i, i + dim/2) turns by angle i
    a, b = x[..., :dim // 2], x[..., dim // 2:]
    cos, sin = np.cos(angle), np.sin(angle)
    rotated = np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)
    assert_close(out, rotated.astype(np.float32), rtol=1e-5, atol=1e-5)
    # a rotation: norms are kept, and the score of two rotated vectors depends on distance only
    q, k = rand((1, 1, 1, dim), seed=1), rand((1, 1, 1, dim), seed=2)
    rope = z.RotaryEmbedding(dim, 16)
    s = [(rope(T(sg, q), start=p) * rope(T(sg, k), start=p - 3)).sum().item() for p in (3, 7, 12)]
    assert s[0] == pytest.approx(s[1], abs=1e-4) and s[1] == pytest.approx(s[2], abs=1e-4)


@pytest.mark.capability("float64")
def test_rotary_gradient_matches_torch(sg):
    torch = need_torch()
    x = rand((2, 2, 5, 8))
    xs, xt = T(sg, x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = zoo.models(sg).gpt.RotaryEmbedding(8, 8)(xs, 1)
    tout = zoo.models(torch).gpt.RotaryEmbedding(8, 8)(xt, 1)
    g = upstream((2, 2, 5, 8))
    out.backward(T(sg, g))
    tout.backward(torch.tensor(g))
    assert_close(xs.grad, xt.grad, rtol=1e-5, atol=1e-6)


def test_gpt_configuration_errors(sg):
    z = zoo.models(sg)
    with pytest.raises(ValueError, match="n_head"):
        _gpt(z, n_head=3)
    with pytest.raises(ValueError, match="n_kv_head"):
        _gpt(z, n_kv_head=3)
    with pytest.raises(ValueError, match="positions"):
        _gpt(z, positions="alibi")
    with pytest.raises(ValueError, match="exceed the context"):
        _gpt(z)(T(sg, _tokens((1, 9))))


# ------------------------------------------------------------------ LSTM language model

@pytest.mark.capability("float64")
def test_lstm_language_model_matches_torch(sg):
    torch = need_torch()
    for kw in (dict(n_embd=6, hidden_size=6), dict(n_embd=4, hidden_size=7), dict(n_embd=4, hidden_size=5,
                                                                                    tie_weights=False)):
        ours, theirs = _pair(sg, lambda z: z.lstm_lm.LSTMLanguageModel(9, num_layers=2, **kw))
        assert list(ours.state_dict()) == list(theirs.state_dict())
        x = _tokens((2, 5), vocab=9)
        out, (h, c) = ours(T(sg, x))
        tout, (th, tc) = theirs(torch.tensor(x))
        for a, b in ((out, tout), (h, th), (c, tc)):
            assert_close(a, b, rtol=RTOL, atol=ATOL)
        g = upstream(tuple(tout.shape), "float64")
        out.backward(T(sg, g))
        tout.backward(torch.tensor(g))
        compare_grads(ours, theirs, RTOL, ATOL)


def test_lstm_language_model_state_carries_over(sg):
    """Two halves with the state carried equal one pass; greedy generation is the argmax."""
    model = zoo.models(sg).lstm_lm.LSTMLanguageModel(9, n_embd=4, hidden_size=6).eval()
    x = T(sg, _tokens((2, 6), vocab=9))
    with sg.no_grad():
        full, _ = model(x)
        first, state = model(x[:, :2])
        second, _ = model(x[:, 2:], state)
    assert_close(sg.cat([first, second], dim=1), full.numpy(), rtol=1e-5, atol=1e-6)
    out = model.generate(x[:, :2], 4, top_k=1)
    with sg.no_grad():
        for t in range(2, 6):
            assert model(out[:, :t])[0][:, -1].argmax(dim=-1).tolist() == out[:, t].tolist()


def test_models_are_built_per_framework(sg):
    torch = need_torch()
    assert zoo.models(sg) is zoo.models(sg)
    assert issubclass(zoo.models(sg).gpt.GPT, sg.nn.Module)
    assert not issubclass(zoo.models(sg).gpt.GPT, torch.nn.Module)
    # (on a device run, sg is the stage seen with another default device: the same package)
    assert zoo.models(torch).gpt.torch is torch and zoo.models(sg).gpt.torch.__name__ == sg.__name__
    assert sys.modules["torch"] is torch  # PyTorch's modules are restored after a stage's build
