"""Threads: a sweep from one to every core on stage 3, with Amdahl's law fitted and the
memory-bandwidth ceiling beside it."""
from pathlib import Path

from .. import machine
from ..formatting import pyplot
from ..measure import on_threads, seconds_per_call
from .common import stage3, titled


def amdahl_fit(threads, times):
    """The serial fraction s of Amdahl's law, T(p) = T(1) (s + (1 - s) / p), fitted by least
    squares to times measured on ``threads`` (which must include 1): in [0, 1], or None when
    only one thread count was measured."""
    t1 = times[list(threads).index(1)]
    xs = [1 - 1 / p for p in threads]
    ys = [t / t1 - 1 / p for p, t in zip(threads, times)]
    den = sum(x * x for x in xs)
    if den == 0:
        return None
    return min(1.0, max(0.0, sum(x * y for x, y in zip(xs, ys)) / den))


@titled("Threads: a sweep from one to every core, with Amdahl's law fitted")
def threads(quick, out=None):
    """Stage 3 runs a GEMM, an add and a sum (large enough to stream from memory) and the
    MLP and CNN training steps on 1 to N threads. Each speedup is fitted with Amdahl's law,
    whose serial fraction s says how much of the work did not parallelise (a GEMM should be
    near 0; the small steps pay per-kernel fork and join). The plot's ceiling is what the
    memory system carries: N copies at once (each on its own thread) against one, measured in
    the same run. The add moves bytes as a copy does, so it should stay under that line; the
    sum only reads, and a read stream can go faster than a copy's."""
    sg = stage3()
    from .. import models_bench, workloads
    impl = workloads.Impl("stage3_simd")
    usable = machine.cores()["usable"]
    counts = sorted({1, usable}) if quick else list(range(1, usable + 1))
    n, gemm = (1 << 20, 256) if quick else (1 << 24, 1024)
    cnn = models_bench.MODELS["cnn"]
    net = cnn.build(sg)
    opt = sg.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = (sg.from_numpy(a) for a in models_bench.batch_data(cnn, 64))

    def cnn_step():
        loss = sg.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    work = {f"matmul {gemm}x{gemm}": workloads.build_matmul(impl, gemm),
            f"add of {n >> 20}M floats": workloads.build_add(impl, n),
            f"sum of {n >> 20}M floats": workloads.build_sum(impl, n),
            "MLP step (batch 64)": workloads.build_mlp_step(impl, workloads.MLP_BATCH),
            "CNN step (batch 64)": cnn_step}
    repeats = 3 if quick else 10
    times = {name: [] for name in work}
    try:
        for p in counts:
            sg.set_num_threads(p)
            for name, fn in work.items():
                times[name].append(seconds_per_call(fn, repeats))
    finally:
        sg.set_num_threads(1)
    bandwidth = [_copies_on_threads(sg, p, n, repeats) for p in counts]
    ceiling = [b / bandwidth[0] for b in bandwidth]
    rows, fits = [], {}
    for name, ts in times.items():
        fits[name] = amdahl_fit(counts, ts)
        serial = ("-" if fits[name] is None else "1 (slower on more threads)" if ts[-1] > ts[0]
                  else f"{fits[name]:.3f}")
        rows.append([name, f"{ts[0] * 1e3:.3f}"] + [f"{ts[0] / t:.2f}x" for t in ts] + [serial])
    rows.append(["copies at once: GB/s (the ceiling)", "-"]
                + [f"{b:.1f} ({c:.2f}x)" for b, c in zip(bandwidth, ceiling)] + ["-"])
    figure = None
    if out is not None:
        figure = _plot_threads(counts, times, fits, ceiling, Path(out) / "systems_threads.png")
    return {"head": ["workload", "1 thread ms"] + [f"{p} thread{'s' * (p > 1)}" for p in counts]
            + ["serial fraction s"], "rows": rows, "figure": figure,
            "data": {"threads": counts, "seconds": times, "bandwidth_gbs": bandwidth, "serial": fits},
            "note": f"speedup over one thread, best of {repeats}; {usable} usable cores"}


def _copies_on_threads(sg, p, n, repeats):
    """GB/s of ``p`` one-thread copies of ``n`` floats at once, each its own arrays in its own
    Python thread (the kernels release the GIL): what the memory system carries."""
    pairs = [(sg.ones(n), sg.empty(n)) for _ in range(p)]

    def rate(i):
        src, dst = pairs[i]
        return 2 * n * 4 / seconds_per_call(lambda: dst.copy_(src), repeats) / 1e9
    return on_threads(rate, p)


def _plot_threads(counts, times, fits, ceiling, path):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    grid = [1 + i * (counts[-1] - 1) / 50 for i in range(51)]
    ax.plot(counts, counts, ":", color="grey", label="ideal")
    ax.plot(counts, ceiling, "-", color="black", linewidth=2,
            label="memory-bandwidth ceiling (copies at once)")
    for (name, ts), color in zip(times.items(), plt.rcParams["axes.prop_cycle"].by_key()["color"]):
        ax.plot(counts, [ts[0] / t for t in ts], "o", color=color, label=name)
        s = fits[name]
        if s is not None:
            ax.plot(grid, [1 / (s + (1 - s) / p) for p in grid], "--", color=color, linewidth=1)
    ax.set_xlabel("threads")
    ax.set_ylabel("speedup over one thread")
    ax.set_xticks(counts)
    ax.set_title("Stage 3 on this machine; dashed: Amdahl's law fitted")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name
