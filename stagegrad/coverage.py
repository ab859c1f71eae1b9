"""The op-coverage table: every public name, the stages that have it, whether PyTorch has
it, and whether a test compares it with PyTorch.

Generated from the code, never typed in. The public names are read from each installed
stage (each namespace's ``__all__``, or its names without private ones and submodules); PyTorch's side
from PyTorch itself, when installed. A name counts as *compared* when it is named, as an
attribute (``x.cumsum``, ``F.elu``) or a string (a parametrized op name), inside a test
function of ``common_tests/`` that uses PyTorch (it calls ``need_torch`` or reads
``torch``): a static reading of the suite, so it says a comparison exists, not that it
covers every case.
"""
import ast
import functools
import importlib
import types
import warnings
from pathlib import Path

from . import STAGES, installed_stages

TESTS = Path(__file__).resolve().parent.parent / "common_tests"
# (title, path from the package; "Tensor" is the class, the others modules), PyTorch's twin
NAMESPACES = (("sg", "", ""), ("Tensor", "Tensor", "Tensor"), ("sg.nn", "nn", "nn"),
              ("sg.nn.functional", "nn.functional", "nn.functional"), ("sg.nn.init", "nn.init", "nn.init"),
              ("sg.nn.utils.rnn", "nn.utils.rnn", "nn.utils.rnn"),
              ("sg.optim", "optim", "optim"), ("sg.optim.lr_scheduler", "optim.lr_scheduler",
                                               "optim.lr_scheduler"),
              ("sg.utils.data", "utils.data", "utils.data"), ("sg.distributed", "distributed", "distributed"),
              ("sg.nn.parallel", "nn.parallel", "nn.parallel"))


def _resolve(package, path):
    obj = package
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def public_names(obj, declared=True):
    """The public names of a module or class: its ``__all__`` where it declares one (and
    ``declared``), else every name without a leading underscore; never submodules."""
    if obj is None:
        return set()
    names = getattr(obj, "__all__", None) if declared and isinstance(obj, types.ModuleType) else None
    with warnings.catch_warnings():  # reading a deprecated alias (torch.distributed.reduce_op) warns
        warnings.simplefilter("ignore", FutureWarning)
        return {n for n in (names if names is not None else dir(obj)) if not n.startswith("_")
                and not isinstance(getattr(obj, n, None), types.ModuleType)}


# operators count as the names PyTorch gives them
_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.MatMult: "matmul",
              ast.Pow: "pow", ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.USub: "neg",
              ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
              ast.Invert: "bitwise_not", ast.LShift: "bitwise_left_shift", ast.RShift: "bitwise_right_shift",
              ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
ORACLES = {"PyTorch": ("torch", "need_torch"), "NumPy": ("np", "numpy")}


def _named(nodes):
    """The names a group of syntax nodes mentions: attributes, identifier strings, operators."""
    found = set()
    for n in nodes:
        if isinstance(n, ast.Attribute):
            found.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            found.add(n.value)
        elif isinstance(n, (ast.BinOp, ast.UnaryOp, ast.AugAssign)) and type(n.op) in _OPERATORS:
            found.add(_OPERATORS[type(n.op)])
        elif isinstance(n, ast.Compare):
            found.update(_OPERATORS[type(op)] for op in n.ops if type(op) in _OPERATORS)
    return found


def compared_names(oracle, tests=TESTS):
    """Names that appear in a test function that uses ``oracle`` (a key of ``ORACLES``), in
    its decorators, or in a module-level table of cases it reads (see the module docstring)."""
    tests_read, tables = _read_suite(Path(tests))
    found = set()
    for identifiers, named in tests_read:
        if identifiers & set(ORACLES[oracle]):
            found |= named
            for name in identifiers & tables.keys():
                found |= tables[name]
    return found


@functools.lru_cache(maxsize=None)
def _read_suite(tests):
    """The suite's files read once per process (the table asks for each oracle, and each
    stage's test asks again): for each test function, the identifiers it uses and the names
    it mentions (its decorators included); for each module-level table of cases, by name,
    the names its values mention."""
    trees = [ast.parse(p.read_text(encoding="utf-8")) for p in sorted(tests.glob("*.py"))]
    values = {}  # module-level assignments (tables of cases) by name, across the suite's files
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        values.setdefault(target.id, []).append(node.value)
    tables = {name: _named(n for v in vs for n in ast.walk(v)) for name, vs in values.items()}
    tests_read = []
    for tree in trees:
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test"):
                nodes = list(ast.walk(fn))  # a FunctionDef's walk includes its decorators
                tests_read.append(({n.id for n in nodes if isinstance(n, ast.Name)}, _named(nodes)))
    return tests_read, tables


# where a stage knowingly answers differently from PyTorch, with the reason (namespace title,
# name) -> the note the table prints under the namespace
DIFFERENCES = {
    ("sg.optim", "LBFGS"): "in float32 the trajectory may leave PyTorch's (its line search branches on "
                           "float32 comparisons whose last bits depend on each reduction's order); in "
                           "float64 it matches step for step. See `stage0_python/optim/lbfgs.py`.",
}


def table():
    """``{namespace: [(name, {stage: bool}, in_torch or None, {oracle: compared})]}``."""
    stages = {pkg: importlib.import_module(pkg) for pkg in installed_stages()}
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    compared = {oracle: compared_names(oracle) for oracle in ORACLES}
    out = {}
    for title, path, torch_path in NAMESPACES:
        per_stage = {pkg: public_names(_resolve(mod, path)) for pkg, mod in stages.items()}
        # PyTorch's side: every name it has, declared or not
        theirs = public_names(_resolve(torch, torch_path), declared=False) if torch is not None else None
        rows = []
        for name in sorted(set().union(*per_stage.values()), key=str.lower):
            rows.append((name, {pkg: name in names for pkg, names in per_stage.items()},
                         None if theirs is None else name in theirs,
                         {oracle: name in names for oracle, names in compared.items()}))
        out[title] = rows
    return out


def markdown(tables=None):
    tables = tables if tables is not None else table()
    number = {pkg: n for n, pkg in STAGES.items()}
    rows = [r for namespace in tables.values() for r in namespace]
    counts = ", ".join(f"{sum(r[3][o] for r in rows)} named in a test against {o}" for o in ORACLES)
    lines = [f"{len(rows)} public names: {counts}; "
             f"{sum(not any(r[3].values()) for r in rows)} in neither.", ""]
    for title, namespace in tables.items():
        if not namespace:
            continue
        stages = list(namespace[0][1])
        head = ["name", *(f"stage {number[s]}" for s in stages), "in PyTorch",
                *(f"vs {o}" for o in ORACLES)]
        lines += [f"## `{title}`", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        notes = []
        for name, where, in_torch, compared in namespace:
            cells = ["yes" if where[s] else "**missing**" for s in stages]
            cells.append("-" if in_torch is None else "yes" if in_torch else "no (ours only)")
            cells += ["yes" if compared[o] else "**no**" for o in ORACLES]
            note = DIFFERENCES.get((title, name))
            if note:
                notes.append(f"- `{name}` differs from PyTorch: {note}")
            lines.append(f"| `{name}`{' (differs, below)' if note else ''} | " + " | ".join(cells) + " |")
        lines += ["", *notes, ""] if notes else [""]
    return "\n".join(lines)
