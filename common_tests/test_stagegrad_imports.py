"""The ``stagegrad`` package's modules import one another without a circle, counting imports
inside functions too: a reader can follow each command down to the measuring library it uses."""
import ast
import pathlib

import stagegrad

ROOT = pathlib.Path(stagegrad.__file__).resolve().parent


def _modules():
    mods = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(path.with_suffix("").relative_to(ROOT.parent).parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _imports(name, path, mods):
    """The stagegrad modules ``name`` imports: a submodule when a name imported is one, else
    the module the import is from."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            subs = {f"{target}.{a.name}" for a in node.names} & mods.keys()
            found |= subs | ({target} if len(subs) < len(node.names) else set())
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return (found & mods.keys()) - {name, "stagegrad"}


def test_no_import_circle_among_stagegrad_modules():
    mods = _modules()
    edges = {name: _imports(name, path, mods) for name, path in mods.items()}
    state = {}  # a depth-first search: 1 on the path now, 2 done

    def visit(name, path):
        state[name] = 1
        for nxt in sorted(edges[name]):
            assert state.get(nxt) != 1, "import circle: " + " -> ".join(path + [nxt])
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert len(edges) > 30 and edges["stagegrad.journey"] >= {"stagegrad.measure"}
