"""Stage 4's ``webgpu`` device: one operation's fixed cost queued and waited for (stage 3's
as the baseline), copies of 16 MiB between host and device, and add and matmul on the
device, each call waiting for its result so that the device's work is timed.

Every device benchmark is skipped (n/a) where ``sg.webgpu.is_available()`` is False. On
Mesa's lavapipe, a software Vulkan driver, the device is the CPU: such timings are never
GPU speed (``stagegrad devices`` says which adapter ran).
"""
from .common import Benchmark, DeviceTransfer, array, device_stage, memo, stage


def _webgpu():
    """Stage 4 with a working ``webgpu`` device, or asv's skip saying why not."""
    return device_stage("webgpu")


def _on_device(sg, seed, *shape):
    """``array(seed, *shape)`` on the device (memoised)."""
    return memo(("webgpu", seed, shape), lambda: sg.from_numpy(array(seed, *shape)).to("webgpu"))


class Overhead(Benchmark):
    """``a + b`` on 4 float32 elements: stage 3, the device without waiting (the host's cost of
    queuing a kernel), and the device with ``sg.webgpu.synchronize()`` after each op."""
    params = [["stage 3", "webgpu queued", "webgpu synced"]]
    param_names = ["device"]

    def setup(self, device):
        """The two operands on ``device``; the call to time."""
        self.sync = None
        if device == "stage 3":
            sg = stage("3")
            a, b = sg.from_numpy(array(6, 4)), sg.from_numpy(array(7, 4))
            self.call = lambda: a + b
            return
        sg = _webgpu()
        a, b = _on_device(sg, 6, 4), _on_device(sg, 7, 4)
        self.sync = sg.webgpu.synchronize
        if device == "webgpu synced":
            self.call = lambda: (a + b, self.sync())
        else:
            self.call = lambda: a + b

    def teardown(self, device):
        """Wait for the device, so that no sample starts behind the previous one's queue."""
        if self.sync is not None:
            self.sync()  # drain what the queued timing left running

    def time_add_4(self, device):
        """One ``a + b`` on 4 elements."""
        self.call()


class Transfer(DeviceTransfer):
    """A float32 tensor of ``mib`` MiB to the webgpu device (waited for) and back."""
    device = "webgpu"


class DeviceAdd(Benchmark):
    """Elementwise add on the device, waited for."""
    params = [[1_000, 1_000_000]]
    param_names = ["n"]

    def setup(self, n):
        """Two vectors of ``n`` elements on the device."""
        sg = _webgpu()
        self.a, self.b = _on_device(sg, 1, n), _on_device(sg, 2, n)
        self.sync = sg.webgpu.synchronize

    def time_add(self, n):
        """``a + b`` and a synchronize."""
        self.a + self.b
        self.sync()


class DeviceMatmul(Benchmark):
    """A square float32 matmul on the device, waited for."""
    params = [[64, 256]]
    param_names = ["n"]

    def setup(self, n):
        """Two ``n``x``n`` matrices on the device."""
        sg = _webgpu()
        self.a, self.b = _on_device(sg, 1, n, n), _on_device(sg, 2, n, n)
        self.sync = sg.webgpu.synchronize

    def time_matmul(self, n):
        """``a @ b`` and a synchronize."""
        self.a @ self.b
        self.sync()
