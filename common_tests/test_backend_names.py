"""Every stage's backend writes its primitives' names in its source: each is a name that a
top-level statement binds (a ``def``, an assignment, an import), so that a reader, a linter
and an IDE resolve ``B.linear_backward`` to its definition, and a primitive missing from the
list fails here rather than in a program."""
import ast
import pathlib
import types

import pytest

from stage0_python import backend as reference
from stage0_python.vocabulary import FUSED_KERNELS


def _bound_names(path):
    """The names that the top-level statements of the module at ``path`` bind."""
    names = set()
    for node in ast.parse(pathlib.Path(path).read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _expected(backend):
    """What the frontend may call on ``backend``: the contract's primitives and helpers, the
    helpers of a copying stage, the functions of each fused kernel it offers, its settings."""
    names = set(reference.PRIMITIVES) | set(reference.HELPERS) | {"FUSED", "VIEWS"}
    if not backend.VIEWS:
        names |= set(reference.COPYING_HELPERS)
    return names | {f for name in backend.FUSED for f in FUSED_KERNELS[name]}


def _instance(backend):
    """The object whose methods a class-based backend's names are (stage 2 on), or None."""
    return getattr(backend, "cpu", None) or getattr(backend, "_BACKEND", None)


def test_each_backend_names_every_primitive_in_its_source(sg):
    backend = sg.backend
    missing = _expected(backend) - _bound_names(backend.__file__)
    assert not missing, f"{backend.__file__} binds no name {sorted(missing)}"


def test_each_name_is_its_instances_own(sg):
    """A class-based backend's names are its instance's methods, each under its own name (a
    routed one in stage 4 reaches the cpu device's of that name), or functions of its own."""
    backend, instance = sg.backend, _instance(sg.backend)
    if instance is None:
        pytest.skip("a backend of functions: its names are its definitions")
    for name in sorted(_expected(backend)):
        value = getattr(backend, name)
        if isinstance(value, types.FunctionType) and value.__module__ == backend.__name__:
            continue  # defined in the module itself (stage 4's view_dtype)
        if hasattr(value, "on_cpu"):  # stage 4's routed primitive
            assert value.__name__ == name and value.on_cpu == getattr(instance, name), name
        else:
            assert value == getattr(instance, name), name


def test_stage4_routes_each_primitive_at_its_buffer_positions():
    b4 = pytest.importorskip("stage4_gpu.backend")
    from stage4_gpu._routing import Routed
    routed = {name: value for name, value in vars(b4).items() if isinstance(value, Routed)}
    assert set(routed) == set(b4._BUFFERS)
    for name, value in routed.items():
        assert value.__name__ == name and value.positions == b4._BUFFERS[name], name
