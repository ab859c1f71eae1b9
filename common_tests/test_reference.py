"""The API reference covers the API: every public name has a docstring and a row in one of
the reference's tables (``docs/api/*.md``), which links it to its entry.

Every stage exports the same names and the reference is built from stage 0's docstrings,
so this reads stage 0 alone: it takes no ``sg`` fixture and runs once, whichever stages
the session tests.
"""
import ast
import importlib
import importlib.util
import inspect
import re
import types
from pathlib import Path

import stage0_python as sg
from stagegrad.coverage import public_names

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
PACKAGE = "stage0_python"

_spec = importlib.util.spec_from_file_location("stagegrad_reference",
                                               ROOT / "docs" / "_ext" / "stagegrad_reference.py")
REF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REF)  # the extension that turns the tables into entries

# the public namespaces, as paths from the package ("Tensor" is the class)
NAMESPACES = ("", "Tensor", "autograd", "nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.rnn", "optim",
              "optim.lr_scheduler", "data", "datasets", "amp", "cuda", "memory", "viz", "onnx", "distributed",
              "nn.parallel")
# namespaces that re-export another's names: those are documented once, under the other
REEXPORTS = {"functional": "nn.functional", "utils.data": "data"}
# loaded on first use by the package's ``__getattr__``, so ``dir(sg)`` does not list them
LAZY = ("save", "load", "save_safetensors", "load_safetensors", "safetensors_metadata")
# Tensor's operators with semantics of their own to document
INDEXING = ("__getitem__", "__setitem__")


def _resolve(path):
    obj = sg
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part)
    return obj


def _public():
    """``{(namespace, name): (owner, the full name its row must have)}``."""
    out = {}
    for ns in NAMESPACES + tuple(REEXPORTS):
        owner = _resolve(ns)
        home = REEXPORTS.get(ns, ns)
        extra = LAZY if ns == "" else INDEXING if ns == "Tensor" else ()
        for name in public_names(owner) | set(extra):
            out[(ns, name)] = (owner, ".".join(filter(None, (PACKAGE, home, name))))
    return out


def _raw(owner, name):
    """``owner.name`` as defined: a class's attribute unbound, so a property stays a property."""
    return inspect.getattr_static(owner, name) if isinstance(owner, type) else getattr(owner, name)


def _is_value(obj):
    """A constant (a dtype, ``LACKS``): documented in the pages' text, having no docstring of its own."""
    return not (inspect.isroutine(obj) or inspect.isclass(obj) or isinstance(
        obj, (property, staticmethod, classmethod, types.MemberDescriptorType, types.GetSetDescriptorType)))


def _docstring(obj):
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__") or ""  # its own, not the base class's that getdoc would find
        return "" if re.fullmatch(rf"{obj.__name__}\(.*\)", doc) else doc  # namedtuple's default
    if isinstance(obj, types.MemberDescriptorType):
        return inspect.getdoc(obj)  # a __slots__ field, documented in the slots dict
    return obj.__doc__


def _rows():
    """Every table row of the reference: ``[(page, full name)]``."""
    return [(page.name, f"{module}.{name}") for page in sorted(API.glob("*.md"))
            for module, names in REF.tables(page.read_text(encoding="utf-8")) for name in names]


def test_every_public_name_has_a_docstring():
    missing = sorted(f"{ns or 'sg'}.{name}" for (ns, name), (owner, _) in _public().items()
                     if not _is_value(_raw(owner, name))
                     and not (_docstring(_raw(owner, name)) or "").strip())
    assert not missing, f"public names without a docstring: {', '.join(missing)}"


def test_the_methods_of_every_public_class_have_docstrings():
    """What a class defines first (``Module.parameters``, ``LRScheduler.get_lr``) says what it
    does; an override (``Linear.forward``) is documented where the method is defined first."""
    classes = {id(obj): obj for (_, name), (owner, _) in _public().items() for obj in [getattr(owner, name)]
               if inspect.isclass(obj) and obj.__module__.startswith(PACKAGE)}
    missing = []
    for cls in classes.values():
        for name, raw in vars(cls).items():
            if name.startswith("_") or any(name in vars(base) for base in cls.__mro__[1:]):
                continue
            if isinstance(raw, (property, staticmethod, classmethod)) or inspect.isfunction(raw):
                if not (_docstring(raw) or "").strip():
                    missing.append(f"{cls.__qualname__}.{name}")
    assert not missing, f"public methods without a docstring: {', '.join(sorted(missing))}"


def test_every_public_name_has_a_row_in_the_reference():
    rows = {full for _, full in _rows()}
    text = "\n".join(p.read_text(encoding="utf-8") for p in API.glob("*.md"))
    missing = []
    for (ns, name), (owner, full) in sorted(_public().items()):
        if _is_value(_raw(owner, name)):
            # a constant is named in the text, as `sg.float32` is in the dtypes table
            if f"`sg.{'.'.join(filter(None, (ns, name)))}`" not in text:
                missing.append(full)
        elif full not in rows:
            missing.append(full)
    assert not missing, f"public names missing from docs/api: {', '.join(missing)}"


def test_every_row_is_a_public_name_listed_once():
    rows = _rows()
    public = {full for _, full in _public().values()}
    stale = [f"{page}: {full}" for page, full in rows if full not in public]
    assert not stale, f"rows naming no public object: {', '.join(stale)}"
    seen = {}
    for page, full in rows:
        assert full not in seen, f"{full} has rows on {seen[full]} and {page}"
        seen[full] = page


def test_pages_show_modules_only_through_their_tables():
    """A whole module (``automodule`` with its members) would show its internals: modules
    appear for their docstrings alone."""
    for page in API.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^\.\. automodule:: (\S+)\n((?:   :.*\n)*)", text, re.M):
            assert ":no-members:" in m.group(2), f"{page.name}: automodule {m.group(1)} shows its members"
    creation = API.joinpath("creation.md").read_text(encoding="utf-8")
    assert not [n for _, names in REF.tables(creation) for n in names if n.rpartition(".")[2].startswith("_")]


def test_nn_functional_names_every_reexport():
    """Each name of ``nn.functional`` is bound by a ``def`` or an import that names it in its
    source, where readers and autodoc can see it (not put into ``globals()`` in a loop), and
    each public function of its parts is one of them."""
    F = sg.nn.functional
    tree = ast.parse(Path(F.__file__).read_text(encoding="utf-8"))
    bound = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert set(F.__all__) <= bound
    assert set(sg.functional.__all__) <= set(F.__all__)
    for path in Path(F.__file__).parent.glob("*.py"):
        part = importlib.import_module(f"{F.__name__}.{path.stem}")
        defined = {name for name, value in vars(part).items() if inspect.isfunction(value)
                   and value.__module__ == part.__name__ and not name.startswith("_")}
        assert defined <= set(F.__all__), f"{path.name} defines {sorted(defined - set(F.__all__))}"
    assert all(getattr(F, n) is getattr(sg.functional, n) for n in ("cross_entropy", "softmax", "mse_loss"))


def test_tables_become_entries():
    page = ("```{eval-rst}\n.. currentmodule:: stage0_python\n\n.. autosummary::\n   :nosignatures:\n\n"
            "   Tensor\n   Tensor.abs\n   Tensor.shape\n   Tensor.grad\n   cat\n   clamp\n```\n\n"
            "```{eval-rst}\n.. currentmodule:: stage0_python.autograd\n\n.. autosummary::\n\n"
            "   no_grad\n   Node\n```\n")
    assert REF.tables(page) == [
        ("stage0_python", ["Tensor", "Tensor.abs", "Tensor.shape", "Tensor.grad", "cat", "clamp"]),
        ("stage0_python.autograd", ["no_grad", "Node"])]
    out = REF.expand(page)
    # the class without the members that have rows of their own; each member by its kind
    assert ".. autoclass:: Tensor\n   :no-members:\n" in out
    assert ".. automethod:: Tensor.abs\n" in out and ".. autoproperty:: Tensor.shape\n" in out
    assert ".. autoattribute:: Tensor.grad\n" in out and ".. autofunction:: cat\n" in out
    # a method exported as a function shows PyTorch's signature: input, not self
    assert ".. autofunction:: clamp(input, min=None, max=None)\n" in out
    # a class also at the top level points there; one found only here is documented here
    assert ".. py:class:: no_grad\n" in out and ":py:class:`stage0_python.no_grad`" in out
    assert ".. autoclass:: Node\n" in out
    assert out.count("```") == page.count("```")


def test_op_table_rows_stand_for_every_function_of_the_table():
    """Adding a row to the op table lists it in the reference with no page edited."""
    from stage0_python.op_table import FUNCTIONS
    page = ("```{eval-rst}\n.. currentmodule:: stage0_python\n\n.. autosummary::\n   :nosignatures:\n\n"
            "   Tensor.abs\n   Tensor.{op_table}_\n```\n")
    assert REF.tables(page) == [("stage0_python", ["Tensor.abs"] + [f"Tensor.{f.name}_" for f in FUNCTIONS])]
    out = REF.expand(page)
    assert "   Tensor.logit_\n" in out and ".. automethod:: Tensor.logit_\n" in out and "{op_table}" not in out
