"""``sg.cuda`` and ``sg.backends`` answer as a CPU-only PyTorch build does (the oracle here
is such a build: its answers are the expected ones)."""
import importlib

import pytest

from .oracle import need_torch

# calls that succeed without a GPU: (name, args)
ANSWERED = [("is_available", ()), ("device_count", ()), ("is_initialized", ()), ("manual_seed", (3,)),
            ("manual_seed_all", (3,)), ("seed", ()), ("seed_all", ()), ("empty_cache", ()),
            ("memory_allocated", ()), ("max_memory_allocated", ()), ("memory_reserved", ()),
            ("is_bf16_supported", ()), ("get_arch_list", ())]
# calls that need a GPU and raise without one
REFUSED = [("synchronize", ()), ("current_device", ()), ("get_device_name", ()),
           ("get_device_capability", ()), ("get_device_properties", ()), ("mem_get_info", ()),
           ("init", ())]


@pytest.fixture(scope="module")
def cpu_torch():
    torch = need_torch()
    if torch.cuda.is_available() or torch.backends.mps.is_available():
        pytest.skip("the oracle must be a CPU-only PyTorch: this one has a GPU")
    return torch


def _without_a_gpu(sg):
    """Skip where this stage has a usable GPU: sg.cuda then answers for it (test_gpu_devices.py)."""
    if sg.cuda.is_available():
        pytest.skip(f"{sg.__name__} has a usable CUDA GPU here: sg.cuda answers for it")


@pytest.mark.needs_torch
@pytest.mark.parametrize("name,args", ANSWERED)
def test_cuda_answers_as_torch_without_a_gpu(sg, cpu_torch, name, args):
    _without_a_gpu(sg)
    ours, theirs = getattr(sg.cuda, name)(*args), getattr(cpu_torch.cuda, name)(*args)
    assert ours == theirs and type(ours) is type(theirs)
    assert getattr(sg.cuda, name).__doc__


@pytest.mark.needs_torch
@pytest.mark.parametrize("name,args", REFUSED)
def test_cuda_refuses_what_needs_a_gpu(sg, cpu_torch, name, args):
    _without_a_gpu(sg)
    with pytest.raises(AssertionError):
        getattr(cpu_torch.cuda, name)(*args)
    with pytest.raises(AssertionError, match=f"cuda.{name}:.*CPU"):
        getattr(sg.cuda, name)(*args)
    with pytest.raises(RuntimeError):
        getattr(sg.cuda, name)(*args)


def test_cuda_seeding_leaves_the_cpu_generator_alone(sg):
    sg.manual_seed(7)
    a = sg.rand(3).tolist()
    sg.manual_seed(7)
    sg.cuda.manual_seed(123)
    sg.cuda.manual_seed_all(123)
    assert sg.rand(3).tolist() == a


def test_the_usual_device_line_picks_the_cpu(sg):
    _without_a_gpu(sg)
    dev = sg.device("cuda" if sg.cuda.is_available() else "cpu")
    assert sg.zeros(2, device=dev).device == dev
    set_device = getattr(sg.cuda, "set_device")
    with pytest.raises(RuntimeError, match="set_device"):
        set_device(0)


@pytest.mark.needs_torch
def test_backends_flags_as_torch(sg, cpu_torch):
    b, tb = sg.backends, cpu_torch.backends
    assert b.cudnn.is_available() == tb.cudnn.is_available()
    assert b.cudnn.version() == tb.cudnn.version()
    assert b.mps.is_available() == tb.mps.is_available() and b.mps.is_built() == tb.mps.is_built()
    assert b.cuda.is_built() == tb.cuda.is_built()
    for flag in ("enabled", "allow_tf32"):
        assert getattr(b.cudnn, flag) == getattr(tb.cudnn, flag)
    assert b.cuda.matmul.allow_tf32 == tb.cuda.matmul.allow_tf32
    # the flags programs set are stored and read back
    for flag in ("benchmark", "deterministic"):
        before = getattr(b.cudnn, flag)
        assert before == getattr(tb.cudnn, flag)
        setattr(b.cudnn, flag, True)
        assert getattr(b.cudnn, flag) is True
        setattr(b.cudnn, flag, before)
    b.cuda.matmul.allow_tf32 = True
    assert b.cuda.matmul.allow_tf32 is True
    b.cuda.matmul.allow_tf32 = False
    # the GEMM switch is still there beside them
    assert isinstance(b.gemm, str)


def test_backends_submodules_import_as_modules(sg):
    cudnn = importlib.import_module(f"{sg.__name__}.backends.cudnn")  # ``import torch.backends.cudnn as cudnn``
    assert cudnn is sg.backends.cudnn and cudnn.__doc__
    assert importlib.import_module(f"{sg.__name__}.backends.mps") is sg.backends.mps
    assert importlib.import_module(f"{sg.__name__}.cuda") is sg.cuda
