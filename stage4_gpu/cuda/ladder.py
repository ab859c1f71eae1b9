"""The GPU GEMM ladder: our SGEMM tiers of ``kernels/sgemm_ladder.cu`` (the kernel file
says what each tier changes) and how each is launched, the 2-byte floats' tensor-core
kernel (``hgemm``), and cuBLAS through CuPy as the peer. ``sgemm(tier, a, b)`` multiplies
two float32 CuPy arrays (a batch of row-major matrices, ``(..., M, K) @ (..., K, N)``)
with one tier; ``stagegrad cuda-ladder`` and
``benchmarks/bench_cuda.py`` time every tier against cuBLAS and check each result
against it.
"""
from collections import namedtuple

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
}
MAX_GRID_YZ = 65535  # CUDA's limit on a grid's second and third dimensions


def fits(tier, m, n, k, *arrays):
    """Whether ``tier`` can multiply these sizes and operands (the vector tiers' needs)."""
    t = TIERS[tier]
    if not t.vector:
        return True
    return k % 4 == 0 and n % 4 == 0 and all(a.data.ptr % 16 == 0 for a in arrays)


def sgemm(tier, a, b, out=None):
    """``a @ b`` for float32 CuPy arrays with one tier: a (batch..., M, K), b (batch..., K,
    N), contiguous, equal batch dims; ``out`` (batch..., M, N) when given."""
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
    rows, cols = -(-m // t.tile[0]), -(-n // t.tile[1])
    # the naive tier maps blockIdx.x to rows of C, every other tier to columns
    grid_x, grid_y = (rows, cols) if tier == "naive" else (cols, rows)
    if grid_y > MAX_GRID_YZ:
        raise ValueError(f"sgemm {tier}: {m} x {n} needs {grid_y} blocks in the grid's y "
                         f"dimension, over CUDA's {MAX_GRID_YZ}")
    a2, b2, c2 = (x.reshape(count, *x.shape[-2:]) for x in (a, b, out))
    for start in range(0, count, MAX_GRID_YZ):  # a batch beyond the grid's z limit, in parts
        part = min(MAX_GRID_YZ, count - start)
        rt.launch_grid(t.kernel, t.kernel, (grid_x, grid_y, part), t.block + (1,),
                       [m, n, k, a2[start:], b2[start:], c2[start:]])
    return out


HGEMM_THREADS, HGEMM_TILE = 128, 64  # hgemm.cu's HG_THREADS and HG_TILE


def hgemm(a, b, out, ctype="half_t"):
    """``a @ b`` on the tensor cores (``kernels/hgemm.cu``) for contiguous (count, M, K) and
    (count, K, N) CuPy arrays of float16, or of bfloat16 bits (uint16) with ``ctype``
    ``bf16_t``, into ``out`` (count, M, N); float32 accumulation, any sizes."""
    rt = runtime()
    count, m, k = a.shape
    n = b.shape[-1]
    tiles = count * -(-m // HGEMM_TILE) * -(-n // HGEMM_TILE)
    rt.launch("hgemm", f"hgemm<{ctype}>", tiles, HGEMM_THREADS, [[m, k, n, count], out, a, b])
    return out


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
    """The ladder's kernels (extern "C": each is its own name)."""
    return [(t.kernel, t.kernel) for t in TIERS.values()]
