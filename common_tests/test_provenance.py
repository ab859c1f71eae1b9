"""Where each module of a stage comes from, pinned: "the folder is the chapter" checked.

A stage's folder holds only what it rewrites; ``stage0_python/stages.py`` builds the stage
from the earlier ones, and ``sg.provenance()`` says, for every module, which file that
is. The tables below are the book's table of contents in code: a module that moves, a
rewrite that is added or dropped, changes one of them on purpose.
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import stage0_python
from stage0_python import stages

ROOT = pathlib.Path(stage0_python.__file__).resolve().parent.parent
STAGE2_COMPILED = ("_buffer", "_conv", "_convert", "_dlpack", "_elementwise", "_index", "_matmul", "_random",
                   "_reduce", "_sort", "_storage")
STAGE3_COMPILED = ("_isa_*", "_kernels")  # one _isa_ module per ISA this machine's build has
STAGE4_COMPILED = ("_cuda_elementwise", "_device_memory", "_launch", "_routing", "_strided")  # see docs/stage4.md
FRONTEND = ("graph", "tensor_core")  # compiled by stages 3 and 4 from stage 0's source

# every module that does not come from stage 0's folder, and the folder it comes from
_STAGE1 = {"backend": "stage1_strides", "memory": "stage1_strides", "pool": "stage1_strides"}
_STAGE2 = {"backend": "stage2_cython", "memory": "stage2_cython", "template_names": "stage2_cython",
           "pool": "stage1_strides", **dict.fromkeys(STAGE2_COMPILED, "build/ext/stage2_cython")}
_STAGE3 = {**_STAGE2, "backend": "stage3_simd",
           **dict.fromkeys(STAGE3_COMPILED + FRONTEND, "build/ext/stage3_simd")}
EXPECTED = {
    "stage0_python": {},
    "stage1_strides": _STAGE1,
    "stage2_cython": _STAGE2,
    "stage3_simd": _STAGE3,
    # stage 4 compiles the frontend from stage 0's source too, into modules of its own
    "stage4_gpu": {**_STAGE3, **dict.fromkeys(FRONTEND + STAGE4_COMPILED, "build/ext/stage4_gpu"),
                   **dict.fromkeys(("backend", "device", "strided", "cuda", "gpu", "webgpu"), "stage4_gpu")},
}


def _origin(path):
    """The folder a module's file lies in, relative to the checkout."""
    return pathlib.Path(path).resolve().parent.relative_to(ROOT).as_posix()


def _table(stage):
    """``provenance`` as {module: origin folder}, each ``_isa_<name>`` as ``_isa_*``."""
    table = {}
    for name, path in stages.provenance(stage).items():
        table[re.sub(r"^_isa_\w+$", "_isa_*", name)] = _origin(path)
    return table


def test_each_module_comes_from_the_folder_the_book_says(sg):
    stage = sg.__name__
    if not (ROOT / "build" / "ext").is_dir():  # an installed wheel keeps its modules beside the sources
        pytest.skip("not a checkout: built modules lie in the package folders")
    table = _table(stage)
    rewritten = {name: where for name, where in table.items() if where != "stage0_python"}
    expected = {name: where for name, where in EXPECTED[stage].items() if where != "stage0_python"}
    assert rewritten == expected
    for name in FRONTEND:
        assert table[name] == EXPECTED[stage].get(name, "stage0_python")
    # nothing of stage 0 is lost on the way: every stage has every one of its modules
    assert set(_table("stage0_python")) <= set(table)


def test_the_table_is_what_import_loads(sg):
    """Every module the stage has loaded came from the file ``provenance`` names."""
    table = sg.provenance()
    loaded = [name.partition(".")[2] for name in sys.modules
              if name.startswith(sg.__name__ + ".") and name.count(".") == 1]
    assert len(loaded) > 20  # importing the stage loads most of it
    for name in loaded:
        module = sys.modules[f"{sg.__name__}.{name}"]
        if module.__name__ != f"{sg.__name__}.{name}":  # an attribute, not a submodule
            continue
        where = pathlib.Path(module.__file__)
        if where.name == "__init__.py":
            where = where.parent
        assert os.path.samefile(where, table[name]), name


def test_the_python_frontend_option_is_in_the_table():
    """``STAGEGRAD_FRONTEND=python`` makes stage 3 load stage 0's two frontend files, and
    its provenance says so."""
    code = ("import stage3_simd as sg, sys; t = sg.provenance(); "
            "print(t['graph']); print(t['tensor_core']); print(sys.modules['stage3_simd.graph'].__file__)")
    env = dict(os.environ, STAGEGRAD_FRONTEND="python")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout.split()
    assert [_origin(p) for p in out] == ["stage0_python"] * 3


def test_no_stage_runs_another_files_source():
    """Stages reuse each other by import only: no ``exec`` of source, and so no name a
    linter cannot resolve (``noqa: F821``)."""
    offenders = []
    for stage in stages.STAGES:
        for path in (ROOT / stage).rglob("*"):
            if path.suffix in (".py", ".pyx", ".pxd", ".tp"):
                text = path.read_text(encoding="utf-8")
                if re.search(r"\bexec\(|noqa: F821", text):
                    offenders.append(str(path.relative_to(ROOT)))
    assert not offenders


@pytest.mark.parametrize("stage", ["stage3_simd", "stage4_gpu"])
def test_the_compiled_frontend_is_stage_0s_source(stage):
    """Stages 3 and 4 compile stage 0's ``tensor_core.py`` and ``graph.py`` themselves: no
    stage keeps a twin of them, the modules they load are extension modules of their own,
    and an error raised inside one is reported at a line of stage 0's file."""
    for folder in stages.STAGES:
        assert not [p for p in (ROOT / folder).glob("*.pyx") if p.stem in FRONTEND], folder
    code = (f"import traceback, {stage} as sg\n"
            f"from {stage} import graph, tensor_core\n"
            "print(graph.__file__); print(tensor_core.__file__)\n"
            "try:\n    sg.ones(2) + sg.ones(3)\n"
            "except ValueError as e:\n"
            "    print(*[f'{f.filename}:{f.name}' for f in traceback.extract_tb(e.__traceback__)])\n")
    env = {k: v for k, v in os.environ.items() if k != "STAGEGRAD_FRONTEND"}
    graph_file, core_file, frames = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
        cwd=ROOT).stdout.splitlines()
    for path in (graph_file, core_file):
        assert _origin(path) == f"build/ext/{stage}" and not path.endswith(".py")
    # the operator's compiled short path, this stage's, at its line in the one source
    assert f"stage0_python/tensor_core.py:{stage}.tensor_core.binary" in frames.replace(os.sep, "/")
