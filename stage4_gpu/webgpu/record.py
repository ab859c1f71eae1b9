"""Recording a launch into a compute pass through wgpu-native's C functions.

Design: wgpu-py's ``create_bind_group`` builds each descriptor in Python, entry by entry,
checking every key: about 50 µs a launch on the reference machine, nine times the native
call (5.7 µs), and most of what a small operation costs the host. Here one descriptor per
entry count is allocated once and refilled, the bind group is made by the backend's
error-checked copy of the C function (a validation error raises, as through wgpu-py), and
the pipeline, bind group and dispatch go to the pass by the plain C functions, whose errors
wgpu-native reports when the pass ends, which goes through wgpu-py. The bind group is
released at once: the pass holds its own reference until the work is done.

These are the backend's cffi handles (``wgpu.backends.wgpu_native``), not wgpu-py's public
API; where the installed wgpu does not have them, ``native_recorder`` returns None and the
runtime records through wgpu-py (``test_gpu_devices`` checks which one runs here).
"""


class NativeRecorder:
    """Records launches on one device (``record``)."""

    def __init__(self, ffi, lib, checked, device):
        self._ffi, self._lib, self._checked = ffi, lib, checked
        self._device = device._internal
        self._descriptors = {}  # entry count -> (descriptor, its entries)

    def record(self, compute_pass, pipeline, layout, buffers, x, y):
        """Bind ``buffers`` (whole) at 0, 1, ... for ``pipeline`` and dispatch x * y workgroups."""
        held = self._descriptors.get(len(buffers))
        if held is None:
            entries = self._ffi.new("WGPUBindGroupEntry[]", len(buffers))
            descriptor = self._ffi.new("WGPUBindGroupDescriptor *")
            descriptor.entries, descriptor.entryCount = entries, len(buffers)
            held = self._descriptors[len(buffers)] = descriptor, entries
        descriptor, entries = held
        descriptor.layout = layout._internal
        for i, buffer in enumerate(buffers):
            entry = entries[i]
            entry.binding, entry.buffer, entry.size = i, buffer._internal, buffer.size
        group = self._checked.wgpuDeviceCreateBindGroup(self._device, descriptor)
        lib, native_pass = self._lib, compute_pass._internal
        lib.wgpuComputePassEncoderSetPipeline(native_pass, pipeline._internal)
        lib.wgpuComputePassEncoderSetBindGroup(native_pass, 0, group, 0, self._ffi.NULL)
        lib.wgpuComputePassEncoderDispatchWorkgroups(native_pass, x, y, 1)
        lib.wgpuBindGroupRelease(group)


def native_recorder(device):
    """A ``NativeRecorder`` for ``device``, or None where the installed wgpu lacks what it uses."""
    try:
        from wgpu.backends.wgpu_native import _api, ffi, lib
        checked = _api.libf
        for name in ("wgpuComputePassEncoderSetPipeline", "wgpuComputePassEncoderSetBindGroup",
                     "wgpuComputePassEncoderDispatchWorkgroups", "wgpuBindGroupRelease"):
            getattr(lib, name)
        checked.wgpuDeviceCreateBindGroup  # noqa: B018  (present, or AttributeError)
        ffi.new("WGPUBindGroupDescriptor *").entries = ffi.new("WGPUBindGroupEntry[]", 1)
        device._internal  # noqa: B018
    except Exception:  # noqa: BLE001  (a missing module, function or C type: record through wgpu-py)
        return None
    return NativeRecorder(ffi, lib, checked, device)
