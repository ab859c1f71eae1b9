"""What stage 1 (strided storage, views, a buffer pool) buys over stage 0, measured here.

    .venv/bin/python tools/measure_stage1.py [--steps 200] [--quick]

Prints, to stdout:
1. movement ops on a 1000x1000 float32 tensor, stage 0 vs stage 1, and stage 1 at other
   sizes (a view should cost the same whatever the size);
2. contiguous elementwise add (1e5) and a 128x128 matmul, stage 0 vs stage 1, and stage 1
   with its pool switched off;
3. an MNIST MLP (784-128-10, batch 64, AdamW) trained on stage 1: the pool's hit rate
   after the first step, and the peak bytes in use at step 20 and at the last step.

Each timing is the best of several repeats, with stage 0 and stage 1 run alternately so
that load from other processes falls on both; ratios are within this one run.
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from stage_timing import best, fmt  # noqa: E402

import stage0_python as s0  # noqa: E402
import stage1_strides as s1  # noqa: E402


def square(sg, n):
    return sg.arange(n * n, dtype=sg.float32).reshape(n, n)


MOVES = {
    "transpose x.t()": lambda x: x.t(),
    "expand row to (n, n)": lambda x: x[:1].expand(x.shape[0], x.shape[1]),
    "slice x[::2, 1::3]": lambda x: x[::2, 1::3],
    "reshape (n, n) -> (n/2, 2n)": lambda x: x.reshape(x.shape[0] // 2, -1),
    "narrow rows, flatten": lambda x: x[100:600].reshape(-1),
    "transpose then reshape (a copy)": lambda x: x.t().reshape(-1),
}


def movement(quick):
    print("## 1. Movement ops, float32 1000x1000 (best of several; stage 0 copies, stage 1 makes views)\n")
    print("| op | stage 0 | stage 1 | speed-up | stage 1 at 100x100 | stage 1 at 3000x3000 |")
    print("|---|---|---|---|---|---|")
    x0, x1 = square(s0, 1000), square(s1, 1000)
    small, big = square(s1, 100), square(s1, 3000)
    for name, f in MOVES.items():
        t0 = best(lambda: f(x0), repeat=2 if quick else 3)
        t1 = best(lambda: f(x1), repeat=5)
        ts = best(lambda: f(small), repeat=5)
        tb = best(lambda: f(big), repeat=2 if quick else 3)
        r = t0 / t1
        print(f"| {name} | {fmt(t0)} | {fmt(t1)} | {r:,.0f}x | {fmt(ts)} | {fmt(tb)} |" if r >= 10 else
              f"| {name} | {fmt(t0)} | {fmt(t1)} | {r:.2f}x | {fmt(ts)} | {fmt(tb)} |")
    print()


def kernels(quick):
    print("## 2. Contiguous kernels (best of several, stages alternating)\n")
    print("| workload | stage 0 | stage 1 | stage 1 / stage 0 | stage 1, pool off |")
    print("|---|---|---|---|---|")
    cases = [
        ("add, 1e5 float32", lambda sg: (sg.randn(100000), sg.randn(100000)), lambda a, b: a + b, 10),
        ("add, 4 float32 (per-op overhead)", lambda sg: (sg.randn(4), sg.randn(4)),
         lambda a, b: a + b, 20000),
        ("matmul 128x128 @ 128x128", lambda sg: (sg.randn(128, 128), sg.randn(128, 128)),
         lambda a, b: a @ b, 2),
        ("linear x @ w.t(), 64x784 @ (128x784).t()", lambda sg: (sg.randn(64, 784), sg.randn(128, 784)),
         lambda a, b: a @ b.t(), 1),
    ]
    rounds = 2 if quick else 4
    for name, make, op, number in cases:
        args = {sg: make(sg) for sg in (s0, s1)}
        times = {s0: [], s1: [], "off": []}
        for _ in range(rounds):
            times[s0].append(best(lambda: op(*args[s0]), 2, number))
            times[s1].append(best(lambda: op(*args[s1]), 2, number))
            s1.memory.set_pool_enabled(False)
            times["off"].append(best(lambda: op(*args[s1]), 2, number))
            s1.memory.set_pool_enabled(True)
        t0, t1, toff = min(times[s0]), min(times[s1]), min(times["off"])
        print(f"| {name} | {fmt(t0)} | {fmt(t1)} | {t1 / t0:.2f} | {fmt(toff)} |")
    print()


def mnist_batches(sg, batch, steps):
    try:
        ds = sg.datasets.MNIST(train=True)
    except (FileNotFoundError, AttributeError) as e:
        print(f"(MNIST not found: {e}; random data of the same shape instead)\n")
        gen = sg.Generator(0)

        def fake(i):
            return sg.rand(batch, 784, generator=gen), sg.randint(0, 10, (batch,), generator=gen)
        return fake, "random data"
    n = len(ds)

    def get(i):
        idx = [(i * batch + k) % n for k in range(batch)]
        x, y = ds.get_batch(idx)
        return x.reshape(batch, 784), y
    return get, f"MNIST training images from {ds.root}"


def train(sg, steps, batch=64, report=True):
    sg.manual_seed(0)
    model = sg.nn.Sequential(sg.nn.Linear(784, 128), sg.nn.ReLU(), sg.nn.Linear(128, 10))
    opt = sg.optim.AdamW(model.parameters(), lr=1e-3)
    get, source = mnist_batches(sg, batch, steps)
    mem = sg.memory
    marks = {}
    t_start = None
    for step in range(1, steps + 1):
        x, y = get(step - 1)
        loss = sg.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 1:
            first_loss = loss.item()
            mem.reset_stats()  # count from the end of the first step
            t_start = time.perf_counter()
        if step in (20, steps):
            marks[step] = dict(mem.stats(), loss=loss.item())
    per_step = (time.perf_counter() - t_start) / max(steps - 1, 1)
    return source, first_loss, marks, per_step


def mnist(steps):
    print(f"## 3. MNIST MLP 784-128-10, batch 64, AdamW, {steps} steps on stage 1\n")
    source, first, marks, per_step = train(s1, steps)
    last = marks[steps]
    print(f"data: {source}")
    print(f"loss: {first:.4f} after step 1, {last['loss']:.4f} after step {steps}; "
          f"{fmt(per_step)} per step")
    print(f"allocations after step 1: {last['allocations']:,}, of which the pool served "
          f"{last['hits']:,} ({100 * last['hits'] / max(last['allocations'], 1):.1f}%)")
    for step in sorted(marks):
        m = marks[step]
        print(f"step {step}: peak bytes in use since step 1 {m['peak_bytes_in_use']:,}, in use "
              f"{m['bytes_in_use']:,}, held by the pool {m['bytes_held_by_pool']:,}")
    grew = marks[steps]["peak_bytes_in_use"] - marks[20]["peak_bytes_in_use"] if 20 in marks else 0
    print(f"peak growth from step 20 to step {steps}: {grew:,} bytes\n")
    s1.memory.set_pool_enabled(False)
    _, _, off, off_step = train(s1, 11)
    s1.memory.set_pool_enabled(True)
    _, _, on, on_step = train(s1, 11)
    _, _, _, s0_step = train(s0, 6)
    print(f"step time (10 steps after the first): stage 1 pool on {fmt(on_step)}, pool off "
          f"{fmt(off_step)}; stage 0 {fmt(s0_step)} (5 steps)\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--quick", action="store_true", help="fewer repeats, 30 training steps")
    p.add_argument("--only", choices=("movement", "kernels", "mnist"))
    args = p.parse_args()
    steps = 30 if args.quick else args.steps
    print(f"# stage 1 vs stage 0, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs\n")
    if args.only in (None, "movement"):
        movement(args.quick)
    if args.only in (None, "kernels"):
        kernels(args.quick)
    if args.only in (None, "mnist"):
        mnist(steps)


if __name__ == "__main__":
    main()
