"""Reverse-mode automatic differentiation: the public API.

Grad mode's context managers, ``backward``, ``grad`` and ``gradcheck``, built on the
graph (``graph.py``: ``Function.apply`` records nodes, the engine walks them), whose
names are re-exported here.
"""
import math

from .graph import (  # noqa: F401  (the graph's public names are autograd's)
    AccumulateGrad,
    Context,
    Function,
    HookSizeError,
    HookTypeError,
    Node,
    _edge,
    _run,
    _set_grad_enabled,
    _sync_views,
    is_grad_enabled,
)
from .tensor import Tensor

__all__ = ["Function", "Context", "Node", "AccumulateGrad", "HookSizeError", "HookTypeError", "backward",
           "grad", "gradcheck", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "is_inference_mode_enabled"]


class set_grad_enabled:
    """Context manager (and decorator) that sets grad mode, restoring it on exit."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self.prev = _set_grad_enabled(self.mode)

    def __enter__(self):
        _set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _set_grad_enabled(self.prev)

    def __call__(self, fn):
        mode = self.mode
        _set_grad_enabled(self.prev)
        return _within(lambda: set_grad_enabled(mode), fn)


class no_grad(set_grad_enabled):
    """Record nothing inside: results need no gradient (evaluation, updates)."""

    def __init__(self):
        self.prev = is_grad_enabled()
        self.mode = False


class enable_grad(set_grad_enabled):
    """Record operations inside, even within ``no_grad``."""

    def __init__(self):
        self.prev = is_grad_enabled()
        self.mode = True


_inference = [False]  # a list: one flag shared by every module that imported it


def is_inference_mode_enabled():
    """Whether code runs inside ``inference_mode()``."""
    return _inference[0]


class inference_mode:
    """Context manager and decorator (``@inference_mode()`` or bare ``@inference_mode``):
    run without recording history, as ``no_grad``, for evaluation and serving.

    PyTorch also marks tensors made inside as "inference tensors" that later autograd
    refuses; here they are ordinary tensors that simply have no history, which every program
    correct under PyTorch also runs correctly under. ``inference_mode(False)``, as in
    PyTorch, turns grad mode on inside (even within ``no_grad``).
    """

    def __new__(cls, mode=True):
        if not isinstance(mode, bool):  # used bare as a decorator: ``mode`` is the function
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.mode = mode
        self._saved = []  # a stack, so one object can be entered again while active

    def __enter__(self):
        self._saved.append((is_grad_enabled(), _inference[0]))
        _set_grad_enabled(not self.mode)  # PyTorch's rule: inference_mode(False) enables grad
        _inference[0] = self.mode
        return self

    def __exit__(self, *exc):
        grad, inference = self._saved.pop()
        _set_grad_enabled(grad)
        _inference[0] = inference

    def __call__(self, fn):
        mode = self.mode
        return _within(lambda: inference_mode(mode), fn)


def _within(context, fn):
    """``fn`` as a decorator of grad mode makes it: each call runs inside a fresh
    ``context()``; the name and docstring stay ``fn``'s."""
    def wrapper(*args, **kwargs):
        with context():
            return fn(*args, **kwargs)
    wrapper.__name__ = getattr(fn, "__name__", "wrapper")
    wrapper.__doc__ = getattr(fn, "__doc__", None)
    return wrapper


def clear_grads(params, set_to_none=True):
    """Clear the ``.grad`` of each of ``params`` that has one: drop it (``set_to_none``) or
    fill it with zeros in place, detached from any graph (``zero_grad`` of modules and
    optimizers)."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            p.grad = p.grad.detach()
            p.grad.zero_()


def _root_grads(tensors, grad_tensors, caller):
    roots = []
    _sync_views(tensors)
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad:
            raise RuntimeError(f"{caller}: element {k} of tensors does not require grad and does "
                               f"not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(f"{caller}: grad can be implicitly created only for scalar "
                                   f"outputs; got a tensor of shape {list(t.shape)}: pass gradient=")
            g = Tensor._make_ones_like(t)
        else:
            if not isinstance(g, Tensor):
                g = Tensor._infer(g, dtype=t.dtype)
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"{caller}: gradient has shape {list(g.shape)} but the tensor has "
                                   f"shape {list(t.shape)}")
            g = g.detach()
        node, i = _edge(t)
        roots.append((node, i, g))
    return roots


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulate the gradients of ``tensors`` (each seeded with its entry of ``grad_tensors``, or ones for
    a scalar) into the leaves' ``.grad``; see torch.autograd.backward. ``create_graph`` and ``inputs`` are
    not supported."""
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif not isinstance(grad_tensors, (list, tuple)):
        grad_tensors = [grad_tensors]
    with no_grad():
        _run(_root_grads(tensors, grad_tensors, "backward"), retain_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, allow_unused=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned rather than
    accumulated into ``.grad``."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    single = not isinstance(inputs, (list, tuple))
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    capture = {}
    _sync_views(inputs)
    for k, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {k} does not require grad")
        node, i = _edge(t)
        capture[(id(node), i)] = k
    with no_grad():
        got = _run(_root_grads(outputs, grad_outputs, "grad"), retain_graph, capture)
    result = []
    for k, t in enumerate(inputs):
        g = got.get(k)
        if g is None and not allow_unused:
            raise RuntimeError(f"grad: input {k} was not used in the graph (pass allow_unused=True)")
        result.append(None if g is None else g.detach())
    return result[0] if single else tuple(result)


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compare ``fn``'s analytical Jacobian with central finite differences.

    ``inputs`` are float64 tensors (those with ``requires_grad`` are checked). Every
    output is probed with each unit vector, so use small shapes."""
    inputs = inputs if isinstance(inputs, (list, tuple)) else (inputs,)
    checked = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    for x in checked:
        if x.dtype.name != "float64":
            raise TypeError(f"gradcheck: inputs must be float64 for finite differences, got {x.dtype.name}")

    def outputs():
        out = fn(*inputs)
        out = out if isinstance(out, (list, tuple)) else (out,)
        return [o for o in out if isinstance(o, Tensor) and o.dtype.is_floating_point]

    outs = outputs()
    for oi, out in enumerate(outs):
        n_out = out.numel()
        for xi, x in enumerate(checked):
            flat = x.detach().reshape(-1).tolist()
            numeric = [[0.0] * len(flat) for _ in range(n_out)]
            for j in range(len(flat)):
                orig = flat[j]
                with no_grad():
                    x._set_flat(j, orig + eps)
                    plus = outputs()[oi].reshape(-1).tolist()
                    x._set_flat(j, orig - eps)
                    minus = outputs()[oi].reshape(-1).tolist()
                    x._set_flat(j, orig)
                for r in range(n_out):
                    numeric[r][j] = (plus[r] - minus[r]) / (2 * eps)
            for r in range(n_out):
                out = outputs()[oi]
                seed = [0.0] * n_out
                seed[r] = 1.0
                if not out.requires_grad:
                    analytic = [0.0] * len(flat)
                else:
                    # the seed on the output's device (a float64-capable GPU runs gradcheck too)
                    seed_t = Tensor._infer(seed, dtype=out.dtype).reshape(out.shape).to(out.device)
                    g = grad(out, [x], seed_t, allow_unused=True)[0]
                    analytic = [0.0] * len(flat) if g is None else g.reshape(-1).tolist()
                for j, (a, b) in enumerate(zip(analytic, numeric[r])):
                    if not (math.isfinite(a) and abs(a - b) <= atol + rtol * abs(b)):
                        if raise_exception:
                            raise RuntimeError(
                                f"gradcheck: Jacobian mismatch for output {oi} element {r} with "
                                f"respect to input {xi} element {j}: analytical {a}, numerical {b}")
                        return False
    return True

