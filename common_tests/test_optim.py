"""Optimizers against PyTorch: the same model from the same start, parameters compared
after every one of 20 steps; parameter groups; state dicts in PyTorch's layout."""
import inspect

import numpy as np
import pytest

from .helpers_core import float64_if
from .helpers_optim import Pair, stage_tensor
from .oracle import assert_close, need_torch, need_torch_at_least, np_

STEPS = 20
CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.5)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.02, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.6), eps=1e-6)),  # moment weights >= 0.5: lerp's other form
    ("Adam", dict(lr=0.01, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.005, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, alpha=0.3, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2, eps=1e-6)),
    ("Adagrad", dict(lr=0.05, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.02, betas=(0.3, 0.8), eps=1e-4, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.02, momentum_decay=0.1, weight_decay=0.1)),
    ("NAdam", dict(lr=0.02, betas=(0.3, 0.6), weight_decay=0.2, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.01, maximize=True)),
    ("RAdam", dict(lr=0.01)),  # 20 steps: rho_t passes 5 at step 6, both branches run
    ("RAdam", dict(lr=0.02, betas=(0.3, 0.8), weight_decay=0.1)),
    ("RAdam", dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True, eps=1e-4)),
    ("RAdam", dict(lr=0.01, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(lr=2.0, maximize=True)),
]
NEW = ["Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta"]
# updates divide by running statistics: allow float32 rounding to compound over 20 steps
# (centered RMSprop with alpha=0.3 ends 1e-5 from the float64 result in any float32 order of
# summation, PyTorch's own included)
TOL = {"float32": dict(rtol=1e-4, atol=3e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


def _ids(c):
    return f"{c[0]}-" + "-".join(f"{k}={v}" for k, v in c[1].items())


def _side_by_side(sg, name, **kwargs):
    """A fresh float32 ``Pair`` and optimizer ``name`` with ``kwargs`` over each side's
    parameters: ``(pair, the stage's optimizer, PyTorch's)``."""
    torch = need_torch()
    pair = Pair(sg)
    return pair, getattr(sg.optim, name)(pair.p, **kwargs), getattr(torch.optim, name)(pair.tp, **kwargs)


def run_side_by_side(pair, opt, topt, steps, dtype):
    for step in range(steps):
        opt.zero_grad()
        topt.zero_grad()
        pair.backward()
        opt.step()
        topt.step()
        for name, p, tp in zip(pair.names, pair.p, pair.tp):
            try:
                assert_close(p, tp, **TOL[dtype])
            except AssertionError as e:
                raise AssertionError(f"{name} differs from PyTorch after step {step + 1}: {e}") from None


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_ids)
def test_optimizer_matches_torch(sg, config, dtype):
    torch = need_torch()
    name, kwargs = config
    pair = Pair(sg, dtype)
    opt = getattr(sg.optim, name)(pair.p, **kwargs)
    topt = getattr(torch.optim, name)(pair.tp, **kwargs, foreach=False)
    run_side_by_side(pair, opt, topt, STEPS, dtype)


@pytest.mark.needs_torch
def test_param_groups_and_add_param_group(sg):
    torch = need_torch()
    pair = Pair(sg)
    groups = lambda p: [{"params": p[:2]}, {"params": [p[2]], "lr": 0.02, "momentum": 0.5}]  # noqa: E731
    opt = sg.optim.SGD(groups(pair.p), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(groups(pair.tp), lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.02]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.5]
    run_side_by_side(pair, opt, topt, 5, "float32")
    # a group added mid-training starts its own state
    opt.add_param_group({"params": [pair.p[3]], "lr": 0.3})
    topt.add_param_group({"params": [pair.tp[3]], "lr": 0.3})
    assert opt.param_groups[2]["momentum"] == 0.9  # defaults fill what the group leaves out
    run_side_by_side(pair, opt, topt, 10, "float32")


def test_params_without_grad_are_left_alone(sg):
    pair = Pair(sg)
    frozen = stage_tensor(sg, np.ones((2, 2), np.float32), requires_grad=True)
    opt = sg.optim.Adam(pair.p + [frozen], lr=0.1)
    pair.loss().backward()
    opt.step()
    assert frozen.grad is None
    assert_close(frozen, np.ones((2, 2), np.float32))
    assert set(opt.state_dict()["state"]) == {0, 1, 2, 3}


@pytest.mark.needs_torch
def test_closure_is_evaluated_with_grad(sg):
    pair, opt, topt = _side_by_side(sg, "SGD", lr=0.1)

    def closure():
        opt.zero_grad()
        loss = pair.loss()
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = pair.tloss()
        loss.backward()
        return loss

    with sg.no_grad():
        loss = opt.step(closure)
    assert_close(loss, topt.step(tclosure))
    for p, tp in zip(pair.p, pair.tp):
        assert_close(p, tp)


def test_zero_grad(sg):
    pair = Pair(sg)
    opt = sg.optim.SGD(pair.p, lr=0.1)
    pair.loss().backward()
    opt.zero_grad(set_to_none=False)
    for p in pair.p:
        assert_close(p.grad, np.zeros(p.shape, np.float32))
    opt.zero_grad()
    assert all(p.grad is None for p in pair.p)


def _to_torch_state(torch, sd):
    """A stage optimizer state dict with its tensors converted to PyTorch."""
    state = {i: {k: torch.tensor(np_(v)) if hasattr(v, "grad_fn") else v for k, v in s.items()}
             for i, s in sd["state"].items()}
    return {"state": state, "param_groups": [dict(g) for g in sd["param_groups"]]}


def _from_torch_state(sg, sd):
    state = {i: {k: stage_tensor(sg, v.numpy()) if k != "step" else v for k, v in s.items()}
             for i, s in sd["state"].items()}
    return {"state": state, "param_groups": [dict(g) for g in sd["param_groups"]]}


@pytest.mark.needs_torch
@pytest.mark.parametrize("config", [CONFIGS[i] for i in (1, 3, 7, 8, 12, 14, 15)]
                         + [c for c in CONFIGS if c[0] in NEW and len(c[1]) > 1 and "maximize" not in c[1]],
                         ids=_ids)
def test_state_dict_layout_and_round_trip(sg, config):
    torch = need_torch()
    name, kwargs = config
    kwargs = dict(kwargs, lr=kwargs.get("lr", 1.0))
    pair, opt, topt = _side_by_side(sg, name, **kwargs, foreach=False)
    run_side_by_side(pair, opt, topt, 8, "float32")
    sd, tsd = opt.state_dict(), topt.state_dict()
    # PyTorch's layout: state keyed by parameter index, the same state names per parameter
    assert set(sd["state"]) == set(tsd["state"])
    for i in tsd["state"]:
        assert set(sd["state"][i]) == set(tsd["state"][i])
        assert int(sd["state"][i]["step"] if "step" in sd["state"][i] else 0) == \
            int(tsd["state"][i].get("step", 0))
        for k, v in tsd["state"][i].items():
            if k == "step":
                continue
            if v.dim() == 0:  # a number PyTorch keeps in a 0-dim tensor (NAdam's mu_product)
                assert sd["state"][i][k] == v.item(), k
            else:
                assert_close(sd["state"][i][k], v, rtol=1e-4, atol=1e-5)
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    for k, v in sd["param_groups"][0].items():
        assert tsd["param_groups"][0][k] == (list(v) if isinstance(v, tuple) and k != "betas" else v), k

    # a fresh optimizer on copies of the parameters continues exactly where the first one was
    copies = [stage_tensor(sg, np_(p), requires_grad=True) for p in pair.p]
    opt2 = getattr(sg.optim, name)(copies, lr=123.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    pair.p = copies
    run_side_by_side(pair, opt2, topt, 6, "float32")
    # PyTorch continues from our state, and we continue from PyTorch's
    theirs = getattr(torch.optim, name)([torch.tensor(np_(p), requires_grad=True) for p in copies],
                                        **kwargs, foreach=False)
    theirs.load_state_dict(_to_torch_state(torch, opt2.state_dict()))
    pair.tp = theirs.param_groups[0]["params"]
    run_side_by_side(pair, opt2, theirs, 4, "float32")
    ours = getattr(sg.optim, name)([stage_tensor(sg, tp.detach().numpy(), requires_grad=True)
                                    for tp in topt.param_groups[0]["params"]], **kwargs)
    ours.load_state_dict(_from_torch_state(sg, topt.state_dict()))
    pair.p, pair.tp = ours.param_groups[0]["params"], topt.param_groups[0]["params"]
    run_side_by_side(pair, ours, topt, 4, "float32")


def test_loaded_state_is_a_copy(sg):
    pair = Pair(sg)
    opt = sg.optim.SGD(pair.p, lr=0.1, momentum=0.9)
    pair.loss().backward()
    opt.step()
    sd = opt.state_dict()
    before = np_(sd["state"][0]["momentum_buffer"]).copy()
    opt2 = sg.optim.SGD([stage_tensor(sg, np_(p), requires_grad=True) for p in pair.p], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    for p in opt2.param_groups[0]["params"]:
        p.grad = sg.ones(*p.shape)
    opt2.step()
    np.testing.assert_array_equal(np_(sd["state"][0]["momentum_buffer"]), before)


def test_load_state_dict_mismatch_errors(sg):
    pair = Pair(sg)
    opt = sg.optim.Adam(pair.p, lr=0.1)
    pair.loss().backward()
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="parameter groups"):
        sg.optim.Adam([{"params": pair.p[:2]}, {"params": pair.p[2:]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="parameter group 0 has 4 parameters.*has 3"):
        sg.optim.Adam(pair.p[:3]).load_state_dict(sd)
    swapped = [pair.p[1], pair.p[0], pair.p[2], pair.p[3]]  # W1's state cannot go to b1
    with pytest.raises(ValueError, match=r"shape \(4, 5\).*shape \(5,\)"):
        sg.optim.Adam(swapped).load_state_dict(sd)
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        sg.optim.Adam(pair.p).load_state_dict({"state": {}})


def test_constructor_errors(sg):
    pair = Pair(sg)
    with pytest.raises(ValueError, match="empty parameter list"):
        sg.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        sg.optim.SGD(pair.p[0], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        sg.optim.SGD([pair.p[0] * 2], lr=0.1)
    with pytest.raises(ValueError, match="duplicate"):
        sg.optim.SGD([pair.p[0], pair.p[0]], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        sg.optim.SGD([{"params": [pair.p[0]]}, {"params": [pair.p[0]]}], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        sg.optim.SGD(pair.p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="learning rate"):
        sg.optim.Adam(pair.p, lr=-1.0)
    with pytest.raises(ValueError, match="beta"):
        sg.optim.Adam(pair.p, betas=(0.9, 1.0))


# ------------------------------------------------------------------ bad input: all or nothing

ALL_OR_NOTHING = [
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("Adadelta", dict(lr=1.0)),
]


def _snapshot(opt):
    """Every byte an optimizer holds: parameters, state tensors and numbers, hyperparameters."""
    def raw(v):
        return np_(v).tobytes() if hasattr(v, "grad_fn") else v
    params = [raw(p) for g in opt.param_groups for p in g["params"]]
    state = {i: {k: raw(v) for k, v in s.items()} for i, s in opt.state_dict()["state"].items()}
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    return params, state, groups


def _trained(sg, name, kwargs, steps=2):
    """An optimizer over ``Pair``'s parameters in two groups (the last parameter alone in
    the second), with state from a few steps and fresh gradients for the next one."""
    pair = Pair(sg)
    opt = getattr(sg.optim, name)([{"params": pair.p[:3]}, {"params": pair.p[3:]}], **kwargs)
    for i in range(steps + 1):
        opt.zero_grad()
        pair.loss().backward()
        if i < steps:
            opt.step()
    return pair, opt


def _refused(opt, exc, match, corrupt):
    """``corrupt(opt)`` breaks something the next step reads; the step raises ``exc`` and
    changes nothing, not even the parameters it reaches before the broken one."""
    corrupt(opt)
    before = _snapshot(opt)
    with pytest.raises(exc, match=match):
        opt.step()
    assert _snapshot(opt) == before


def _set(group_index, key, value):
    return lambda opt: opt.param_groups[group_index].__setitem__(key, value)


BAD_GROUPS = [
    ("lr_string", _set(1, "lr", "x"), TypeError, "lr='x' in parameter group 1.*real number"),
    ("lr_nan", _set(1, "lr", float("nan")), ValueError, "Invalid learning rate: nan"),
    ("lr_negative", _set(1, "lr", -0.1), ValueError, "Invalid learning rate: -0.1"),
    ("lr_bool", _set(1, "lr", True), TypeError, "lr=True"),
    ("weight_decay_none", _set(1, "weight_decay", None), TypeError, "weight_decay=None"),
    ("maximize_int", _set(1, "maximize", 1), TypeError, "maximize=1.*a bool"),
    ("lr_missing", lambda opt: opt.param_groups[1].pop("lr"), ValueError, "parameter group 1 has no 'lr'"),
]


@pytest.mark.parametrize("config", ALL_OR_NOTHING, ids=_ids)
@pytest.mark.parametrize("case", BAD_GROUPS, ids=[c[0] for c in BAD_GROUPS])
def test_step_with_a_bad_hyperparameter_changes_nothing(sg, config, case):
    _, corrupt, exc, match = case
    _, opt = _trained(sg, *config)
    _refused(opt, exc, match, corrupt)


def _grad(fn):
    def corrupt(opt):
        p = opt.param_groups[1]["params"][0]
        p.grad = fn(p)
    return corrupt


def _last_state(fn):
    def corrupt(opt):
        p = opt.param_groups[1]["params"][0]
        fn(opt.state[p], p)
    return corrupt


BAD_PARAMS = [
    ("grad_shape", _grad(lambda p: p.grad[:1]), ValueError,
     r"parameter 3 has shape \(3,\) but its gradient has shape \(1,\)"),
    ("grad_dtype", _grad(lambda p: p.grad.double()), TypeError,
     "parameter 3 has dtype float32 but its gradient has dtype float64"),
    ("grad_not_a_tensor", _grad(lambda p: p.grad.tolist()), TypeError,
     "parameter 3 has a .grad of type list"),
    ("state_shape", _last_state(lambda s, p: s.update({k: v[:1] for k, v in s.items() if k != "step"})),
     ValueError, r"state of parameter 3 has '\w+' of shape \(1,\)"),
    ("state_0d", _last_state(lambda s, p: s.update({k: v.sum() for k, v in s.items() if k != "step"})),
     ValueError, r"state of parameter 3 has '\w+' of shape \(\)"),
    ("state_missing", _last_state(lambda s, p: s.pop(sorted(k for k in s if k != "step")[0])),
     ValueError, "state of parameter 3 lacks"),
    ("state_not_a_tensor", _last_state(lambda s, p: s.update({k: 0.0 for k in s if k != "step"})),
     TypeError, "state of parameter 3 has '\\w+' of type float"),
]


@pytest.mark.parametrize("config", ALL_OR_NOTHING, ids=_ids)
@pytest.mark.parametrize("case", [float64_if(c, c[0] == "grad_dtype") for c in BAD_PARAMS],
                         ids=[c[0] for c in BAD_PARAMS])
def test_step_with_a_bad_gradient_or_state_changes_nothing(sg, config, case):
    what, corrupt, exc, match = case
    _, opt = _trained(sg, *config)
    if what == "state_missing" and config[0] == "SGD":
        corrupt(opt)  # SGD's only state is optional: without it the momentum starts over
        opt.step()
        return
    _refused(opt, exc, match, corrupt)


def test_step_refuses_a_bad_step_count(sg):
    _, opt = _trained(sg, "Adam", dict(lr=0.01))
    last = opt.param_groups[1]["params"][0]
    _refused(opt, TypeError, "step='2'", lambda opt: opt.state[last].__setitem__("step", "2"))
    _refused(opt, ValueError, "step=-1", lambda opt: opt.state[last].__setitem__("step", -1))


@pytest.mark.needs_torch
def test_torch_refuses_the_same_gradients(sg):
    """PyTorch refuses a gradient of another shape or dtype (when it is assigned; ours, which
    lets ``.grad`` be set to anything, refuses it at the step)."""
    torch = need_torch()
    p = torch.zeros(3, requires_grad=True)
    for bad in (torch.zeros(1), torch.zeros(3, dtype=torch.float64)):
        with pytest.raises(RuntimeError):
            p.grad = bad


def _state_dict_with(opt, edit):
    sd = opt.state_dict()
    sd = {"state": {i: dict(s) for i, s in sd["state"].items()},
          "param_groups": [dict(g) for g in sd["param_groups"]]}
    edit(sd)
    return sd


BAD_LOADS = [
    ("state_0d", lambda sd: sd["state"][3].update(exp_avg=sd["state"][3]["exp_avg"].sum()),
     ValueError, r"'exp_avg' of shape \(\), but the parameter has shape \(3,\)"),
    ("state_string", lambda sd: sd["state"][3].update(exp_avg="zeros"), TypeError, "'exp_avg' of type str"),
    ("step_string", lambda sd: sd["state"][3].update(step="two"), TypeError, "step='two'"),
    ("step_fraction", lambda sd: sd["state"][3].update(step=2.5), TypeError, "step=2.5"),
    ("lr_string", lambda sd: sd["param_groups"][1].update(lr="0.1"), TypeError, "lr='0.1'"),
    ("lr_nan", lambda sd: sd["param_groups"][1].update(lr=float("nan")), ValueError, "learning rate: nan"),
    ("betas_number", lambda sd: sd["param_groups"][1].update(betas=0.9), TypeError, "betas=0.9.*tuple of 2"),
    ("betas_strings", lambda sd: sd["param_groups"][1].update(betas=("a", "b")), TypeError, "betas"),
    ("beta_one", lambda sd: sd["param_groups"][1].update(betas=(0.9, 1.0)), ValueError,
     "beta parameter at index 1: 1.0"),
    ("amsgrad_string", lambda sd: sd["param_groups"][1].update(amsgrad="no"), TypeError,
     "amsgrad='no'.*bool"),
    ("amsgrad_without_its_state", lambda sd: sd["param_groups"][1].update(amsgrad=True), ValueError,
     "lacks 'max_exp_avg_sq'"),
    ("groups_not_dicts", lambda sd: sd.update(param_groups=[1, 2]), ValueError, "list of dicts"),
    ("state_not_a_dict", lambda sd: sd["state"].update({3: [1]}), TypeError,
     "state for parameter 3 is a list"),
]


@pytest.mark.parametrize("case", BAD_LOADS, ids=[c[0] for c in BAD_LOADS])
def test_refused_load_state_dict_changes_nothing(sg, case):
    _, edit, exc, match = case
    _, source = _trained(sg, "Adam", dict(lr=0.01))
    sd = _state_dict_with(source, edit)
    _, opt = _trained(sg, "Adam", dict(lr=0.02), steps=1)
    before = _snapshot(opt)
    with pytest.raises(exc, match=match):
        opt.load_state_dict(sd)
    assert _snapshot(opt) == before
    opt.step()  # and it still works


@pytest.mark.parametrize("name,kwargs,exc", [
    ("SGD", dict(momentum="0.9"), TypeError), ("Adam", dict(lr="1e-3"), TypeError),
    ("Adam", dict(lr=float("nan")), ValueError), ("Adam", dict(eps=-1.0), ValueError),
    ("RMSprop", dict(alpha=-0.5), ValueError), ("RMSprop", dict(weight_decay=float("nan")), ValueError),
    ("Adam", dict(betas=(float("nan"), 0.9)), ValueError),
])
def test_constructor_refuses_what_torch_refuses(sg, name, kwargs, exc):
    torch = need_torch()
    with pytest.raises(exc):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(exc):
        getattr(sg.optim, name)([sg.zeros(2, requires_grad=True)], **kwargs)


def test_constructor_and_add_param_group_refuse_what_step_would(sg):
    p, q = sg.zeros(2, requires_grad=True), sg.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate: nan"):
        sg.optim.SGD([p], lr=float("nan"))  # PyTorch's SGD lets this one through
    with pytest.raises(TypeError, match="nesterov=1.*a bool"):
        sg.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=1)
    opt = sg.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match=r"Invalid learning rate: -1 \(SGD, parameter group 1\)"):
        opt.add_param_group({"params": [q], "lr": -1})
    assert len(opt.param_groups) == 1


ALL = ["SGD", "Adam", "AdamW", "RMSprop"] + NEW


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", ALL)
def test_groups_hold_torchs_keys_and_path_keywords(sg, name):
    """Each optimizer takes the keywords PyTorch's takes (``foreach``, ``fused``,
    ``capturable``, ``differentiable`` where it has them) and its groups hold the same keys."""
    torch = need_torch()
    tparams = inspect.signature(getattr(torch.optim, name).__init__).parameters
    params = inspect.signature(getattr(sg.optim, name).__init__).parameters
    assert list(params) == list(tparams)
    assert [(p.kind, p.default) for p in params.values()][2:] == \
        [(p.kind, p.default) for p in tparams.values()][2:]
    p, tp = sg.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    paths = {k: v for k, v in dict(foreach=True, capturable=False).items() if k in tparams}
    opt, topt = getattr(sg.optim, name)([p], **paths), getattr(torch.optim, name)([tp], **paths)
    assert {k: v for k, v in opt.param_groups[0].items() if k != "params"} == \
        {k: v for k, v in topt.param_groups[0].items() if k != "params"}
    if "fused" in tparams:
        getattr(sg.optim, name)([p], fused=True)
        with pytest.raises(RuntimeError, match="cannot be `True` together"):
            getattr(sg.optim, name)([p], fused=True, foreach=True)
    with pytest.raises(NotImplementedError, match="differentiable"):
        getattr(sg.optim, name)([p], differentiable=True)


@pytest.mark.needs_torch
@pytest.mark.parametrize("name,kwargs", [
    ("Adagrad", dict(lr_decay=-1.0)), ("Adagrad", dict(initial_accumulator_value=-0.1)),
    ("Adagrad", dict(eps=-1.0)), ("Adamax", dict(betas=(1.0, 0.9))), ("Adamax", dict(weight_decay=-1.0)),
    ("NAdam", dict(momentum_decay=-0.1)), ("NAdam", dict(betas=(0.9, 1.5))), ("RAdam", dict(eps=-1.0)),
    ("RAdam", dict(betas=(-0.1, 0.9))), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(lr=-1.0)),
])
def test_new_optimizers_refuse_what_torch_refuses(sg, name, kwargs):
    torch = need_torch()
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError, match=str(theirs.value).split(":")[0]):
        getattr(sg.optim, name)([sg.zeros(2, requires_grad=True)], **kwargs)


@pytest.mark.needs_torch
def test_adagrad_state_exists_before_the_first_step(sg):
    torch = need_torch()
    pair, opt, topt = _side_by_side(sg, "Adagrad", initial_accumulator_value=0.5)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert set(sd["state"]) == set(tsd["state"]) == {0, 1, 2, 3}
    for i in tsd["state"]:
        assert_close(sd["state"][i]["sum"], tsd["state"][i]["sum"])
    # a group added later gets its state at its first step, from the constructor's value
    need_torch_at_least("2.13", "Adagrad's state for a group added after construction")
    extra, textra = sg.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    opt.add_param_group({"params": [extra], "initial_accumulator_value": 0.0})
    topt.add_param_group({"params": [textra], "initial_accumulator_value": 0.0})
    assert extra not in opt.state and len(topt.state[textra]) == 0
    extra.grad, textra.grad = sg.full((2,), 3.0), torch.full((2,), 3.0)
    opt.step()
    topt.step()
    assert_close(opt.state[extra]["sum"], topt.state[textra]["sum"])
    assert_close(extra, textra)


# ------------------------------------------------------------------ L-BFGS

def _quadratic(lib, x):
    """0.5 x'Ax - b'x with a fixed positive definite A (condition number about 50)."""
    A = [[4.0, 1.0, 0.5, 0.0], [1.0, 3.0, 0.2, 0.1], [0.5, 0.2, 2.0, 0.3], [0.0, 0.1, 0.3, 0.1]]
    b = [1.0, -2.0, 0.5, 3.0]
    At, bt = lib.tensor(A, dtype=x.dtype), lib.tensor(b, dtype=x.dtype)
    return 0.5 * (x * At.matmul(x)).sum() - (bt * x).sum()


def _rosenbrock(lib, x):
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


LBFGS_CASES = [
    ("quadratic", dict()),
    ("quadratic", dict(line_search_fn="strong_wolfe")),
    ("quadratic", dict(lr=0.5, max_iter=3, history_size=2)),
    ("rosenbrock", dict(lr=0.1, max_iter=5)),
    ("rosenbrock", dict(line_search_fn="strong_wolfe", max_iter=5)),
    ("rosenbrock", dict(line_search_fn="strong_wolfe", history_size=3, max_iter=8, max_eval=12)),
]


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("problem,kwargs", LBFGS_CASES, ids=[f"{c[0]}-{c[1]}" for c in LBFGS_CASES])
def test_lbfgs_matches_torch(sg, problem, kwargs, dtype):
    torch = need_torch()
    start = np.array([-1.2, 1.0, 0.5, -0.3], dtype=dtype)
    x = stage_tensor(sg, start, requires_grad=True)
    tx = torch.tensor(start, requires_grad=True)
    f = _quadratic if problem == "quadratic" else _rosenbrock
    opt, topt = sg.optim.LBFGS([x], **kwargs), torch.optim.LBFGS([tx], **kwargs)

    def closure():
        opt.zero_grad()
        loss = f(sg, x)
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = f(torch, tx)
        loss.backward()
        return loss

    # float32: PyTorch keeps some of the scalars in float32 0-dim tensors, these are floats
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == "float64" else dict(rtol=2e-3, atol=2e-4)
    for step in range(4):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        assert_close(loss, tloss, **tol)
        assert_close(x, tx, **tol)
        state, tstate = opt.state[x], topt.state[tx]
        if dtype == "float64":
            assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"]), step
    if problem == "quadratic" and "max_iter" not in kwargs:  # converged: the minimiser solves Ax = b
        A = np.array([[4.0, 1.0, 0.5, 0.0], [1.0, 3.0, 0.2, 0.1], [0.5, 0.2, 2.0, 0.3], [0.0, 0.1, 0.3, 0.1]])
        np.testing.assert_allclose(np_(x), np.linalg.solve(A, [1.0, -2.0, 0.5, 3.0]), rtol=1e-3, atol=1e-4)


def test_lbfgs_refuses_groups_and_unknown_line_search(sg):
    p, q = sg.zeros(2, requires_grad=True), sg.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="parameter groups"):
        sg.optim.LBFGS([{"params": [p]}, {"params": [q]}])
    with pytest.raises(ValueError, match="strong_wolfe"):
        sg.optim.LBFGS([p], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="learning rate"):
        sg.optim.LBFGS([p], lr=-1)
