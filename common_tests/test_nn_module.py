"""Module bookkeeping against PyTorch: names, traversal order, containers, repr,
train/eval, zero_grad, state_dict round trips and their errors, dtype conversion,
hooks, and the gradient-clipping utilities."""
import copy
import gc
from collections import OrderedDict

import numpy as np
import pytest

from .helpers_core import T, upstream
from .helpers_nn import load_from_torch, rand, same_layer
from .oracle import assert_close, need_torch, need_torch_at_least


def net(nn):
    """A model with nesting, every container, a buffer-holding layer and no-bias layers."""
    return nn.Sequential(OrderedDict([
        ("features", nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, bias=False), nn.BatchNorm2d(2),
                                   nn.ReLU(), nn.MaxPool2d(2))),
        ("flat", nn.Flatten()),
        ("blocks", nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8), nn.LayerNorm(8)])),
        ("heads", nn.ModuleDict({"cls": nn.Linear(8, 3), "aux": nn.Linear(8, 1, bias=False)})),
    ]))


class _Forward:
    """Adds the forward that ``net`` needs (its containers do not run by themselves)."""

    @staticmethod
    def run(model, x):
        h = model.flat(model.features(x))
        for block in model.blocks:
            h = block(h)
        return model.heads["cls"](h) + model.heads["aux"](h)


def test_names_and_traversal_match_torch(sg):
    torch = need_torch()
    ours, theirs = net(sg.nn), net(torch.nn)

    def shapes(pairs):
        return [(n, tuple(t.shape)) for n, t in pairs]
    assert shapes(ours.named_parameters()) == shapes(theirs.named_parameters())
    assert shapes(ours.named_buffers()) == shapes(theirs.named_buffers())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in theirs.modules()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert len(list(ours.parameters(recurse=False))) == 0
    assert ours.get_submodule("heads.cls") is ours.heads["cls"]
    assert ours.get_parameter("blocks.1.bias") is ours.blocks[1].bias
    with pytest.raises(AttributeError, match="nope"):
        ours.get_submodule("features.nope")


def test_whole_model_matches_torch(sg):
    """Weights copied through load_state_dict: same output and gradients for every parameter."""
    torch = need_torch()
    ours, theirs = same_layer(sg, net)
    x = rand((2, 1, 4, 4))
    xs, tx = T(sg, x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = _Forward.run(ours, xs), _Forward.run(theirs, tx)
    assert_close(out, tout, rtol=1e-4, atol=1e-5)
    g = upstream(tuple(tout.shape))
    out.backward(T(sg, g))
    tout.backward(torch.from_numpy(g))
    assert_close(xs.grad, tx.grad, rtol=1e-4, atol=1e-5)
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        assert_close(mine[name].grad, p.grad, rtol=1e-4, atol=1e-5)


REPRS = [
    net,
    lambda nn: nn.Sequential(nn.Conv2d(3, 8, (3, 5), stride=2, padding=(1, 2), dilation=2, groups=1,
                                       bias=False, padding_mode="reflect"),
                             nn.Conv1d(4, 4, 3, groups=2, padding="same"),
                             nn.Conv2d(2, 2, 1, padding="valid")),
    lambda nn: nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)]),
    lambda nn: nn.ModuleList([]),
    lambda nn: nn.Sequential(nn.ReLU(inplace=True), nn.GELU(approximate="tanh"), nn.SiLU(), nn.Tanh(),
                             nn.Sigmoid(), nn.LeakyReLU(0.2, inplace=True), nn.Softmax(dim=1),
                             nn.LogSoftmax(dim=-1), nn.Softplus(beta=2.0), nn.Identity()),
    lambda nn: nn.Sequential(nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), nn.AvgPool2d(2),
                             nn.MaxPool1d(2), nn.AvgPool1d(3, 2), nn.AdaptiveAvgPool2d((1, None))),
    lambda nn: nn.Sequential(nn.BatchNorm1d(4, momentum=None, affine=False), nn.LayerNorm((2, 3), eps=1e-3),
                             nn.GroupNorm(2, 4), nn.GroupNorm(1, 2, bias=False),
                             nn.BatchNorm2d(2, bias=False),
                             nn.LayerNorm(3, bias=False), nn.RMSNorm(5), nn.RMSNorm([2, 3], eps=1e-6),
                             nn.Dropout(0.25), nn.Flatten(0, -1), nn.Unflatten(1, (2, 2))),
    lambda nn: nn.Sequential(nn.Embedding(10, 3), nn.Embedding(10, 3, padding_idx=0, max_norm=1.0),
                             nn.CrossEntropyLoss(), nn.MSELoss(), nn.NLLLoss(), nn.BCEWithLogitsLoss()),
    lambda nn: nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.Sequential(nn.Linear(2, 2))}),
]


@pytest.mark.parametrize("make", REPRS, ids=[f"model{i}" for i in range(len(REPRS))])
def test_repr_matches_torch(sg, make):
    torch = need_torch_at_least("2.13", "its module reprs (bias=False in the norms)")
    assert repr(make(sg.nn)) == repr(make(torch.nn))


def test_reassigning_a_parameter_or_module_keeps_its_place(sg):
    """Tying weights (``head.weight = emb.weight``) or swapping a child keeps the name where
    it stands in the state_dict, as PyTorch's."""
    torch = need_torch()
    names = []
    for nn in (torch.nn, sg.nn):
        head, emb = nn.Linear(3, 5), nn.Embedding(5, 3)
        head.weight = emb.weight
        model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        model[0] = nn.Linear(2, 2)
        model.first = nn.Identity()
        model.first = nn.Tanh()
        names.append((list(head.state_dict()), list(model.state_dict()), [n for n, _ in model.named_children()]))
        assert head.weight is emb.weight
    assert names[0] == names[1]


def test_train_eval_propagates(sg):
    model = net(sg.nn)
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model.blocks.train(False)
    assert model.training and not model.blocks[0].training
    with pytest.raises(ValueError, match="boolean"):
        model.train("yes")


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(sg, set_to_none):
    model = sg.nn.Sequential(sg.nn.Linear(3, 2), sg.nn.Linear(2, 1))
    model(sg.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=set_to_none)
    for p in model.parameters():
        if set_to_none:
            assert p.grad is None
        else:
            assert p.grad is not None and all(v == 0 for v in p.grad.reshape(-1).tolist())


def test_requires_grad_toggle_freezes(sg):
    model = sg.nn.Linear(3, 2).requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    assert not model(sg.randn(2, 3)).requires_grad


# ------------------------------------------------------------------ state dicts

def _values(model):
    return {k: v.tolist() for k, v in model.state_dict().items()}


def test_state_dict_round_trip(sg):
    sg.manual_seed(1)
    a = net(sg.nn)
    a.features(sg.randn(2, 1, 4, 4))  # training mode: the running statistics move
    sg.manual_seed(2)
    b = net(sg.nn)
    assert _values(a) != _values(b)
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert _values(a) == _values(b)  # bit-identical
    assert b.features[1].num_batches_tracked.item() == 1
    x = sg.randn(2, 1, 4, 4)
    a.eval(), b.eval()
    assert _Forward.run(a, x).tolist() == _Forward.run(b, x).tolist()
    sd = a.state_dict()
    assert all(not t.requires_grad for t in sd.values())
    assert a.state_dict(keep_vars=True)["blocks.0.weight"] is a.blocks[0].weight
    assert list(a.state_dict(prefix="model.")) == ["model." + k for k in sd]


def test_state_dict_through_a_checkpoint_file(sg, tmp_path):
    a, b = net(sg.nn), net(sg.nn)
    sg.save(a.state_dict(), tmp_path / "model.ckpt")
    b.load_state_dict(sg.load(tmp_path / "model.ckpt"))
    assert _values(a) == _values(b)


def test_load_state_dict_from_torch_and_back(sg):
    torch = need_torch()
    ours, theirs = net(sg.nn), net(torch.nn)
    load_from_torch(sg, ours, theirs)
    for k, v in theirs.state_dict().items():
        assert ours.state_dict()[k].tolist() == v.tolist()
    again = net(torch.nn)
    again.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    for k, v in theirs.state_dict().items():
        assert torch.equal(again.state_dict()[k], v)


def _mismatch(sg, edit):
    a, b = net(sg.nn), net(sg.nn)
    sd = OrderedDict(a.state_dict())
    edit(sd)
    before = _values(b)
    return b, sd, before


@pytest.mark.parametrize("edit,pattern", [
    (lambda sd: sd.pop("blocks.1.bias"), r'Missing key\(s\) in state_dict: "blocks.1.bias"'),
    (lambda sd: sd.__setitem__("blocks.9.weight", sd["blocks.0.weight"]),
     r'Unexpected key\(s\) in state_dict: "blocks.9.weight"'),
    (lambda sd: sd.__setitem__("heads.cls.weight", sd["heads.cls.weight"][:2]),
     r"size mismatch for heads.cls.weight: copying a param with shape \(2, 8\) from checkpoint, "
     r"the shape in current model is \(3, 8\)"),
    (lambda sd: sd.__setitem__("flat.extra", 3), r'Unexpected key\(s\) in state_dict: "flat.extra"'),
    (lambda sd: sd.__setitem__("blocks.0.bias", [0.0] * 8), r'"blocks.0.bias".*expected a Tensor'),
], ids=["missing", "unexpected", "size", "unexpected_non_tensor", "not_a_tensor"])
def test_load_state_dict_mismatch_raises_and_changes_nothing(sg, edit, pattern):
    b, sd, before = _mismatch(sg, edit)
    with pytest.raises(RuntimeError, match=pattern) as info:
        b.load_state_dict(sd)
    assert isinstance(info.value, ValueError)
    assert "Sequential" in str(info.value)
    assert _values(b) == before


def test_load_state_dict_non_strict(sg):
    def edit(sd):
        sd.pop("heads.aux.weight")
        sd["junk"] = sd["blocks.0.bias"]
    b, sd, _ = _mismatch(sg, edit)
    result = b.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["heads.aux.weight"] and result.unexpected_keys == ["junk"]
    assert b.blocks[0].weight.tolist() == sd["blocks.0.weight"].tolist()
    # shapes are checked even when not strict
    sd["blocks.0.bias"] = sg.zeros(3)
    with pytest.raises(ValueError, match="size mismatch for blocks.0.bias"):
        b.load_state_dict(sd, strict=False)


def _bytes(model):
    return {k: np.asarray(v.tolist(), dtype=v.dtype.name).tobytes() for k, v in model.state_dict().items()}


# the last entry of the state dict is bad; every entry before it would load
LAST_ENTRY_BAD = {
    "shape": (lambda sg: sg.zeros(2, dtype=sg.int64),
              r"size mismatch for 1.num_batches_tracked: copying a param with shape \(2,\)"),
    "string": (lambda sg: "three",
               r'"1.num_batches_tracked", expected a Tensor from checkpoint but received str'),
    "unconvertible": (lambda sg: sg.tensor(float("nan")),
                      r'"1.num_batches_tracked".*an exception occurred.*nan.*float32.*int64'),
}


@pytest.mark.parametrize("bad", list(LAST_ENTRY_BAD))
def test_failed_load_changes_no_tensor(sg, bad):
    """Everything is checked before the first copy: a bad last entry leaves the earlier
    parameters and buffers bit-identical, where a copy-as-you-go load would have changed them."""
    make = lambda nn: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))  # noqa: E731
    sg.manual_seed(1)
    source = make(sg.nn)
    source(sg.randn(5, 3))  # running statistics move away from their initial values
    sg.manual_seed(2)
    model = make(sg.nn)
    sd = source.state_dict()
    assert list(sd)[-1] == "1.num_batches_tracked"
    value, pattern = LAST_ENTRY_BAD[bad]
    sd["1.num_batches_tracked"] = value(sg)
    before = _bytes(model)
    assert before != _bytes(source)
    with pytest.raises(RuntimeError, match=pattern) as info:
        model.load_state_dict(sd)
    assert isinstance(info.value, ValueError)
    assert _bytes(model) == before
    if bad != "unconvertible":  # PyTorch casts nan to an integer silently
        torch = need_torch()
        theirs = make(torch.nn)
        tsd = {k: torch.from_numpy(v.numpy()) for k, v in source.state_dict().items()}
        tsd["1.num_batches_tracked"] = torch.zeros(2, dtype=torch.long) if bad == "shape" else "three"
        with pytest.raises(RuntimeError, match="1.num_batches_tracked"):
            theirs.load_state_dict(tsd)
    # the same entry, made good, loads
    sd["1.num_batches_tracked"] = sg.tensor(7)
    model.load_state_dict(sd)
    assert _values(model) == {**_values(source), "1.num_batches_tracked": 7}


def test_non_persistent_buffer_and_buffer_rules(sg):
    m = sg.nn.Module()
    m.register_buffer("kept", sg.zeros(2))
    m.register_buffer("scratch", sg.ones(2), persistent=False)
    assert list(m.state_dict()) == ["kept"]
    assert [n for n, _ in m.named_buffers()] == ["kept", "scratch"]
    m.kept = sg.ones(2)  # reassigning a buffer keeps it registered
    assert m.state_dict()["kept"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="buffer"):
        m.kept = 3
    with pytest.raises(TypeError):
        m.register_buffer("bad", [1, 2])
    with pytest.raises(KeyError, match=r"\."):
        m.register_buffer("a.b", sg.zeros(1))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("training", sg.zeros(1))


# ------------------------------------------------------------------ dtype conversion

@pytest.mark.capability("float64")
def test_to_float64_keeps_objects_and_integer_buffers(sg):
    model = net(sg.nn)
    _Forward.run(model, sg.randn(2, 1, 4, 4)).sum().backward()
    params = list(model.parameters())
    assert model.to(sg.float64) is model
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert all(p.dtype == sg.float64 and p.grad.dtype == sg.float64 for p in params)
    assert all(isinstance(p, sg.nn.Parameter) and p.requires_grad and p.is_leaf for p in params)
    bn = model.features[1]
    assert bn.running_mean.dtype == sg.float64 and bn.num_batches_tracked.dtype == sg.int64
    assert _Forward.run(model, sg.randn(2, 1, 4, 4, dtype=sg.float64)).dtype == sg.float64
    model.float()
    assert all(p.dtype == sg.float32 for p in model.parameters())
    with pytest.raises(TypeError, match="floating point"):
        model.to(sg.int64)


# ------------------------------------------------------------------ Parameter and attributes

def test_parameter_basics(sg):
    t = sg.randn(2, 3)
    p = sg.nn.Parameter(t)
    assert isinstance(p, sg.Tensor) and p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.tolist() == t.tolist() and not t.requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not sg.nn.Parameter(t, requires_grad=False).requires_grad
    (p * 2).sum().backward()
    assert p.grad.tolist() == [[2.0] * 3] * 2
    q = copy.deepcopy(p)
    assert isinstance(q, sg.nn.Parameter) and q.tolist() == p.tolist() and q is not p
    with pytest.raises(TypeError, match="Parameter"):
        sg.nn.Parameter([1.0, 2.0])


def test_attribute_registration_rules(sg):
    nn = sg.nn
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="weight"):
        m.weight = sg.randn(2, 2)  # a plain tensor cannot replace a parameter
    m.weight = nn.Parameter(sg.zeros(2, 2))
    assert m.weight.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    m.bias = None
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    m.extra = nn.ReLU()
    assert [n for n, _ in m.named_children()] == ["extra"]
    del m.extra
    assert list(m.children()) == []
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'missing'"):
        m.missing

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(sg.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(sg.zeros(1))


def test_shared_parameters_count_once(sg):
    torch = need_torch()

    def make(nn):
        shared = nn.Linear(3, 3)
        return nn.Sequential(shared, nn.ReLU(), shared)
    ours, theirs = make(sg.nn), make(torch.nn)
    assert len(list(ours.parameters())) == len(list(theirs.parameters())) == 2
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]


def test_deepcopy_is_independent(sg):
    a = net(sg.nn)
    b = copy.deepcopy(a)
    assert _values(a) == _values(b)
    with sg.no_grad():
        b.blocks[0].weight.add_(1.0)
    assert a.blocks[0].weight.tolist() != b.blocks[0].weight.tolist()



def test_deepcopy_of_buffers_and_views_owns_its_memory(sg):
    # buffers (not Parameters) and plain tensors are copied through their storage: the copy
    # must get memory of its own, views included, and both must outlive each other
    m = sg.nn.BatchNorm1d(3)
    with sg.no_grad():
        m.running_mean.add_(1.0)
    c = copy.deepcopy(m)
    with sg.no_grad():
        c.running_mean.add_(1.0)
    assert m.running_mean.tolist() == [1.0] * 3 and c.running_mean.tolist() == [2.0] * 3
    t = sg.arange(6.0)[2:5]
    u = copy.deepcopy(t)
    u.add_(10.0)
    assert t.tolist() == [2.0, 3.0, 4.0] and u.tolist() == [12.0, 13.0, 14.0]
    del m, t
    gc.collect()
    assert c.running_mean.tolist() == [2.0] * 3 and u.tolist() == [12.0, 13.0, 14.0]


# ------------------------------------------------------------------ containers

def _container_ops(nn):
    seq = nn.Sequential(nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 3))
    seq.append(nn.Tanh())
    seq.insert(1, nn.Sigmoid())
    seq.extend([nn.Identity()])
    del seq[0]
    seq[0] = nn.GELU()
    part = seq[1:3]
    last = seq[-1]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh(), nn.Sigmoid()])
    ml.insert(0, nn.Identity())
    ml += [nn.GELU()]
    ml[1] = nn.Linear(2, 2)
    del ml[2]
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Linear(1, 1)
    md.update([("c", nn.Tanh())])
    md.update({"d": nn.Sigmoid()})
    popped = md.pop("a")
    return [repr(seq), repr(part), repr(last), len(seq), repr(ml), repr(ml[1:]), len(ml),
            repr(md), list(md.keys()), "c" in md, repr(popped),
            [n for n, _ in nn.Sequential(OrderedDict([("x", seq), ("y", ml), ("z", md)])).named_parameters()]]


def test_containers_behave_like_torch(sg):
    torch = need_torch()
    assert _container_ops(sg.nn) == _container_ops(torch.nn)


def test_sequential_forward_and_index_errors(sg):
    seq = sg.nn.Sequential(sg.nn.Linear(2, 3), sg.nn.ReLU())
    assert tuple(seq(sg.randn(4, 2)).shape) == (4, 3)
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU"]
    with pytest.raises(IndexError, match="out of range"):
        seq[2]
    with pytest.raises(IndexError, match="out of range"):
        sg.nn.ModuleList([sg.nn.ReLU()])[-2]


def test_hooks_and_apply(sg):
    torch = need_torch()
    m = sg.nn.Linear(2, 2)
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    post = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    out = m(sg.randn(3, 2))
    assert calls == [(3, 2)]
    assert_close(out, (m.bias.detach().numpy() + 1)[None].repeat(3, 0))
    pre.remove(), post.remove()
    x = sg.randn(3, 2)
    assert m(x).tolist() == sg.nn.functional.linear(x, m.weight, m.bias).tolist()

    def order(nn):
        seen = []
        net(nn).apply(lambda mod: seen.append(type(mod).__name__))
        return seen
    assert order(sg.nn) == order(torch.nn)


# ------------------------------------------------------------------ nn.utils

def _grads_pair(sg, seed=0):
    torch = need_torch()
    ours, theirs = same_layer(sg, lambda nn: nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2)))
    x = rand((5, 4), seed=seed)
    g = upstream((5, 2), seed=seed)
    ours(T(sg, x)).backward(T(sg, g * 3))
    theirs(torch.from_numpy(x)).backward(torch.from_numpy(g * 3))
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(sg, norm_type, max_norm):
    torch = need_torch()
    ours, theirs = _grads_pair(sg)
    total = sg.nn.utils.clip_grad_norm_(ours.parameters(), max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs.parameters(), max_norm, norm_type)
    assert_close(total, ttotal, rtol=1e-5, atol=1e-6)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)


def test_clip_grad_value_matches_torch(sg):
    torch = need_torch()
    ours, theirs = _grads_pair(sg, seed=1)
    sg.nn.utils.clip_grad_value_(ours.parameters(), 0.3)
    torch.nn.utils.clip_grad_value_(theirs.parameters(), 0.3)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert_close(p.grad, q.grad)
    assert max(abs(v) for p in ours.parameters() for v in p.grad.reshape(-1).tolist()) <= np.float32(0.3)


def test_clip_grad_norm_nonfinite(sg):
    p = sg.nn.Parameter(sg.zeros(2))
    p.grad = sg.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        sg.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert p.grad.tolist() == [float("inf"), 1.0]


def test_parameters_to_vector_round_trip(sg):
    torch = need_torch()
    ours, theirs = same_layer(sg, lambda nn: nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1)))
    vec = sg.nn.utils.parameters_to_vector(ours.parameters())
    assert_close(vec, torch.nn.utils.parameters_to_vector(theirs.parameters()))
    sg.nn.utils.vector_to_parameters(vec * 2, ours.parameters())
    assert_close(sg.nn.utils.parameters_to_vector(ours.parameters()), vec.detach().numpy() * 2)
    with pytest.raises(ValueError, match="too short"):
        sg.nn.utils.vector_to_parameters(vec[:3], ours.parameters())
