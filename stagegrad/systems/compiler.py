"""The compiler and the floating-point unit: one C file (``probe.c``) built under several sets
of flags, timed and asked IEEE 754's questions; and subnormal numbers with flush-to-zero off
and on."""
import ast
import ctypes
import json
import math
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..measure import seconds_per_call
from .common import ROOT, Unavailable, child, titled

PROBE = Path(__file__).with_name("probe.c")


# The experiment's own throwaway builds of probe.c, in a temporary folder and loaded only by a
# child process: -march=native and -ffast-math are what it measures, never how anything
# shipped is built (setup.py's flags, printed beside them).
FLAG_SETS = (["-O0"], ["-O2"], ["-O3"], ["-O3", "-march=native"], ["-O3", "-ffast-math"])


def compiler():
    """The C compiler the flag experiments use, or Unavailable."""
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise Unavailable("no C compiler here (gcc or cc): install build-essential")
    return cc


def build_probe(flags, folder):
    """``systems_probe.c`` compiled with ``flags`` into a shared library in ``folder``: its path."""
    name = "probe" + "".join(f.replace("=", "_") for f in flags) + ".so"
    lib = Path(folder) / name
    done = subprocess.run([compiler(), *flags, "-shared", "-fPIC", "-o", str(lib), str(PROBE), "-lm"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise Unavailable(f"{' '.join(flags)} does not build here: {done.stderr.strip()[-300:]}")
    return lib


def load_probe(path):
    """The probe library with its signatures declared."""
    lib = ctypes.CDLL(str(path))
    fp, lg = ctypes.POINTER(ctypes.c_float), ctypes.c_long
    lib.add_reps.argtypes = [fp, fp, fp, lg, lg]
    lib.sum_reps.argtypes, lib.sum_reps.restype = [fp, lg, lg], ctypes.c_float
    lib.scale_reps.argtypes = [fp, fp, lg, ctypes.c_float, lg]
    for probe in ("probe_isnan", "probe_isinf"):
        getattr(lib, probe).argtypes, getattr(lib, probe).restype = [ctypes.c_float], ctypes.c_int
    for probe in ("probe_plus_zero", "probe_tiny"):
        getattr(lib, probe).argtypes, getattr(lib, probe).restype = [ctypes.c_float], ctypes.c_float
    lib.get_ftz_daz.restype = ctypes.c_int
    lib.set_ftz_daz.argtypes = [ctypes.c_int]
    return lib


def _floats(values):
    return (ctypes.c_float * len(values))(*values)


def _per_element_ns(call, n, reps):
    """Nanoseconds per element of ``call`` (``reps`` passes over ``n`` elements), best of three calls."""
    return seconds_per_call(call, 3, "best", warmup=0) / (n * reps) * 1e9


def _shipped_flags():
    """Stage 3's kernel flags as setup.py gives them (CXX, the optimisation, each ISA's)."""
    try:
        tree = ast.parse((ROOT / "setup.py").read_text())
    except OSError:
        return "not known here: setup.py is not beside the package"
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                node.targets[0].id in ("CXX", "X86_ISAS"):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    isas = "; ".join(f"{isa}: {' '.join(f) or '(baseline)'}" for isa, f in found.get("X86_ISAS", {}).items())
    return f"-O3 {' '.join(found.get('CXX', []))}, one module per ISA ({isas}), chosen at run time"


@titled("Compiler flags: -O0 to -O3, -march of this CPU, and why -ffast-math is a trap")
def compiler_flags(quick, out=None):
    """The same C loops (``stagegrad/systems_probe.c``: an add and an in-order sum of 4096
    floats, in L1) built at -O0, -O2, -O3, -O3 with -march=native (this CPU's widest vectors)
    and -O3 -ffast-math, each timed and each asked questions whose answers IEEE 754 fixes.
    IEEE forbids reordering a sum, so no strict build vectorises it; -ffast-math does, and is
    faster, but it also lets the compiler assume there is no NaN or infinity (``isnan`` folds to
    false), ignore the sign of zero, and (GCC links ``crtfastmath.o``) switch the whole process
    to flush subnormals to zero when the library loads. The shipped stage 3 never uses it,
    nor -march=native (its binaries must run on any x86-64)."""
    compiler()
    report = child(f"from stagegrad.systems.compiler import flags_child; flags_child({quick})")
    rows = []
    for r in report["builds"]:
        rows.append([" ".join(r["flags"]), f"{r['add_ns']:.3f}", f"{r['sum_ns']:.3f}",
                     f"{report['builds'][0]['sum_ns'] / r['sum_ns']:.1f}x", f"{r['sum_order']:g}",
                     "yes" if r["isnan"] else "**no**", "yes" if r["isinf"] else "**no**",
                     "yes" if r["signed_zero"] else "**no**",
                     "yes" if r["ftz_after_load"] else "no", "yes" if r["subnormal"] else "**no**"])
    return {"head": ["flags", "add ns/element", "sum ns/element", "sum speedup vs -O0",
                     f"sum of [1e8, 1 x {report['ones']}, -1e8]", "isnan(NaN)", "isinf(inf)",
                     "-0.0 + 0.0 is +0.0", "FTZ/DAZ on after load", "subnormal kept"],
            "rows": rows, "note": f"the exact sum is {report['ones']}; IEEE's in-order float sum gives 0; "
                                  f"stage 3 ships {_shipped_flags()}; compiler: {report['compiler']}"}


def flags_child(quick):
    """In a child process (a fast-math library may change the floating-point mode of the
    process that loads it): build, time and probe every flag set; prints JSON."""
    n, reps, ones = 4096, (2000 if quick else 20000), 4094
    a = _floats([1.0 + i % 7 for i in range(n)])
    b = _floats([0.5] * n)
    c = _floats([0.0] * n)
    order = _floats([1e8] + [1.0] * ones + [-1e8])
    builds, reader = [], None  # reader: the first library, to read the mode before each load
    with tempfile.TemporaryDirectory() as folder:
        for flags in FLAG_SETS:
            path = build_probe(flags, folder)
            before = reader.get_ftz_daz() if reader else 0
            lib = load_probe(path)
            reader = reader or lib
            csr = lib.get_ftz_daz()
            builds.append({
                "flags": flags, "ftz_after_load": csr > 0 and csr != before,
                "add_ns": _per_element_ns(lambda: lib.add_reps(a, b, c, n, reps), n, reps),
                "sum_ns": _per_element_ns(lambda: lib.sum_reps(a, n, reps), n, reps),
                "sum_order": lib.sum_reps(order, len(order), 1),
                "isnan": bool(lib.probe_isnan(float("nan"))), "isinf": bool(lib.probe_isinf(float("inf"))),
                "signed_zero": math.copysign(1.0, lib.probe_plus_zero(-0.0)) > 0,
                "subnormal": lib.probe_tiny(1.1754944e-38) != 0.0})
    version = subprocess.run([compiler(), "--version"], capture_output=True, text=True).stdout.splitlines()
    print(json.dumps({"builds": builds, "ones": ones, "compiler": version[0] if version else compiler()}))



@titled("Subnormal numbers, with flush-to-zero off and on")
def denormals(quick, out=None):
    """A loop of multiply-adds (``y = x f + x f``, built at -O2) runs on normal inputs and on
    subnormal ones (below 1.2e-38 in float32, where IEEE keeps gradual underflow). Many CPUs
    handle subnormals in microcode, tens of times slower; setting the SSE control register's
    flush-to-zero and denormals-are-zero bits makes them zero instead: fast, and no longer
    IEEE. Deep-learning frameworks often set them; the stages leave them off, so a gradient
    that underflows stays what IEEE says it is."""
    n, reps = 4096, (200 if quick else 2000)
    with tempfile.TemporaryDirectory() as folder:
        lib = load_probe(build_probe(["-O2"], folder))
        if lib.get_ftz_daz() < 0:
            raise Unavailable(f"no SSE control register on {platform.machine()}: flush-to-zero lives "
                              f"elsewhere (FPCR on Arm) and this experiment does not set it there")
        start = lib.get_ftz_daz()
        y = _floats([0.0] * n)
        rows, normal = [], {}
        try:
            for label, value in (("normal (1.0)", 1.0), ("subnormal (1e-39)", 1e-39)):
                lib.set_ftz_daz(0)  # before the inputs are made: under FTZ the conversion flushes 1e-39 too
                x = _floats([value] * n)
                row = [label]
                for ftz in (False, True):
                    lib.set_ftz_daz(int(ftz))
                    ns = _per_element_ns(lambda: lib.scale_reps(x, y, n, 0.75, reps), n, reps)
                    normal.setdefault(ftz, ns)
                    row += [f"{ns:.3f}", f"{ns / normal[ftz]:.1f}x", f"{y[0]:.3g}"]
                rows.append(row)
        finally:
            lib.set_ftz_daz(int(start > 0))
    return {"head": ["input", "FTZ/DAZ off: ns/element", "vs normal", "result",
                     "FTZ/DAZ on: ns/element", "vs normal", "result"], "rows": rows}
