"""The exception classes PyTorch raises, raised by every stage for the same call: a program
that catches PyTorch's ``RuntimeError`` (or ``NotImplementedError``) catches the stage's
error too. The stage's error keeps this project's base (``ValueError`` for a bad value,
``TypeError`` for a dtype) and its own message, which names the operation.

Each case is one call written once for a module ``m``, run on PyTorch (the oracle, whose
class is read live) and on the stage."""
import re

import pytest

from .helpers_core import need_torch


def _F(m):
    return m.nn.functional


def _qkv(m):
    return m.ones(1, 2, 4), m.ones(1, 2, 4), m.ones(1, 2, 4)


# (id, call(m), regex the stage's message must match: the operation it names)
CASES = [
    ("unfold_step_zero", lambda m: m.ones(5).unfold(0, 2, 0), "unfold"),
    ("unfold_step_negative", lambda m: m.ones(5).unfold(0, 2, -1), "unfold"),
    ("div_rounding_mode", lambda m: m.div(m.ones(3), m.ones(3), rounding_mode="round"), "div"),
    ("div_rounding_mode_method", lambda m: m.ones(3).div(2, rounding_mode="x"), "div"),
    ("div_rounding_mode_int", lambda m: m.ones(3, dtype=m.int64).div(2, rounding_mode="r"), "div"),
    ("einsum_bad_subscript", lambda m: m.einsum("ij,j!k", m.ones(2, 3), m.ones(3, 4)), "einsum"),
    ("einsum_operand_count", lambda m: m.einsum("ij,jk->ik", m.ones(2, 3)), "einsum"),
    ("einsum_extra_operand", lambda m: m.einsum("ij", m.ones(2, 2), m.ones(2, 2)), "einsum"),
    ("einsum_unknown_output", lambda m: m.einsum("ij->ik", m.ones(2, 3)), "einsum"),
    ("einsum_bad_output", lambda m: m.einsum("ij->i!", m.ones(2, 2)), "einsum"),
    ("einsum_repeated_output", lambda m: m.einsum("ij->ii", m.ones(2, 2)), "einsum"),
    ("einsum_two_ellipses", lambda m: m.einsum("......", m.ones(2, 2)), "einsum"),
    ("einsum_dims", lambda m: m.einsum("ijk->i", m.ones(2, 3)), "einsum"),
    ("pad_mode", lambda m: _F(m).pad(m.ones(1, 1, 4), (1, 1), mode="wrap"), "pad"),
    ("pad_odd_length", lambda m: _F(m).pad(m.ones(1, 1, 4), (1,)), "pad"),
    ("pad_too_long", lambda m: _F(m).pad(m.ones(1, 1, 4), (1, 1) * 4), "pad"),
    ("pad_value_reflect", lambda m: _F(m).pad(m.ones(1, 1, 4), (1, 1), mode="reflect", value=2.0), "pad"),
    ("conv2d_kernel_does_not_fit", lambda m: _F(m).conv2d(m.ones(1, 1, 3, 3), m.ones(1, 1, 5, 5)), "conv2d"),
    ("conv1d_kernel_does_not_fit", lambda m: _F(m).conv1d(m.ones(1, 1, 3), m.ones(1, 1, 5)), "conv1d"),
    ("conv2d_stride_zero", lambda m: _F(m).conv2d(m.ones(1, 1, 3, 3), m.ones(1, 1, 1, 1), stride=0), "conv2d"),
    ("conv2d_negative_padding", lambda m: _F(m).conv2d(m.ones(1, 1, 3, 3), m.ones(1, 1, 1, 1), padding=-1),
     "conv2d"),
    ("unfold_kernel_does_not_fit", lambda m: _F(m).unfold(m.ones(1, 1, 3, 3), 5), "unfold"),
    ("max_pool2d_kernel_does_not_fit", lambda m: _F(m).max_pool2d(m.ones(1, 1, 3, 3), 5), "max_pool2d"),
    ("avg_pool2d_kernel_does_not_fit", lambda m: _F(m).avg_pool2d(m.ones(1, 1, 3, 3), 5), "avg_pool2d"),
    ("clamp_no_bounds", lambda m: m.clamp(m.ones(3)), "clamp"),
    ("clamp_no_bounds_method", lambda m: m.ones(3).clamp(min=None, max=None), "clamp"),
    ("clamp_no_bounds_inplace", lambda m: m.ones(3).clamp_(), "clamp"),
    ("scatter_reduce_reduce", lambda m: m.zeros(3).scatter_reduce(0, m.tensor([0, 1]), m.ones(2), reduce="foo"),
     "scatter_reduce"),
    ("sdpa_mask_and_causal", lambda m: _F(m).scaled_dot_product_attention(
        *_qkv(m), attn_mask=m.ones(2, 2, dtype=m.bool), is_causal=True), "scaled_dot_product_attention"),
    ("one_hot_too_big", lambda m: _F(m).one_hot(m.tensor([0, 3]), 3), "one_hot"),
    ("one_hot_negative", lambda m: _F(m).one_hot(m.tensor([0, -1]), 3), "one_hot"),
    ("lshift_float", lambda m: m.ones(3) << 1, "left_shift"),
    ("rshift_float", lambda m: m.ones(3) >> 1, "right_shift"),
    ("lshift_float_tensors", lambda m: m.ones(3) << m.ones(3), "left_shift"),
    ("lshift_int_by_float", lambda m: m.ones(3, dtype=m.int64) << 1.5, "left_shift"),
    ("rlshift_float", lambda m: 1 << m.ones(3), "left_shift"),
    ("ilshift_float", lambda m: m.ones(3).__ilshift__(1), "left_shift"),
    ("bitwise_left_shift_float", lambda m: m.bitwise_left_shift(m.ones(3), 1), "left_shift"),
    ("bitwise_right_shift_float", lambda m: m.bitwise_right_shift(m.ones(3), 1), "right_shift"),
    ("bitwise_left_shift_method", lambda m: m.ones(3).bitwise_left_shift_(1), "left_shift"),
    ("rshift_bools", lambda m: m.tensor([True]) >> m.tensor([True]), "right_shift"),
    ("bitwise_and_float", lambda m: m.ones(3) & m.ones(3), "bitwise_and"),
    ("hypot_int", lambda m: m.hypot(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64)), "hypot"),
    ("fmod_bools", lambda m: m.fmod(m.tensor([True]), m.tensor([True])), "fmod"),
    ("isclose_dtypes", lambda m: m.isclose(m.ones(3), m.ones(3, dtype=m.int64)), "isclose"),
    ("isclose_negative_atol", lambda m: m.isclose(m.ones(3), m.ones(3), atol=-1.0), "isclose"),
    ("allclose_negative_rtol", lambda m: m.allclose(m.ones(3), m.ones(3), rtol=-1.0), "isclose"),
]


def _raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return e
    return None


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_error_class_is_pytorchs(sg, k):
    """The stage raises an instance of the class PyTorch raises for the same call, with the
    project's base kept and its own message naming the operation."""
    torch = need_torch()
    _, call, op = CASES[k]
    want = _raised(lambda: call(torch))
    assert want is not None, "PyTorch accepts this call: the case no longer tests an error"
    # the oracle's class, without PyTorch's own subclasses (torch.AcceleratorError, ...)
    want_class = next(c for c in type(want).__mro__ if c.__module__ == "builtins")
    got = _raised(lambda: call(sg))
    assert got is not None, f"the stage accepts a call PyTorch refuses with {want_class.__name__}"
    assert isinstance(got, want_class), (f"PyTorch raises {want_class.__name__}, the stage "
                                         f"{type(got).__name__}: {got}")
    assert isinstance(got, (ValueError, TypeError)), f"the project's base is lost: {type(got).__mro__}"
    assert re.search(op, str(got)), f"the message does not name {op!r}: {got}"

