"""Stage 4's ``cuda`` device: the SGEMM ladder's tiers against cuBLAS at 1024 to 8192, one
operation's fixed cost queued and waited for, and copies between host and device, each
call waiting for its result so that the device's work is timed.

Every benchmark is skipped (n/a) where ``sg.cuda.is_available()`` is False, with the
reason. The tiers' results are checked against cuBLAS by ``stagegrad cuda-ladder`` and
the test suite; here they are only timed.
"""
from .common import Benchmark, DeviceTransfer, array, device_stage, memo


def _cuda():
    """Stage 4 with a working ``cuda`` device, or asv's skip saying why not."""
    return device_stage("cuda")


def _ladder(sg):
    return __import__(sg.__name__ + ".cuda.ladder", fromlist=["ladder"])


class SgemmLadder(Benchmark):
    """C = A B, float32 square, by each tier of the ladder and by cuBLAS (CuPy), waited for."""
    params = [["naive", "coalesced", "shared", "blocktile_1d", "blocktile_2d", "vectorized", "warptile",
               "double_buffer", "swizzled", "autotuned",
               "cuBLAS"], [1024, 2048, 4096, 8192]]
    param_names = ["kernel", "n"]

    def setup(self, kernel, n):
        """Two ``n``x``n`` CuPy matrices and the call to time."""
        sg = _cuda()
        import cupy
        ladder = _ladder(sg)
        if kernel in ("naive", "coalesced") and n > 4096:
            raise NotImplementedError(f"{kernel} at {n}: seconds per call, beyond the time budget")
        a, b = (memo(("cuda-matrix", seed, n), lambda s=seed: cupy.asarray(array(s, n, n)))
                for seed in (1, 2))
        out = cupy.empty((n, n), dtype=cupy.float32)
        rt = ladder.runtime()
        if kernel == "cuBLAS":
            self.call = lambda: cupy.matmul(a, b, out=out)
        else:
            self.call = lambda: ladder.sgemm(kernel, a, b, out)
        self.sync = rt.synchronize

    def time_sgemm(self, kernel, n):
        """One product and a synchronize."""
        self.call()
        self.sync()


class Overhead(Benchmark):
    """``a + b`` on 4 float32 elements on the device: queued (the host's cost of a launch)
    and followed by ``sg.cuda.synchronize()``."""
    params = [["queued", "synced"]]
    param_names = ["mode"]

    def setup(self, mode):
        """The two operands on the device."""
        sg = _cuda()
        self.a, self.b = (memo(("cuda", seed, 4), lambda s=seed: sg.from_numpy(array(s, 4)).to("cuda"))
                          for seed in (6, 7))
        self.sync = sg.cuda.synchronize

    def teardown(self, mode):
        """Drain what a queued timing left running."""
        self.sync()

    def time_add_4(self, mode):
        """One ``a + b`` on 4 elements."""
        self.a + self.b
        if mode == "synced":
            self.sync()


class Transfer(DeviceTransfer):
    """A float32 tensor of ``mib`` MiB to the cuda device (waited for) and back."""
    device = "cuda"
