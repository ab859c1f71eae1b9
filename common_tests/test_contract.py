"""The primitive contract (``stage0_python/backend.py``'s ``PRIMITIVES`` and ``HELPERS``, and
the vocabulary's ``FUSED_KERNELS``) against every stage's backend, and against what the
frontend calls."""
import pathlib
import re

import stage0_python
from stage0_python import backend as reference
from stage0_python.vocabulary import FUSED_KERNELS

FRONTEND = pathlib.Path(stage0_python.__file__).parent
# what the frontend may also read off a backend: its settings, not primitives
SETTINGS = {"FUSED", "VIEWS", "GEMMS", "get_gemm", "set_gemm", "CONVS", "get_conv", "set_conv",
            "get_num_threads", "set_num_threads"}


def test_every_backend_defines_the_contract(sg):
    backend = sg.backend
    names = reference.PRIMITIVES + reference.HELPERS + (() if backend.VIEWS else reference.COPYING_HELPERS)
    missing = [n for n in names if not callable(getattr(backend, n, None))]
    assert not missing, f"{sg.__name__}'s backend lacks {missing}"
    for name in backend.FUSED:  # a fused kernel it offers brings its functions
        assert name in FUSED_KERNELS, name
        assert all(callable(getattr(backend, f, None)) for f in FUSED_KERNELS[name]), name


def test_the_frontend_calls_nothing_outside_the_contract():
    allowed = set(reference.PRIMITIVES) | set(reference.HELPERS) | set(reference.COPYING_HELPERS) | SETTINGS
    allowed |= {f for fs in FUSED_KERNELS.values() for f in fs}
    used = {}
    for path in FRONTEND.rglob("*.py"):
        if path.name == "backend.py":
            continue
        for name in re.findall(r"\b(?:B|_B)\.([A-Za-z_]\w*)", path.read_text(encoding="utf-8")):
            used.setdefault(name, path.relative_to(FRONTEND))
    outside = {n: str(p) for n, p in used.items() if n not in allowed}
    assert not outside, f"the frontend calls backend names outside the contract: {outside}"
    assert {"binary", "matmul", "set_data"} <= set(used)  # the scan does see the calls


def test_the_docstring_names_every_primitive():
    words = set(re.findall(r"\w+", reference.__doc__))
    assert set(reference.PRIMITIVES) <= words, set(reference.PRIMITIVES) - words
