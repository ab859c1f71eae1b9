"""Sphinx extension: the API reference's entries, written from its tables.

Each page of ``api/`` lists its names in ``autosummary`` tables, one per group, the way
PyTorch's and NumPy's references do. Below each table this extension adds the entry every
row links to (the autodoc directive for that name), so the pages name each object once,
in its table, and the entries cannot drift from the tables. The entries stay on the page
of their table: a page per name would be a thousand pages, each carrying the whole
site's navigation.

A row holding ``{op_table}`` stands for one row per function of the op table
(``stage0_python/op_table.py``), in the table's order: ``Tensor.{op_table}_`` is every
function's in-place method. A function added there is listed with nothing more written.
"""
import importlib
import inspect
import re
import types

from stage0_python.op_table import FUNCTIONS

PACKAGE = "stage0_python"  # the reference stage: every stage exports the same names

# one table: the block's current module, its options, then one name per line
TABLE = re.compile(r"^```\{eval-rst\}\n\.\. currentmodule:: (?P<module>\S+)\n\n"
                   r"\.\. autosummary::\n(?:   :.*\n)*\n(?P<names>(?:   \S.*\n)+)```\n", re.M)


# a table row that stands for one row per op-table function
OP_TABLE_ROW = re.compile(r"^(   \S*)\{op_table\}(\S*)\n", re.M)


def op_table_rows(text):
    """``text`` with each ``{op_table}`` row written out, one row per op-table function."""
    return OP_TABLE_ROW.sub(lambda m: "".join(f"{m[1]}{f.name}{m[2]}\n" for f in FUNCTIONS), text)


def tables(text):
    """``[(module, [name, ...])]`` for every autosummary table in ``text``."""
    return [(m["module"], m["names"].split()) for m in TABLE.finditer(op_table_rows(text))]


def resolve(module, name):
    """``(owner, obj)``: the object ``module.name`` names and what it was read from."""
    owner, obj = None, importlib.import_module(module)
    for part in name.split("."):
        owner, obj = obj, getattr(obj, part)
    return owner, obj


def entry(module, name, listed):
    """The directive that documents ``module.name``; ``listed`` holds the page's other rows,
    so that a class whose members have rows of their own is shown without them."""
    owner, obj = resolve(module, name)
    if isinstance(owner, type):
        raw = inspect.getattr_static(owner, name.rpartition(".")[2])
        if isinstance(raw, property):
            return f".. autoproperty:: {name}\n"
        if isinstance(raw, (types.MemberDescriptorType, types.GetSetDescriptorType)):
            return f".. autoattribute:: {name}\n"
        return f".. automethod:: {name}\n"
    if inspect.isclass(obj):
        top = getattr(importlib.import_module(PACKAGE), name, None)
        if module != PACKAGE and top is obj:
            # documented in full under the package's top-level name: here, a pointer to it
            # (two full entries would both claim the class's one canonical name)
            role = "exc" if issubclass(obj, BaseException) else "class"
            return (f".. py:class:: {name}\n   :no-index-entry:\n\n"
                    f"   The same object as :py:{role}:`{PACKAGE}.{name}`.\n")
        kind = "exception" if issubclass(obj, BaseException) else "class"
        own = any(n.startswith(name + ".") for n in listed)
        return f".. auto{kind}:: {name}\n" + ("   :no-members:\n" if own else "")
    if callable(obj):
        return f".. autofunction:: {name}{_as_function(obj)}\n"
    return f".. autodata:: {name}\n"


def _as_function(obj):
    """The signature to show for a Tensor method that the package also exports as a function
    (``sg.exp`` is ``Tensor.exp``): its ``self`` is the function's ``input``, as in PyTorch.
    Empty (autodoc's own) for any other function."""
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return ""
    if not params or params[0].name != "self":
        return ""
    return str(inspect.Signature([params[0].replace(name="input")] + params[1:]))


def expand(text):
    """``text`` with each table followed, inside its block, by the entries of its rows."""
    text = op_table_rows(text)
    listed = [n for _, names in tables(text) for n in names]

    def add(m):
        entries = "\n".join(entry(m["module"], n, listed) for n in m["names"].split())
        return m.group(0)[:-len("```\n")] + "\n" + entries + "```\n"
    return TABLE.sub(add, text)


def _source_read(app, docname, source):
    if docname.startswith("api/"):
        source[0] = expand(source[0])


def setup(app):
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
