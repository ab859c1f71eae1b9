"""The fixed workloads of the journey report and the benchmarks, on any implementation.

An *implementation* is a stage package (``stage0_python``, ...) or one of the two peers,
``numpy`` and ``torch``, measured in the same run for reference. Data are built with a
fixed seed in NumPy (the interop format) and converted once, outside the timed region,
so every implementation computes on identical inputs and starts from identical weights.

Each workload builds, for one implementation and one size, a zero-argument callable: one
timed call. Its FLOP and byte counts (compulsory traffic: each operand read once, each
result written once) place the result on the roofline.
"""
import importlib
import importlib.util
import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass

from . import STAGES, installed_stages, load_stage
from .measure import seconds_per_call

PEERS = {"numpy": "NumPy", "torch": "PyTorch"}
MLP_SHAPE = (784, 128, 10)
MLP_BATCH = 64
CONV = {"channels": 8, "out_channels": 16, "kernel": 3, "padding": 1, "hw": 28}  # batch is the size


class Unsupported(Exception):
    """The implementation cannot run this workload at all (not a matter of time)."""


class Impl:
    """One implementation: a stage or a peer, with a way to bring NumPy data into it.

    A stage with several GEMMs (stage 3: ``blas`` and ``own``) is one implementation per
    GEMM, named ``stage3_simd[blas]``; ``activate()`` selects its GEMM before it is
    measured. Workloads without a matrix product measure only the first of them."""

    def __init__(self, name):
        self.name = name
        self.package, _, gemm = name.partition("[")
        self.gemm = gemm.rstrip("]") or None
        self.kind = "peer" if self.package in PEERS else "stage"
        self.lib = importlib.import_module(self.package) if self.kind == "peer" else load_stage(self.package)
        number = {pkg: n for n, pkg in STAGES.items()}.get(self.package)
        self.base_label = PEERS.get(self.package) or f"stage {number}"
        self.label = self.base_label + (f" ({self.gemm} GEMM)" if self.gemm else "")
        self.first_gemm = self.gemm is None or self.gemm == gemms(self.package)[0]

    def __repr__(self):
        return f"Impl({self.name!r})"

    def activate(self):
        """Select this implementation's GEMM (a stage's choice is global)."""
        if self.gemm is not None:
            self.lib.backends.gemm = self.gemm

    def tensor(self, array, requires_grad=False):
        if self.kind == "peer" and self.name == "numpy":
            if requires_grad:
                raise Unsupported("NumPy has no autograd")
            return array.copy()
        # from_numpy shares memory (PyTorch's, and the stages' that can): a copy, so that an
        # in-place update never reaches the array the next implementation is given
        t = self.lib.from_numpy(array.copy())
        return t.requires_grad_() if requires_grad else t


def stage_packages():
    """The installed stages that are real packages: a folder without ``__init__.py`` (a
    stage being written) imports as an empty namespace package and is left out."""
    return [pkg for pkg in installed_stages() if getattr(sys.modules[pkg], "__file__", None)]


def gemms(package):
    """The GEMMs a stage can choose among (``backend.GEMMS``); empty for one."""
    if package in PEERS:
        return ()
    return tuple(getattr(load_stage(package).backend, "GEMMS", ()))


def implementations(stages=None, peers=True):
    """Names of the implementations to measure: the stages (default: every installed
    one, in order; a stage with several GEMMs once per GEMM), then the peers that are
    installed."""
    names = []
    for pkg in (stage_packages() if stages is None else stages):
        choices = gemms(pkg)
        names += [f"{pkg}[{g}]" for g in choices] if len(choices) > 1 else [pkg]
    if peers:  # found without importing: PyTorch alone takes seconds to import
        names += [peer for peer in PEERS if importlib.util.find_spec(peer) is not None]
    return names


def _rng(seed):
    import numpy as np
    return np.random.default_rng(seed)


def _normal(seed, *shape):
    import numpy as np
    return _rng(seed).standard_normal(shape, dtype=np.float32)


def _value(x):
    return float(x) if isinstance(x, float) else float(x.item())


# ------------------------------------------------------------------ builders

def build_add(impl, n):
    a, b = impl.tensor(_normal(1, n)), impl.tensor(_normal(2, n))
    return lambda: a + b


def build_sum(impl, n):
    a = impl.tensor(_normal(3, n))
    return lambda: a.sum()


def build_matmul(impl, n):
    a, b = impl.tensor(_normal(4, n, n)), impl.tensor(_normal(5, n, n))
    return lambda: a @ b


def build_overhead(impl, grad):
    a = impl.tensor(_normal(6, 4), requires_grad=grad == "grad")
    b = impl.tensor(_normal(7, 4))
    return lambda: a + b


def mlp_init(seed=0):
    """PyTorch's ``Linear`` initialisation, drawn once: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    import numpy as np
    rng = _rng(seed)
    out = {}
    for i, (fan_in, fan_out) in zip((0, 2), itertools.pairwise(MLP_SHAPE)):
        bound = 1 / np.sqrt(fan_in)
        out[f"{i}.weight"] = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
        out[f"{i}.bias"] = rng.uniform(-bound, bound, fan_out).astype(np.float32)
    return out


def mlp_trainer(impl, lr=1e-3):
    """``step(x, y) -> loss``: forward, cross-entropy, backward, AdamW, from fixed weights."""
    params = mlp_init()
    if impl.name == "numpy":
        from .numpy_peer import MLP
        return MLP(params, lr=lr).step
    nn = impl.lib.nn
    d_in, d_hidden, d_out = MLP_SHAPE
    model = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))
    model.load_state_dict({k: impl.tensor(v) for k, v in params.items()})
    opt = impl.lib.optim.AdamW(model.parameters(), lr=lr)
    cross_entropy = nn.functional.cross_entropy

    def step(x, y):
        loss = cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def _labels(impl, array):
    return array if impl.name == "numpy" else impl.lib.from_numpy(array)


def build_mlp_step(impl, batch):
    import numpy as np
    step = mlp_trainer(impl)
    x = impl.tensor(_normal(8, batch, MLP_SHAPE[0]))
    y = _labels(impl, _rng(9).integers(0, MLP_SHAPE[-1], batch).astype(np.int64))
    return lambda: step(x, y)


def build_conv(impl, batch, backward=True):
    """The convolution layer's forward and, by default, the backward of its sum."""
    c, o, k, p, hw = (CONV[key] for key in ("channels", "out_channels", "kernel", "padding", "hw"))
    x, w, b = _normal(10, batch, c, hw, hw), _normal(11, o, c, k, k) * 0.1, _normal(12, o) * 0.1
    if impl.name == "numpy":
        from .numpy_peer import conv2d_forward, conv2d_forward_backward
        if backward:
            return lambda: conv2d_forward_backward(x, w, b, p)
        return lambda: conv2d_forward(x, w, b, p)
    conv = impl.lib.nn.Conv2d(c, o, k, padding=p)
    conv.load_state_dict({"weight": impl.tensor(w), "bias": impl.tensor(b)})
    xt = impl.tensor(x, requires_grad=backward)

    def run():
        if not backward:
            return conv(xt)
        xt.grad = None
        conv.zero_grad()
        conv(xt).sum().backward()
    return run


_MNIST_CACHE = {}
MNIST_ROOT = None  # the directory MNIST is read from (journey's --data); None: the search path


def mnist_arrays(n):
    """The first ``n`` training images (flattened, float32 in [0, 1]) and labels, as NumPy
    arrays read by the reference stage's loader: the peers' copy of the data."""
    if n not in _MNIST_CACHE:
        images, labels = load_stage("0").datasets.MNIST(MNIST_ROOT, train=True).as_tensors(0, n)
        _MNIST_CACHE[n] = images.numpy().reshape(n, -1), labels.numpy()
    return _MNIST_CACHE[n]


def build_mnist(impl, steps):
    """``steps`` AdamW steps of the MLP on consecutive batches of real MNIST images; the
    call returns the loss of the last batch. ``run.prepare()`` makes a fresh model from
    the fixed weights (outside the timed region) and must precede every call."""
    n = steps * MLP_BATCH
    try:
        if impl.kind == "stage":
            images, labels = impl.lib.datasets.MNIST(MNIST_ROOT, train=True).as_tensors(0, n)
            x, y = images.reshape(n, MLP_SHAPE[0]), labels
        else:
            xs, ys = mnist_arrays(n)
            x, y = impl.tensor(xs), _labels(impl, ys)
    except FileNotFoundError as e:
        raise Unsupported(f"MNIST files not found ({e}; journey --data DIR names where they are)") from None
    fresh = {}

    def prepare():
        fresh["step"] = mlp_trainer(impl)

    def run():
        step, loss = fresh.pop("step"), None
        for i in range(steps):
            loss = step(x[i * MLP_BATCH:(i + 1) * MLP_BATCH], y[i * MLP_BATCH:(i + 1) * MLP_BATCH])
        return {"loss": _value(loss)}
    run.prepare = prepare
    return run


# ------------------------------------------------------------------ counts

def _gemm_bytes(m, k, n):
    return 4 * (m * k + k * n + m * n)


def mlp_flops(batch):
    d_in, d_hidden, d_out = MLP_SHAPE
    # forward: two GEMMs; backward: dW2, dh and dW1 (the input needs no gradient)
    return 2 * batch * (2 * d_in * d_hidden + 3 * d_hidden * d_out)


def mlp_bytes(batch):
    d_in, d_hidden, d_out = MLP_SHAPE
    params = d_in * d_hidden + d_hidden + d_hidden * d_out + d_out
    gemms = (2 * _gemm_bytes(batch, d_in, d_hidden) + 3 * _gemm_bytes(batch, d_hidden, d_out))
    return gemms + 28 * params  # AdamW reads p, g, m, v and writes p, m, v


def conv_flops(batch):
    c, o, k, hw = CONV["channels"], CONV["out_channels"], CONV["kernel"], CONV["hw"]
    return 3 * 2 * batch * o * hw * hw * c * k * k  # forward, grad input, grad weight


def conv_bytes(batch):
    c, o, k, hw = CONV["channels"], CONV["out_channels"], CONV["kernel"], CONV["hw"]
    return 3 * 4 * (batch * c * hw * hw + o * c * k * k + batch * o * hw * hw)


# ------------------------------------------------------------------ the fixed set

@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    sizes: tuple
    quick_sizes: tuple
    build: Callable
    size_label: Callable
    flops: Callable | None = None      # FLOPs of one call, given the size
    nbytes: Callable | None = None     # compulsory bytes of one call
    metric: str | None = None          # the rate shown: "GFLOP/s", "GB/s" or "samples/s"
    probe: str = "matmul"              # which probe figure estimates its cost
    once: bool = False                 # a whole run from a fresh start: no warm-up
    gemm: bool = True                  # multiplies matrices: measured with each GEMM of a stage

    def work(self, size):
        """What the cost of a call scales with (FLOPs, else bytes, else 1)."""
        if self.flops:
            return self.flops(size)
        return self.nbytes(size) if self.nbytes else 1.0

    def rate(self, size, seconds):
        if self.metric == "GFLOP/s":
            return self.flops(size) / seconds / 1e9
        if self.metric == "GB/s":
            return self.nbytes(size) / seconds / 1e9
        if self.metric == "samples/s":
            return size * MLP_BATCH / seconds
        return None


WORKLOADS = (
    Workload("add", "elementwise add a + b", (10_000, 1_000_000), (10_000,), build_add,
             lambda n: f"n={n:,}", flops=lambda n: n, nbytes=lambda n: 12 * n, metric="GB/s",
             probe="elementwise", gemm=False),
    Workload("sum", "sum reduction a.sum()", (1_000_000,), (10_000,), build_sum,
             lambda n: f"n={n:,}", flops=lambda n: n, nbytes=lambda n: 4 * n, metric="GB/s",
             probe="elementwise", gemm=False),
    Workload("matmul", "matmul a @ b", (64, 128, 256, 512, 1024), (32, 64), build_matmul,
             lambda n: f"{n}x{n}", flops=lambda n: 2 * n ** 3, nbytes=lambda n: 12 * n * n,
             metric="GFLOP/s"),
    Workload("overhead", "per-op overhead a + b", ("no grad", "grad"), ("no grad", "grad"),
             build_overhead, lambda g: "4 elements" + (", grad" if g == "grad" else ""),
             probe="none", gemm=False),
    Workload("mlp_step", "MLP training step 784-128-10", (MLP_BATCH,), (MLP_BATCH,), build_mlp_step,
             lambda b: f"batch {b}", flops=mlp_flops, nbytes=mlp_bytes, metric="GFLOP/s"),
    Workload("conv", "conv 8->16, 3x3, 28x28, forward+backward", (8,), (8,), build_conv,
             lambda b: f"batch {b}", flops=conv_flops, nbytes=conv_bytes, metric="GFLOP/s"),
    Workload("mnist", "MNIST MLP training run (AdamW)", (10,), (2,), build_mnist,
             lambda s: f"{s} steps x {MLP_BATCH}", flops=lambda s: s * mlp_flops(MLP_BATCH),
             metric="samples/s", probe="mlp_step", once=True),
)
BY_KEY = {w.key: w for w in WORKLOADS}


# ------------------------------------------------------------------ cost estimates

_PROBES = {}


def probe(impl):
    """Two cheap throughput figures per implementation (cached): elements/s of an add and
    FLOP/s of a matmul. The small sizes (4,096 elements, 64x64) cost a pure-Python stage
    milliseconds; an implementation that finishes them in microseconds is measured again at
    a larger size, so that fixed overheads do not make a fast library look slow."""
    if impl.name not in _PROBES:
        t = seconds_per_call(build_add(impl, 4096), 3)
        elementwise = 4096 / t
        if t < 50e-6:
            elementwise = max(elementwise, 2 ** 20 / seconds_per_call(build_add(impl, 2 ** 20), 3))
        t = seconds_per_call(build_matmul(impl, 64), 3)
        matmul = 2 * 64 ** 3 / t
        if t < 2e-3:
            matmul = max(matmul, 2 * 256 ** 3 / seconds_per_call(build_matmul(impl, 256), 3))
        _PROBES[impl.name] = {"elementwise": elementwise, "matmul": matmul}
    return _PROBES[impl.name]


def estimate_seconds(workload, size, impl, measured=None):
    """Expected seconds of one call, before running it.

    ``measured`` maps ``(workload key, size)`` to seconds already measured for this
    implementation in the same run: a smaller size of the same workload is scaled by the
    work ratio, and the MNIST run is its number of steps times the measured MLP step.
    Otherwise the work is divided by the best rate measured so far on work of the same
    kind (FLOPs or elements), or failing that by the implementation's probe figure.
    """
    measured = measured or {}
    if workload.probe == "none":
        return 0.0
    if workload.probe == "mlp_step" and ("mlp_step", MLP_BATCH) in measured:
        return size * measured[("mlp_step", MLP_BATCH)]
    smaller = [s for (key, s) in measured if key == workload.key and workload.work(s) < workload.work(size)]
    if smaller:
        s0 = max(smaller, key=workload.work)
        return measured[(workload.key, s0)] * workload.work(size) / workload.work(s0)
    # the best rate this implementation reached so far on work of the same kind
    rates = [BY_KEY[k].work(s) / t for (k, s), t in measured.items()
             if k in BY_KEY and BY_KEY[k].probe == workload.probe and t > 0]
    if rates:
        return workload.work(size) / max(rates)
    figures = probe(impl)
    if workload.probe == "elementwise":
        return workload.work(size) / figures["elementwise"]
    return workload.work(size) / figures["matmul"]
