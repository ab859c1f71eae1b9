"""What stage 2 (Cython storage and kernels) buys, measured here against stage 1, NumPy
and PyTorch, single-threaded.

    .venv/bin/python tools/measure_stage2.py [--quick]

Prints, to stdout, as Markdown tables:
1. matmul 128x128 (stage 1 vs stage 2) and 512x512 (stage 2 vs NumPy, GFLOP/s);
2. elementwise add of 1e6 float32 (stage 2 vs NumPy);
3. per-op overhead of ``a + b`` on 4-element tensors, with and without grad (vs PyTorch);
4. an MNIST MLP training step (784-128-10, batch 64, AdamW), stage 2 vs PyTorch.

Each timing is the best of several repeats; the two sides of a ratio are timed
alternately in this one run, so load from other processes falls on both. NumPy and
PyTorch are peers here, never engines of a stage. Training to accuracy is a separate
command: ``stagegrad train --stage 2 --model mlp --epochs 5 --subset all``.
"""
import argparse
import os
import sys

# single thread for the peers too: set before NumPy and PyTorch load their BLAS
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
from stage_timing import best, fmt  # noqa: E402

import stage1_strides as s1  # noqa: E402
import stage2_cython as s2  # noqa: E402

try:
    import torch  # noqa: E402
    torch.set_num_threads(1)
except ImportError:
    torch = None


def alternate(fns, rounds=3, repeat=3):
    """Time each function in turns, keeping each one's best: a load spike hits all."""
    out = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, f in enumerate(fns):
            out[i] = min(out[i], best(f, repeat=repeat))
    return out


def stage_tensor(sg, arr):
    return sg.tensor(arr.tolist(), dtype=getattr(sg, str(arr.dtype)))


def matmul(quick):
    print("## 1. Matmul, float32, single thread\n")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128), dtype=np.float32) for _ in range(2))
    x1, y1, x2, y2 = stage_tensor(s1, a), stage_tensor(s1, b), stage_tensor(s2, a), stage_tensor(s2, b)
    t1 = best(lambda: x1 @ y1, repeat=2 if quick else 3, number=1)
    t2, tn = alternate([lambda: x2 @ y2, lambda: a @ b])
    flop = 2 * 128 ** 3
    print("| size | stage 1 | stage 2 | NumPy | stage 2 / stage 1 speed-up | stage 2 GFLOP/s | NumPy GFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    print(f"| 128 | {fmt(t1)} | {fmt(t2)} | {fmt(tn)} | {t1 / t2:,.0f}x | {flop / t2 / 1e9:.1f} | "
          f"{flop / tn / 1e9:.1f} |")
    a, b = (rng.standard_normal((512, 512), dtype=np.float32) for _ in range(2))
    x2, y2 = stage_tensor(s2, a), stage_tensor(s2, b)
    t2, tn = alternate([lambda: x2 @ y2, lambda: a @ b])
    flop = 2 * 512 ** 3
    print(f"| 512 | - | {fmt(t2)} | {fmt(tn)} | - | {flop / t2 / 1e9:.1f} | {flop / tn / 1e9:.1f} |")
    print(f"\nstage 2 reaches {100 * tn / t2:.0f}% of NumPy's GFLOP/s at 512x512.\n")


def elementwise():
    print("## 2. Elementwise add, 1e6 float32\n")
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(10 ** 6, dtype=np.float32) for _ in range(2))
    x, y = stage_tensor(s2, a), stage_tensor(s2, b)
    t2, tn = alternate([lambda: x + y, lambda: a + b])
    print("| stage 2 | NumPy | stage 2 / NumPy |\n|---|---|---|")
    print(f"| {fmt(t2)} | {fmt(tn)} | {t2 / tn:.2f}x |\n")


def overhead():
    print("## 3. Per-op overhead: `a + b` on 4-element float32 tensors\n")
    a, b = s2.randn(4), s2.randn(4)
    ag = s2.randn(4, requires_grad=True)
    fns = [lambda: a + b, lambda: ag + b]
    if torch is not None:
        ta, tb = torch.randn(4), torch.randn(4)
        tg = torch.randn(4, requires_grad=True)
        fns += [lambda: ta + tb, lambda: tg + tb]
    times = alternate(fns)
    print("| | stage 2 | PyTorch | ratio |\n|---|---|---|---|")
    for k, label in enumerate(("without grad", "with grad")):
        pt = times[2 + k] if torch is not None else float("nan")
        print(f"| {label} | {fmt(times[k])} | {fmt(pt)} | {times[k] / pt:.1f}x |")
    print()


def mlp_step():
    print("## 4. MNIST MLP training step (784-128-10, batch 64, AdamW)\n")
    rng = np.random.default_rng(2)
    x = rng.random((64, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    s2.manual_seed(0)
    nn = s2.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = s2.optim.AdamW(model.parameters(), lr=1e-3)
    X, Y = stage_tensor(s2, x), s2.tensor(y.tolist())

    def step():
        loss = s2.functional.cross_entropy(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    fns = [step]
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                 torch.nn.Linear(128, 10))
        topt = torch.optim.AdamW(tm.parameters(), lr=1e-3)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)

        def tstep():
            loss = torch.nn.functional.cross_entropy(tm(tx), ty)
            topt.zero_grad()
            loss.backward()
            topt.step()
        fns.append(tstep)
    times = alternate(fns)
    pt = times[1] if torch is not None else float("nan")
    print("| stage 2 | PyTorch | stage 2 / PyTorch |\n|---|---|---|")
    print(f"| {fmt(times[0])} | {fmt(pt)} | {times[0] / pt:.2f}x |\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats of the slow stage-1 matmul")
    args = p.parse_args()
    matmul(args.quick)
    elementwise()
    overhead()
    mlp_step()


if __name__ == "__main__":
    main()
