"""How a stage is built from the one before it, and where each of its modules comes from.

A stage is a package whose folder holds only what it rewrites. Its ``__init__`` first
calls ``inherit``, which appends to the package's ``__path__`` the folders of every
earlier stage, newest first, each compiled stage's folder of built modules
(``build/ext/<stage>`` in a checkout) right after its sources. Python's import system
then finds each module of the stage in the first folder that has it: ``stage3_simd.nn``
is ``stage0_python/nn`` (no later stage rewrites it), loaded as a module of stage 3, so
its relative imports (``from .. import backend``) reach stage 3's backend. Each stage so
has its own copy of every module (its own ``Tensor`` class, its own grad mode); what
is imported by absolute name is shared: the vocabulary (``stage0_python.vocabulary``:
dtypes, op names, ``CapabilityError``) and a backend's base class (stage 3's ``Backend``
subclasses ``stage2_cython.backend.Backend``).

``provenance(stage)`` lists, for every module of a stage, the file it comes from;
``common_tests/test_provenance.py`` pins that table for each stage, so that "the folder
is the chapter" is checked, not hoped.

One option: ``python_frontend=True`` has the stage load stage 0's Python
``tensor_core.py`` and ``graph.py`` in place of stage 3's compiled ones (stage 4 always,
because its buffers are not stage 2's host buffers the compiled frontend is typed on;
stage 3 under ``STAGEGRAD_FRONTEND=python``, for ``stagegrad profile``).
"""
import importlib.machinery
import importlib.util
import os
import sys

STAGES = ("stage0_python", "stage1_strides", "stage2_cython", "stage3_simd", "stage4_gpu")
COMPILED = ("stage2_cython", "stage3_simd", "stage4_gpu")  # stages with built modules
FRONTEND = ("tensor_core", "graph")  # the frontend modules stage 3 compiles
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES) + (".py",)


def folder(stage):
    """The source folder of ``stage`` (found without importing it)."""
    return importlib.util.find_spec(stage).submodule_search_locations[0]


def folders(stage):
    """``stage``'s folders in the order its ``__path__`` searches them: its own, then each
    earlier stage's, newest first; a compiled stage's built modules right after its sources.
    In an installed wheel the built modules lie beside the sources and the ``build/ext``
    entries name folders that do not exist, which the import system skips."""
    out = []
    for name in reversed(STAGES[:STAGES.index(stage) + 1]):
        source = folder(name)
        out.append(source)
        if name in COMPILED:
            out.append(os.path.join(os.path.dirname(source), "build", "ext", name))
    return out


def inherit(stage, path, python_frontend=False):
    """Make package ``stage`` (its ``__name__`` and ``__path__``) search the earlier stages'
    folders after its own; with ``python_frontend``, load stage 0's ``tensor_core.py`` and
    ``graph.py`` instead of compiled ones."""
    path.extend(f for f in folders(stage)[1:] if f not in path)
    if python_frontend:
        _PythonFrontend.stages.add(stage)
        if _PythonFrontend not in sys.meta_path:
            sys.meta_path.insert(0, _PythonFrontend)


class _PythonFrontend:
    """The import hook behind ``python_frontend``: for the stages that asked, the modules in
    ``FRONTEND`` come from stage 0's folder, whatever ``__path__`` finds first."""
    stages = set()

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        stage, _, name = fullname.rpartition(".")
        if stage not in cls.stages or name not in FRONTEND:
            return None
        return importlib.util.spec_from_file_location(fullname, os.path.join(folder(STAGES[0]), name + ".py"))


def _module_name(entry, where):
    """The module a folder entry is (``x.py``, ``x.cpython-*.so``, a package ``x/``), or None."""
    if os.path.isdir(os.path.join(where, entry)):
        return entry if os.path.exists(os.path.join(where, entry, "__init__.py")) else None
    for suffix in _SUFFIXES:
        if entry.endswith(suffix):
            name = entry[:-len(suffix)]
            return name if name.isidentifier() and name != "__init__" else None
    return None


def provenance(stage):
    """``{module: file}`` for every top-level module of ``stage``: the file (or package
    folder) that ``import stage.module`` loads, as its ``__path__`` and the
    ``python_frontend`` option decide. Found by listing the folders, importing nothing."""
    table = {}
    for where in folders(stage):
        if not os.path.isdir(where):
            continue
        for entry in sorted(os.listdir(where)):
            name = _module_name(entry, where)
            if name and name not in table:
                table[name] = os.path.join(where, entry)
    if stage in _PythonFrontend.stages:
        table.update({name: os.path.join(folder(STAGES[0]), name + ".py") for name in FRONTEND})
    return table
