"""The MPI program ``test_distributed.py`` launches: ``mpirun -n N python
distributed_worker.py MODE OUT STAGE...``. Each rank writes what it computed to
``OUT/rank<r>.json``; the tests compare it with the collectives' definitions (NumPy) and
with single-process training. Modes:

- ``all``: every collective, then DistributedDataParallel, on every stage named;
- ``raise``: rank 1 raises while rank 0 waits in an all-reduce (the job must abort);
- ``hang``: rank 1 sleeps while rank 0 waits, under a 1.5 s timeout (the watchdog must abort).
"""
import importlib
import json
import sys
import time
import traceback

FLOATS = ("float32", "float64")
INTS = ("int64", "int32")
OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX")
DDP_STEPS = 3
LOCAL_BATCH = 4


def load(name):
    """A stage by name, and what it lacks; ``stage4_gpu[webgpu]`` is stage 4 with that
    default device (whose own LACKS join the stage's)."""
    package, _, device = name.partition("[")
    sg = importlib.import_module(package)
    lacks = set(getattr(sg, "LACKS", ()))
    device = device.rstrip("]")
    sg.set_default_device(device or "cpu")
    if device:
        lacks |= set(getattr(sg, device).LACKS)
    return sg, lacks


def rank_values(sg, dtype, rank, shape=(4, 6)):
    """Rank ``rank``'s input: ``(rank + 1) * arange + rank``, small enough that every
    reduction of it is exact in each dtype."""
    n = 1
    for s in shape:
        n *= s
    x = sg.arange(n, dtype=sg.int64).reshape(shape) % 7
    return (x * (rank + 1) + rank).to(getattr(sg, dtype))


def attempt(fn):
    """``fn()``'s result, or the error it raised (its type's name and its message)."""
    try:
        return {"ok": fn()}
    except Exception as e:  # noqa: BLE001  (reported to the test, which decides)
        return {"error": type(e).__name__, "message": str(e), "mro": [c.__name__ for c in type(e).__mro__]}


def collectives(sg, lacks, rank, size):
    d = sg.distributed
    out = {}
    for dtype in FLOATS + INTS:
        if dtype in lacks:
            continue
        for op in OPS:
            def reduce(dtype=dtype, op=op):
                t = rank_values(sg, dtype, rank)
                before = t._version
                d.all_reduce(t, getattr(d.ReduceOp, op))
                assert t._version > before, "the version counter did not move"
                return t.tolist()
            out[f"all_reduce/{op}/{dtype}"] = attempt(reduce)
    for dtype in ("float16", "bfloat16"):
        if hasattr(sg, dtype) and dtype not in lacks:
            out[f"all_reduce/SUM/{dtype}"] = attempt(
                lambda dtype=dtype: _reduced(sg, d, rank_values(sg, dtype, rank)).float().tolist())

    def reduce_bool(op):
        t = rank_values(sg, "int64", rank) % 2 == 1
        d.all_reduce(t, getattr(d.ReduceOp, op))
        return [[int(v) for v in row] for row in t.tolist()]
    out["all_reduce/MAX/bool"] = attempt(lambda: reduce_bool("MAX"))
    out["all_reduce/MIN/bool"] = attempt(lambda: reduce_bool("MIN"))

    def view(select):
        base = rank_values(sg, "float32", rank)
        d.all_reduce(select(base), d.ReduceOp.SUM)
        return base.tolist()
    out["view/rows"] = attempt(lambda: view(lambda b: b[1:3]))  # contiguous, at an offset
    out["view/strided"] = attempt(lambda: view(lambda b: b.t()[1:5:2]))  # non-contiguous
    out["view/broadcast"] = attempt(lambda: _broadcast_view(sg, d, rank, size))

    def param():
        sg.manual_seed(rank)
        w = sg.nn.Linear(3, 2).weight  # a leaf that requires grad
        d.all_reduce(w, d.ReduceOp.MAX)
        return [w.tolist(), w.requires_grad]
    out["all_reduce/parameter"] = attempt(param)

    def async_reduce():
        t = rank_values(sg, "float32", rank)
        work = d.all_reduce(t, d.ReduceOp.SUM, async_op=True)
        work.wait()
        return [t.tolist(), work.is_completed()]
    out["all_reduce/async"] = attempt(async_reduce)

    def async_others():
        x = rank_values(sg, "float32", rank, (2, 3))
        got = [sg.zeros(2, 3) for _ in range(size)]
        gathering = d.all_gather(got, x * 1, async_op=True)  # x * 1: the only reference is the Work's
        b = rank_values(sg, "int64", rank)
        sending = d.broadcast(b, 0, async_op=True)
        sending.wait()
        gathering.wait()
        return [[g.tolist() for g in got], b.tolist()]
    out["async/all_gather+broadcast"] = attempt(async_others)

    for dtype in ("float32", "int64"):
        def bcast(dtype=dtype):
            t = rank_values(sg, dtype, rank)
            d.broadcast(t, size - 1)
            return t.tolist()
        out[f"broadcast/{dtype}"] = attempt(bcast)

    def gather_list():
        x = rank_values(sg, "float32", rank, (2, 3))
        got = [sg.zeros(2, 3) for _ in range(size)]
        d.all_gather(got, x)
        return [g.tolist() for g in got]
    out["all_gather/list"] = attempt(gather_list)

    def gather_tensor():
        x = rank_values(sg, "int64", rank, (2, 3))
        got = sg.zeros(2 * size, 3, dtype=sg.int64)
        d.all_gather_into_tensor(got, x)
        return got.tolist()
    out["all_gather/tensor"] = attempt(gather_tensor)

    for op in ("SUM", "AVG", "MAX"):
        def scatter_list(op=op):
            inputs = [rank_values(sg, "float32", rank, (2, 3)) * (k + 1) for k in range(size)]
            got = sg.zeros(2, 3)
            d.reduce_scatter(got, inputs, getattr(d.ReduceOp, op))
            return got.tolist()
        out[f"reduce_scatter/list/{op}"] = attempt(scatter_list)

        def scatter_tensor(op=op):
            got = sg.zeros(2, 3)
            whole = rank_values(sg, "float32", rank, (2 * size, 3))
            d.reduce_scatter_tensor(got, whole, getattr(d.ReduceOp, op))
            return got.tolist()
        out[f"reduce_scatter/tensor/{op}"] = attempt(scatter_tensor)
    out["barrier"] = attempt(lambda: d.barrier())
    out["rank"] = attempt(lambda: [d.get_rank(), d.get_world_size(), d.get_backend()])
    return out


def _reduced(sg, d, t):
    d.all_reduce(t, d.ReduceOp.SUM)
    return t


def _broadcast_view(sg, d, rank, size):
    base = rank_values(sg, "float32", rank)
    d.broadcast(base.t()[::2], size - 1)  # a non-contiguous view of every other column
    return base.tolist()


# ------------------------------------------------------------------ DistributedDataParallel

def mlp(sg):
    return sg.nn.Sequential(sg.nn.Linear(6, 8), sg.nn.Tanh(), sg.nn.Linear(8, 4))


def global_batch(sg, step, size, micro=0):
    """The global batch of ``step`` (and micro-batch ``micro``): every rank and the
    single-process oracle draw the same one."""
    g = sg.Generator().manual_seed(1000 + 10 * step + micro)
    return sg.randn(LOCAL_BATCH * size, 6, generator=g), sg.randint(0, 4, (LOCAL_BATCH * size,), generator=g)


def ddp_run(sg, rank, size, micro_batches=1, **options):
    """Train ``mlp`` wrapped in DDP for DDP_STEPS steps on this rank's slice of each global
    batch; the parameters right after wrapping and at the end."""
    sg.manual_seed(100 + rank)  # replicas start apart: the wrap must make them equal
    model = mlp(sg)
    ddp = sg.nn.parallel.DistributedDataParallel(model, **options)
    start = [p.tolist() for p in model.parameters()]
    opt = sg.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    mine = slice(rank * LOCAL_BATCH, (rank + 1) * LOCAL_BATCH)
    for step in range(DDP_STEPS):
        opt.zero_grad()
        for m in range(micro_batches):
            x, y = global_batch(sg, step, size, m)
            x, y = x[mine], y[mine]  # this rank's rows: views inside the global batch's storage
            if m < micro_batches - 1:
                with ddp.no_sync():
                    sg.nn.functional.cross_entropy(ddp(x), y).backward()
            else:
                sg.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return {"start": start, "end": [p.tolist() for p in model.parameters()]}


def two_of_three(sg):
    """A model with a layer its forward never uses."""
    class TwoOfThree(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.unused = sg.nn.Linear(6, 5), sg.nn.Linear(5, 4), sg.nn.Linear(4, 4)

        def forward(self, x):
            return self.b(self.a(x).relu())
    sg.manual_seed(7)
    return TwoOfThree()


def local_batch(sg, rank, step):
    """Rank ``rank``'s own batch of ``step`` (three samples)."""
    g = sg.Generator().manual_seed(50 + rank + 10 * step)
    return sg.randn(3, 6, generator=g), sg.randint(0, 4, (3,), generator=g)


def unused_parameters(sg, rank, find):
    model = two_of_three(sg)
    ddp = sg.nn.parallel.DistributedDataParallel(model, find_unused_parameters=find)
    opt = sg.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(2):
        x, y = local_batch(sg, rank, step)
        opt.zero_grad()
        sg.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    # the unused layer's gradients stay None (no rank had one), as PyTorch leaves them
    return [p.tolist() for p in model.parameters()] + [[p.grad is None for p in model.unused.parameters()]]


def mismatched(sg, rank):
    sg.nn.parallel.DistributedDataParallel(sg.nn.Linear(3, 4 + rank))


def ddp(sg, rank, size):
    return {"ddp/buckets": attempt(lambda: ddp_run(sg, rank, size, bucket_cap_mb=0.0001)),
            "ddp/one_bucket_after_backward": attempt(lambda: ddp_run(sg, rank, size, overlap=False)),
            "ddp/no_sync": attempt(lambda: ddp_run(sg, rank, size, micro_batches=2, bucket_cap_mb=0.0001)),
            "ddp/unused_found": attempt(lambda: unused_parameters(sg, rank, True)),
            "ddp/unused_not_found": attempt(lambda: unused_parameters(sg, rank, False)),
            "ddp/mismatched": attempt(lambda: mismatched(sg, rank))}


def main():
    mode, out, stages = sys.argv[1], sys.argv[2], sys.argv[3:]
    sg, _ = load(stages[0])
    d = sg.distributed
    if mode == "raise":
        d.init_process_group()
        if d.get_rank() == 1:
            raise ValueError("rank one broke")
        d.all_reduce(sg.ones(3))
        return
    if mode == "hang":
        d.init_process_group(timeout=1.5)
        if d.get_rank() == 1:
            time.sleep(60)
        d.all_reduce(sg.ones(3))
        return
    d.init_process_group()
    rank, size = d.get_rank(), d.get_world_size()
    results = {}
    for name in stages:
        started = time.perf_counter()
        try:
            sg, lacks = load(name)
            results[name] = {**collectives(sg, lacks, rank, size), **ddp(sg, rank, size)}
        except Exception:  # noqa: BLE001  (the test shows it)
            results[name] = {"crashed": traceback.format_exc()}
        results[name]["seconds"] = time.perf_counter() - started
    with open(f"{out}/rank{rank}.json", "w") as f:
        json.dump(results, f)
    d.destroy_process_group()


if __name__ == "__main__":
    main()
