"""The WebGPU device: one adapter, its compiled pipelines, a caching allocator, and the
dispatch of one kernel.

Design: a kernel launch here is a bind group (the buffers it reads and writes, plus a
small buffer of int32 parameters: sizes, strides, offsets) and a dispatch recorded in a
compute pass. Launches are recorded into one command buffer and submitted together, every
BATCH launches or when the host reads a buffer back (``download``, ``synchronize``):
encoding a command buffer and submitting it costs more than recording a dispatch.
Submitting does not wait: the host goes on while the device works. Pipelines are compiled
once per WGSL source. Freed buffers go to the caching allocator (``../gpu/pool.py``) and
are reused; one freed while recorded work may still read it waits for that work's
submission, since a later write to it from the host would land first.
"""
import array

from ..device import DeviceError
from ..gpu.opening import Opening
from ..gpu.pool import CachingPool, size_class
from .record import native_recorder

BATCH = 64  # launches recorded before they are submitted
MAX_GROUPS = 65535  # workgroups per dispatch dimension, WebGPU's guaranteed minimum


class Runtime:
    """The adapter and device, opened once (``runtime()``), and what is built on them."""

    def __init__(self):
        import wgpu  # the optional dependency: imported only when the device is used
        self._wgpu = wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise DeviceError("webgpu: no WebGPU adapter (install a Vulkan or Metal driver; "
                              "Mesa's software Vulkan, mesa-vulkan-drivers, runs anywhere)")
        info = adapter.info
        self.name = info.get("device") or info.get("description") or "WebGPU adapter"
        self.backend = info.get("backend_type", "")
        # a software rasteriser (Mesa's lavapipe) runs on the CPU: its timings are never GPU speed
        self.software = info.get("adapter_type") == "CPU"
        features = [f for f in ("shader-int64", "shader-f16") if f in adapter.features]
        self.int64 = "shader-int64" in features
        limits = adapter.limits
        self.max_binding = limits["max-storage-buffer-binding-size"]
        self.device = adapter.request_device_sync(
            required_features=features,
            required_limits={"max-storage-buffer-binding-size": self.max_binding,
                             "max-buffer-size": limits["max-buffer-size"]})
        self.queue = self.device.queue
        self.usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                      | wgpu.BufferUsage.COPY_DST)
        self._pipelines = {}
        self.recorder = native_recorder(self.device)  # None: record through wgpu-py
        self.pool = CachingPool()
        self._encoder = self._pass = None  # the launches recorded, not yet submitted
        self._recorded = 0
        self._retired = []  # buffers freed while recorded launches may still read them
        self.launches = 0  # kernels dispatched, for the overhead measurements

    # ------------------------------------------------------------ memory

    def alloc(self, nbytes):
        """A GPU buffer of at least ``nbytes`` (contents undefined), from the pool when one
        of its size class is free."""
        size = size_class(nbytes)
        if size > self.max_binding:
            raise MemoryError(f"webgpu: {nbytes} bytes exceed the largest buffer a kernel can "
                              f"bind on {self.name} ({self.max_binding} bytes)")
        gbuf = self.pool.take(size)
        return gbuf if gbuf is not None else self.device.create_buffer(size=size, usage=self.usage)

    def release(self, gbuf):
        """Give a buffer back to the pool (once the launches recorded so far are submitted)."""
        if self._encoder is not None:
            self._retired.append(gbuf)
        else:
            self.pool.give(gbuf, gbuf.size)

    def empty_cache(self):
        """Destroy the pooled buffers (``sg.webgpu.empty_cache()``)."""
        self.flush()
        for b in self.pool.drain():
            b.destroy()

    def upload(self, data):
        """A GPU buffer holding the bytes of ``data`` (anything with the buffer protocol)."""
        view = memoryview(data).cast("B")
        gbuf = self.alloc(len(view))
        if len(view):
            if len(view) % 4:  # writes are in whole 4-byte words
                view = memoryview(bytes(view) + bytes(4 - len(view) % 4))
            self.queue.write_buffer(gbuf, 0, view)
        return gbuf

    def download(self, gbuf, offset, nbytes):
        """``nbytes`` bytes of ``gbuf`` from ``offset``: the host waits for every kernel
        queued before. Offsets and sizes are widened to the 4-byte words a copy moves."""
        if nbytes == 0:
            return b""
        self.flush()
        start, end = offset & ~3, -(-(offset + nbytes) // 4) * 4
        data = self.queue.read_buffer(gbuf, start, end - start)
        return bytes(data)[offset - start:offset - start + nbytes]

    # ------------------------------------------------------------ kernels

    def pipeline(self, source):
        """The compute pipeline of a WGSL source and its bind group layout, compiled on first
        use (asking a pipeline for its layout makes a new wrapper each time)."""
        compiled = self._pipelines.get(source)
        if compiled is None:
            module = self.device.create_shader_module(code=source)
            pipe = self.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"})
            compiled = self._pipelines[source] = pipe, pipe.get_bind_group_layout(0)
        return compiled

    def launch(self, source, buffers, params, groups):
        """Record ``source``'s ``main`` over ``groups`` workgroups (spread over two dispatch
        dimensions past 65535) with ``buffers`` bound at 0, 1, ... and the int32
        ``params`` bound after them."""
        if groups <= 0:
            return
        pipe, layout = self.pipeline(source)
        pbuf = self.upload(array.array("i", params))
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
            self._pass = self._encoder.begin_compute_pass()
        x = min(groups, MAX_GROUPS)
        try:
            if self.recorder is not None:
                self.recorder.record(self._pass, pipe, layout, buffers + [pbuf], x, -(-groups // x))
            else:
                entries = [{"binding": i, "resource": b} for i, b in enumerate(buffers + [pbuf])]
                self._pass.set_pipeline(pipe)
                self._pass.set_bind_group(0, self.device.create_bind_group(layout=layout, entries=entries))
                self._pass.dispatch_workgroups(x, -(-groups // x), 1)
        finally:
            self.release(pbuf)  # a launch refused (a validation error) keeps no parameter buffer
        self.launches += 1
        self._recorded += 1
        if self._recorded >= BATCH:
            self.flush()

    def flush(self):
        """Submit the launches recorded so far (without waiting for them)."""
        if self._encoder is None:
            return
        self._pass.end()
        self.queue.submit([self._encoder.finish()])
        self._encoder = self._pass = None
        self._recorded = 0
        retired, self._retired = self._retired, []
        for gbuf in retired:
            self.release(gbuf)

    def copy(self, src, src_offset, dst, dst_offset, nbytes):
        """A device-side copy of whole 4-byte words."""
        self.flush()
        encoder = self.device.create_command_encoder()
        encoder.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, nbytes)
        self.queue.submit([encoder.finish()])

    def synchronize(self):
        """Wait until every launch so far has finished."""
        self.flush()
        probe = self.alloc(4)
        self.queue.read_buffer(probe, 0, 4)
        self.release(probe)


OPENING = Opening("webgpu", Runtime,
                   not_installed="the wgpu package is not installed ({}); install the 'webgpu' extra: "
                                 "pip install 'stagegrad[webgpu]'",
                   failed="the adapter could not be opened")
runtime, is_available, unavailable_reason = OPENING.runtime, OPENING.is_available, OPENING.unavailable_reason
