"""Every backend primitive on every installed stage, with pytest-benchmark.

One test per (primitive, stage), grouped by primitive, so the stages sit side by side in
pytest-benchmark's table. The inputs are the same NumPy arrays for every stage, sized so
that the pure-Python stages finish in well under a second per call.

The suite runs these with ``--benchmark-disable`` (the project's default): each body runs
once, as a test that the primitive works on each stage. To time them::

    .venv/bin/python -m pytest benchmarks/test_primitives.py --benchmark-enable -n 0 \\
        --benchmark-group-by=group --benchmark-columns=median,iqr,rounds
"""
import numpy as np
import pytest

from stagegrad.workloads import stage_packages

STAGES = stage_packages()
N = 1 << 14  # elements of the vector operands
M = 64       # the matrices' side


def _arr(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


class Inputs:
    """The stage's backend and its buffers of the shared inputs."""

    def __init__(self, pkg):
        import importlib
        self.sg = importlib.import_module(pkg)
        self.B = self.sg.backend
        self.f32 = self.sg.float32
        self.i64 = self.sg.int64
        self.x = self.buf(_arr(1, N))
        self.y = self.buf(_arr(2, N))
        self.m = self.buf(_arr(3, M, M))
        self.w = self.buf(_arr(4, M, M))
        self.row = self.buf(_arr(5, M))
        self.mask = self.buf(_arr(6, N) > 0)
        self.index = self.buf(np.random.default_rng(7).integers(0, M, (M, M)).astype(np.int64))
        self.flat = self.buf(np.random.default_rng(8).integers(0, N, N // 4).astype(np.int64))
        self.image = self.buf(_arr(9, 2, 3, 16, 16))

    def buf(self, arr):
        return self.sg.from_numpy(np.ascontiguousarray(arr))._data


def _gen(inp):
    return inp.sg.Generator(0)


PRIMITIVES = {
    "from_list": lambda i: lambda: i.B.from_list(list(range(1024)), (1024,), i.f32),
    "full": lambda i: lambda: i.B.full((N,), 1.5, i.f32),
    "arange": lambda i: lambda: i.B.arange(0, N, 1, i.i64),
    "uniform": lambda i: (lambda g: lambda: i.B.uniform((N,), 0.0, 1.0, i.f32, g))(_gen(i)),
    "normal": lambda i: (lambda g: lambda: i.B.normal((N,), 0.0, 1.0, i.f32, g))(_gen(i)),
    "randint": lambda i: (lambda g: lambda: i.B.randint((N,), 0, 10, i.i64, g))(_gen(i)),
    "cast": lambda i: lambda: i.B.cast(i.x, i.sg.float64),
    "unary_exp": lambda i: lambda: i.B.unary("exp", i.x),
    "unary_relu": lambda i: lambda: i.B.unary("relu", i.x),
    "binary_add": lambda i: lambda: i.B.binary("add", i.x, i.y, i.f32),
    "binary_mul_row": lambda i: lambda: i.B.binary("mul", i.m, i.row, i.f32),
    "binary_gt": lambda i: lambda: i.B.binary("gt", i.x, i.y, i.f32),
    "where": lambda i: lambda: i.B.where(i.mask, i.x, i.y),
    "reduce_sum_all": lambda i: lambda: i.B.reduce("sum", i.x, (0,), False),
    "reduce_sum_rows": lambda i: lambda: i.B.reduce("sum", i.m, (1,), False),
    "reduce_max_cols": lambda i: lambda: i.B.reduce("max", i.m, (0,), False),
    "arg_reduce": lambda i: lambda: i.B.arg_reduce("argmax", i.m, 1, False),
    "reshape": lambda i: lambda: i.B.reshape(i.m, (M * M,)),
    "permute": lambda i: lambda: i.B.permute(i.m, (1, 0)),
    "expand": lambda i: lambda: i.B.expand(i.row, (M, M)),
    "slice": lambda i: lambda: i.B.slice(i.m, (1, 2), (2, 3), (M // 2 - 1, M // 3 - 1)),
    "diagonal": lambda i: lambda: i.B.diagonal(i.m, 0, 0, 1),
    "windows": lambda i: lambda: i.B.windows(i.x, 0, 8, 4),
    "contiguous": lambda i: lambda: i.B.contiguous(i.B.permute(i.m, (1, 0))),
    "alias": lambda i: lambda: i.B.alias(i.m),
    "copy": lambda i: lambda: i.B.copy(i.x),
    "cat": lambda i: lambda: i.B.cat([i.m, i.w], 0),
    "take": lambda i: lambda: i.B.take(i.x, i.flat),
    "gather": lambda i: lambda: i.B.gather(i.m, 1, i.index),
    "scatter_add": lambda i: lambda: i.B.scatter_add((M, M), 1, i.index, i.m),
    "matmul": lambda i: lambda: i.B.matmul(i.m, i.w),
    "unfold": lambda i: lambda: i.B.unfold(i.image, (3, 3), (1, 1), (1, 1), (1, 1)),
    "fold": lambda i: (lambda cols: lambda: i.B.fold(cols, (16, 16), (3, 3), (1, 1), (1, 1), (1, 1)))(
        i.B.unfold(i.image, (3, 3), (1, 1), (1, 1), (1, 1))),
    "assign": lambda i: (lambda dst: lambda: i.B.assign(dst, (0, 0), (1, 1), (8, 8), i.B.full((), 1.0, i.f32)))(
        i.B.copy(i.m)),
    "put": lambda i: (lambda dst: lambda: i.B.put(dst, i.flat, i.B.full((), 2.0, i.f32)))(i.B.copy(i.x)),
    "set_data": lambda i: (lambda dst: lambda: i.B.set_data(dst, i.y))(i.B.copy(i.x)),
    "is_contiguous": lambda i: lambda: i.B.is_contiguous(i.m),
    "strides": lambda i: lambda: i.B.strides(i.m),
    "storage_offset": lambda i: lambda: i.B.storage_offset(i.m),
    "data_ptr": lambda i: lambda: i.B.data_ptr(i.m),
    "storage_id": lambda i: lambda: i.B.storage_id(i.m),
    "shares_storage": lambda i: lambda: i.B.shares_storage(i.m, i.w),
}
_inputs = {}


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("primitive", sorted(PRIMITIVES))
def test_primitive(benchmark, primitive, stage):
    if stage not in _inputs:
        _inputs[stage] = Inputs(stage)
    benchmark.group = primitive
    benchmark.extra_info["stage"] = stage
    call = PRIMITIVES[primitive](_inputs[stage])
    result = benchmark(call)
    assert result is not None or primitive in ("assign", "put", "set_data")
