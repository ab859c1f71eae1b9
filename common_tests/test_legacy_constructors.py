"""``sg.Tensor(...)``, the legacy types (``FloatTensor`` ...), ``Tensor.type`` and
``Tensor.__format__``, against PyTorch."""
import pytest

from .oracle import assert_close, need_torch

LEGACY = ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor")
DATA = ([1, 2], [[1, 2], [3, 4]], [1.7, -2.5], [True, False], [[0.5], [1.5]], (3, 4), [])


def _ours_name(ours, torch_name):
    """What ``ours.type()`` answers where PyTorch's CPU tensor answers ``torch_name``: the same
    string (programs compare it with ``'torch.FloatTensor'``), with ``cuda.`` on a GPU."""
    kind = ours.device.type
    return torch_name if kind == "cpu" else torch_name.replace("torch.", f"torch.{kind}.", 1)


@pytest.mark.needs_torch
@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_from_data_is_float32_as_torch(sg, data):
    torch = need_torch()
    ours, theirs = sg.Tensor(data), torch.Tensor(data)
    assert_close(ours, theirs)
    assert ours.type() == _ours_name(ours, theirs.type())
    assert not ours.requires_grad


@pytest.mark.needs_torch
@pytest.mark.parametrize("args", [(2, 3), (0,), (4,), (1, 2, 3), ()], ids=repr)
def test_tensor_and_legacy_types_from_sizes(sg, args):
    torch = need_torch()
    assert tuple(sg.Tensor(*args).shape) == tuple(torch.Tensor(*args).shape)
    assert_close(sg.Tensor(*args), torch.zeros(torch.Tensor(*args).shape))  # zero-filled here
    for name in LEGACY:
        ours, theirs = getattr(sg, name)(*args), getattr(torch, name)(*args)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype).replace("torch", "stagegrad")
        assert ours.type() == _ours_name(ours, theirs.type())
    assert tuple(sg.Tensor(sg.Size([2, 3])).shape) == tuple(torch.Tensor(torch.Size([2, 3])).shape)


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize("data", [d for d in DATA if d != (3, 4)], ids=repr)
def test_legacy_types_from_data(sg, name, data):
    torch = need_torch()
    ours, theirs = getattr(sg, name)(data), getattr(torch, name)(data)
    assert_close(ours, theirs)
    assert ours.type() == _ours_name(ours, theirs.type())
    assert isinstance(ours, getattr(sg, name)) and isinstance(ours, sg.Tensor)
    others = [n for n in LEGACY if n != name]
    assert not any(isinstance(ours, getattr(sg, n)) for n in others)
    assert getattr(sg, name)(data, device="cpu").dtype is ours.dtype
    with pytest.raises(RuntimeError, match="CPU"):
        getattr(sg, name)(data, device="cuda")


@pytest.mark.needs_torch
@pytest.mark.capability("float64")
def test_tensor_from_a_tensor_keeps_its_dtype(sg):
    torch = need_torch()
    for dtype in ("int64", "float64", "bool"):
        t = sg.tensor([1, 0, 1], dtype=getattr(sg, dtype))
        tt = torch.tensor([1, 0, 1], dtype=getattr(torch, dtype))
        assert_close(sg.Tensor(t), torch.Tensor(tt))
    # a legacy type refuses a tensor of another dtype, as PyTorch's does
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="FloatTensor"):
        sg.FloatTensor(sg.tensor([1, 2]))
    assert_close(sg.LongTensor(sg.tensor([1, 2])), torch.LongTensor(torch.tensor([1, 2])))


@pytest.mark.needs_torch
def test_constructor_errors_as_torch(sg):
    torch = need_torch()
    with pytest.raises(TypeError):
        torch.Tensor(2.5)
    with pytest.raises(TypeError, match="sequence"):
        sg.Tensor(2.5)
    with pytest.raises(RuntimeError):
        torch.Tensor(-1)
    with pytest.raises(ValueError):
        sg.Tensor(-1)
    with pytest.raises(ValueError):
        torch.Tensor([[1], [2, 3]])
    with pytest.raises(ValueError):
        sg.Tensor([[1], [2, 3]])


def test_tensor_keeps_the_projects_dtype_keyword(sg):
    t = sg.Tensor([1, 2], dtype=sg.int64, requires_grad=False)
    assert t.dtype is sg.int64 and t.tolist() == [1, 2]
    assert sg.Tensor([1.5], requires_grad=True).requires_grad
    assert sg.tensor([1, 2]).dtype is sg.int64  # sg.tensor still infers


@pytest.mark.needs_torch
@pytest.mark.capability("float64")
def test_type_converts_as_torch(sg):
    torch = need_torch()
    x, tx = sg.tensor([1.7, -2.2, 0.0]), torch.tensor([1.7, -2.2, 0.0])
    for name in LEGACY:
        theirs = tx.type(getattr(torch, name))
        assert_close(x.type(getattr(sg, name)), theirs)
        assert_close(x.type(f"torch.{name}"), theirs)  # PyTorch's spelling, kept in ported code
        assert_close(x.type(f"{sg.__name__}.{name}"), theirs)
        assert x.type(x.type(getattr(sg, name)).type()).type() == _ours_name(x, theirs.type())
    assert_close(x.type(sg.float64), tx.type(torch.float64))
    assert (x.type(sg.float32) is x) == (tx.type(torch.float32) is tx)
    for bad in ("float", "torch.HalfishTensor", "numpy.FloatTensor"):
        with pytest.raises(ValueError, match="invalid type"):
            x.type(bad)
    with pytest.raises(ValueError, match="invalid type"):
        tx.type("float")


@pytest.mark.needs_torch
@pytest.mark.parametrize("value,spec", [(1.23456, ".4f"), (1.23456, ".2e"), (3, "5d"), (3, "x"), (2.5, ""),
                                        (-0.5, "+.1%"), (True, ""), (7, "")])
def test_format_of_a_0d_tensor_as_torch(sg, value, spec):
    torch = need_torch()
    assert format(sg.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"loss {sg.tensor(value):{spec}}" == f"loss {torch.tensor(value):{spec}}"


@pytest.mark.needs_torch
def test_format_of_other_tensors(sg):
    torch = need_torch()
    x = sg.tensor([1.0, 2.0])
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match="format"):
        format(torch.tensor([1.0, 2.0]), ".2f")
    with pytest.raises(TypeError, match="format"):
        format(x, ".2f")
    with pytest.raises(TypeError):  # a one-element tensor that is not 0-d also refuses, as in PyTorch
        format(torch.tensor([1.0]), ".2f")
    with pytest.raises(TypeError):
        format(sg.tensor([1.0]), ".2f")
