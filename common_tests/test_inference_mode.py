"""``sg.inference_mode``: as a context manager and a decorator (with and without
parentheses), against ``torch.inference_mode``."""
import pytest

from .oracle import assert_close, need_torch


def _run(lib):
    """What a program observes of grad mode under each use of inference_mode."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    seen = {}
    with lib.inference_mode():
        y = w * 3
        seen["inside"] = (lib.is_grad_enabled(), lib.is_inference_mode_enabled(), y.requires_grad,
                          y.grad_fn is None)
    seen["after"] = (lib.is_grad_enabled(), lib.is_inference_mode_enabled())
    with lib.inference_mode(False):
        seen["disabled"] = (lib.is_grad_enabled(), lib.is_inference_mode_enabled(), (w * 3).requires_grad)
    with lib.no_grad():
        with lib.inference_mode(False):
            seen["disabled_in_no_grad"] = lib.is_grad_enabled()

    @lib.inference_mode()
    def called(x):
        """doc kept"""
        return x * 2, lib.is_grad_enabled()

    @lib.inference_mode
    def bare(x):
        return x * 2, lib.is_grad_enabled()

    out, mode = called(w)
    seen["decorated"] = (out.requires_grad, mode, called.__name__, called.__doc__)
    out2, mode2 = bare(w)
    seen["bare"] = (out2.requires_grad, mode2, bare.__name__)
    seen["restored"] = lib.is_grad_enabled()
    try:
        with lib.inference_mode():
            raise KeyError("stop")
    except KeyError:
        pass
    seen["after_error"] = (lib.is_grad_enabled(), lib.is_inference_mode_enabled())
    return seen, y


@pytest.mark.needs_torch
def test_inference_mode_matches_torch(sg):
    torch = need_torch()
    ours, y = _run(sg)
    theirs, ty = _run(torch)
    assert ours == theirs
    assert_close(y, ty)


def test_inference_mode_nested_in_enable_grad(sg):
    w = sg.ones(2, requires_grad=True)
    with sg.inference_mode():
        with sg.enable_grad():
            assert sg.is_grad_enabled()  # enable_grad wins inside, as grad mode is a stack
        assert not sg.is_grad_enabled()
    assert sg.is_grad_enabled() and (w * 2).requires_grad
