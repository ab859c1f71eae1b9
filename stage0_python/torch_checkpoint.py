"""PyTorch ``.pt`` files for ``load``: PyTorch reads them, stagegrad converts what it read.

PyTorch's format is pickle, so the file is handed to ``torch.load(..., map_location="cpu",
weights_only=...)``. With ``weights_only=True`` (``load``'s default) its unpickler builds only
tensors, containers, plain values and the globals this stage's ``add_safe_globals`` or
``safe_globals`` allowed (handed on to PyTorch's), and never runs other code from the
file; what it refuses raises ``WeightsOnlyError`` with PyTorch's advice. Only
``weights_only=False`` unpickles freely, as PyTorch then does. What it returns is
converted: each torch tensor becomes a fresh tensor of this stage with the same dtype,
shape, values and ``requires_grad`` (a Parameter stays one); dicts (an ``OrderedDict``
state_dict included) become dicts, lists and tuples stay lists and tuples, and numbers,
strings and None pass through, so a checkpoint such as ``{"model": state_dict, "epoch": 3}``
loads whole. Other values are left as PyTorch made
them. PyTorch is imported only here, only when such a file is loaded or written.

``save_pt`` writes such a file for ``save(..., format="torch")``: it makes a torch tensor
of each tensor (an ``nn.Parameter`` of each Parameter), keeps NumPy arrays and plain
values, and lets ``torch.save`` write the result, which ``torch.load`` reads with
``weights_only=True`` wherever it holds no NumPy array.
"""
import io
import pickle  # for its exception class: PyTorch's loader raises it

from . import dtypes
from .capabilities import CapabilityError, lacking
from .checkpoint_objects import get_safe_globals
from .device import device
from .dtypes import BY_NAME, DType
from .serialization import MAX_DEPTH, CheckpointError, WeightsOnlyError, _describe, _tensor_bytes, _tensor_from_values
from .tensor import Size, Tensor


def load_pt(blob, name, weights_only=True):
    """The object in ``blob``, a file ``torch.save`` wrote, with its tensors converted."""
    torch = _torch(f"load: {name} looks like a PyTorch .pt file", "reading one")
    try:
        with torch.serialization.safe_globals(get_safe_globals()):
            obj = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=weights_only)
    except pickle.UnpicklingError as e:
        if weights_only and "Weights only load failed" in str(e):
            raise WeightsOnlyError(f"{name}: {e}") from None
        raise CheckpointError(f"{name}: PyTorch could not load it ({_describe(blob)}): "
                              f"{type(e).__name__}: {e}") from e
    except Exception as e:  # noqa: BLE001  (any failure means: not a file PyTorch can read safely)
        raise CheckpointError(f"{name}: PyTorch could not load it ({_describe(blob)}): "
                              f"{type(e).__name__}: {e}") from e
    return _convert(obj, torch, "obj", 0, name)


def _torch(what, doing):
    """PyTorch, or ModuleNotFoundError saying that ``doing`` needs it."""
    try:
        import torch
    except ImportError:
        raise ModuleNotFoundError(f"{what}, and {doing} needs PyTorch (pip install torch)", name="torch") from None
    return torch


def save_pt(obj):
    """The bytes ``torch.save`` writes for ``obj`` with its tensors made PyTorch's."""
    torch = _torch("save: format='torch' writes PyTorch's own file", "writing one")
    buf = io.BytesIO()
    torch.save(_to_torch(obj, torch, "obj", 0), buf)
    return buf.getvalue()


def _to_torch(obj, torch, where, depth):
    if isinstance(obj, Tensor):
        dtype = getattr(torch, obj.dtype.name)
        raw = _tensor_bytes(obj)  # little-endian elements, row-major: PyTorch's layout on this machine
        t = torch.frombuffer(bytearray(raw), dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        t = t.reshape(tuple(obj.shape))
        if type(obj).__name__ == "Parameter":
            return torch.nn.Parameter(t, obj.requires_grad)
        return t.requires_grad_(obj.requires_grad)
    if isinstance(obj, DType):
        return getattr(torch, obj.name)
    if isinstance(obj, device):
        return torch.device(str(obj))
    if isinstance(obj, (list, tuple, set, dict)):
        if depth >= MAX_DEPTH:
            raise ValueError(f"save: obj nests containers more than {MAX_DEPTH} deep")
        if isinstance(obj, dict):
            return type(obj)((k, _to_torch(v, torch, f"{where}[{k!r}]", depth + 1)) for k, v in obj.items())
        items = [_to_torch(v, torch, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]
        return torch.Size(items) if isinstance(obj, Size) else type(obj)(items)
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)) or type(obj).__module__ == "numpy":
        return obj
    raise TypeError(f"save: {where} is a {type(obj).__module__}.{type(obj).__qualname__}; format='torch' holds "
                    "tensors, NumPy arrays and plain data (save a module's state_dict, or use the stagegrad "
                    "format for whole objects)")


def _convert(obj, torch, where, depth, name):
    if isinstance(obj, torch.Tensor):
        return _tensor(obj, torch, where, name)
    if isinstance(obj, torch.dtype):
        return BY_NAME.get(str(obj).rpartition(".")[2], obj)
    if isinstance(obj, torch.device):
        return device(str(obj))
    if isinstance(obj, (dict, list, tuple)):
        if depth >= MAX_DEPTH:
            raise CheckpointError(f"{name}: containers nested more than {MAX_DEPTH} deep")
        if isinstance(obj, dict):
            return {k: _convert(v, torch, f"{where}[{k!r}]", depth + 1, name) for k, v in obj.items()}
        items = [_convert(v, torch, f"{where}[{i}]", depth + 1, name) for i, v in enumerate(obj)]
        return items if isinstance(obj, list) else tuple(items)  # torch.Size becomes a tuple
    return obj


def _tensor(t, torch, where, name):
    dtype_name = str(t.dtype).rpartition(".")[2]
    if t.layout != torch.strided or dtype_name not in {d.name for d in dtypes.ALL}:
        message = f"load: {name}: {where} is a PyTorch tensor of dtype {dtype_name}"
        if t.layout != torch.strided:
            raise CapabilityError(f"{message} and layout {t.layout}; only dense tensors load")
        if dtype_name in dtypes.LACKING:
            raise lacking(__name__, dtype_name, message)
        raise CapabilityError(f"{message}, which stagegrad has no dtype for")
    # tolist is PyTorch's own conversion, and as quick as copying the raw bytes
    values = t.detach().reshape(-1).tolist()
    out = _tensor_from_values(values, BY_NAME[dtype_name], tuple(t.shape))
    if isinstance(t, torch.nn.Parameter):
        from .nn.module import Parameter  # here: nn imports much of the stage
        return Parameter(out, t.requires_grad)
    if t.requires_grad:
        out.requires_grad_(True)
    return out
