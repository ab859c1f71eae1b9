"""PyTorch ``.pt`` files for ``load``: PyTorch reads them, stagegrad converts what it read.

PyTorch's format is pickle, so the file is handed to ``torch.load(..., map_location="cpu",
weights_only=...)``. With ``weights_only=True`` (``load``'s default) its unpickler builds only
tensors, containers, plain values and the globals this stage's ``add_safe_globals`` or
``safe_globals`` allowed (handed on to PyTorch's), and never runs other code from the
file; what it refuses raises ``WeightsOnlyError`` with PyTorch's advice. Only
``weights_only=False`` unpickles freely, as PyTorch then does. What it returns is converted: each torch tensor becomes a
fresh tensor of this stage with the same dtype, shape, values and ``requires_grad``; dicts
(an ``OrderedDict`` state_dict included) become dicts, lists and tuples stay lists and
tuples, and numbers, strings and None pass through, so a checkpoint such as
``{"model": state_dict, "epoch": 3}`` loads whole. Other values are left as PyTorch made
them. PyTorch is imported only here, only when such a file is loaded.
"""
import io
import pickle  # for its exception class: PyTorch's loader raises it

from .capabilities import CapabilityError, lacking
from . import dtypes
from .dtypes import BY_NAME
from .checkpoint_objects import get_safe_globals
from .serialization import MAX_DEPTH, CheckpointError, WeightsOnlyError, _describe, _tensor_from_values


def load_pt(blob, name, weights_only=True):
    """The object in ``blob``, a file ``torch.save`` wrote, with its tensors converted."""
    try:
        import torch
    except ImportError:
        raise ModuleNotFoundError(f"load: {name} looks like a PyTorch .pt file, and reading one "
                                  "needs PyTorch (pip install torch)", name="torch") from None
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


def _convert(obj, torch, where, depth, name):
    if isinstance(obj, torch.Tensor):
        return _tensor(obj, torch, where, name)
    if isinstance(obj, torch.dtype):
        return BY_NAME.get(str(obj).rpartition(".")[2], obj)
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
    if t.requires_grad:
        out.requires_grad_(True)
    return out
