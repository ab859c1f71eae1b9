"""The GPU GEMM ladders: our SGEMM tiers of ``kernels/sgemm_ladder.cu`` (the kernel file
says what each tier changes) and how each is launched, the 2-byte floats' tensor-core
tiers (``hgemm.cu``, then ``hgemm_ladder.cu``: ``TENSOR_TIERS``), and cuBLAS through CuPy
as the peer. ``sgemm(tier, a, b)`` multiplies two float32 CuPy arrays (a batch of
row-major matrices, ``(..., M, K) @ (..., K, N)``) with one tier, ``tensor_core(tier, a,
b, out)`` two float16 or bfloat16 ones; ``stagegrad cuda-ladder`` and
``benchmarks/bench_cuda.py`` time every tier against cuBLAS and check each result
against it.

The autotuned tier is a template over its tile sizes, instantiated for each of
``CONFIGS``: on a GPU the first product of a shape class (each of M, N, K rounded up to a
power of two) times every configuration once, after a first call that compiles it, and
keeps the fastest for that class (``chosen``). In null launch mode, under the host
emulation (whose times mean nothing) and while a CUDA graph is captured (nothing may
wait there), the first configuration is taken without timing.
"""
from collections import namedtuple

from .kernels import ARCH
from .runtime import runtime

# block: threads per block (x, y); tile: the (rows, cols) of C one block computes;
# vector: needs K and N multiples of 4 and 16-byte aligned operands (float4 loads)
Tier = namedtuple("Tier", "kernel block tile vector")
TIERS = {
    "naive": Tier("sgemm_naive", (16, 16), (16, 16), False),
    "coalesced": Tier("sgemm_coalesced", (16, 16), (16, 16), False),
    "shared": Tier("sgemm_shared", (32, 32), (32, 32), False),
    "blocktile_1d": Tier("sgemm_blocktile_1d", (512, 1), (64, 64), False),
    "blocktile_2d": Tier("sgemm_blocktile_2d", (256, 1), (128, 128), False),
    "vectorized": Tier("sgemm_vectorized", (256, 1), (128, 128), True),
    "warptile": Tier("sgemm_warptile", (256, 1), (128, 128), True),
    "double_buffer": Tier("sgemm_double_buffer", (256, 1), (128, 128), True),
    "swizzled": Tier("sgemm_swizzled", (256, 1), (128, 128), True),
    # block and tile here are the default configuration's: see CONFIGS
    "autotuned": Tier("sgemm_autotuned", (256, 1), (128, 128), True),
}


class Config(namedtuple("Config", "bm bn bk wm wn tm tn")):
    """One instantiation of the autotuned tier: block tile BM x BN, K step BK, warp tile
    WM x WN, a lane's TM x TN outputs per sub-tile."""

    @property
    def instance(self):
        """The kernel's name expression."""
        return f"sgemm_autotuned<{', '.join(map(str, self))}>"

    @property
    def threads(self):
        return (self.bm // self.wm) * (self.bn // self.wn) * 32


CONFIGS = (  # the first is the default: tier 9's tiles
    Config(128, 128, 16, 64, 32, 8, 4),
    Config(128, 128, 8, 64, 64, 8, 8),
    Config(128, 64, 16, 64, 32, 8, 4),
    Config(64, 128, 16, 32, 64, 8, 8),
    Config(64, 64, 16, 32, 32, 8, 4),
)
_CHOSEN = {}  # shape class -> the fastest Config, measured on this GPU
MAX_GRID_YZ = 65535  # CUDA's limit on a grid's second and third dimensions


def fits(tier, m, n, k, *arrays):
    """Whether ``tier`` can multiply these sizes and operands (the vector tiers' needs)."""
    t = TIERS[tier]
    if not t.vector:
        return True
    return k % 4 == 0 and n % 4 == 0 and all(a.data.ptr % 16 == 0 for a in arrays)


def shape_class(m, n, k):
    """The autotuner's key: each size rounded up to a power of two."""
    return tuple(max(int(x) - 1, 0).bit_length() for x in (m, n, k))


def chosen(m, n, k, run):
    """The autotuned tier's configuration for these sizes: the default where nothing can be
    timed (see the module's note), else the fastest of ``CONFIGS`` for the shape class,
    each timed once by ``run(config)`` on the device's stream after a first call."""
    rt = runtime()
    key = shape_class(m, n, k)
    if key in _CHOSEN:
        return _CHOSEN[key]
    if rt.launcher.mode == "null" or rt.capture is not None or _emulated(rt):
        return CONFIGS[0]
    cuda, times = rt.cp.cuda, []
    for config in CONFIGS:
        run(config)  # compiled, and the caches warm
        start, end = cuda.Event(), cuda.Event()
        start.record(rt.stream)
        run(config)
        end.record(rt.stream)
        end.synchronize()
        times.append(cuda.get_elapsed_time(start, end))
    _CHOSEN[key] = CONFIGS[times.index(min(times))]
    return _CHOSEN[key]


def sgemm(tier, a, b, out=None, config=None):
    """``a @ b`` for float32 CuPy arrays with one tier: a (batch..., M, K), b (batch..., K,
    N), contiguous, equal batch dims; ``out`` (batch..., M, N) when given. The autotuned
    tier runs ``config`` (one of ``CONFIGS``) when given, else the one ``chosen``."""
    rt = runtime()
    np = rt.np
    *batch, m, k = a.shape
    n = b.shape[-1]
    count = 1
    for s in batch:
        count *= s
    if out is None:
        out = rt.cp.empty((*batch, m, n), dtype=np.float32)
    if not fits(tier, m, n, k, a, b, out):
        raise ValueError(f"sgemm {tier}: needs K and N multiples of 4 and aligned operands "
                         f"(got M={m}, N={n}, K={k})")
    t = TIERS[tier]
    if tier == "autotuned":
        if config is None:
            config = chosen(m, n, k, lambda c: sgemm(tier, a, b, out, c))
        t = Tier(config.instance, (config.threads, 1), (config.bm, config.bn), True)
    rows, cols = -(-m // t.tile[0]), -(-n // t.tile[1])
    # the naive tier maps blockIdx.x to rows of C, every other tier to columns
    grid_x, grid_y = (rows, cols) if tier == "naive" else (cols, rows)
    if grid_y > MAX_GRID_YZ:
        raise ValueError(f"sgemm {tier}: {m} x {n} needs {grid_y} blocks in the grid's y "
                         f"dimension, over CUDA's {MAX_GRID_YZ}")
    a2, b2, c2 = (x.reshape(count, *x.shape[-2:]) for x in (a, b, out))
    for start in range(0, count, MAX_GRID_YZ):  # a batch beyond the grid's z limit, in parts
        part = min(MAX_GRID_YZ, count - start)
        rt.launch_grid(TIERS[tier].kernel, t.kernel, (grid_x, grid_y, part), t.block + (1,),
                       [m, n, k, a2[start:], b2[start:], c2[start:]])
    return out


# the tensor-core tiers, in ladder order (what each changes: hgemm.cu's and hgemm_ladder.cu's
# Design notes): the kernel, threads per block, and the (rows, cols) of the tile of C a
# block computes. Every one takes any sizes; wgmma runs on sm_90 only (``refusal``).
TensorTier = namedtuple("TensorTier", "kernel threads tile")
TENSOR_TIERS = {
    "hgemm": TensorTier("hgemm", 128, (64, 64)),
    "ldmatrix": TensorTier("hgemm_ldmatrix", 128, (64, 64)),
    "cp_async": TensorTier("hgemm_cp_async", 128, (64, 64)),
    "wide": TensorTier("hgemm_wide", 128, (128, 128)),
    "wgmma": TensorTier("hgemm_wgmma", 128, (64, 128)),
}
TENSOR_CTYPES = ("half_t", "bf16_t")


def _emulated(rt):
    """Whether the runtime's CuPy is the host emulation's (tools/cuda_on_host)."""
    return str(getattr(rt.cp, "__version__", "")).endswith("host-emulation")


def refusal(tier):
    """Why this GPU cannot run the tensor-core tier ``tier``, or None where it can: a kernel of
    an arch-specific target (``kernels.ARCH``: wgmma, sm_90a) runs on that compute capability
    only, and on the host emulation, which runs its emulation twin whatever it reports."""
    arch = ARCH.get(TENSOR_TIERS[tier].kernel)
    if arch is None:
        return None
    rt = runtime()
    if rt.capability == arch[1] or _emulated(rt):
        return None
    return (f"the {tier} tier needs a compute capability {arch[1][0]}.{arch[1][1]} GPU (sm_{arch[0]}), "
            f"not {rt.capability[0]}.{rt.capability[1]}")


def tensor_core(tier, a, b, out, ctype="half_t"):
    """``a @ b`` on the tensor cores with one of ``TENSOR_TIERS`` for contiguous (count, M,
    K) and (count, K, N) CuPy arrays of float16, or of bfloat16 bits (uint16) with ``ctype``
    ``bf16_t``, into ``out`` (count, M, N); float32 accumulation, any sizes. ValueError, saying
    why, for a tier this GPU cannot run (``refusal``)."""
    why = refusal(tier)
    if why is not None:
        raise ValueError(f"tensor_core: {why}")
    rt = runtime()
    t = TENSOR_TIERS[tier]
    count, m, k = a.shape
    n = b.shape[-1]
    tiles = count * -(-m // t.tile[0]) * -(-n // t.tile[1])
    rt.launch(t.kernel, f"{t.kernel}<{ctype}>", tiles, t.threads, [[m, k, n, count], out, a, b])
    return out


def hgemm(a, b, out, ctype="half_t"):
    """The first tensor-core tier (``kernels/hgemm.cu``): ``tensor_core("hgemm", ...)``."""
    return tensor_core("hgemm", a, b, out, ctype)


def cublas(a, b, out=None):
    """``a @ b`` by cuBLAS (CuPy's matmul), into ``out`` when given: the peer every tier is
    measured against. One library call, counted as one launch (not made in null mode)."""
    rt = runtime()
    rt.enter()
    if out is None:
        out = rt.cp.empty((*a.shape[:-1], b.shape[-1]), dtype=a.dtype)
    rt.library_call(rt.cp.matmul, a, b, out=out)
    return out


def instances():
    """The ladder's kernels: the SGEMM tiers (extern "C": each is its own name), every
    autotuned configuration, and the tensor-core tiers after hgemm (matmul.py lists it) in
    both 2-byte floats."""
    return ([(t.kernel, t.kernel) for name, t in TIERS.items() if name != "autotuned"]
            + [("sgemm_autotuned", c.instance) for c in CONFIGS]
            + [(t.kernel, f"{t.kernel}<{c}>") for name, t in TENSOR_TIERS.items() if name != "hgemm"
               for c in TENSOR_CTYPES])
