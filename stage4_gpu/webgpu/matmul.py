"""The WebGPU driver's ``matmul``: the register-blocked tiled kernel of
``kernels/matmul.wgsl``, one workgroup per tile of C, over any dtype and strides."""
from .kernels import kernel_source, launch

TILE = 64  # the side of the tile of C one workgroup computes


class MatmulKernels:
    """The WebGPU driver's product hooks (see ``gpu.driver.Driver``): no dense engine, the
    tiled kernel takes float32 too."""

    def matmul(self, out, a, b, sizes, layout):
        """matmul.wgsl over every tile of every product of the batch."""
        n, k, m, count = sizes
        tiles_m = -(-m // TILE)
        per = -(-n // TILE) * tiles_m
        launch(kernel_source("matmul", T=a.wgsl), [out, a, b], [n, k, m, count, per, tiles_m, *layout],
               count * per)
