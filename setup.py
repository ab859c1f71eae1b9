"""Builds every stage. Stages 0 and 1 are pure Python; stage 2's Cython extensions are
compiled here.

Compiler directives are set once, below: bounds and wraparound checks off, C division
(the kernels are written for it: integer divisors are checked before a loop runs).
``STAGEGRAD_CYTHON_DEBUG=1`` at build time turns the checks back on and compiles without
optimisation; ``STAGEGRAD_SANITIZE=address`` adds AddressSanitizer (the suite's sanitized
run, common_tests/test_sanitized_build.py, builds a copy so). C flags: -O3 (the compiler's own vectorisation, for the baseline ISA only:
no host-specific -march, so the build runs on any x86-64), -fwrapv (signed integer
overflow wraps, as documented for integer tensors), -ffp-contract=off (a * b + c is
rounded twice on every platform, never fused). No fast-math: it would break the NaN and
inf semantics the tests check.
"""
import os
from pathlib import Path

from setuptools import Extension, setup

SANITIZE = (["-fsanitize=" + os.environ["STAGEGRAD_SANITIZE"], "-fno-omit-frame-pointer"]
            if os.environ.get("STAGEGRAD_SANITIZE") else [])
STAGE2 = ("_storage", "_buffer", "_convert", "_elementwise", "_reduce", "_matmul", "_conv", "_index",
          "_random")


def _render_templates(folder):
    """Write ``x.pyx`` from each ``x.pyx.tp`` (Tempita, as scikit-learn does) when stale."""
    from Cython import Tempita
    for tp in Path(folder).glob("*.pyx.tp"):
        pyx = tp.with_suffix("")
        if not pyx.exists() or pyx.stat().st_mtime < tp.stat().st_mtime:
            text = Tempita.sub(tp.read_text(encoding="utf-8"))
            pyx.write_text("# Generated from " + tp.name + ": edit that file.\n" + text, encoding="utf-8")


def stage2_extensions():
    from Cython.Build import cythonize
    debug = os.environ.get("STAGEGRAD_CYTHON_DEBUG") == "1"
    _render_templates("stage2_cython")
    directives = {"language_level": 3, "boundscheck": debug, "wraparound": debug,
                  "initializedcheck": debug, "cdivision": True}
    flags = ["-fwrapv", "-ffp-contract=off"] + (["-O0", "-g"] if debug else ["-O3", "-g0"])
    extensions = [Extension(f"stage2_cython.{name}", [f"stage2_cython/{name}.pyx"],
                            extra_compile_args=flags + SANITIZE, extra_link_args=SANITIZE)
                  for name in STAGE2]
    return cythonize(extensions, compiler_directives=directives, nthreads=os.cpu_count() or 1,
                     annotate=os.environ.get("STAGEGRAD_CYTHON_ANNOTATE") == "1")


setup(ext_modules=stage2_extensions(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
