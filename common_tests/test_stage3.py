"""What only stage 3 has: the SIMD paths and their dispatch, the two GEMMs, threads.

The conformance suite checks stage 3's results like every stage's; these tests check the
machinery around them: every SIMD path the CPU supports computes the same results (in
this process, by switching paths, and in subprocesses with ``STAGEGRAD_SIMD``), no
instruction of a higher ISA leaks into a lower path (the lower paths run under QEMU's
emulation of CPUs without AVX2 and without AVX-512), and both GEMMs pass the suite and an
exhaustive set of ragged, transposed and strided shapes against a float64 reference.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .environment import cpu_neutral_env

try:
    import stage3_simd as s3
    K = s3.backend.K
except ImportError as e:  # the stage summary names it as not built, with the reason
    pytestmark = pytest.mark.skip(reason=f"stage3_simd is not built: {e}")
    s3 = K = None

ROOT = Path(__file__).resolve().parent.parent
PRIMES = [p for p in range(2, 258) if all(p % d for d in range(2, int(p ** 0.5) + 1))]


def _run(code, env=None, timeout=600):
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=timeout)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# ---------------------------------------------------------------- dispatch

def test_simd_info_names_the_cpu_its_features_and_the_path_in_use():
    info = s3.simd_info()
    assert info["path"] in info["supported"] and info["path"] == K.isa()
    assert info["supported"] == K.supported_paths() and info["supported"][0] in ("sse2", "neon")
    if "avx512" in info["supported"]:
        assert {"avx512f", "avx512bw", "avx512dq", "avx512vl", "os_saves_zmm"} <= set(info["features"])
    if "avx2" in info["supported"]:
        assert {"avx2", "fma", "os_saves_ymm"} <= set(info["features"])
    assert info["vector_bits"] == {"sse2": 128, "neon": 128, "avx2": 256, "avx512": 512}[info["path"]]
    assert info["forced"] in (None, os.environ.get("STAGEGRAD_SIMD"))


def test_stagegrad_simd_forces_each_supported_path_and_refuses_others():
    for path in K.supported_paths():
        r = _run("import stage3_simd as sg; print(sg.simd_info()['path'], sg.simd_info()['forced'])",
                 {"STAGEGRAD_SIMD": path})
        assert r.returncode == 0 and r.stdout.split() == [path, path], r.stderr
    r = _run("import stage3_simd", {"STAGEGRAD_SIMD": "avx1024"})
    assert r.returncode != 0 and "STAGEGRAD_SIMD='avx1024'" in r.stderr and "runs only" in r.stderr


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_path_computes_the_same_results(dtype):
    """The kernels are one template: each ISA's module must agree with the others to
    rounding (FMA or not, register width changes summation order)."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, (37, 53)).astype(dtype)
    y = rng.uniform(0.5, 2, (53,)).astype(dtype)
    w = rng.standard_normal((53, 29)).astype(dtype)
    results = {}
    before = K.isa()
    try:
        for path in K.supported_paths():
            K.set_path(path)
            a, b, m = (s3.from_numpy(v) for v in (x, y, w))
            out = [(a * b + a).exp().log1p(), a.tanh().sigmoid(), (a / b).gelu(), a.sum(1), a.amax(0),
                   a.argmax(1), a ** b, a @ m]
            results[path] = [o.numpy().astype(np.float64) for o in out]
    finally:
        K.set_path(before)
    base = results[K.supported_paths()[0]]
    for path, outs in results.items():
        for got, want in zip(outs, base):
            np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6,
                                       err_msg=f"{path} differs from {K.supported_paths()[0]}")


FAST_SUBSET = ["common_tests/test_elementwise.py", "common_tests/test_reductions.py",
               "common_tests/test_matmul.py", "common_tests/test_accuracy.py",
               "common_tests/test_functional.py", "common_tests/test_fused_images.py",
               "common_tests/test_fused.py::test_recurrent_layer",
               "common_tests/test_fused.py::test_attention", "common_tests/test_fused.py::test_gelu"]


@pytest.mark.slow
@pytest.mark.parametrize("path", ["sse2", "avx2", "avx512", "neon"])
def test_lower_paths_pass_the_conformance_subset(path):
    """The best path runs the whole suite; every lower one a fast subset of it."""
    if path not in K.supported_paths():
        pytest.skip(f"this CPU does not run the {path} path")
    if path == K.supported_paths()[-1] and "STAGEGRAD_SIMD" not in os.environ:
        pytest.skip(f"{path} is the default path: the whole suite runs on it")
    r = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                        "--stages=stage3_simd", *FAST_SUBSET], cwd=ROOT, capture_output=True, text=True,
                       env=cpu_neutral_env(STAGEGRAD_SIMD=path), timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout


# ---------------------------------------------------------------- no ISA leaks: emulated CPUs

SMOKE = """
import stage3_simd as sg
rows = [[6.0 * i + k for k in range(6)] for i in range(4)]
a = sg.tensor(rows)
gram = sum(x * y for r in rows for s in rows for x, y in zip(r, s))
checks = [((a * 2 + 1).exp().log().sum().item(), sum(2 * v + 1 for r in rows for v in r)),
          (a.amax(1).tolist(), [max(r) for r in rows]), (a.argmax(0).tolist(), [3] * 6)]
for name in sg.backend.GEMMS:
    sg.backends.gemm = name
    checks.append(((a @ a.T).sum().item(), gram))
for got, want in checks:
    assert abs(got - want) <= 1e-4 * abs(want) if isinstance(want, float) else got == want, (got, want)
print(sg.simd_info()["path"], "ok")
"""


@pytest.mark.slow
@pytest.mark.parametrize("cpu, path", [("Nehalem", "sse2"), ("Haswell", "avx2")])
def test_lower_paths_run_on_cpus_without_the_higher_isa(cpu, path):
    """Under QEMU's model of a CPU without AVX (Nehalem) or without AVX-512 (Haswell),
    stage 3 imports, picks that CPU's path and computes: a single instruction of a higher
    ISA outside its own module would stop the emulated process with SIGILL."""
    qemu = shutil.which("qemu-x86_64")
    if os.uname().machine != "x86_64":
        pytest.skip("the emulated CPUs are x86-64 ones")
    if qemu is None:
        pytest.skip("qemu-x86_64 is not installed (Debian: apt install qemu-user; ./dev test does)")
    r = subprocess.run([qemu, "-cpu", cpu, sys.executable, "-c", SMOKE], cwd=ROOT, capture_output=True,
                       text=True, timeout=900, env=cpu_neutral_env())
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
    assert r.stdout.split() == [path, "ok"]
    forced = subprocess.run([qemu, "-cpu", cpu, sys.executable, "-c", "import stage3_simd"], cwd=ROOT,
                            capture_output=True, text=True, timeout=900,
                            env=cpu_neutral_env(STAGEGRAD_SIMD="avx512"))
    assert forced.returncode == 1 and "runs only" in forced.stderr  # refused, not SIGILL


# ---------------------------------------------------------------- the two GEMMs

@pytest.fixture(params=["blas", "own"])
def gemm(request):
    before = s3.backends.gemm
    s3.backends.gemm = request.param
    yield request.param
    s3.backends.gemm = before


def _check(a, b, got, dtype):
    """``got`` against a float64 product, within k ulps of |A||B| (each dot product's bound)."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    k = a.shape[-1]
    tol = (k + 2) * np.finfo(dtype).eps * scale + np.finfo(dtype).tiny
    assert got.shape == want.shape
    bad = np.abs(got.astype(np.float64) - want) > tol
    assert not bad.any(), f"{bad.sum()} elements off, first at {np.argwhere(bad)[0]}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_size_1_to_65_in_each_dimension(gemm, dtype):
    rng = np.random.default_rng(7)
    others = [(1, 1), (7, 13), (65, 64), (33, 1)]
    for dim in range(3):
        for size in range(1, 66):
            for p, q in others:
                m, n, k = [(size, p, q), (p, size, q), (p, q, size)][dim]
                a = rng.standard_normal((m, k)).astype(dtype)
                b = rng.standard_normal((k, n)).astype(dtype)
                _check(a, b, (s3.from_numpy(a) @ s3.from_numpy(b)).numpy(), dtype)


def test_prime_sizes_up_to_257(gemm):
    rng = np.random.default_rng(8)
    for i, p in enumerate(PRIMES):
        q, r = PRIMES[(i * 7 + 3) % len(PRIMES)], PRIMES[(i * 13 + 5) % len(PRIMES)]
        for m, n, k in ((p, q, r), (r, p, q), (p, p, p)):
            a = rng.standard_normal((m, k)).astype(np.float32)
            b = rng.standard_normal((k, n)).astype(np.float32)
            _check(a, b, (s3.from_numpy(a) @ s3.from_numpy(b)).numpy(), np.float32)


SWEEP = r"""
import json, sys
import numpy as np
import stage3_simd as sg

path, which = sys.argv[1], sys.argv[2]
info = sg.simd_info()
assert (info["path"], info["forced"]) == (path, path), info


def check(a, b, dtype, what):
    # within k ulps of |A||B| of a float64 product: each dot product's bound
    got = (sg.from_numpy(a) @ sg.from_numpy(b)).numpy()
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    tol = (a.shape[-1] + 2) * np.finfo(dtype).eps * scale + np.finfo(dtype).tiny
    assert got.shape == want.shape, (what, got.shape, want.shape)
    bad = np.abs(got.astype(np.float64) - want) > tol
    assert not bad.any(), f"{path} {sg.backends.gemm} {dtype} {what}: {bad.sum()} elements off"


def shapes(dtype):
    if which == "edges":  # every size 1..65 in each dimension, then across each cache block
        for dim in range(3):
            for size in range(1, 66):
                for p, q in ((1, 1), (7, 13), (65, 64), (33, 1)):
                    yield [(size, p, q), (p, size, q), (p, q, size)][dim]
        blk = sg.backend.K.gemm_blocking()
        mr, nr, mc, kc, nc = (blk[k] for k in ("MR", "NR", "MC", "KC", "NC"))
        yield from ((mc - 1, nr + 1, kc + 1), (mc + 1, 2 * nr - 1, kc), (mc + 1, nr + 3, kc + 1),
                    (mr + 1, nc + 1, 3))
    else:  # primes up to 257 in each dimension
        primes = [p for p in range(2, 258) if all(p % d for d in range(2, int(p ** 0.5) + 1))]
        for i, p in enumerate(primes):
            q, r = primes[(i * 7 + 3) % len(primes)], primes[(i * 13 + 5) % len(primes)]
            yield from ((p, q, r), (r, p, q), (p, p, p))


done = {}
for gemm in sg.backend.GEMMS:
    sg.backends.gemm = gemm
    assert sg.backend.gemm_for(64, 64, 64) == gemm
    rng = np.random.default_rng(11)
    for dtype in (np.float32, np.float64):
        for m, n, k in shapes(dtype):
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            check(a, b, dtype, (m, n, k))
            done[gemm] = done.get(gemm, 0) + 1
print(json.dumps({"path": sg.simd_info()["path"], "threads": sg.get_num_threads(), "products": done}))
"""


def _sweep_on(path, which):
    if path not in K.supported_paths():
        pytest.skip(f"this CPU does not run the {path} path")
    # two threads, whatever the caller set: the threaded GEMM runs too
    env = cpu_neutral_env(STAGEGRAD_SIMD=path, **{name: "2" for name in THREAD_VARIABLES})
    r = subprocess.run([sys.executable, "-c", SWEEP, path, which], cwd=ROOT, capture_output=True,
                       text=True, env=env, timeout=900)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
    import json
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["path"] == path and report["threads"] == 2
    assert set(report["products"]) == {"blas", "own"} and min(report["products"].values()) > 100


@pytest.mark.parametrize("path", ["sse2", "avx2", "avx512", "neon"])
def test_gemm_sweep_on_every_simd_path(path):
    """The size sweep above runs on the default path only; each path has its own micro-kernel
    (register block MR x NR) and edge handling, so every path the CPU runs sweeps both GEMMs,
    in a child forced to it with nothing else forcing a CPU path: sizes 1 to 65 in each
    dimension and one step either side of each cache block, against NumPy in float64."""
    _sweep_on(path, "edges")


@pytest.mark.slow
@pytest.mark.parametrize("path", ["sse2", "avx2", "avx512", "neon"])
def test_gemm_prime_sizes_on_every_simd_path(path):
    """The prime sizes up to 257 on every path, both GEMMs, float32 and float64."""
    _sweep_on(path, "primes")


def test_transposed_strided_and_broadcast_operands(gemm):
    """Views reach the GEMM as they are (BLAS takes transposes as flags and leading
    dimensions; ours reads any strides): same results as contiguous copies."""
    rng = np.random.default_rng(9)
    A = rng.standard_normal((70, 90)).astype(np.float32)
    B = rng.standard_normal((90, 60)).astype(np.float32)
    tA, tB = s3.from_numpy(A), s3.from_numpy(B)
    cases = [
        (tA, tB, A, B),
        (tA.T.contiguous().T, tB, A, B),                               # A column-major
        (tA, tB.T.contiguous().T, A, B),                               # B column-major
        (tA[::2, ::3], tB[::3, 1::2], A[::2, ::3], B[::3, 1::2]),     # neither dim contiguous
        (tA[5:40, 10:70], tB[10:70, :50], A[5:40, 10:70], B[10:70, :50]),
        (tA[:1], tB, A[:1], B),                                        # one row
        (tA, tB[:, :1], A, B[:, :1]),                                  # one column
    ]
    for x, y, a, b in cases:
        _check(a, b, (x @ y).numpy(), np.float32)
    batch = rng.standard_normal((3, 1, 20, 30)).astype(np.float32)
    tb = s3.from_numpy(batch)
    _check(batch, B[:30, :25], (tb @ tB[:30, :25]).numpy(), np.float32)          # folded batch
    w = rng.standard_normal((4, 30, 25)).astype(np.float32)
    got = (tb @ s3.from_numpy(w)).numpy()                                       # broadcast batch
    _check(np.broadcast_to(batch, (3, 4, 20, 30)), np.broadcast_to(w, (3, 4, 30, 25)), got, np.float32)
    e = s3.from_numpy(rng.standard_normal((1, 30)).astype(np.float32)).expand(20, 30)  # stride-0 rows
    _check(e.numpy(), B[:30], (e @ tB[:30]).numpy(), np.float32)


# the last two cross the tile path's blocks of k (256) and of rows (64)
@pytest.mark.parametrize("shape, transposed", [((1, 1, 1), False), ((5, 7, 3), False), ((33, 65, 17), False),
                                               ((64, 64, 64), False), ((40, 1030, 70), False),
                                               ((37, 45, 29), True), ((2, 31, 33, 45), False),
                                               ((130, 530, 90), False), ((97, 300, 260), True)])
def test_bfloat16_products_on_tiles_and_widened(shape, transposed):
    """bfloat16 matmul, on AMX tiles where this machine has them and through our float32 GEMM
    (widening as it packs) otherwise, both run here: each within float32 summation of the
    exact product, then one bfloat16 rounding; and equal to PyTorch's to one bfloat16 step."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape))
    *batch, n, k, m = shape
    ta = torch.tensor(rng.standard_normal((*batch, n, k)), dtype=torch.float32).bfloat16()
    tb = torch.tensor(rng.standard_normal((*batch, k, m)), dtype=torch.float32).bfloat16()
    a, b = s3.tensor(ta.float().numpy()).bfloat16(), s3.tensor(tb.float().numpy()).bfloat16()
    if transposed:  # an operand read through strides
        ta, a = (x.transpose(-1, -2).contiguous().transpose(-1, -2) for x in (ta, a))
    exact = (ta.double() @ tb.double()).numpy()
    bound = 2.0 ** -8 * np.abs(exact) + k * 2.0 ** -23 * (ta.double().abs() @ tb.double().abs()).numpy()
    theirs = (ta @ tb).float().numpy()
    threads = s3.get_num_threads()
    try:
        for s3.backend.BF16_TILES in ((True, False) if K.has_bf16_tiles() else (False,)):
            for count in (1, 2):  # the tile path's threads share out rows and pack B together
                s3.set_num_threads(count)
                ours = (a @ b).float().numpy()
                assert ours.shape == exact.shape and np.all(np.abs(ours - exact) <= bound), s3.backend.BF16_TILES
                np.testing.assert_allclose(ours, theirs, rtol=2.0 ** -7, atol=2.0 ** -7 * np.abs(theirs).max())
    finally:
        s3.backend.BF16_TILES = True
        s3.set_num_threads(threads)


def test_gemm_choice_and_its_errors():
    assert s3.backends.gemm in ("auto", "blas", "own")
    with pytest.raises(ValueError, match="'auto', 'blas', 'own'"):
        s3.backends.gemm = "mkl"
    before = s3.backends.gemm
    try:
        s3.backends.gemm = "auto"
        assert s3.backend.gemm_for(8, 8, 8) == "blas"  # small products: OpenBLAS's small kernels win
        assert s3.backend.gemm_for(1024, 1024, 1024) == "own"  # large ones: ours
        for name in ("blas", "own"):
            s3.backends.gemm = name
            assert s3.backend.gemm_for(8, 8, 8) == name == s3.backends.gemm
    finally:
        s3.backends.gemm = before
    r = _run("import stage3_simd as sg; print(sg.backends.gemm)", {"STAGEGRAD_GEMM": "own"})
    assert r.stdout.strip() == "own", r.stderr
    r = _run("import stage3_simd", {"STAGEGRAD_GEMM": "cublas"})
    assert r.returncode != 0 and "STAGEGRAD_GEMM" in r.stderr


def test_conv_choice_and_its_errors():
    assert s3.backends.conv == "auto"
    with pytest.raises(ValueError, match="'auto', 'implicit', 'winograd', 'direct'"):
        s3.backends.conv = "fft"
    try:
        for name in s3.backend.CONVS:
            s3.backends.conv = name
            assert s3.backends.conv == name
    finally:
        s3.backends.conv = "auto"
    import stage0_python as s0
    assert s0.backends.conv == "builtin"
    with pytest.raises(ValueError, match="'builtin'"):
        s0.backends.conv = "winograd"


NOT_PRODUCTS = ("test_journey", "test_cli", "test_gpu_devices", "test_stage3", "test_train_killed_save",
                "test_ci_strictness", "test_distributed", "test_serve_browser", "test_serve",
                "test_bench_site", "test_coverage", "test_dev_script", "test_sanitized_build")


@pytest.mark.slow
def test_each_gemm_passes_the_suite(tmp_path):
    """The default ("auto": each product on the faster GEMM for its shape, OpenBLAS for the
    small ones the suite mostly has) runs the whole suite with everything else. Here our GEMM
    forced runs it again, less the files that compute nothing a GEMM could change (the
    command line, servers, devices, CI's own checks) and the site's build, which writes
    docs/_generated while the outer run's own build is using it; ``gemm_reach`` records which
    tests had products ``auto`` sends to OpenBLAS, and which to ours. OpenBLAS forced then
    reruns only the tests it could change: those with a product ``auto`` sends to ours, or
    that start a process."""
    reach, only = tmp_path / "reach.json", tmp_path / "only.json"

    def suite(gemm, **env):
        r = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                            "-p", "common_tests.gemm_reach", "--stages=stage3_simd", "-m", "not slow",
                            *(f"--ignore=common_tests/{f}.py" for f in NOT_PRODUCTS), "common_tests"],
                           cwd=ROOT, capture_output=True, text=True,
                           env=dict(os.environ, STAGEGRAD_GEMM=gemm, **env), timeout=1800)
        assert r.returncode == 0, gemm + ": " + r.stdout[-4000:] + r.stderr[-2000:]

    suite("own", STAGEGRAD_GEMM_REACH=str(reach))
    reached = json.loads(reach.read_text())
    assert any("blas" in g for g in reached.values()) and any("own" in g for g in reached.values()), \
        "the tracer saw no product of one GEMM: it no longer sees the products"
    only.write_text(json.dumps(sorted(t for t, g in reached.items() if "own" in g or "child" in g)))
    suite("blas", STAGEGRAD_GEMM_ONLY=str(only))  # (gemm_reach refuses an id it does not collect)


# ---------------------------------------------------------------- threads

def test_threads_follow_the_setting_and_give_the_same_results():
    rng = np.random.default_rng(10)
    big = rng.standard_normal((400, 700)).astype(np.float32)
    w = rng.standard_normal((700, 300)).astype(np.float32)
    before = s3.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            s3.set_num_threads(n)
            assert s3.get_num_threads() == n
            t = s3.from_numpy(big)
            outs.append([o.numpy() for o in (t.exp(), t.sum(), t.sum(0), t.sum(1), t.argmax(1), t @ s3.from_numpy(w))])
        for other in outs[1:]:
            for got, want in zip(other, outs[0]):
                np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-4)
        with pytest.raises(ValueError):
            s3.set_num_threads(0)
    finally:
        s3.set_num_threads(before)


def test_default_threads_follow_omp_num_threads():
    r = _run("import stage3_simd as sg; print(sg.get_num_threads())", {"OMP_NUM_THREADS": "3"})
    assert r.stdout.strip() == "3", r.stderr


# ---------------------------------------------------------------- the chapter's commands

def test_gemm_ladder_command_measures_every_rung(tmp_path):
    r = subprocess.run([sys.executable, "-m", "stagegrad", "gemm-ladder", "--size", "96", "--budget", "0.2",
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    import json
    report = json.loads((tmp_path / "gemm_ladder.json").read_text())
    rungs = [row for row in report["rows"] if row["kind"] == "rung"]
    assert [row["rung"] for row in rungs] == [1, 2, 3, 4, 5, 6]
    assert {row["isa"] for row in report["rows"] if row["kind"] == "isa"} == set(K.supported_paths())
    assert all(row["gflops"] > 0 and row["seconds"] > 0 for row in report["rows"])
    blocking = report["blocking"]
    assert blocking["MC"] % blocking["MR"] == 0 and blocking["NC"] % blocking["NR"] == 0
    assert (tmp_path / "gemm_ladder.png").read_bytes()[:4] == b"\x89PNG"
    assert "+ register micro-kernel" in (tmp_path / "gemm_ladder.md").read_text()


def test_gemm_ladder_refuses_to_time_a_wrong_answer(monkeypatch):
    from stagegrad import gemm_ladder
    real = K.gemm_rung
    # rung 3 answers b @ a: the right shape, the wrong values
    monkeypatch.setattr(K, "gemm_rung", lambda rung, a, b, threads: real(rung, *((b, a) if rung == 3 else (a, b)),
                                                                         threads))
    with pytest.raises(SystemExit, match=r"3\. \+ packing at n = 48 differs from OpenBLAS's product"):
        gemm_ladder.measure(size=48, budget=0.05)


def test_simd_paths_command_runs_each_path(tmp_path):
    r = subprocess.run([sys.executable, "-m", "stagegrad", "simd-paths", "--n", "5000", "--side", "32",
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    import json
    report = json.loads((tmp_path / "simd.json").read_text())
    assert {c["setting"] for c in report["cells"] if c["kind"] == "path"} == set(K.supported_paths())
    assert all(c["seconds"] > 0 for c in report["cells"])
    assert s3.simd_info()["path"] == K.isa()  # the command leaves the process's path as it was


def test_profile_command_adds_stage_3s_rewrites_one_at_a_time(tmp_path):
    r = subprocess.run([sys.executable, "-m", "stagegrad", "profile", "--stages", "3", "--steps", "5",
                        "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    from stagegrad.profile import BUCKETS, STAGE3_REWRITES
    rows = json.loads((tmp_path / "profile.json").read_text())
    stage3 = [row for row in rows if row["package"] == "stage3_simd"]
    assert [row["label"] for row in stage3] == [label for label, _, _ in STAGE3_REWRITES]
    kernels_only, fused, compiled = stage3
    # each rewrite takes Python work out of the step: calls the profiler counts, deterministically
    assert kernels_only["calls_per_step"] > fused["calls_per_step"] > compiled["calls_per_step"]
    assert kernels_only["memory_per_step"]["allocations"] > fused["memory_per_step"]["allocations"]
    for row in stage3:
        assert row["memory_per_step"]["misses"] == 0  # the steady state: the pool serves every block
        assert set(row["buckets_us_per_step"]) == set(BUCKETS)
        total = sum(row["buckets_us_per_step"].values())
        assert abs(total - row["wall_s_per_step"] * 1e6) < 1e-6 * total + 1e-3
    assert "+ compiled frontend" in (tmp_path / "profile.md").read_text()


def test_python_frontend_switch_runs_stage0_frontend_on_stage3_kernels():
    r = _run("import stage3_simd as sg; a = sg.ones(3, requires_grad=True); (a * 2).sum().backward(); "
             "print(sg.tensor_core.__file__, sg.graph.__file__, a.grad.tolist())",
             {"STAGEGRAD_FRONTEND": "python"})
    core, graph, grad = r.stdout.split(maxsplit=2)
    assert r.returncode == 0 and grad.strip() == "[2.0, 2.0, 2.0]", r.stderr
    assert core.endswith("stage0_python/tensor_core.py") and graph.endswith("stage0_python/graph.py")
    assert s3.tensor_core.__file__.endswith((".so", ".pyd"))  # this process: the compiled frontend
    r = _run("import stage3_simd", {"STAGEGRAD_FRONTEND": "cython"})
    assert r.returncode != 0 and "STAGEGRAD_FRONTEND='cython'" in r.stderr
