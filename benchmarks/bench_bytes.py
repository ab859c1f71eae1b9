"""The 1- and 2-byte integers: uint8 arithmetic, and an MNIST batch made from the file's
bytes, where the stage computes in uint8 (every stage's cpu) and in NumPy and PyTorch.

``MnistBatch`` times what ``MNIST.get_batch`` does with 64 images' bytes: ``time_bytes``
keeps them bytes until one cast kernel (``frombuffer(...).float() / 255``, the path the
datasets take), ``time_python_ints`` makes a Python int per pixel first (the path taken
before uint8 existed), so the two rows side by side are the before and after."""
import numpy as np

from .common import IMPLS, Benchmark, lib, memo, skip_if_slow

BATCH, PIXELS = 64, 28 * 28


def _pixels():
    return memo("mnist-pixels", lambda: np.random.default_rng(0).integers(0, 256, BATCH * PIXELS,
                                                                           dtype=np.uint8).tobytes())


class Uint8Arithmetic(Benchmark):
    params = [IMPLS, [1_000_000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        skip_if_slow(name, elements=3 * n)
        rng = np.random.default_rng(1)
        a, b = (rng.integers(0, 256, n, dtype=np.uint8) for _ in range(2))
        if name == "numpy":
            self.a, self.b = a, b
        else:
            m = lib(name)
            self.a, self.b = m.tensor(a.tolist(), dtype=m.uint8), m.tensor(b.tolist(), dtype=m.uint8)

    def time_add(self, name, n):
        self.a + self.b

    def time_to_float32(self, name, n):
        self.a.astype(np.float32) if name == "numpy" else self.a.float()


class MnistBatch(Benchmark):
    params = [IMPLS]
    param_names = ["impl"]

    def setup(self, name):
        skip_if_slow(name, elements=4 * BATCH * PIXELS)
        self.pixels = _pixels()

    def time_bytes(self, name):
        if name == "numpy":
            np.frombuffer(self.pixels, np.uint8).reshape(BATCH, 1, 28, 28).astype(np.float32) / 255
        else:
            m = lib(name)
            m.frombuffer(bytearray(self.pixels), dtype=m.uint8).reshape(BATCH, 1, 28, 28).float() / 255

    def time_python_ints(self, name):
        if name in ("numpy", "torch"):
            raise NotImplementedError("the path before uint8 is the stages' own")
        m = lib(name)
        m.tensor(list(self.pixels), dtype=m.int32).reshape(BATCH, 1, 28, 28).float() / 255
