"""``sg.distributed``, ``DistributedDataParallel`` and ``DistributedSampler``.

The collectives and DDP run in real MPI jobs of two and three ranks on this machine: one
``mpirun`` per world size runs ``distributed_worker.py`` over every stage under test, and
each rank reports what it computed as JSON. Each collective is then checked, per stage,
against its definition computed in NumPy from every rank's input; DDP's parameters
against each other (identical on every rank) and against one process training on the
global batch. Two more jobs check that a rank that fails, or never arrives, ends the job
with a message instead of a hang. Without Open MPI and mpi4py these tests skip, saying so.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stagegrad import mpi

from . import distributed_worker as W
from .conftest import _selected
from .oracle import need_torch

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("distributed_worker.py")
# one worker runs this file: its MPI jobs are made once, and two at once would share the cores
pytestmark = pytest.mark.xdist_group("distributed")
WORLDS = (2, 3)
JOB_TIMEOUT = 120  # seconds: a job that runs longer has hung, and is killed


def _mpi_missing():
    """Why MPI jobs cannot run here, or None."""
    from stage0_python import distributed
    if not distributed.is_available():
        return distributed.unavailable_reason()
    if mpi.mpirun_path() is None:
        return "mpirun is not on PATH (Debian: apt-get install openmpi-bin)"
    return None


needs_mpi = pytest.mark.skipif(_mpi_missing() is not None, reason=f"MPI is not available: {_mpi_missing()}")


def _job(n, *args, timeout=JOB_TIMEOUT):
    """Run the worker as ``n`` ranks; the finished process (output captured)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")  # quiets the Vulkan loader of stage 4's webgpu device
    cmd = mpi.mpirun_command(n, [sys.executable, str(WORKER), *args])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT,
                          check=False)


@pytest.fixture(scope="module")
def jobs(request, tmp_path_factory):
    """{world size: [rank 0's results, rank 1's, ...]}, each {stage: {case: result}}."""
    if _mpi_missing():
        pytest.skip(f"MPI is not available: {_mpi_missing()}")
    stages = _selected(request.config)
    out = {}
    for n in WORLDS:
        folder = tmp_path_factory.mktemp(f"world{n}")
        proc = _job(n, "all", str(folder), *stages)
        assert proc.returncode == 0, f"mpirun -n {n} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
        out[n] = [json.loads((folder / f"rank{r}.json").read_text()) for r in range(n)]
    return out


@pytest.fixture
def stage_name(request):
    return request.node.callspec.params["sg"]


def _results(jobs, n, stage_name, case):
    """Every rank's result of ``case``: a list, one per rank."""
    per_rank = [ranks[stage_name] for ranks in jobs[n]]
    for r, results in enumerate(per_rank):
        assert "crashed" not in results, f"rank {r} crashed on {stage_name}:\n{results['crashed']}"
    return [results[case] for results in per_rank]


def _ok(result):
    assert "ok" in result, f"{result['error']}: {result['message']}"
    return result["ok"]


# ------------------------------------------------------------------ the definitions

def rank_values(dtype, rank, shape=(4, 6)):
    """What ``distributed_worker.rank_values`` gives rank ``rank``, in NumPy."""
    x = np.arange(int(np.prod(shape))).reshape(shape) % 7
    return (x * (rank + 1) + rank).astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)


REDUCE = {"SUM": lambda xs: np.sum(xs, axis=0), "AVG": lambda xs: np.mean(xs, axis=0),
          "PRODUCT": lambda xs: np.prod(xs, axis=0), "MIN": lambda xs: np.min(xs, axis=0),
          "MAX": lambda xs: np.max(xs, axis=0)}


def _check_each_rank(results, expected):
    for r, res in enumerate(results):
        got = _ok(res)
        want = expected(r) if callable(expected) else expected
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                                   rtol=1e-6, err_msg=f"rank {r}")


# ------------------------------------------------------------------ collectives

@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("op", list(REDUCE))
@pytest.mark.parametrize("dtype", W.FLOATS + W.INTS)
def test_all_reduce(sg, jobs, stage_name, n, op, dtype):
    if dtype in sg.LACKS:
        pytest.skip(f"{stage_name} lacks {dtype}")
    results = _results(jobs, n, stage_name, f"all_reduce/{op}/{dtype}")
    if op == "AVG" and dtype in W.INTS:  # as PyTorch: the mean of integers is refused
        for res in results:
            assert res["error"] == "TypeError" and "AVG" in res["message"]
        return
    _check_each_rank(results, REDUCE[op]([rank_values(dtype, r) for r in range(n)]))


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_all_reduce_half_precision(sg, jobs, stage_name, n, dtype):
    if dtype in sg.LACKS or not hasattr(sg, dtype):
        pytest.skip(f"{stage_name} lacks {dtype}")
    _check_each_rank(_results(jobs, n, stage_name, f"all_reduce/SUM/{dtype}"),
                     sum(rank_values(dtype, r) for r in range(n)))


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("op", ["MAX", "MIN"])
def test_all_reduce_bool_is_logical(sg, jobs, stage_name, n, op):
    flags = [rank_values("int64", r) % 2 == 1 for r in range(n)]
    want = np.any(flags, axis=0) if op == "MAX" else np.all(flags, axis=0)
    _check_each_rank(_results(jobs, n, stage_name, f"all_reduce/{op}/bool"), want.astype(int))


def _replaced(rank, n, columns=None, rows=None, source=None):
    """Rank ``rank``'s base (4, 6) with some rows or columns replaced by the sum over the
    ranks (or by rank ``source``'s values)."""
    base = rank_values("float32", rank)
    new = (rank_values("float32", source) if source is not None
           else sum(rank_values("float32", r) for r in range(n)))
    if rows is not None:
        base[rows] = new[rows]
    else:
        base[:, columns] = new[:, columns]
    return base


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("case", ["view/rows", "view/strided", "view/broadcast"])
def test_collectives_write_through_views(sg, jobs, stage_name, n, case):
    """A contiguous view at an offset (written in place), a non-contiguous one (through a
    copy): either way only the view's elements of the base change."""
    results = _results(jobs, n, stage_name, case)
    if "views" in sg.LACKS:  # the view is a copy there: writing into it is refused, as for copy_
        for r, res in enumerate(results):
            if case == "view/broadcast" and r == n - 1:  # the source only reads
                _check_each_rank([res], rank_values("float32", r))
            else:
                assert res["error"] == "CapabilityError", res
        return
    expected = {"view/rows": lambda r: _replaced(r, n, rows=slice(1, 3)),
                "view/strided": lambda r: _replaced(r, n, columns=[1, 3]),
                "view/broadcast": lambda r: _replaced(r, n, columns=[0, 2, 4], source=n - 1)}[case]
    _check_each_rank(results, expected)


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
def test_all_reduce_of_a_parameter_and_the_async_collectives(sg, jobs, stage_name, n):
    weights = []
    for r in range(n):
        sg.manual_seed(r)
        weights.append(np.array(sg.nn.Linear(3, 2).weight.tolist()))
    for r, res in enumerate(_results(jobs, n, stage_name, "all_reduce/parameter")):
        got, requires_grad = _ok(res)
        np.testing.assert_array_equal(np.array(got, dtype=np.float32),
                                      np.max(weights, axis=0).astype(np.float32))
        assert requires_grad
    for res in _results(jobs, n, stage_name, "all_reduce/async"):
        got, completed = _ok(res)
        np.testing.assert_array_equal(got, sum(rank_values("float32", r) for r in range(n)))
        assert completed
    for res in _results(jobs, n, stage_name, "async/all_gather+broadcast"):
        gathered, sent = _ok(res)
        np.testing.assert_array_equal(gathered, [rank_values("float32", r, (2, 3)) for r in range(n)])
        np.testing.assert_array_equal(sent, rank_values("int64", 0))


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_broadcast(sg, jobs, stage_name, n, dtype):
    _check_each_rank(_results(jobs, n, stage_name, f"broadcast/{dtype}"), rank_values(dtype, n - 1))


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
def test_all_gather(sg, jobs, stage_name, n):
    _check_each_rank(_results(jobs, n, stage_name, "all_gather/list"),
                     [rank_values("float32", r, (2, 3)) for r in range(n)])
    _check_each_rank(_results(jobs, n, stage_name, "all_gather/tensor"),
                     np.concatenate([rank_values("int64", r, (2, 3)) for r in range(n)]))


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("op", ["SUM", "AVG", "MAX"])
def test_reduce_scatter(sg, jobs, stage_name, n, op):
    _check_each_rank(_results(jobs, n, stage_name, f"reduce_scatter/list/{op}"),
                     lambda r: REDUCE[op]([rank_values("float32", s, (2, 3)) * (r + 1) for s in range(n)]))
    whole = REDUCE[op]([rank_values("float32", s, (2 * n, 3)) for s in range(n)])
    _check_each_rank(_results(jobs, n, stage_name, f"reduce_scatter/tensor/{op}"),
                     lambda r: whole[2 * r:2 * r + 2])


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
def test_rank_world_size_and_barrier(sg, jobs, stage_name, n):
    assert [_ok(res) for res in _results(jobs, n, stage_name, "rank")] == [[r, n, "mpi"] for r in range(n)]
    assert [_ok(res) for res in _results(jobs, n, stage_name, "barrier")] == [None] * n


# ------------------------------------------------------------------ DistributedDataParallel

def _single_process(sg, n, micro_batches):
    """The oracle: one process training rank 0's initial model on the whole global batch."""
    sg.manual_seed(100)
    model = W.mlp(sg)
    opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(W.DDP_STEPS):
        opt.zero_grad()
        for m in range(micro_batches):
            x, y = W.global_batch(sg, step, n, m)
            sg.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.tolist() for p in model.parameters()]


def _assert_replicas_equal(values):
    for r, v in enumerate(values[1:], 1):
        for a, b in zip(values[0], v):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a),
                                          err_msg=f"rank {r} differs from rank 0")


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("case, micro_batches", [("ddp/buckets", 1), ("ddp/one_bucket_after_backward", 1),
                                                 ("ddp/no_sync", 2)])
def test_ddp_matches_one_process_on_the_global_batch(sg, jobs, stage_name, n, case, micro_batches):
    """After the wrap every replica holds rank 0's initial parameters; after the steps,
    every rank holds the same parameters, those of one process that trained on the
    concatenated batches (with ``no_sync``: on both micro-batches, accumulated)."""
    runs = [_ok(res) for res in _results(jobs, n, stage_name, case)]
    sg.manual_seed(100)
    _assert_replicas_equal([[p.tolist() for p in W.mlp(sg).parameters()]] + [run["start"] for run in runs])
    _assert_replicas_equal([run["end"] for run in runs])
    want = _single_process(sg, n, micro_batches)
    for got, expected in zip(runs[0]["end"], want):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-6)


@needs_mpi
@pytest.mark.parametrize("n", WORLDS)
def test_ddp_unused_parameters(sg, jobs, stage_name, n):
    """With ``find_unused_parameters`` a layer outside the graph is no obstacle (it stays as
    it was, its ``.grad`` None); without it, the next forward says what to do, as
    PyTorch's does."""
    runs = [_ok(res) for res in _results(jobs, n, stage_name, "ddp/unused_found")]
    assert all(run.pop() == [True, True] for run in runs)  # the unused layer's .grad stays None
    _assert_replicas_equal(runs)
    model = W.two_of_three(sg)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        batches = [W.local_batch(sg, r, step) for r in range(n)]
        opt.zero_grad()
        sg.nn.functional.cross_entropy(model(sg.cat([x for x, _ in batches])),
                                       sg.cat([y for _, y in batches])).backward()
        opt.step()
    for got, expected in zip(runs[0], [p.tolist() for p in model.parameters()]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-6)
    for res in _results(jobs, n, stage_name, "ddp/unused_not_found"):
        assert res["error"] == "RuntimeError" and "find_unused_parameters=True" in res["message"]
        assert "unused.weight" in res["message"]


@needs_mpi
def test_ddp_refuses_different_models(sg, jobs, stage_name):
    for res in _results(jobs, 2, stage_name, "ddp/mismatched"):
        assert res["error"] == "ValueError" and "rank 1's model differs from rank 0's" in res["message"]


# ------------------------------------------------------------------ failures end the job

@needs_mpi
@pytest.mark.parametrize("mode, message", [
    ("raise", "rank 1 of 2 failed with ValueError: rank one broke; aborting the job"),
    ("hang", "rank 0 of 2: all_reduce did not complete within the timeout of 1.5 s"),
])
def test_a_failing_rank_ends_the_job_with_a_message(tmp_path, mode, message):
    """Rank 1 raises, or sleeps, while rank 0 waits in an all-reduce: the job must end,
    non-zero, saying which rank and why, long before the test's own timeout."""
    started = time.monotonic()
    proc = _job(2, mode, str(tmp_path), "stage0_python", timeout=60)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr[-3000:]
    assert time.monotonic() - started < 50  # the sleeping rank would sleep for 60 s


# ------------------------------------------------------------------ without a job

def test_collectives_need_the_group(sg):
    with pytest.raises(RuntimeError, match="init_process_group"):
        sg.distributed.all_reduce(sg.ones(2))
    assert not sg.distributed.is_initialized()
    with pytest.raises(ValueError, match="only 'mpi'"):
        sg.distributed.init_process_group("nccl")


def test_without_mpi4py_it_is_unavailable_and_says_why():
    code = ("import sys; sys.modules['mpi4py'] = None; import stage0_python as sg; "
            "print(sg.distributed.is_available()); print(sg.distributed.unavailable_reason())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.splitlines()
    assert out[0] == "False" and "mpi4py" in out[1] and "openmpi" in out[1]


# ------------------------------------------------------------------ DistributedSampler

SAMPLER_CASES = [dict(n=10, replicas=3, shuffle=False, drop_last=False),
                 dict(n=10, replicas=3, shuffle=False, drop_last=True),
                 dict(n=2, replicas=5, shuffle=False, drop_last=False),
                 dict(n=11, replicas=4, shuffle=True, drop_last=False),
                 dict(n=11, replicas=4, shuffle=True, drop_last=True),
                 dict(n=3, replicas=7, shuffle=True, drop_last=False)]


@pytest.mark.needs_torch
@pytest.mark.parametrize("case", SAMPLER_CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_distributed_sampler_matches_torch(sg, case, monkeypatch):
    """PyTorch's sampler, given this stage's permutation for the shuffle (the generators
    differ by design), yields the same indices on every rank, epoch after epoch."""
    torch = need_torch()
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    data = list(range(case["n"]))
    seed = 5

    def our_permutation(n, generator=None):
        epoch = generator.initial_seed() - seed
        return torch.tensor(sg.randperm(n, generator=sg.Generator().manual_seed(seed + epoch)).tolist())
    monkeypatch.setattr(torch, "randperm", our_permutation)
    for rank in range(case["replicas"]):
        ours = sg.utils.data.DistributedSampler(data, case["replicas"], rank, shuffle=case["shuffle"],
                                                seed=seed, drop_last=case["drop_last"])
        theirs = TorchSampler(data, case["replicas"], rank, shuffle=case["shuffle"], seed=seed,
                              drop_last=case["drop_last"])
        for epoch in range(3):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs), (rank, epoch)
            assert len(ours) == len(theirs)


def test_distributed_sampler_shares_cover_the_dataset(sg):
    shares = [list(sg.utils.data.DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    assert all(len(s) == 4 for s in shares)
    assert set(sum(shares, [])) == set(range(10))
    sampler = sg.utils.data.DistributedSampler(range(10), 3, 0, shuffle=False)
    loader = sg.utils.data.DataLoader(sg.utils.data.TensorDataset(sg.arange(10)), batch_size=2,
                                      sampler=sampler)
    assert [b[0].tolist() for b in loader] == [[0, 3], [6, 9]]
    with pytest.raises(ValueError, match="Invalid rank 3"):
        sg.utils.data.DistributedSampler(range(10), 3, 3)
    with pytest.raises(RuntimeError, match="init_process_group"):
        sg.utils.data.DistributedSampler(range(10))


# ------------------------------------------------------------------ stagegrad train --nproc

MNIST = ROOT / "stage0_python" / "datasets" / "sample" / "mnist"  # the slice the package carries
# a rank's program that stops the run as its second epoch starts, on every rank alike (a
# BaseException, as Ctrl-C is, so that the run does not take it for a failure to abort on)
STOP_AT_EPOCH_2 = """
import sys
from stagegrad import cli, training
from stagegrad.progress import Progress

class Stop(BaseException):
    pass

def progress(length, label, **kw):
    if label.startswith("epoch 2/"):
        raise Stop
    return Progress(length, label, **kw)

training.Progress = progress
try:
    cli.main(sys.argv[1:])
except Stop:
    pass
"""


def _train(*args, program=None, timeout=JOB_TIMEOUT):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "stagegrad", "train", *args] if program is None else \
        mpi.mpirun_command(2, [sys.executable, str(program), "train", *args])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT,
                          check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc


@needs_mpi
def test_train_nproc_2_prints_once_and_resumes_exactly(tmp_path):
    """``stagegrad train --nproc 2``: one header, one checkpoint line per epoch, one
    result (rank 0's); and a run stopped after epoch 1 and resumed (on two ranks again)
    ends with the very weights of an uninterrupted one."""
    from stagegrad import installed_stages
    stage = [s for s in installed_stages() if s != "stage4_gpu"][-1]
    sg = __import__(stage)
    base = ["--stage", stage, "--subset", "192", "--test-subset", "100", "--batch-size", "32",
            "--epochs", "2", "--data", str(MNIST)]
    straight, half = tmp_path / "straight.sgt", tmp_path / "half.sgt"
    proc = _train(*base, "--nproc", "2", "--save", str(straight))
    out = proc.stdout
    assert "mpirun -n 2" in out
    assert out.count("data: MNIST from") == 1 and out.count("2 processes (MPI)") == 1
    assert out.count("checkpoint written") == 2 and out.count("test accuracy") == 1
    assert proc.stderr.count("  test [") == 1  # the progress bars: rank 0's only
    stopper = tmp_path / "stop_at_epoch_2.py"
    stopper.write_text(STOP_AT_EPOCH_2)
    _train(*base, "--save", str(half), program=stopper)
    assert sg.load(str(half))["epoch"] == 1
    resumed = _train(*base, "--nproc", "2", "--resume", str(half), "--save", str(half))
    assert "resumed from" in resumed.stdout and resumed.stdout.count("checkpoint written") == 1
    a, b = sg.load(str(straight)), sg.load(str(half))
    assert a["epoch"] == b["epoch"] == 2
    for name, t in a["model"].items():
        assert t.tolist() == b["model"][name].tolist(), name


def test_train_nproc_refuses_what_runs_in_one_process():
    from stagegrad import train
    for extra in (["--stage", "torch"], ["--model", "gpt"]):
        args = train_args(*extra, "--nproc", "2")
        with pytest.raises(ValueError, match="one process"):
            train.run(args)


def train_args(*argv):
    import argparse

    from stagegrad import train
    p = argparse.ArgumentParser()
    train.add_arguments(p)
    return p.parse_args(list(argv))


# ------------------------------------------------------------------ the docs' example

@needs_mpi
def test_the_docs_example_trains_on_two_ranks(tmp_path):
    """docs/distributed.md's program, run as printed under ``mpirun -n 2``: rank 0 alone
    prints each epoch and writes the model."""
    import re

    from stagegrad import installed_stages
    page = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    assert code.startswith("import stage3_simd as sg")
    stage = [s for s in installed_stages() if s != "stage4_gpu"][-1]
    program = tmp_path / "train.py"
    program.write_text(code.replace("stage3_simd", stage, 1))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(mpi.mpirun_command(2, [sys.executable, str(program)]), capture_output=True,
                          text=True, timeout=JOB_TIMEOUT, env=env, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("epoch")]
    assert [line.split()[1] for line in lines] == ["0", "1", "2"] and all(
        line.endswith("on 2 ranks") for line in lines), proc.stdout
    sg = __import__(stage)
    assert set(sg.load(str(tmp_path / "model.sgt"))) == {"0.weight", "0.bias", "2.weight", "2.bias"}
