"""Stage 4's backend: the seam, now routing each primitive to the device its buffers live
on.

``cpu`` is stage 3's backend (``CpuBackend``, a subclass only so that its refusals name
this stage and its dtypes). A primitive whose buffers are all on the host runs there;
one whose buffers are on a device runs the shared device layer's (``gpu/backend.py``),
which reaches that device's driver (``webgpu/``, ``cuda/``) through the buffers. A
zero-dim host buffer may join device buffers (the frontend makes Python numbers into
those, and PyTorch lets a CPU scalar tensor meet a CUDA one): it is copied over. Any
other mix raises DeviceError naming the operation and both devices; nothing moves
between devices unless the program asks (``to``, ``cpu``).

The primitive set and its signatures are stage 0's (``stage0_python/backend.py``);
creation primitives make host buffers, which the frontend then places on the device it
was asked for.
"""
from stage0_python.vocabulary import FUSED_KERNELS
from stage3_simd import backend as _stage3
from stage3_simd.backend import K, gemm_for  # noqa: F401  (the cpu device's, as on stage 3)

from . import dtypes
from ._routing import Routed
from .cuda import backend as _cuda
from .cuda.buffer import Buffer as _CudaBuffer
from .device import DeviceError, _to_host, device_of
from .gpu import backend as gpu
from .gpu import fused as gpu_fused
from .webgpu.buffer import Buffer as _GpuBuffer

# each device's buffer type and its primitive set: the device layer's, each primitive
# reaching its buffers' own driver (cuda's with two compiled, cuda/backend.py)
_DEVICES = {_GpuBuffer: gpu, _CudaBuffer: _cuda}


class CpuBackend(_stage3.Backend):
    """The cpu device: stage 3's primitive set."""
    dtypes = dtypes  # this stage's: what its refusals name


cpu = CpuBackend()


def _to_device(op, bufs, kind):
    """``bufs`` (some on the device whose buffers are of type ``kind``) with each zero-dim
    host scalar copied to that device; DeviceError for any other host buffer among them."""
    first = next(b for b in bufs if type(b) is kind)
    out = []
    for b in bufs:
        if b is not None and type(b) is not kind:
            if b.shape != ():
                raise DeviceError(f"{op}: expected all tensors on one device, but found tensors "
                                  f"on {device_of(first)} and on {device_of(b)}")
            b = kind.upload(b)
        out.append(b)
    return out


# each primitive the devices also have, and the positions of its buffer arguments; then the
# functions of the fused kernels the devices have (gpu/fused.py's FUSED), at the positions the
# vocabulary declares (the other fused kernels run on the CPU only)
_BUFFERS = {
    "cast": (0,), "unary": (1,), "binary": (1, 2), "where": (0, 1, 2),
    "reduce": (1,), "arg_reduce": (1,), "sort": (0,), "scan": (1,),
    "reshape": (0,), "permute": (0,), "expand": (0,), "slice": (0,), "diagonal": (0,),
    "windows": (0,), "contiguous": (0,), "alias": (0,), "copy": (0,), "cat": (0,),
    "is_contiguous": (0,), "strides": (0,), "storage_offset": (0,), "data_ptr": (0,),
    "storage_id": (0,), "shares_storage": (0, 1),
    "take": (0, 1), "gather": (0, 2), "scatter_add": (2, 3), "matmul": (0, 1),
    "unfold": (0,), "fold": (0,), "assign": (0, 4), "put": (0, 1, 2), "set_data": (0, 1),
    "to_dlpack": (0,),
    **{fn: positions for name in sorted(gpu_fused.FUSED) for fn, positions in FUSED_KERNELS[name].items()},
}
_NONE = frozenset({type(None)})  # an absent optional buffer (a weight, a bias)


def _routed(name):
    """Primitive ``name`` routed by its buffer arguments (at its ``_BUFFERS`` positions; a
    list of buffers, for ``cat``, counts as its buffers): host buffers only, or one device's
    only, go straight there (``_routing.Routed``, compiled), anything else through ``general``."""
    positions = _BUFFERS[name]
    on_cpu = getattr(cpu, name)
    on_device = {kind: getattr(module, name) for kind, module in _DEVICES.items()}
    devices = frozenset(_DEVICES)

    def general(*args, **kwargs):
        types = set()
        n = len(args)
        for i in positions:
            if i < n:
                t = type(args[i])
                if t is list or t is tuple:
                    types.update(map(type, args[i]))
                else:
                    types.add(t)
        kinds = types & devices
        if not kinds:
            return on_cpu(*args, **kwargs)
        if len(kinds) == 1 and types <= kinds | _NONE:  # all on one device: nothing to move
            return on_device[next(iter(kinds))](*args, **kwargs)
        bufs = [b for i in positions if i < len(args)
                for b in (args[i] if type(args[i]) in (list, tuple) else (args[i],))]
        op = args[0] if type(args[0]) is str else name
        if len(kinds) > 1:
            a, b = (next(device_of(x) for x in bufs if type(x) is k) for k in kinds)
            raise DeviceError(f"{op}: expected all tensors on one device, but found tensors on "
                              f"{a} and on {b}")
        kind = kinds.pop()
        moved = iter(_to_device(op, bufs, kind))
        args = list(args)
        for i in positions:
            if i < len(args):
                many = type(args[i]) in (list, tuple)
                args[i] = [next(moved) for _ in args[i]] if many else next(moved)
        return on_device[kind](*args, **kwargs)

    return Routed(name, positions, on_cpu, on_device, general)


def view_dtype(x, dtype):
    """The cpu device's ``view_dtype``; on a device, a copy read through the host (each
    device's LACKS names ``dtype_views``: its memory is not reinterpreted in place)."""
    if type(x) not in _DEVICES:
        return cpu.view_dtype(x, dtype)
    return type(x).upload(cpu.contiguous(cpu.view_dtype(_to_host(x), dtype)))


# The primitive set as this module's names, which is how the frontend reaches it
# (``B.matmul(...)``): the cpu device's bound methods where no device has the primitive, else
# the routed primitive (``_BUFFERS`` names each), in the groups of stage 0's contract; then
# stage 3's settings and fused kernels.
Buffer, FUSED, VIEWS, GEMMS = cpu.Buffer, cpu.FUSED, cpu.VIEWS, cpu.GEMMS
from_list, full, arange = cpu.from_list, cpu.full, cpu.arange
uniform, normal, randint = cpu.uniform, cpu.normal, cpu.randint
cast = _routed("cast")
unary, binary, where = _routed("unary"), _routed("binary"), _routed("where")
reduce, arg_reduce = _routed("reduce"), _routed("arg_reduce")
sort, scan = _routed("sort"), _routed("scan")
reshape, permute, expand, slice = _routed("reshape"), _routed("permute"), _routed("expand"), _routed("slice")
diagonal, windows, contiguous = _routed("diagonal"), _routed("windows"), _routed("contiguous")
alias, copy, cat = _routed("alias"), _routed("copy"), _routed("cat")
is_contiguous, strides = _routed("is_contiguous"), _routed("strides")
storage_offset, data_ptr = _routed("storage_offset"), _routed("data_ptr")
storage_id, shares_storage = _routed("storage_id"), _routed("shares_storage")
take, gather, scatter_add = _routed("take"), _routed("gather"), _routed("scatter_add")
matmul = _routed("matmul")
unfold, fold = _routed("unfold"), _routed("fold")
assign, put, set_data = _routed("assign"), _routed("put"), _routed("set_data")
from_buffer = cpu.from_buffer
to_dlpack, from_dlpack = _routed("to_dlpack"), cpu.from_dlpack
prod, broadcast_shapes, contiguous_strides = cpu.prod, cpu.broadcast_shapes, cpu.contiguous_strides
get_gemm, set_gemm = cpu.get_gemm, cpu.set_gemm
set_num_threads, get_num_threads = cpu.set_num_threads, cpu.get_num_threads
softmax, log_softmax = _routed("softmax"), _routed("log_softmax")
softmax_backward = _routed("softmax_backward")
cross_entropy, cross_entropy_backward = _routed("cross_entropy"), _routed("cross_entropy_backward")
linear, linear_backward = cpu.linear, cpu.linear_backward
layer_norm, layer_norm_backward = _routed("layer_norm"), _routed("layer_norm_backward")
adam_step, sgd_step, rmsprop_step = _routed("adam_step"), _routed("sgd_step"), _routed("rmsprop_step")
conv2d, conv2d_backward = _routed("conv2d"), _routed("conv2d_backward")
max_pool2d, max_pool2d_backward = cpu.max_pool2d, cpu.max_pool2d_backward
avg_pool2d, avg_pool2d_backward = cpu.avg_pool2d, cpu.avg_pool2d_backward
batch_norm, batch_norm_backward = cpu.batch_norm, cpu.batch_norm_backward
lstm_cell, lstm_cell_backward = cpu.lstm_cell, cpu.lstm_cell_backward
recurrent, recurrent_backward = _routed("recurrent"), _routed("recurrent_backward")
gelu, gelu_backward, relu_backward = cpu.gelu, cpu.gelu_backward, cpu.relu_backward
attention, attention_backward = _routed("attention"), _routed("attention_backward")
