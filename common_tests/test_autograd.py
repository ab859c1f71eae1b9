"""The autograd engine: graph bookkeeping, accumulation, grad modes, user-defined
Functions, autograd.grad, gradcheck, deep graphs and the errors PyTorch raises."""
import numpy as np
import pytest

from .helpers_core import TT, T, assert_close, check_grads, data, float64_if, gradcheck, need_torch, upstream


def _flags(t):
    return (t.requires_grad, t.is_leaf, t.grad_fn is None)


def test_leaf_and_graph_flags_match_torch(sg):
    a, b = data((2, 3), seed=1), data((2, 3), seed=2)
    x, y = T(sg, a, requires_grad=True), T(sg, b)
    tx, ty = TT(a, requires_grad=True), TT(b)
    pairs = [(x, tx), (y, ty), (x * y, tx * ty), (y * 2, ty * 2), (x.detach(), tx.detach()),
             (x > 0, tx > 0), (x.sum(), tx.sum()), ((x * y)[0], (tx * ty)[0]), (x.long(), tx.long())]
    for s, t in pairs:
        assert _flags(s) == _flags(t)
    assert x.grad is None


def test_backward_with_random_gradient(sg):
    a = data((2, 3), seed=3)
    check_grads(sg, lambda x: x * x * 3 - x, lambda t: t * t * 3 - t, a)


def test_scalar_backward_default_gradient(sg):
    a = data((3,), seed=4)
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    (x * x).sum().backward()
    (t * t).sum().backward()
    assert_close(x.grad, t.grad)


def test_gradient_accumulates_across_backward_calls(sg):
    torch = need_torch()
    a, g1, g2 = data((2, 3), seed=5), upstream((2, 3), seed=1), upstream((2, 3), seed=2)
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    (x * x).backward(T(sg, g1))
    (x.exp()).backward(T(sg, g2))
    (t * t).backward(torch.tensor(g1))
    (t.exp()).backward(torch.tensor(g2))
    assert_close(x.grad, t.grad, rtol=1e-5, atol=1e-6)


def test_grad_reset_to_none(sg):
    a = data((3,), seed=6)
    x = T(sg, a, requires_grad=True)
    (x * 2).sum().backward()
    x.grad = None
    (x * x).sum().backward()
    assert_close(x.grad, 2 * a)


def test_retain_graph_allows_second_backward(sg):
    torch = need_torch()
    a = data((2, 2), seed=7)
    g = upstream((2, 2))
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    y, ty = x.exp() * x, t.exp() * t
    y.backward(T(sg, g), retain_graph=True)
    y.backward(T(sg, g))
    ty.backward(torch.tensor(g), retain_graph=True)
    ty.backward(torch.tensor(g))
    assert_close(x.grad, t.grad, rtol=1e-5, atol=1e-6)


def test_backward_twice_through_freed_graph_raises(sg):
    a = data((3,), seed=8)
    t = TT(a, requires_grad=True)
    ty = (t * t).sum()
    ty.backward()
    with pytest.raises(RuntimeError):
        ty.backward()
    x = T(sg, a, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError):
        y.backward()


def _saved_then_changed(lib, x):
    """``sum((x * 1.5) ** 2)``, whose product saved ``y = x * 1.5``, after ``y`` is changed in
    place under ``lib.no_grad()``: a graph whose backward must be refused."""
    y = x * 1.5
    z = (y * y).sum()
    with lib.no_grad():
        y[0] = 0.0
    return z


def test_inplace_change_of_saved_tensor_raises(sg):
    torch = need_torch()
    a = data((3,), seed=9)
    tz = _saved_then_changed(torch, TT(a, requires_grad=True))
    with pytest.raises(RuntimeError):
        tz.backward()
    z = _saved_then_changed(sg, T(sg, a, requires_grad=True))
    with pytest.raises(RuntimeError):
        z.backward()


def test_inplace_change_of_saved_tensor_with_grad_raises(sg):
    a = data((3,), seed=10)
    x = T(sg, a, requires_grad=True)
    y = x * 1.5
    z = y.exp()
    w = (z * y).sum()  # the product saved y
    y[1] = 2.0
    with pytest.raises(RuntimeError):
        w.backward()


def test_inplace_on_leaf_requiring_grad_raises_outside_no_grad(sg):
    a = data((3,), seed=11)
    x = T(sg, a, requires_grad=True)
    with pytest.raises(RuntimeError):
        x[0] = 1.0
    with sg.no_grad():
        x[0] = 1.0  # how optimizers update parameters
    b = a.copy()
    b[0] = 1.0
    assert_close(x, b)
    assert x.requires_grad and x.is_leaf


def test_detach(sg):
    torch = need_torch()
    a = data((2, 3), seed=12)
    x = T(sg, a, requires_grad=True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert_close(d, 2 * a)
    g = upstream((2, 3))
    (x * d).backward(T(sg, g))
    t = TT(a, requires_grad=True)
    (t * (t * 2).detach()).backward(torch.tensor(g))
    assert_close(x.grad, t.grad)


def test_no_grad_context(sg):
    a = data((3,), seed=13)
    x = T(sg, a, requires_grad=True)
    with sg.no_grad():
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None
        with sg.enable_grad():
            z = x * 2
        assert z.requires_grad and z.grad_fn is not None
    w = x * 2
    assert w.requires_grad
    assert_close(y, 2 * a)


def test_no_grad_decorator_and_exception_restores_mode(sg):
    x = T(sg, data((2,), seed=14), requires_grad=True)

    @sg.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad
    with pytest.raises(ZeroDivisionError):
        with sg.no_grad():
            1 / 0
    assert (x * 3).requires_grad
    with sg.set_grad_enabled(False):
        assert not (x * 3).requires_grad
    assert sg.is_grad_enabled()


def test_values_computed_under_no_grad_are_constants(sg):
    torch = need_torch()
    a = data((2, 3), seed=15)
    g = upstream((2, 3))
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    with sg.no_grad():
        y = x * 2
    with torch.no_grad():
        ty = t * 2
    (x * y).backward(T(sg, g))
    (t * ty).backward(torch.tensor(g))
    assert_close(x.grad, t.grad)


def test_retain_grad(sg):
    torch = need_torch()
    a = data((2, 3), seed=16)
    g = upstream((2, 3))
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    y, ty = x * 2 + 1, t * 2 + 1
    y.retain_grad()
    ty.retain_grad()
    z, tz = y.sin() * y, ty.sin() * ty
    w = z * 0.5
    w.backward(T(sg, g))
    (tz * 0.5).backward(torch.tensor(g))
    assert_close(y.grad, ty.grad)
    assert_close(x.grad, t.grad)
    assert z.grad is None  # non-leaf without retain_grad keeps no .grad


def test_diamond_graph(sg):
    def f(x):
        a = x * 2
        return a.exp() * a.sin() + a
    check_grads(sg, f, f, data((2, 3), seed=17, low=-1, high=1))


def test_shared_subexpression_and_reuse(sg):
    def f(x, y):
        s = x + y
        return s * s * x - (s / (y * y + 1))
    check_grads(sg, f, f, data((3,), seed=18), data((2, 3), seed=19))


def test_requires_grad_setters(sg):
    x = sg.tensor([1.0, 2.0])
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    y = sg.tensor([3.0])
    y.requires_grad = True
    (y * y).sum().backward()
    assert_close(y.grad, np.array([6.0], np.float32))


@pytest.mark.capability("float64")
def test_cast_in_graph_returns_grad_in_leaf_dtype(sg):
    torch = need_torch()
    a = data((3,), seed=20)
    g = upstream((3,), "float64")
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    (x.double() * 2).backward(T(sg, g))
    (t.double() * 2).backward(torch.tensor(g))
    assert x.grad.dtype is sg.float32
    assert_close(x.grad, t.grad)


@pytest.mark.capability("float64")
def test_float64_graph(sg):
    a, b = data((2, 3), "float64", seed=21), data((3, 2), "float64", seed=22)
    xs = check_grads(sg, lambda x, w: (x @ w).tanh().sum(0), lambda x, w: (x @ w).tanh().sum(0), a, b)
    assert xs[0].grad.dtype is sg.float64


def test_deep_chain_does_not_recurse(sg):
    # 10,000 recorded ops: the engine must walk the graph without Python recursion
    torch = need_torch()
    a = data((3,), seed=23)
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    y, ty = x, t
    for i in range(10000):
        if i % 2:
            y, ty = y * 1.0001, ty * 1.0001
        else:
            y, ty = y + 0.001, ty + 0.001
    g = upstream((3,))
    y.backward(T(sg, g))
    ty.backward(torch.tensor(g))
    assert_close(y, ty, rtol=1e-5)
    assert_close(x.grad, t.grad, rtol=1e-5)


# ------------------------------------------------------ user-defined Functions

def _cube(sg, wrong=False):
    class Cube(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (2 if wrong else 3) * x * x
    return Cube


def _scaled_product(sg):
    class ScaledProduct(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, alpha):
            ctx.save_for_backward(x, y)
            ctx.alpha = alpha
            return x * y * alpha

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            gx = grad * y * ctx.alpha if ctx.needs_input_grad[0] else None
            gy = grad * x * ctx.alpha if ctx.needs_input_grad[1] else None
            return gx, gy, None
    return ScaledProduct


def test_custom_function_matches_torch(sg):
    a = data((2, 3), seed=24)
    Cube = _cube(sg)
    x = check_grads(sg, Cube.apply, lambda t: t ** 3, a)[0]
    y = Cube.apply(x)
    assert y.grad_fn is not None and not y.is_leaf


@pytest.mark.capability("float64")
def test_custom_function_gradcheck(sg):
    gradcheck(sg, _cube(sg).apply, data((4,), "float64", seed=25))
    SP = _scaled_product(sg)
    gradcheck(sg, lambda x, y: SP.apply(x, y, 1.5), data((3,), "float64", seed=26),
              data((2, 3), "float64", seed=27)[0])


def test_custom_function_two_inputs_and_constant(sg):
    SP = _scaled_product(sg)
    check_grads(sg, lambda x, y: SP.apply(x, y, 2.5), lambda x, y: x * y * 2.5,
                data((3,), seed=28), data((3,), seed=29))


def test_custom_function_needs_input_grad(sg):
    SP = _scaled_product(sg)
    x = T(sg, data((3,), seed=30), requires_grad=True)
    y = T(sg, data((3,), seed=31))
    SP.apply(x, y, 1.0).sum().backward()
    assert_close(x.grad, y.numpy())
    assert y.grad is None


def test_custom_function_multiple_outputs(sg):
    class TwoWays(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2, x * x

        @staticmethod
        def backward(ctx, g1, g2):
            (x,) = ctx.saved_tensors
            return g1 * 2 + g2 * 2 * x

    check_grads(sg, lambda x: TwoWays.apply(x), lambda t: (t * 2, t * t), data((2, 2), seed=32))


def test_custom_function_without_grad_records_nothing(sg):
    Cube = _cube(sg)
    x = T(sg, data((3,), seed=33))
    y = Cube.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    assert_close(y, data((3,), seed=33) ** 3, rtol=1e-6)


@pytest.mark.capability("float64")
def test_gradcheck_detects_a_wrong_backward(sg):
    x = T(sg, data((3,), "float64", seed=34, low=0.5, high=2), requires_grad=True)
    Wrong = _cube(sg, wrong=True)
    with pytest.raises(RuntimeError):
        sg.autograd.gradcheck(Wrong.apply, (x,))
    assert sg.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert sg.autograd.gradcheck(_cube(sg).apply, (x,)) is True


# ------------------------------------------------------------- autograd.grad

def test_autograd_grad_matches_torch_and_leaves_grad_alone(sg):
    torch = need_torch()
    a, b = data((2, 3), seed=35), data((3,), seed=36)
    g = upstream((2, 3))
    x, y = T(sg, a, requires_grad=True), T(sg, b, requires_grad=True)
    tx, ty = TT(a, requires_grad=True), TT(b, requires_grad=True)
    out = (x * y).exp()
    tout = (tx * ty).exp()
    gx, gy = sg.autograd.grad(out, (x, y), T(sg, g))
    tgx, tgy = torch.autograd.grad(tout, (tx, ty), torch.tensor(g))
    assert_close(gx, tgx, rtol=1e-5, atol=1e-6)
    assert_close(gy, tgy, rtol=1e-5, atol=1e-6)
    assert x.grad is None and y.grad is None


def test_autograd_grad_scalar_output_and_intermediate_input(sg):
    torch = need_torch()
    a = data((4,), seed=37)
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    h, th = x.sin(), t.sin()
    (gh,) = sg.autograd.grad((h * h).sum(), [h])
    (tgh,) = torch.autograd.grad((th * th).sum(), [th])
    assert_close(gh, tgh)


def test_autograd_grad_unused_input(sg):
    x = T(sg, data((2,), seed=38), requires_grad=True)
    z = T(sg, data((2,), seed=39), requires_grad=True)
    with pytest.raises(RuntimeError):
        sg.autograd.grad((x * 2).sum(), [x, z])
    gx, gz = sg.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None
    assert_close(gx, np.full((2,), 2.0, np.float32))


@pytest.mark.capability("float64")
def test_gradcheck_on_a_composite(sg):
    a = data((2, 3), "float64", seed=40)
    b = data((3,), "float64", seed=41)
    gradcheck(sg, lambda x, y: ((x - y.exp()) ** 2).mean(1).sqrt() + (x @ y).sigmoid(), a, b)


# ---------------------------------------------------------- in-place in a graph

def test_inplace_ops_on_non_leaf_are_differentiated(sg):
    def f(x):
        y = x * 1.5
        y.mul_(y.detach() + 2)  # the factor is a constant
        y.add_(x)
        y += x * x
        y -= 0.25
        y /= 3
        return y.exp()
    check_grads(sg, f, f, data((2, 3), seed=42, low=-1, high=1))


def test_inplace_mul_on_saved_tensor_raises(sg):
    x = T(sg, data((3,), seed=43), requires_grad=True)
    y = x * 2
    z = (y * y).sum()
    y.mul_(3)
    with pytest.raises(RuntimeError):
        z.backward()


def test_setitem_records_gradient_into_a_plain_tensor(sg):
    # y starts without grad; writing a value that needs grad makes y part of the graph
    torch = need_torch()
    a = data((2,), seed=44)
    g = upstream((4,))
    w = T(sg, a, requires_grad=True)
    y = sg.zeros(4)
    y[1:3] = w * 2
    assert y.requires_grad
    y.backward(T(sg, g))
    tw = TT(a, requires_grad=True)
    ty = torch.zeros(4)
    ty[1:3] = tw * 2
    ty.backward(torch.tensor(g))
    assert_close(w.grad, tw.grad)


def test_register_hook_changes_the_gradient(sg):
    torch = need_torch()
    a = data((3,), seed=45)
    g = upstream((3,))
    seen = []
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    y, ty = x * x, t * t
    y.register_hook(lambda grad: seen.append(grad.numpy().copy()) or grad * 10)
    ty.register_hook(lambda grad: grad * 10)
    y.exp().backward(T(sg, g))
    ty.exp().backward(torch.tensor(g))
    assert_close(x.grad, t.grad)
    assert_close(seen[0], (np.exp(a * a) * g).astype(np.float32), rtol=1e-5)


def test_leaf_hook(sg):
    a = data((3,), seed=46)
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    x.register_hook(lambda grad: grad * 0.5)
    t.register_hook(lambda grad: grad * 0.5)
    (x * x).sum().backward()
    (t * t).sum().backward()
    assert_close(x.grad, t.grad)


# a hook's replacement must be a tensor of the gradient's dtype and shape (PyTorch's checks)
BAD_HOOKS = {
    "other_shape": (lambda lib, g: g.sum(), "hook 'other_shape' has changed the size of value"),
    "other_dtype": (lambda lib, g: g.double(),
                    r"hook 'other_dtype' has changed the type of value \(was {float32} got {float64}\)"),
    "an_int": (lambda lib, g: 3, "expected {Tensor}, but hook returned 'int'"),
    "a_list": (lambda lib, g: g.tolist(), "expected {Tensor}, but hook returned 'list'"),
}
NAMES = {"ours": dict(float32="float32", float64="float64", Tensor="Tensor"),
         "torch": dict(float32="torch.FloatTensor", float64="torch.DoubleTensor", Tensor="Variable")}


def _hook_error(lib, names, kind, on_leaf):
    """Run backward through a hook that returns the bad value; the exception, and ``x.grad``."""
    fn, pattern = BAD_HOOKS[kind]

    def hook(g):
        return fn(lib, g)
    hook.__name__ = kind
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    (x if on_leaf else y).register_hook(hook)
    with pytest.raises(Exception, match=pattern.format(**names)) as info:
        (y * y).sum().backward()
    return info.value, x.grad


@pytest.mark.parametrize("on_leaf", [True, False], ids=["leaf", "non_leaf"])
@pytest.mark.parametrize("kind", [float64_if(k, k == "other_dtype") for k in BAD_HOOKS])
def test_hook_returning_a_bad_value_raises_as_torch_does(sg, kind, on_leaf):
    torch = need_torch()
    theirs, _ = _hook_error(torch, NAMES["torch"], kind, on_leaf)
    ours, grad = _hook_error(sg, NAMES["ours"], kind, on_leaf)
    assert isinstance(ours, type(theirs)), f"{type(ours).__name__} is not a {type(theirs).__name__}"
    if kind in ("other_shape", "other_dtype"):  # the project's class for shapes or for dtypes too
        assert isinstance(ours, ValueError if kind == "other_shape" else TypeError)
    assert grad is None  # the bad gradient reached no leaf


def test_hook_without_a_name_is_named_by_its_repr(sg):
    class Doubler:
        def __call__(self, g):
            return g.sum()

        def __repr__(self):
            return "<Doubler>"

    x = sg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(Doubler())
    with pytest.raises(RuntimeError, match="hook '<Doubler>' has changed the size of value"):
        (x * x).sum().backward()


def test_iterating_a_tensor_yields_rows_in_the_graph(sg):
    torch = need_torch()
    a = data((3, 2), seed=47)
    check_grads(sg, lambda x: sg.stack([r * (i + 1) for i, r in enumerate(x)]),
                lambda t: torch.stack([r * (i + 1) for i, r in enumerate(t)]), a)


@pytest.mark.capability("views")
def test_detach_shares_storage(sg):
    x = T(sg, data((3,), seed=48), requires_grad=True)
    d = x.detach()
    with sg.no_grad():
        d[0] = 9.0
    assert x.tolist()[0] == 9.0


# ---------------------------------------- gradients at kinks and special values
# PyTorch's conventions, which every stage must reproduce exactly

def _F(lib):
    return lib.nn.functional


CONVENTIONS = [
    ("relu_at_0", [0.0, 1.0, -1.0], lambda L, x: x.relu()),
    ("abs_at_0", [0.0, -1.0, 2.0], lambda L, x: x.abs()),
    ("clamp_boundaries", [0.0, 1.0, 2.0, -1.0, 0.5], lambda L, x: x.clamp(0, 1)),
    ("maximum_tie", [1.0, 2.0, -1.0], lambda L, x: L.maximum(x, L.tensor([1.0, 0.0, -1.0]))),
    ("minimum_tie", [1.0, 2.0, -1.0], lambda L, x: L.minimum(x, L.tensor([1.0, 0.0, -1.0]))),
    ("max_dim_tie", [[2.0, 2.0], [1.0, 3.0]], lambda L, x: x.max(1).values),
    ("min_full_tie", [1.0, 1.0, 3.0], lambda L, x: x.min()),
    ("pow2_at_0", [0.0, -2.0, 3.0], lambda L, x: x ** 2),
    ("pow3_negative", [-2.0, -0.5], lambda L, x: x ** 3),
    ("pow_tensor_exponent_negative_base", [-2.0, -1.5], lambda L, x: x ** L.tensor([2.0, 3.0])),
    ("sqrt_at_0", [0.0, 4.0], lambda L, x: x.sqrt()),
    ("std_of_constant", [1.0, 1.0, 1.0], lambda L, x: x.std()),
    ("norm_at_0", [0.0, 0.0], lambda L, x: x.norm()),
    ("softmax_with_neg_inf", [0.0, float("-inf"), 1.0], lambda L, x: _F(L).softmax(x, 0)),
    ("log_softmax_with_neg_inf", [0.0, float("-inf"), 1.0], lambda L, x: _F(L).log_softmax(x, 0)[::2]),
    ("logsumexp_with_neg_inf", [0.0, float("-inf")], lambda L, x: x.logsumexp(0)),
    ("empty_mask", [1.0, 2.0], lambda L, x: x[x > 5]),
    ("prod_two_zeros", [0.0, 0.0, 2.0], lambda L, x: x.prod()),
    ("sigmoid_saturated", [-1000.0, 1000.0], lambda L, x: x.sigmoid()),
    ("tanh_saturated", [-1000.0, 1000.0], lambda L, x: x.tanh()),
    ("bce_logits_at_0", [0.0, 0.0], lambda L, x: _F(L).binary_cross_entropy_with_logits(x, L.tensor([1.0, 0.0]))),
]


@pytest.mark.parametrize("k", range(len(CONVENTIONS)), ids=[c[0] for c in CONVENTIONS])
def test_gradient_conventions_match_torch(sg, k):
    torch = need_torch()
    _, values, f = CONVENTIONS[k]
    a = np.array(values, np.float32)
    check_grads(sg, lambda x: f(sg, x), lambda t: f(torch, t), a)


def _identity_function(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x  # returned as-is: the output must still be a new node in the graph

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    return Identity


def test_custom_function_returning_its_input(sg):
    torch = need_torch()
    a = data((3,), seed=49)
    g1, g2 = upstream((3,), seed=1), upstream((3,), seed=2)
    x, t = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    y, ty = _identity_function(sg).apply(x), _identity_function(torch).apply(t)
    assert x.is_leaf == t.is_leaf and (x.grad_fn is None) == (t.grad_fn is None)
    assert not y.is_leaf and y.grad_fn is not None
    # x used directly must not route through the Function's backward
    (x * 3).backward(T(sg, g1))
    (t * 3).backward(torch.tensor(g1))
    assert_close(x.grad, t.grad)
    y.backward(T(sg, g2))
    ty.backward(torch.tensor(g2))
    assert_close(x.grad, t.grad)


def test_custom_function_backward_may_return_none(sg):
    class OnlySecond(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return None, grad * 2

    x = T(sg, data((2,), seed=50), requires_grad=True)
    y = T(sg, data((2,), seed=51), requires_grad=True)
    g = upstream((2,))
    OnlySecond.apply(x, y).backward(T(sg, g))
    assert x.grad is None
    assert_close(y.grad, 2 * g)


def test_same_leaf_several_times_in_one_op(sg):
    torch = need_torch()
    a = data((2,), seed=52)
    check_grads(sg, lambda x: sg.cat([x, x * 2, x]), lambda t: torch.cat([t, t * 2, t]), a)
    check_grads(sg, lambda x: sg.stack([x, x]).sum(0) * x, lambda t: torch.stack([t, t]).sum(0) * t, a)
