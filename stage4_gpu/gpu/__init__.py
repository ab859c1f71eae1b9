"""The GPU primitives, written once for every device that runs kernels: ``webgpu`` and
``cuda`` are two drivers of this layer.

Everything a primitive decides is here: the checks the CPU stages make (an index out of
range, an integer division by zero), output shapes and dtypes, the sizes, strides and
offsets each kernel takes, which kernel runs (the fused ones, matmul's engine), and the
copies around it. What it cannot decide is how a kernel is written, compiled, launched
and fed memory: each device's driver (``webgpu/``, ``cuda/``) supplies that, as the
hooks ``driver.py`` lists.

- ``driver.py``: ``Driver``, every hook a driver supplies, each with its contract.
- ``opening.py``: a driver's runtime, opened once on first use, or the reason it cannot be.
- ``pool.py``: the caching allocator's free lists by size class.
- ``backend.py``: the primitive set (stage 0's contract) over device buffers, gathered
  from ``elementwise.py``, ``movement.py``, ``reduce.py``, ``index.py``, ``fused.py`` and
  ``matmul.py``.

A device's buffers are ``../strided.py``'s views; each buffer class names its driver
(``Buffer.driver``), so a primitive reaches the right kernels from its operands.
"""
