"""``matmul`` on a device over a batch of products (batch dims already equal, as the
primitive's contract says).

The routing, decided once here: the dtypes of the driver's dense engine (CUDA's: float32,
float16, bfloat16) go to it, after making the operands contiguous; everything else to the
driver's strided kernel, which reads each operand through its strides, and needs only
that its batch dims be walked with one stride.
"""
from .movement import contiguous


def _batched(x):
    """``x`` and the one stride that steps through its batch dims; a contiguous copy where
    the batch dims cannot be walked with one stride."""
    dims = [(n, s) for n, s in zip(x.shape[:-2], x.strides[:-2]) if n != 1]
    if all(s0 == s1 * n1 for (_, s0), (n1, s1) in zip(dims, dims[1:])):
        return x, dims[-1][1] if dims else 0
    x = contiguous(x)
    return x, x.shape[-2] * x.shape[-1]


def matmul(a, b):
    """``a @ b`` over the batch: (..., n, k) @ (..., k, m)."""
    *batch, n, k = a.shape
    m = b.shape[-1]
    out = type(a).empty(tuple(batch) + (n, m), a.dtype)
    if out.numel == 0:
        return out
    if k == 0:  # every entry is an empty sum
        a.driver.fill(out, 0)
        return out
    sizes = (n, k, m, out.numel // (n * m))
    if a.dtype.name in a.driver.dense_dtypes:
        a.driver.dense(out, contiguous(a), contiguous(b), sizes)
        return out
    a, sa = _batched(a)
    b, sb = _batched(b)
    layout = [a.offset, sa, a.strides[-2], a.strides[-1], b.offset, sb, b.strides[-2], b.strides[-1]]
    a.driver.matmul(out, a, b, sizes, layout)
    return out
