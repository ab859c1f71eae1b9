"""What ``test_cuda_graphs.py`` runs on stage 4's cuda device under the host emulation of
CuPy (``tools/cuda_on_host`` first on ``PYTHONPATH``): each check captures and replays CUDA
graphs and computes the same on the cpu device, the oracle. Prints one JSON object, one
entry per check: what it saw, or ``{"error": traceback}`` where it failed, so that each
test reports its own failure.

``python common_tests/cuda_graphs_worker.py [check ...]`` (all checks by default).
"""
import copy
import json
import sys
import tempfile
import traceback
from pathlib import Path

import stage4_gpu as sg

F = sg.nn.functional
DATA = Path(__file__).resolve().parents[1] / "stage0_python" / "datasets" / "sample" / "mnist"


def _mlp(seed):
    sg.manual_seed(seed)
    return sg.nn.Sequential(sg.nn.Linear(6, 16), sg.nn.ReLU(), sg.nn.Linear(16, 3))


def _batches(seed, count, rows=8):
    sg.manual_seed(seed)
    return [(sg.randn(rows, 6), sg.randint(0, 3, (rows,))) for _ in range(count)]


def _sgd(model):
    return sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _weights(model):
    return [p.detach().cpu().reshape(-1).tolist() for p in model.parameters()]


def step_replays():
    """An MLP's training step (cross-entropy, SGD with momentum) captured after two eager
    steps and replayed for four more batches, each copied into the static inputs: the
    losses and the weights against six eager steps on the cpu device."""
    cpu = _mlp(0)
    gpu = copy.deepcopy(cpu).to("cuda")
    cpu_opt, gpu_opt = _sgd(cpu), _sgd(gpu)
    batches = _batches(1, 6)
    eager = []
    for x, y in batches:
        cpu_opt.zero_grad()
        loss = F.cross_entropy(cpu(x), y)
        loss.backward()
        cpu_opt.step()
        eager.append(loss.item())
    replayed = []
    for x, y in batches[:2]:  # warm-up: eager on the device
        gpu_opt.zero_grad()
        loss = F.cross_entropy(gpu(x.cuda()), y.cuda())
        loss.backward()
        gpu_opt.step()
        replayed.append(loss.item())
    static_x, static_y = batches[2][0].cuda(), batches[2][1].cuda()
    gpu_opt.zero_grad(set_to_none=True)
    g = sg.cuda.CUDAGraph()
    with sg.cuda.graph(g):
        capturing = sg.cuda.is_current_stream_capturing()
        static_loss = F.cross_entropy(gpu(static_x), static_y)
        static_loss.backward()
        gpu_opt.step()
    for x, y in batches[2:]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        replayed.append(static_loss.item())
    return {"eager": eager, "replayed": replayed, "cpu_weights": _weights(cpu), "gpu_weights": _weights(gpu),
            "capturing_inside": capturing, "capturing_after": sg.cuda.is_current_stream_capturing()}


def _replayed(g, source, y):
    """``{"seen": [[values, y after a replay], ...]}`` for two sets of values written into
    ``source`` (the graph's input, or the memory it copies in from) before each replay."""
    seen = []
    for values in ([1.0, 2.0, 3.0, 4.0], [-5.0, 0.5, 8.0, 1e3]):
        source.copy_(sg.tensor(values))
        g.replay()
        seen.append([values, y.tolist()])
    return {"seen": seen}


def new_data():
    """A replay after new values are copied into the static input computes on them."""
    x = sg.zeros(4, device="cuda")
    g = sg.cuda.CUDAGraph()
    with sg.cuda.graph(g):
        y = x * 2 + 1
    return _replayed(g, x, y)


def private_pool():
    """Memory the capture allocated (intermediates freed inside it, the output) is not
    handed to eager allocations between replays: tensors of the same sizes allocated and
    filled after the capture keep their values across replays, and the output is right.
    A second graph sharing the first's pool reads its output."""
    n = 1000
    x = sg.arange(float(n), device="cuda")
    g = sg.cuda.CUDAGraph()
    with sg.cuda.graph(g):
        a = x * 3
        b = a + 1
        del a
        y = (b * 2).sum()  # 6 * sum(x) + 2n: exact in float32, whatever the order of the sum
        del b
    h = sg.cuda.CUDAGraph()
    with sg.cuda.graph(h, pool=g.pool()):
        z = y - 1
    out = {"rounds": [], "pool_shared": h.pool() is g.pool(), "handle": repr(sg.cuda.graph_pool_handle())}
    for round_ in range(3):
        junk = [sg.full((n,), 1e6, device="cuda") for _ in range(6)]
        x.copy_(sg.arange(float(n)) * (round_ + 1))
        g.replay()
        h.replay()
        want = 6.0 * (round_ + 1) * n * (n - 1) / 2 + 2 * n
        out["rounds"].append({"y": y.item(), "z": z.item(), "want": want,
                              "junk_kept": all(bool((j == 1e6).all().item()) for j in junk)})
        del junk
    return out


def _refusal(run):
    try:
        run()
    except RuntimeError as e:
        return str(e)
    return None


def pinned_input():
    """A copy from page-locked memory inside a capture reads that memory on every replay
    (as CUDA's and PyTorch's do): new values written into the pinned tensor reach the graph."""
    pinned = sg.zeros(4).pin_memory()
    x = sg.zeros(4, device="cuda")
    g = sg.cuda.CUDAGraph()
    with sg.cuda.graph(g):
        x.copy_(pinned, non_blocking=True)
        y = x * 2
    return _replayed(g, pinned, y)


def host_constants():
    """Tensors the frontend makes on the host inside a capture (from a list, ``arange``, a
    Python scalar) reach the device by a recorded copy of a snapshot the graph keeps: each
    replay computes with the capture's values, on the input's new ones."""
    x = sg.zeros(4, device="cuda")
    g = sg.cuda.CUDAGraph()
    with sg.cuda.graph(g):
        y = x + sg.tensor([1.0, 2.0, 3.0, 4.0], device="cuda") * sg.arange(4.0, device="cuda") + 0.5
    seen = []
    for values in ([0.0, 0.0, 0.0, 0.0], [10.0, 20.0, 30.0, 40.0]):
        x.copy_(sg.tensor(values))
        g.replay()
        seen.append([values, y.tolist()])
    return {"seen": seen}


def sync_refused():
    """A host synchronization inside a capture raises, naming it; the capture is ended and
    discarded, and the device and new captures work after."""
    x = sg.ones(4, device="cuda")
    out = {}

    def item():
        with sg.cuda.graph(g):
            (x * 2).sum().item()

    def synchronize():
        with sg.cuda.graph(g):
            x.add(1)
            sg.cuda.synchronize()

    def download():
        with sg.cuda.graph(g):
            (x * 2).cpu()

    for name, run in (("item", item), ("synchronize", synchronize), ("cpu", download)):
        g = sg.cuda.CUDAGraph()
        out[name] = {"error": _refusal(run), "capturing_after": sg.cuda.is_current_stream_capturing(),
                     "replay": _refusal(g.replay), "eager_after": (x * 3).tolist()}
    g = sg.cuda.CUDAGraph()  # by hand: capture_end says the capture was ended early
    g.capture_begin()
    y = x * 5
    out["by_hand"] = {"error": _refusal(lambda: y.tolist()), "capture_end": _refusal(g.capture_end)}
    g = sg.cuda.CUDAGraph()
    with sg.cuda.graph(g):
        y = x * 4
    g.replay()
    out["captured_after"] = y.tolist()
    out["replay_before_capture"] = _refusal(sg.cuda.CUDAGraph().replay)

    def nested():
        with sg.cuda.graph(sg.cuda.CUDAGraph()), sg.cuda.graph(sg.cuda.CUDAGraph()):
            pass
    out["nested"] = [_refusal(nested), sg.cuda.is_current_stream_capturing()]
    out["capture_twice"] = _refusal(lambda: g.capture_begin())
    g.reset()
    with sg.cuda.graph(g):
        y = x * 6
    g.replay()
    out["after_reset"] = y.tolist()
    # an optimizer whose step computes values from its count is refused, as PyTorch refuses one
    # that is not capturable; SGD's step is captured
    w = sg.ones(4, device="cuda", requires_grad=True)
    (w * 2).sum().backward()
    for name, opt in (("adamw", sg.optim.AdamW([w], lr=0.1)), ("sgd", sg.optim.SGD([w], lr=0.1))):
        def step():
            with sg.cuda.graph(sg.cuda.CUDAGraph()):
                opt.step()
        out[f"{name}_step"] = [_refusal(step), sg.cuda.is_current_stream_capturing()]
    return out


def null_launches():
    """In the null launch mode a capture records the step's launches without counting them
    as run, and each replay counts as many as an eager step launches (a mean squared error:
    cross-entropy's check of its targets launches in an eager step, not in a capture)."""
    model = _mlp(0).to("cuda")
    opt = _sgd(model)
    x = _batches(1, 1)[0][0].cuda()
    sg.manual_seed(4)
    y = sg.randn(8, 3, device="cuda")
    sg.cuda._set_launch_mode("null")
    try:
        counts = []
        for _ in range(2):  # the second: the optimizer's state exists, as in the captured step
            before = sg.cuda._launch_count()
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            counts.append(sg.cuda._launch_count() - before)
        opt.zero_grad(set_to_none=True)
        g = sg.cuda.CUDAGraph()
        before = sg.cuda._launch_count()
        with sg.cuda.graph(g):
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        captured = sg.cuda._launch_count() - before
        replays = []
        for _ in range(3):
            before = sg.cuda._launch_count()
            g.replay()
            replays.append(sg.cuda._launch_count() - before)
    finally:
        sg.cuda._set_launch_mode("driver")
    return {"eager": counts, "during_capture": captured, "replays": replays,
            "null_graph_in_driver_mode": _refusal(g.replay)}


def graphed_callables():
    """``make_graphed_callables``: a module trained for three steps through its graphed
    forward and backward, against the same module trained eagerly on the cpu device; a
    function of two tensors, one needing its gradient."""
    sg.manual_seed(2)
    cpu = sg.nn.Sequential(sg.nn.Linear(5, 8), sg.nn.Tanh(), sg.nn.Linear(8, 2))
    gpu = copy.deepcopy(cpu).to("cuda")
    sg.manual_seed(3)
    xs = [sg.randn(4, 5) for _ in range(3)]
    graphed = sg.cuda.make_graphed_callables(gpu, (xs[0].cuda(),))
    cpu_opt, gpu_opt = _sgd(cpu), _sgd(gpu)
    losses = {"cpu": [], "gpu": []}
    for x in xs:
        for model, opt, key, xx in ((cpu, cpu_opt, "cpu", x), (graphed, gpu_opt, "gpu", x.cuda())):
            opt.zero_grad()
            loss = (model(xx) ** 2).mean()
            loss.backward()
            opt.step()
            losses[key].append(loss.item())
    gpu.eval()
    cpu.eval()
    evaluated = {"cpu": cpu(xs[0]).tolist(), "gpu": gpu(xs[0].cuda()).tolist()}

    def f(a, b):
        return (a * b).sin(), a + b
    a0, b0 = sg.randn(3, device="cuda", requires_grad=True), sg.randn(3, device="cuda")
    gf = sg.cuda.make_graphed_callables(f, (a0, b0))
    a, b = sg.tensor([0.5, -1.0, 2.0], requires_grad=True), sg.tensor([1.5, 0.25, -3.0])
    u, v = f(a, b)
    (u.sum() + (v * v).sum()).backward()
    ga = a.detach().cuda().requires_grad_(True)
    gu, gv = gf(ga, b.cuda())
    (gu.sum() + (gv * gv).sum()).backward()
    return {"losses": losses, "weights": {"cpu": _weights(cpu), "gpu": _weights(gpu)}, "eval": evaluated,
            "function": {"cpu": [u.tolist(), v.tolist(), a.grad.tolist()],
                         "gpu": [gu.tolist(), gv.tolist(), ga.grad.tolist()]}}


def train_cli():
    """``stagegrad train --cuda-graph`` on the bundled MNIST slice, against the same run on
    the cpu device: 72 images in batches of 16 for two epochs (three eager steps, the
    capture, replays, and a last batch of 8 stepped eagerly each epoch), with SGD at a
    constant rate (the whole step captured) and with AdamW on the cosine schedule (forward
    and backward captured, the optimizer stepping eagerly)."""
    import argparse

    from stagegrad import train
    out = {}
    calls = {"capture_begin": 0, "replay": 0}

    def counting(name, method):
        def counted(self, *args, **kwargs):
            calls[name] += 1
            return method(self, *args, **kwargs)
        return counted
    for name in calls:  # counted, to see the graph made once and replayed for the rest
        setattr(sg.cuda.CUDAGraph, name, counting(name, getattr(sg.cuda.CUDAGraph, name)))
    optimizers = {"sgd": ["--optimizer", "sgd", "--constant-lr", "--lr", "0.05"], "adamw": ["--lr", "0.002"]}
    with tempfile.TemporaryDirectory() as tmp:
        for optimizer, options in optimizers.items():
            out[optimizer] = {}
            for name, graphed in (("eager", False), ("graphed", True)):
                calls.update(dict.fromkeys(calls, 0))
                p = argparse.ArgumentParser()
                train.add_arguments(p)
                save = str(Path(tmp) / f"{optimizer}-{name}.ckpt")
                argv = ["--stage", "stage4_gpu", "--data", str(DATA), "--subset", "72", "--test-subset", "40",
                        "--batch-size", "16", "--epochs", "2", "--save", save, *options]
                summary = train.run(p.parse_args(argv + (["--cuda-graph"] if graphed else [])))
                ckpt = sg.load(save, format="stagegrad")
                out[optimizer][name] = {
                    "final_loss": summary["final_loss"], "test_accuracy": summary["test_accuracy"],
                    "seen": summary["train_images_seen"], "graph_calls": dict(calls),
                    "weights": {k: t.cpu().reshape(-1).tolist() for k, t in ckpt["model"].items()}}
    return out


CHECKS = {f.__name__: f for f in (step_replays, new_data, pinned_input, private_pool, host_constants,
                                   sync_refused, null_launches, graphed_callables, train_cli)}

if __name__ == "__main__":
    assert sg.cuda.is_available(), sg.cuda.unavailable_reason()
    results = {}
    for name in sys.argv[1:] or CHECKS:
        try:
            results[name] = CHECKS[name]()
        except Exception:  # any failure: reported as this check's, the others still run
            results[name] = {"error": traceback.format_exc()}
    print(json.dumps(results))  # the last line: what it printed before is the programs' own
