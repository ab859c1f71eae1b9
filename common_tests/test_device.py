"""``device=`` on creation functions, ``sg.device``, ``Tensor.to``/``cpu``/``cuda``, against
PyTorch's CPU build: the CPU is accepted in every spelling, any other device refused."""
import numpy as np
import pytest

from .oracle import assert_close, need_torch, np_

CPU_SPELLINGS = ("cpu", "cpu:0", "device")


def _spell(lib, how):
    return lib.device("cpu") if how == "device" else how


def _creations(lib):
    """Each creation function called with ``device=``; deterministic ones, so the results
    can be compared with PyTorch's."""
    base = lib.ones(2, 3)
    return {
        "tensor": lambda d: lib.tensor([[1, 2], [3, 4]], device=d),
        "as_tensor": lambda d: lib.as_tensor([1.5, 2.5], device=d),
        "zeros": lambda d: lib.zeros(2, 3, device=d),
        "ones": lambda d: lib.ones((2, 3), device=d),
        "empty": lambda d: lib.empty(2, device=d).shape,
        "full": lambda d: lib.full((2, 2), 7.0, device=d),
        "arange": lambda d: lib.arange(0, 10, 3, device=d),
        "linspace": lambda d: lib.linspace(0, 1, 5, device=d),
        "eye": lambda d: lib.eye(3, device=d),
        "rand": lambda d: lib.rand(4, device=d).shape,
        "randn": lambda d: lib.randn(4, device=d).shape,
        "normal": lambda d: lib.normal(0.0, 1.0, (3,), device=d).shape,
        "randint": lambda d: lib.randint(0, 5, (3,), device=d).shape,
        "randperm": lambda d: lib.randperm(6, device=d).shape,
        "zeros_like": lambda d: lib.zeros_like(base, device=d),
        "ones_like": lambda d: lib.ones_like(base, device=d),
        "empty_like": lambda d: lib.empty_like(base, device=d).shape,
        "full_like": lambda d: lib.full_like(base, 2.0, device=d),
        "rand_like": lambda d: lib.rand_like(base, device=d).shape,
        "randn_like": lambda d: lib.randn_like(base, device=d).shape,
        "randint_like": lambda d: lib.randint_like(base, 0, 4, device=d).shape,
        "new_zeros": lambda d: base.new_zeros(2, device=d),
        "new_ones": lambda d: base.new_ones(2, device=d),
        "new_full": lambda d: base.new_full((2,), 3.0, device=d),
        "new_tensor": lambda d: base.new_tensor([1, 2], device=d),
    }


@pytest.mark.needs_torch
@pytest.mark.parametrize("how", CPU_SPELLINGS)
def test_creation_accepts_the_cpu(sg, how):
    torch = need_torch()
    ours, theirs = _creations(sg), _creations(torch)
    for name, make in ours.items():
        a, b = make(_spell(sg, how)), theirs[name](_spell(torch, how))
        if isinstance(b, torch.Tensor):
            assert a.device == sg.device("cpu"), name
            assert_close(a, b)
        else:
            assert tuple(a) == tuple(b), name


@pytest.mark.parametrize("dev", ["cuda", "cuda:0", "mps", "cuda:1"])
def test_creation_refuses_other_devices(sg, dev):
    if dev.startswith("cuda") and sg.cuda.is_available():  # a stage with a usable GPU: device 0 only
        for name, make in _creations(sg).items():
            if dev == "cuda:1":
                with pytest.raises(RuntimeError, match=f"(?s){name}.*'cuda:1' does not exist"):
                    make(dev)
            else:
                made = make(dev)  # a tensor, or the shape of a random one
                assert getattr(made, "device", sg.device("cuda", 0)) == sg.device("cuda", 0), name
        return
    for name, make in _creations(sg).items():
        with pytest.raises(RuntimeError, match=f"(?s){name}.*'{dev}'.*CPU"):
            make(dev)
        with pytest.raises(ValueError, match="runs on the CPU"):
            make(sg.device(dev))


@pytest.mark.needs_torch
def test_device_type_behaves_as_torch_device(sg):
    torch = need_torch()
    for args in (("cpu",), ("cpu:0",), ("cpu", 0), ("cuda",), ("cuda:1",), ("mps",), ("cuda", 2)):
        ours, theirs = sg.device(*args), torch.device(*args)
        assert (str(ours), repr(ours), ours.type, ours.index) == \
            (str(theirs), repr(theirs), theirs.type, theirs.index), args
    pairs = [("cpu", "cpu"), ("cpu", "cpu:0"), ("cpu:0", "cpu:0"), ("cpu", "cuda"), ("cuda:0", "cuda:1")]
    for x, y in pairs:
        assert (sg.device(x) == sg.device(y)) == (torch.device(x) == torch.device(y)), (x, y)
    assert (sg.device("cpu") == "cpu") == (torch.device("cpu") == "cpu")
    assert sg.device(sg.device("cpu:0")) == sg.device("cpu:0")
    assert len({sg.device("cpu"), sg.device("cpu"), sg.device("cpu:0")}) == 2
    for bad in ("gpu", "cpu:-1", "cpu:x", "cuda:01"):
        with pytest.raises(RuntimeError):
            torch.device(bad)
        with pytest.raises(RuntimeError):
            sg.device(bad)


@pytest.mark.needs_torch
def test_tensor_device_and_moves(sg):
    torch = need_torch()
    x = sg.tensor([1.0, 2.0], requires_grad=True, device="cpu")
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    assert str(x.device) == str(tx.device) and repr(x.device) == repr(tx.device)
    assert x.is_cuda is tx.is_cuda and x.is_cpu is tx.is_cpu
    # no change: the very same tensor, as in PyTorch
    for how in ("cpu", "device"):
        assert (x.to(_spell(sg, how)) is x) == (tx.to(_spell(torch, how)) is tx) is True
    assert_close(x.to("cpu:0"), tx.to("cpu:0"))  # PyTorch copies here; the values are what count
    assert (x.cpu() is x) and (tx.cpu() is tx)
    assert x.to(device="cpu", dtype=sg.float32) is x
    # device and dtype together, positional or by keyword, and another tensor's
    y = x.to("cpu", sg.float64)
    ty = tx.to("cpu", torch.float64)
    assert_close(y, ty)
    assert_close(x.to(sg.device("cpu"), dtype=sg.int64), tx.to(torch.device("cpu"), dtype=torch.int64))
    assert_close(x.to(sg.zeros(1, dtype=sg.float64, device="cpu")), tx.to(torch.zeros(1, dtype=torch.float64)))
    copied = x.to("cpu", copy=True)
    assert copied is not x and np.array_equal(np_(copied), np_(x))
    (y * y).sum().backward()  # a move keeps the graph
    assert_close(x.grad, np.array([2.0, 4.0], np.float32))
    gpu = sg.cuda.is_available()  # a stage with a usable GPU moves to cuda (test_gpu_devices.py)
    for bad in ("mps",) if gpu else ("cuda", "cuda:0", "mps"):
        with pytest.raises(RuntimeError, match=f"'{bad}'.*CPU"):
            x.to(bad)
        with pytest.raises(RuntimeError, match=f"'{bad}'"):
            x.to(sg.device(bad), sg.float64)
    if not gpu:
        with pytest.raises(RuntimeError, match="'cuda'.*CPU"):
            x.cuda()
    with pytest.raises(RuntimeError, match="'cuda:1'"):
        x.cuda(1)
    if not torch.cuda.is_available():
        with pytest.raises((AssertionError, RuntimeError)):  # PyTorch's CPU build refuses too
            tx.cuda()


def test_default_device_is_the_cpu_and_only_a_usable_device_can_be_set(sg):
    torch = need_torch()
    sg.set_default_device(None)  # back to the CPU, as PyTorch's None does (a device run sets one)
    assert sg.get_default_device() == sg.device("cpu")
    assert str(torch.get_default_device()) == str(sg.get_default_device())
    sg.set_default_device("cpu")
    try:
        assert sg.zeros(2).device == sg.device("cpu")
        with pytest.raises(RuntimeError, match="set_default_device.*'mps'"):
            sg.set_default_device("mps")
        assert sg.get_default_device() == sg.device("cpu")
    finally:
        sg.set_default_device(None)
