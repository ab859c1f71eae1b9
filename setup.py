"""Builds every compiled stage. Stages 0 and 1 are pure Python.

Stage 2: Cython extensions. Compiler directives are set once, below: bounds and
wraparound checks off, C division (the kernels are written for it: integer divisors are
checked before a loop runs).

Stage 3: C++17 kernels on xsimd, compiled once per ISA, each into its own extension
module with its own flags (SSE2, the x86-64 baseline; AVX2 + FMA; AVX-512 F/BW/DQ/VL;
NEON on arm64), and the Cython bindings, linked against OpenBLAS from the
``scipy-openblas32`` wheel with no rpath (the stage imports the wheel first, which loads
the library). Stage 3 needs the xsimd headers (Debian/Ubuntu ``libxsimd-dev``, conda
``xsimd``; ``XSIMD_INCLUDE`` names another folder) and the wheel; without them it is
skipped, with a warning, and the test suite reports it as not built.

Stage 4: the cuda device's launcher (``_launch``): plain C through Cython that calls a
function with ``cuLaunchKernel``'s signature through a pointer it is given at run time,
so it builds with no CUDA header, library or GPU (NVIDIA's Cython declarations in
``cuda-bindings`` would need the toolkit's ``cuda.h`` at build time).

Flags: -O3, the compiler's own vectorisation at each module's ISA only (never a
host-specific -march: the build runs on any x86-64); -fwrapv (signed integer overflow
wraps, as documented for integer tensors); -ffp-contract=off (a * b + c is rounded twice
unless a kernel asks for a fused multiply-add). No fast-math: it would break the NaN and
inf semantics the tests check.

The frontend's hot half, stage 0's ``tensor_core.py`` and ``graph.py``, is compiled from
that one source for stage 3 and for stage 4 (Cython's pure-Python mode; each stage's
``tensor_core.pxd`` and ``graph.pxd`` give the C types), with stage 4's compiled routing of
a primitive to its device.

``STAGEGRAD_CYTHON_DEBUG=1`` turns the checks back on and compiles without optimisation;
``STAGEGRAD_SANITIZE=address`` adds AddressSanitizer (the suite's sanitized run,
common_tests/test_sanitized_build.py, builds a copy so); ``STAGEGRAD_ISAS=avx2`` (a comma
list) builds only those of stage 3's per-ISA modules (that build, which runs one path only).
"""
import os
import platform
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("STAGEGRAD_CYTHON_DEBUG") == "1"
SANITIZE = (["-fsanitize=" + os.environ["STAGEGRAD_SANITIZE"], "-fno-omit-frame-pointer"]
            if os.environ.get("STAGEGRAD_SANITIZE") else [])
STAGE2 = ("_storage", "_buffer", "_convert", "_elementwise", "_reduce", "_matmul", "_conv", "_index",
          "_random", "_sort", "_dlpack")
X86_ISAS = {
    "sse2": [],
    "avx2": ["-mavx2", "-mfma", "-mf16c"],
    "avx512": ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx2", "-mfma", "-mf16c"],
}
CXX = ["-std=c++17", "-fvisibility=hidden", "-fopenmp", "-ffp-contract=off", "-fwrapv",
       "-Wno-maybe-uninitialized", "-Wno-uninitialized"]  # xsimd leaves AVX-512 registers undefined on purpose


# What the build generates goes under build/, not into the stage folders, so that a built
# `ls stage2_cython/` shows just the chapter: Cython's .c files and the .pyx rendered from a
# template here, the compiled modules of an in-place build in COMPILED/<stage>/
GENERATED = Path("build") / "cython"
COMPILED = Path(__file__).resolve().parent / "build" / "ext"


class BuildExt(build_ext):
    """An in-place build (``pip install -e .``, ``setup.py build_ext --inplace``) puts each
    compiled module in ``COMPILED/<stage>/``, which the stage's ``__init__`` adds to its
    ``__path__``, instead of beside the sources. A wheel keeps its modules in the package."""

    def finalize_options(self):
        super().finalize_options()
        # every core, whoever runs the command: pip's editable and wheel builds make it anew,
        # without the options setup() was given, and built one extension at a time
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def _get_inplace_equivalent(self, build_py, ext):
        inplace_file, regular_file = super()._get_inplace_equivalent(build_py, ext)
        folder = COMPILED.joinpath(*self.get_ext_fullname(ext.name).split(".")[:-1])
        self.mkpath(str(folder))
        if os.path.exists(inplace_file):  # an older build's, which would shadow the new one
            os.remove(inplace_file)
        return str(folder / os.path.basename(inplace_file)), regular_file


def _template_namespace():
    """What the templates see (``stage2_cython/template_names.py``), loaded by its path: the
    stage cannot be imported before it is built. The vocabulary it reads is stage 0's,
    which is pure Python."""
    import importlib.util
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    spec = importlib.util.spec_from_file_location("template_names", "stage2_cython/template_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NAMESPACE


def _render_templates(folder):
    """Write ``GENERATED/folder/x.pyx`` from each ``folder/x.pyx.tp`` (Tempita, as
    scikit-learn does) when it or this file changed; the names of the rendered modules."""
    from Cython import Tempita
    namespace = _template_namespace()
    rendered = {}
    for tp in Path(folder).glob("*.pyx.tp"):
        pyx = GENERATED / folder / tp.with_suffix("").name
        newest = max(tp.stat().st_mtime, Path(__file__).stat().st_mtime,
                     *(Path(p).stat().st_mtime for p in ("stage2_cython/template_names.py",
                                                          "stage0_python/op_table.py")))
        if not pyx.exists() or pyx.stat().st_mtime < newest:
            pyx.parent.mkdir(parents=True, exist_ok=True)
            text = Tempita.sub(tp.read_text(encoding="utf-8"), **namespace)
            pyx.write_text("# Generated from " + str(tp) + ": edit that file.\n" + text, encoding="utf-8")
        rendered[pyx.stem] = str(pyx)
    return rendered


def stage2_extensions():
    rendered = _render_templates("stage2_cython")
    flags = ["-fwrapv", "-ffp-contract=off"] + (["-O0", "-g"] if DEBUG else ["-O3", "-g0"])
    return [Extension(f"stage2_cython.{name}", [rendered.get(name, f"stage2_cython/{name}.pyx")],
                      extra_compile_args=flags + SANITIZE, extra_link_args=SANITIZE)
            for name in STAGE2]


def _xsimd_include():
    """The folder holding ``xsimd/xsimd.hpp``, or None."""
    candidates = [os.environ.get("XSIMD_INCLUDE"), os.path.join(sys.prefix, "include"),
                  os.path.join(os.environ.get("CONDA_PREFIX", ""), "include"), "/usr/local/include",
                  "/usr/include"]
    return next((c for c in candidates if c and os.path.exists(os.path.join(c, "xsimd", "xsimd.hpp"))), None)


def stage3_extensions():
    xsimd = _xsimd_include()
    try:
        import scipy_openblas32
    except ImportError:
        scipy_openblas32 = None
    missing = [what for what, ok in (("the xsimd headers (apt install libxsimd-dev)", xsimd),
                                     ("the scipy-openblas32 wheel", scipy_openblas32)) if not ok]
    if missing:
        print(f"warning: stage3_simd is not built: {' and '.join(missing)} not found", file=sys.stderr)
        return []
    opt = ["-O1", "-g"] if DEBUG else ["-O3", "-g0"]
    isas = X86_ISAS if platform.machine().lower() in ("x86_64", "amd64") else {"neon": []}
    if os.environ.get("STAGEGRAD_ISAS"):
        wanted = os.environ["STAGEGRAD_ISAS"].split(",")
        if not set(wanted) <= set(isas):
            sys.exit(f"STAGEGRAD_ISAS={os.environ['STAGEGRAD_ISAS']!r}: this machine's ISAs are {', '.join(isas)}")
        isas = {isa: flags for isa, flags in isas.items() if isa in wanted}
    headers = [str(p) for p in Path("stage3_simd/csrc").glob("*.h*")]  # rebuild when one changes
    kernels = [Extension(f"stage3_simd._isa_{isa}", [f"stage3_simd/csrc/isa_{isa}.cpp"], language="c++",
                         include_dirs=["stage3_simd/csrc", xsimd], depends=headers,
                         extra_compile_args=CXX + opt + flags + SANITIZE,
                         extra_link_args=["-fopenmp"] + SANITIZE)
               for isa, flags in isas.items()]
    bindings = Extension("stage3_simd._kernels", ["stage3_simd/_kernels.pyx"], depends=headers,
                         include_dirs=["stage3_simd", scipy_openblas32.get_include_dir()],
                         library_dirs=[scipy_openblas32.get_lib_dir()],
                         libraries=[scipy_openblas32.get_library()],
                         extra_compile_args=["-fwrapv", "-ffp-contract=off"] + opt + SANITIZE,
                         extra_link_args=SANITIZE)
    return kernels + [bindings]


def stage4_extensions():
    """Stage 4's compiled routing of a primitive to its device (on stage 2's buffers), and
    the cuda device's kernel launcher and caching allocator."""
    opt = ["-O1", "-g"] if DEBUG else ["-O3", "-g0"]
    return [Extension(f"stage4_gpu.{name}", [f"stage4_gpu/{name}.pyx"],
                      extra_compile_args=["-fwrapv"] + opt + SANITIZE, extra_link_args=SANITIZE)
            for name in ("_routing", "_strided", "_launch", "_device_memory", "_cuda_elementwise")]


def frontend_extensions(stage):
    """The frontend's hot half (the operators, Function.apply, the backward engine)
    compiled for ``stage`` from stage 0's one Python source, which ``stage/<name>.pxd``
    augments with C types (Cython's pure-Python mode)."""
    opt = ["-O1", "-g"] if DEBUG else ["-O3", "-g0"]
    # the declarations each module is compiled with: Cython tracks a .py's own cimports only,
    # not those of a .pxd found by the module's name, so a C file older than one is removed
    # (and made again) here
    declarations = [f"{stage}/tensor_core.pxd", f"{stage}/graph.pxd", "stage3_simd/tensor_core_decls.pxi",
                    "stage3_simd/graph_decls.pxi", "stage2_cython/_buffer.pxd", "stage2_cython/_storage.pxd"]
    newest = max(Path(d).stat().st_mtime for d in declarations)
    for name in ("tensor_core", "graph"):
        c_file = GENERATED / stage / "stage0_python" / f"{name}.c"
        if c_file.exists() and c_file.stat().st_mtime < newest:
            c_file.unlink()
    return [Extension(f"{stage}.{name}", [f"stage0_python/{name}.py"], depends=declarations,
                      extra_compile_args=["-fwrapv"] + opt + SANITIZE, extra_link_args=SANITIZE)
            for name in ("tensor_core", "graph")]


def extensions():
    from Cython.Build import cythonize
    # binding=False: module functions are plain builtins, which the profiler (stagegrad
    # profile) times apart from their Python callers
    directives = {"language_level": 3, "boundscheck": DEBUG, "wraparound": DEBUG,
                  "initializedcheck": DEBUG, "cdivision": True, "binding": False}
    options = dict(compiler_directives=directives, nthreads=os.cpu_count() or 1, include_path=["."],
                   annotate=os.environ.get("STAGEGRAD_CYTHON_ANNOTATE") == "1")
    stage3 = stage3_extensions()
    out = cythonize(stage2_extensions() + stage3 + (stage4_extensions() if stage3 else []),
                    build_dir=str(GENERATED), **options)
    # the frontend of stages 3 and 4: one source each, so one C file per stage
    for stage in ("stage3_simd", "stage4_gpu") if stage3 else ():
        out += cythonize(frontend_extensions(stage), build_dir=str(GENERATED / stage), **options)
    # the parallel build takes them in order: stage 3's kernels per ISA (a minute of compiling
    # each, the rest seconds) first, so that no core waits for one at the end
    return sorted(out, key=lambda e: not e.name.startswith("stage3_simd._isa_"))


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
