"""``matmul`` on the WebGPU device: the register-blocked tiled kernel of
``kernels/matmul.wgsl`` over a batch of products (batch dims already equal, as the
primitive's contract says)."""
from .buffer import empty
from .elementwise import kernel_source
from .runtime import runtime

TILE = 64  # the side of the tile of C one workgroup computes


def _batched(x):
    """``x`` and the one stride that steps through its batch dims; a contiguous copy where
    the batch dims cannot be walked with one stride."""
    dims = [(n, s) for n, s in zip(x.shape[:-2], x.strides[:-2]) if n != 1]
    if all(s0 == s1 * n1 for (_, s0), (n1, s1) in zip(dims, dims[1:])):
        return x, dims[-1][1] if dims else 0
    from .movement import contiguous
    x = contiguous(x)
    return x, x.shape[-2] * x.shape[-1]


def matmul(a, b):
    *batch, n, k = a.shape
    m = b.shape[-1]
    out = empty(tuple(batch) + (n, m), a.dtype)
    if out.numel == 0:
        return out
    if k == 0:  # every entry is an empty sum
        from .backend import fill
        return fill(out, 0)
    count = out.numel // (n * m)
    tiles_m = -(-m // TILE)
    per = -(-n // TILE) * tiles_m
    a, sa = _batched(a)
    b, sb = _batched(b)
    params = [n, k, m, count, per, tiles_m,
              a.offset, sa, a.strides[-2], a.strides[-1],
              b.offset, sb, b.strides[-2], b.strides[-1]]
    runtime().launch(kernel_source("matmul", T=a.wgsl),
                     [out.storage.gbuf, a.storage.gbuf, b.storage.gbuf], params, count * per)
    return out
