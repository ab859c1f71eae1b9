"""What PyTorch programs meet when ``import torch`` becomes a stage: answers that differed from
PyTorch's (an integer to a negative power, softmax of a 0-d tensor, scatter's dtypes, ``view``
of a list, integer max pooling with padding, ``Tensor.type()``, ``dropout2d`` of a 2-D input)
and names programs use (``nn.modules``, ``cuda.amp``, ``compile``, ``pin_memory``, a lazy
``RandomSampler``, ``save`` of plain objects, and the 3-D layers: ``conv3d``, 3-D pooling,
5-D ``interpolate``, ``BatchNorm3d``), each against PyTorch."""
import itertools
import warnings

import numpy as np
import pytest

from .oracle import assert_close, need_torch

pytestmark = pytest.mark.needs_torch


def _raises_as_torch(ours, theirs, match):
    """Both calls raise a RuntimeError whose message matches ``match``."""
    for call in (ours, theirs):
        with pytest.raises(RuntimeError, match=match):
            call()


def test_an_integer_to_a_negative_scalar_power_raises(sg):
    torch = need_torch()
    _raises_as_torch(lambda: sg.tensor([2, 3]) ** -1, lambda: torch.tensor([2, 3]) ** -1,
                     "(?i)integers to negative integer powers are not allowed")
    assert (sg.tensor([2, 3]) ** 2).tolist() == (torch.tensor([2, 3]) ** 2).tolist()  # a power still runs


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_of_a_0d_tensor(sg, fn):
    torch = need_torch()
    ours, theirs = sg.tensor(2.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
    a, b = getattr(ours, fn)(0), getattr(theirs, fn)(0)
    assert_close(a, b)
    a.backward()
    b.backward()
    assert_close(ours.grad, theirs.grad)


@pytest.mark.parametrize("op", ["scatter", "scatter_add", "scatter_reduce"])
def test_scatter_refuses_a_src_of_another_dtype(sg, op):
    torch = need_torch()

    def call(lib):
        args = (0, lib.tensor([0]), lib.tensor([1]))  # an int64 src into float32
        args += ("sum",) if op == "scatter_reduce" else ()
        return lambda: getattr(lib.zeros(3), op)(*args)

    _raises_as_torch(call(sg), call(torch), "Expected self.dtype to be equal to src.dtype")
    assert_close(sg.zeros(3).scatter(0, sg.tensor([1]), 1.5),  # a number is taken in self's dtype
                 torch.zeros(3).scatter(0, torch.tensor([1]), 1.5))


def test_view_takes_a_list_or_a_size(sg):
    torch = need_torch()
    x, t = sg.arange(6), torch.arange(6)
    assert_close(x.view([2, 3]), t.view([2, 3]))
    assert_close(x.view(sg.Size([3, 2])), t.view(torch.Size([3, 2])))
    assert_close(x.view((6,)), t.view((6,)))


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_max_pool2d_pads_an_integer_tensor(sg, dtype):
    torch = need_torch()
    F, TF = sg.nn.functional, torch.nn.functional
    x = np.random.default_rng(0).integers(-50, 50, (2, 3, 5, 5))
    ours = sg.tensor(x.tolist(), dtype=getattr(sg, dtype))
    theirs = torch.tensor(x, dtype=getattr(torch, dtype))
    assert_close(F.max_pool2d(ours, 3, stride=2, padding=1), TF.max_pool2d(theirs, 3, stride=2, padding=1))


def test_type_names_are_pytorchs(sg):
    torch = need_torch()
    for name in ("float32", "int64", "bool"):
        ours = sg.zeros(2, dtype=getattr(sg, name), device="cpu")
        assert ours.type() == torch.zeros(2, dtype=getattr(torch, name)).type()  # 'torch.FloatTensor' ...
    assert sg.zeros(2).type("torch.LongTensor").dtype is sg.int64


def test_dropout2d_of_a_2d_input_warns_and_drops_elements(sg):
    torch = need_torch()
    for lib in (sg, torch):
        with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
            y = lib.nn.functional.dropout2d(lib.ones(64, 8), p=0.5)
        values = set(np.asarray(y.tolist()).ravel().tolist())
        assert values == {0.0, 2.0} and tuple(y.shape) == (64, 8)
    with pytest.raises(ValueError):  # a 1-D input is still refused
        sg.nn.functional.dropout2d(sg.ones(8))


def test_nn_modules_is_where_programs_look(sg):
    import importlib
    torch = need_torch()
    modules = importlib.import_module(f"{sg.__name__}.nn.modules")
    loss = importlib.import_module(f"{sg.__name__}.nn.modules.loss")
    assert modules.Linear is sg.nn.Linear and modules.conv._ConvNd is importlib.import_module(
        f"{sg.__name__}.nn.conv")._ConvNd
    assert {"Linear", "Conv2d", "BatchNorm2d", "Module"} <= set(dir(torch.nn.modules)) & set(dir(modules))

    class Doubled(loss._Loss):  # a program's own loss, on PyTorch's private base class
        def forward(self, a, b):
            return ((a - b) ** 2).mean() * 2

    assert_close(Doubled()(sg.ones(3), sg.zeros(3)), torch.tensor(2.0))


def test_cuda_amp_spellings(sg):
    torch = need_torch()
    for lib in (sg, torch):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with lib.cuda.amp.autocast():
                assert lib.is_autocast_enabled("cuda") == lib.cuda.is_available()
            scaler = lib.cuda.amp.GradScaler()
        assert any(issubclass(w.category, FutureWarning) and "deprecated" in str(w.message) for w in seen)
        assert scaler.is_enabled() == lib.cuda.is_available()
    from importlib import import_module
    assert import_module(f"{sg.__name__}.cuda.amp").autocast is sg.cuda.amp.autocast


def test_compile_passes_the_model_through(sg):
    model = sg.nn.Linear(2, 2)
    assert sg.compile(model) is model and sg.compile(mode="max-autotune")(model) is model

    @sg.compile
    def f(x):
        return x * 2

    assert f(sg.ones(1)).tolist() == [2.0]


def test_pin_memory_as_pytorch(sg):
    torch = need_torch()
    if torch.cuda.is_available() or sg.cuda.is_available():
        x = sg.ones(3, device="cpu")
        pinned = x.pin_memory()
        assert pinned.tolist() == x.tolist() and pinned.device.type == "cpu"
        return
    # on the cpu device: a stage whose default device is another (webgpu) refuses that for its own reason
    host = sg.ones(2, device="cpu")
    _raises_as_torch(host.pin_memory, lambda: torch.ones(2).pin_memory(), "accelerator")
    assert host.is_pinned() is torch.ones(2).is_pinned() is False


def test_a_random_sampler_with_replacement_draws_lazily(sg):
    sampler = sg.utils.data.RandomSampler(range(10), replacement=True, num_samples=10 ** 10)
    first = list(itertools.islice(iter(sampler), 100))
    assert len(sampler) == 10 ** 10 and len(first) == 100 and set(first) <= set(range(10))
    sg.manual_seed(3)
    drawn = list(sg.utils.data.RandomSampler(range(7), replacement=True, num_samples=70))
    sg.manual_seed(3)
    assert drawn == sg.randint(0, 7, (70,)).tolist()  # the chunks make the same stream as one draw


def test_batchnorm3d_as_torch(sg):
    torch = need_torch()
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 3, 2)).astype(np.float32)
    ours, theirs = sg.nn.BatchNorm3d(3), torch.nn.BatchNorm3d(3)
    xs, xt = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys, yt = ours(xs), theirs(xt)
    assert_close(ys, yt, atol=1e-5)
    (ys * ys).sum().backward()
    (yt * yt).sum().backward()
    assert_close(xs.grad, xt.grad, atol=1e-5)
    assert_close(ours.running_var, theirs.running_var, atol=1e-6)
    ours.eval()
    theirs.eval()
    assert_close(ours(xs), theirs(xt), atol=1e-5)
    with pytest.raises(ValueError, match="5-D"):
        ours(sg.ones(2, 3, 4, 4))


def test_save_keeps_what_weights_only_loading_accepts(sg, tmp_path):
    import collections
    torch = need_torch()
    plain = {"order": collections.OrderedDict(b=1, a=2), "set": {3, 1, 2}, "bytes": b"\x00\xff",
             "complex": complex(1.5, -2.0), "tuple": (1, [2.5, None])}
    torch.save(plain, tmp_path / "t.pt")
    theirs = torch.load(tmp_path / "t.pt", weights_only=True)
    sg.save({**plain, "size": sg.Size([2, 3])}, tmp_path / "o.sg")
    ours = sg.load(tmp_path / "o.sg")
    for k, v in theirs.items():
        assert type(ours[k]) is type(v) and ours[k] == v, k
    assert type(ours["size"]) is sg.Size and ours["size"] == (2, 3)
    assert list(ours["order"]) == ["b", "a"]
    with pytest.raises(TypeError, match="frozenset"):  # torch.save pickles it; a checkpoint holds no pickle
        sg.save({"a": frozenset()}, tmp_path / "n.sg")


def _both(sg, torch, shape, seed, grad=True):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sg.tensor(x, requires_grad=grad), torch.tensor(x, requires_grad=grad)


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1}, {"padding": "same"},
                                {"dilation": (2, 1, 1), "padding": (1, 0, 2)}, {"groups": 2}], ids=repr)
def test_conv3d_as_torch(sg, kw):
    torch = need_torch()
    shapes = [(2, 4, 5, 6, 7), (6, 4 // kw.get("groups", 1), 3, 1, 3), (6,)]
    (xs, xt), (ws, wt), (bs, bt) = (_both(sg, torch, s, i) for i, s in enumerate(shapes))
    ys, yt = sg.nn.functional.conv3d(xs, ws, bs, **kw), torch.nn.functional.conv3d(xt, wt, bt, **kw)
    assert_close(ys, yt, atol=1e-4)
    (ys * ys).sum().backward()
    (yt * yt).sum().backward()
    for ours, theirs in ((xs, xt), (ws, wt), (bs, bt)):
        assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-3)
    layer = sg.nn.Conv3d(4, 2, 3, padding=1)
    assert tuple(layer(sg.ones(4, 3, 3, 3)).shape) == (2, 3, 3, 3)


@pytest.mark.parametrize("fn, kw", [("max_pool3d", {"kernel_size": 3, "stride": 2, "padding": 1}),
                                    ("avg_pool3d", {"kernel_size": 3, "stride": (1, 2, 2), "padding": 1}),
                                    ("avg_pool3d", {"kernel_size": 2, "divisor_override": 3}),
                                    # the last window starts in the left padding: PyTorch drops it
                                    ("avg_pool3d", {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True}),
                                    ("avg_pool3d", {"kernel_size": (3, 2, 3), "stride": (2, 3, 2), "padding": (1, 1, 0),
                                                    "ceil_mode": True, "count_include_pad": False}),
                                    ("avg_pool3d", {"kernel_size": 3, "stride": 2, "padding": 1,
                                                    "count_include_pad": False}),
                                    ("avg_pool3d", {"kernel_size": (2, 3, 2), "ceil_mode": True,
                                                    "count_include_pad": False, "divisor_override": 5})],
                         ids=repr)
def test_3d_pooling_as_torch(sg, fn, kw):
    torch = need_torch()
    xs, xt = _both(sg, torch, (2, 3, 5, 6, 7), 4)
    a, b = getattr(sg.nn.functional, fn)(xs, **kw), getattr(torch.nn.functional, fn)(xt, **kw)
    assert_close(a, b, atol=1e-6)
    (a * a).sum().backward()
    (b * b).sum().backward()
    assert_close(xs.grad, xt.grad, atol=1e-5)
    if fn == "max_pool3d":
        with pytest.raises(NotImplementedError, match="ceil_mode"):
            sg.nn.functional.max_pool3d(xs, 2, ceil_mode=True)
    assert tuple(sg.nn.MaxPool3d(2)(sg.ones(1, 4, 4, 4)).shape) == (1, 2, 2, 2)


@pytest.mark.parametrize("mode, kw", [("nearest", {"scale_factor": 2}), ("trilinear", {"size": (5, 7, 3)}),
                                      ("trilinear", {"scale_factor": 1.5, "align_corners": True})], ids=repr)
def test_5d_interpolation_as_torch(sg, mode, kw):
    torch = need_torch()
    xs, xt = _both(sg, torch, (1, 2, 3, 4, 5), 5, grad=False)
    assert_close(sg.nn.functional.interpolate(xs, mode=mode, **kw),
                 torch.nn.functional.interpolate(xt, mode=mode, **kw), atol=1e-6)


def test_weighted_random_sampler(sg):
    torch = need_torch()
    weights = [0.0, 1.0, 3.0, 0.0]
    sampler = sg.utils.data.WeightedRandomSampler(weights, 4000)
    drawn = np.bincount(list(sampler), minlength=4)
    assert len(sampler) == 4000 and drawn[0] == drawn[3] == 0  # never a zero weight
    assert abs(drawn[2] / 4000 - 0.75) < 0.05  # in proportion (about 9 standard deviations)
    sg.manual_seed(1)
    first = list(sg.utils.data.WeightedRandomSampler(sg.tensor(weights), 50))
    sg.manual_seed(1)
    assert list(sg.utils.data.WeightedRandomSampler(weights, 50)) == first  # reproducible
    assert sorted(sg.utils.data.WeightedRandomSampler(weights, 2, replacement=False)) == [1, 2]
    loader = sg.utils.data.DataLoader(sg.utils.data.TensorDataset(sg.arange(4)), batch_size=10,
                                      sampler=sg.utils.data.WeightedRandomSampler(weights, 10))
    assert set(next(iter(loader))[0].tolist()) <= {1, 2}
    for bad in (([[0.1, 0.9]], 5), ([0.1, 0.9], 0)):  # the same refusals as PyTorch's
        for lib in (sg, torch):
            with pytest.raises(ValueError):
                lib.utils.data.WeightedRandomSampler(*bad)
