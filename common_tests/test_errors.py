"""Bad input raises a clear error: ValueError for shapes, TypeError for dtypes and
types, IndexError for indices (RuntimeError where PyTorch's autograd raises one). The
message names the operation and the shapes involved, and no tensor is changed."""
import re

import numpy as np
import pytest

from .helpers_core import T, data, need_torch, settled


def _shape_in(msg, shape):
    # accept [2, 3], (2, 3), Size([2, 3]) ...
    return ", ".join(str(s) for s in shape) in msg


def _check(exc_info, op=None, shapes=()):
    msg = str(exc_info.value)
    if op is not None:
        assert re.search(op, msg, re.IGNORECASE), f"message does not name the op {op!r}: {msg}"
    for s in shapes:
        assert _shape_in(msg, s), f"message does not name shape {s}: {msg}"


# (id, build(sg, a, b) -> thunk, exception, op regex, shapes named in the message)
# a is (2, 3) float32, b is (4, 5) float32
SHAPE_ERRORS = [
    ("add_broadcast", lambda sg, a, b: lambda: a + b, "add|\\+", [(2, 3), (4, 5)]),
    ("mul_broadcast", lambda sg, a, b: lambda: a * b, "mul|\\*", [(2, 3), (4, 5)]),
    ("sub_broadcast", lambda sg, a, b: lambda: b - a, "sub|-", [(2, 3), (4, 5)]),
    ("div_broadcast", lambda sg, a, b: lambda: a / b, "div|/", [(2, 3), (4, 5)]),
    ("compare_broadcast", lambda sg, a, b: lambda: a < b, "lt|<", [(2, 3), (4, 5)]),
    ("maximum_broadcast", lambda sg, a, b: lambda: sg.maximum(a, b), "maximum", [(2, 3), (4, 5)]),
    ("where_broadcast", lambda sg, a, b: lambda: sg.where(a > 0, a, b), "where", [(2, 3), (4, 5)]),
    ("matmul_inner", lambda sg, a, b: lambda: a @ a, "matmul|@", [(2, 3)]),
    ("matmul_inner_vec", lambda sg, a, b: lambda: a @ sg.ones(4), "matmul|@", [(2, 3)]),
    ("matmul_batch", lambda sg, a, b: lambda: sg.ones(2, 2, 3) @ sg.ones(3, 3, 2), "matmul|@", [(2, 2, 3), (3, 3, 2)]),
    ("matmul_0d", lambda sg, a, b: lambda: sg.tensor(1.0) @ a, "matmul|@", []),
    ("reshape_size", lambda sg, a, b: lambda: a.reshape(4, 2), "reshape|view", [(4, 2)]),
    ("view_size", lambda sg, a, b: lambda: a.view(5, -1), "reshape|view", []),
    ("reshape_two_infer", lambda sg, a, b: lambda: a.reshape(-1, -1), "reshape|view", []),
    ("cat_shapes", lambda sg, a, b: lambda: sg.cat([a, b]), "cat", [(2, 3), (4, 5)]),
    ("cat_ndim", lambda sg, a, b: lambda: sg.cat([a, sg.ones(3)]), "cat", []),
    ("cat_zero_dim", lambda sg, a, b: lambda: sg.cat([sg.tensor(1.0), sg.tensor(2.0)]), "cat", []),
    ("cat_empty_list", lambda sg, a, b: lambda: sg.cat([]), "cat", []),
    ("stack_shapes", lambda sg, a, b: lambda: sg.stack([a, b]), "stack", [(2, 3), (4, 5)]),
    ("expand", lambda sg, a, b: lambda: a.expand(3, 3), "expand", [(2, 3)]),
    ("permute_count", lambda sg, a, b: lambda: a.permute(0), "permute", []),
    ("permute_repeat", lambda sg, a, b: lambda: a.permute(0, 0), "permute", []),
    ("ragged", lambda sg, a, b: lambda: sg.tensor([[1.0, 2.0], [3.0]]), "tensor|sequence|ragged", []),
    ("setitem_value_shape", lambda sg, a, b: lambda: a.__setitem__(0, sg.ones(4)),
     "setitem|assign|broadcast|shape", []),
    ("item_many", lambda sg, a, b: lambda: a.item(), "item", []),
    ("split_zero", lambda sg, a, b: lambda: a.split(0), "split", []),
    ("mse_shapes", lambda sg, a, b: lambda: sg.nn.functional.mse_loss(a, b), "mse_loss", [(2, 3), (4, 5)]),
    ("inplace_grows_shape", lambda sg, a, b: lambda: a[0].__iadd__(a), "add|\\+", [(2, 3)]),
    ("inplace_broadcast", lambda sg, a, b: lambda: a.mul_(b), "mul", [(2, 3), (4, 5)]),
    ("copy_shapes", lambda sg, a, b: lambda: a.copy_(b), "copy", [(2, 3), (4, 5)]),
]


@pytest.mark.parametrize("k", range(len(SHAPE_ERRORS)), ids=[e[0] for e in SHAPE_ERRORS])
def test_shape_errors_raise_value_error(sg, k):
    _, build, op, shapes = SHAPE_ERRORS[k]
    a, b = T(sg, data((2, 3), seed=1)), T(sg, data((4, 5), seed=2))
    before = (a.tolist(), b.tolist())
    with pytest.raises(ValueError) as e:
        build(sg, a, b)()
    _check(e, op, shapes)
    assert (a.tolist(), b.tolist()) == before


RUNTIME_SHAPE_ERRORS = ["add_broadcast", "where_broadcast", "matmul_inner", "matmul_batch", "reshape_size",
                        "view_size", "cat_shapes", "stack_shapes", "expand", "permute_repeat",
                        "inplace_broadcast", "copy_shapes"]


@pytest.mark.parametrize("name", RUNTIME_SHAPE_ERRORS)
def test_shape_errors_are_runtime_errors_as_in_torch(sg, name):
    # code written for PyTorch catches shape mistakes with ``except RuntimeError``
    torch = need_torch()
    build = next(e[1] for e in SHAPE_ERRORS if e[0] == name)
    with pytest.raises(RuntimeError):
        build(torch, torch.tensor(data((2, 3), seed=1)), torch.tensor(data((4, 5), seed=2)))()
    with pytest.raises(RuntimeError) as e:
        build(sg, T(sg, data((2, 3), seed=1)), T(sg, data((4, 5), seed=2)))()
    assert isinstance(e.value, sg.ShapeError) and isinstance(e.value, ValueError)


INDEX_ERRORS = [
    ("int_too_big", lambda sg, a: lambda: a[5], "5"),
    ("int_too_small", lambda sg, a: lambda: a[-3], "-3"),
    ("second_dim", lambda sg, a: lambda: a[0, 7], "7"),
    ("too_many_indices", lambda sg, a: lambda: a[0, 1, 2], None),
    ("int_tensor", lambda sg, a: lambda: a[sg.tensor([0, 5])], "5"),
    ("list", lambda sg, a: lambda: a[[1, -4]], "-4"),
    ("mask_length", lambda sg, a: lambda: a[sg.tensor([True, False, True])], None),
    ("float_tensor_index", lambda sg, a: lambda: a[sg.tensor([0.0, 1.0])], None),
    ("dim_sum", lambda sg, a: lambda: a.sum(5), "5"),
    ("dim_max", lambda sg, a: lambda: a.max(-3), "-3"),
    ("dim_softmax", lambda sg, a: lambda: sg.nn.functional.softmax(a, 2), None),
    ("dim_unsqueeze", lambda sg, a: lambda: a.unsqueeze(4), "4"),
    ("dim_transpose", lambda sg, a: lambda: a.transpose(0, 2), "2"),
    ("cross_entropy_target", lambda sg, a: lambda: sg.nn.functional.cross_entropy(a, sg.tensor([0, 3])), "3"),
]


@pytest.mark.parametrize("k", range(len(INDEX_ERRORS)), ids=[e[0] for e in INDEX_ERRORS])
def test_index_errors(sg, k):
    _, build, needle = INDEX_ERRORS[k]
    a = T(sg, data((2, 3), seed=3))
    before = a.tolist()
    with pytest.raises(IndexError) as e:
        settled(build(sg, a)())
    if needle is not None:
        assert needle in str(e.value), str(e.value)
    assert a.tolist() == before


def test_float_scalar_index(sg):
    a = T(sg, data((2, 3), seed=4))
    with pytest.raises((IndexError, TypeError)):
        a[1.0]


@pytest.mark.parametrize("idx", [5, (0, 9), [0, 5], (slice(None), [1, 3])], ids=["int", "pair", "list", "slice_list"])
def test_setitem_out_of_range_leaves_tensor_unchanged(sg, idx):
    a = data((2, 3), seed=5)
    x = T(sg, a)
    with pytest.raises(IndexError):
        x[idx] = 1.0
    assert x.tolist() == a.tolist()  # no partial write


TYPE_ERRORS = [
    ("neg_bool", lambda sg, m: lambda: -m),
    ("neg_bool_method", lambda sg, m: lambda: m.neg()),
    ("sub_bools", lambda sg, m: lambda: m - m),
    ("rsub_bool_scalar", lambda sg, m: lambda: True - m),
    ("tensor_plus_str", lambda sg, m: lambda: m.float() + "a"),
    ("tensor_of_str", lambda sg, m: lambda: sg.tensor("abc")),
    ("tensor_of_object", lambda sg, m: lambda: sg.tensor([object()])),
    ("matmul_mixed_dtypes", lambda sg, m: lambda: sg.ones(2, 2) @ sg.ones(2, 2, dtype=sg.int64)),
    ("cat_not_a_sequence", lambda sg, m: lambda: sg.cat(sg.ones(2, 3))),
    ("cross_entropy_float_index_target", lambda sg, m: lambda: sg.nn.functional.nll_loss(
        sg.ones(2, 3), sg.tensor([0.0, 1.0]))),
    ("mean_of_int", lambda sg, m: lambda: m.long().mean()),
    ("inplace_float_into_int", lambda sg, m: lambda: m.long().__iadd__(1.5)),
    ("inplace_true_div_int", lambda sg, m: lambda: m.long().div_(2)),
    ("inplace_float_into_bool", lambda sg, m: lambda: m.__imul__(2.5)),
]


@pytest.mark.parametrize("k", range(len(TYPE_ERRORS)), ids=[e[0] for e in TYPE_ERRORS])
def test_type_errors(sg, k):
    _, build = TYPE_ERRORS[k]
    m = T(sg, data((2, 3), "bool", seed=6))
    before = m.tolist()
    with pytest.raises(TypeError):
        build(sg, m)()
    assert m.tolist() == before


@pytest.mark.parametrize("expr", [lambda m: -m, lambda m: m - m, lambda m: m - True],
                         ids=["neg", "sub", "sub_scalar"])
def test_bool_arithmetic_refused_where_torch_refuses(sg, expr):
    torch = need_torch()
    with pytest.raises(RuntimeError):
        expr(torch.tensor([True, False]))
    with pytest.raises(TypeError):
        expr(sg.tensor([True, False]))


def test_requires_grad_on_integer_tensor(sg):
    torch = need_torch()
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2], requires_grad=True)
    with pytest.raises((RuntimeError, TypeError)):
        sg.tensor([1, 2], requires_grad=True)


def test_backward_non_scalar_without_gradient(sg):
    x = T(sg, data((2, 3), seed=7), requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError) as e:
        y.backward()
    _check(e, None, [(2, 3)])
    assert x.grad is None


def test_backward_gradient_of_wrong_shape(sg):
    x = T(sg, data((2, 3), seed=8), requires_grad=True)
    with pytest.raises((RuntimeError, ValueError)):
        (x * 2).backward(sg.ones(3, 2))
    assert x.grad is None


def test_backward_on_tensor_without_grad(sg):
    x = T(sg, data((2,), seed=9))
    with pytest.raises(RuntimeError):
        x.sum().backward()


def test_custom_function_wrong_gradient_shape(sg):
    class Bad(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()  # shape () for a (3,) input

    x = T(sg, data((3,), seed=10), requires_grad=True)
    with pytest.raises((RuntimeError, ValueError)):
        Bad.apply(x).sum().backward()


def test_randint_and_arange_bad_ranges(sg):
    with pytest.raises(ValueError):
        sg.randint(5, 2, (3,))
    with pytest.raises(ValueError):
        sg.arange(0, 5, 0)


def test_gradcheck_refuses_float32(sg):
    x = T(sg, data((2,), seed=11), requires_grad=True)
    with pytest.raises((TypeError, ValueError)):
        sg.autograd.gradcheck(lambda t: t * 2, (x,))


def test_failed_op_leaves_graph_usable(sg):
    # an error mid-way must not corrupt the tensors or the recorded graph
    a = data((2, 3), seed=12)
    x = T(sg, a, requires_grad=True)
    y = x * 3
    with pytest.raises(ValueError):
        y + T(sg, data((4,), seed=13))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 3.0, np.float32))


@pytest.mark.parametrize("value,dtype", [(2**63, None), (-2**63 - 1, "int64"), (2**31, "int32"),
                                         (-2**31 - 1, "int32")])
def test_integer_input_that_does_not_fit_is_refused(sg, value, dtype):
    """PyTorch refuses these too; a value the user wrote must never wrap silently."""
    torch = need_torch()
    with pytest.raises((ValueError, RuntimeError)):
        torch.tensor([value], dtype=getattr(torch, dtype) if dtype else None)
    with pytest.raises(ValueError, match="overflow"):
        sg.tensor([value], dtype=getattr(sg, dtype) if dtype else None)
    with pytest.raises(ValueError, match="overflow"):
        sg.tensor([[1, value]], dtype=getattr(sg, dtype) if dtype else None)


def test_integer_input_at_the_limits_is_kept(sg):
    for dtype, lo, hi in ((sg.int32, -2**31, 2**31 - 1), (sg.int64, -2**63, 2**63 - 1)):
        assert sg.tensor([lo, hi], dtype=dtype).tolist() == [lo, hi]
