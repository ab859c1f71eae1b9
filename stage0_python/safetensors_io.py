"""``save_safetensors`` and ``load_safetensors``: Hugging Face's safetensors format, read
and written in pure Python (the ``safetensors`` package is not needed).

A safetensors file holds a flat dict of named tensors and nothing else::

    offset  size  field
    0       8     header length N, uint64, little-endian
    8       N     header: UTF-8 JSON, starting with "{", padded with spaces
    8+N     D     data: the tensors' elements, row-major, little-endian, back to back

The header maps each tensor's name to ``{"dtype": "F32", "shape": [2, 3],
"data_offsets": [begin, end]}`` (offsets count from the start of the data), plus an
optional ``"__metadata__"`` object of string to string. This stage reads and writes
``BOOL``, ``I32``, ``I64``, ``F32`` and ``F64`` (bool, int32, int64, float32, float64); a
tensor of any other dtype raises CapabilityError naming it and the dtype.

``load_safetensors`` checks the whole header before it converts anything, and raises
``CheckpointError`` for a file it cannot trust: truncated, a header over 100 MB, JSON that
does not parse or has repeated names, an unknown dtype, a size that is not
``shape * itemsize``, offsets that overlap, leave gaps or run past the data, and bytes
after the last tensor (the rules the reference implementation applies).
"""
import json
import struct

from . import dtypes
from .capabilities import CapabilityError, lacking
from .device import check_device
from .serialization import CheckpointError, _numel, _read_all, _tensor_bytes, _tensor_from_bytes, _write
from .tensor import Tensor

MAX_HEADER = 100_000_000  # bytes; the reference implementation's limit
_LENGTH = struct.Struct("<Q")
# the format's code for each dtype a stage may compute in (a stage's dtypes.ALL says which it does)
_OURS = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
         "F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16"}
_CODE = {name: code for code, name in _OURS.items()}
# dtypes every stage names but some do not compute in (dtypes.LACKING): the CapabilityError names them
_NAMED_ONLY = {"U8": "uint8", "I8": "int8", "I16": "int16", "F16": "float16", "BF16": "bfloat16"}
# bytes per element of every dtype the format defines (None: packed in fewer than 8 bits)
_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2,
             "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8,
             "F64": 8, "C64": 8, "F4": None, "F6_E2M3": None, "F6_E3M2": None}


# ------------------------------------------------------------------ save

def save_safetensors(state_dict, path, metadata=None):
    """Write a flat dict of str -> Tensor to ``path`` (a path, written atomically, or a
    binary file object) in the safetensors format, as safetensors.torch.save_file.

    ``metadata``, a dict of str -> str, is stored in the header. Each tensor is written as
    its own contiguous values: views and tensors sharing storage are fine (the format has no
    aliasing), but ``requires_grad`` is not kept. Anything other than a flat dict of tensors
    (an optimizer's nested state, numbers, lists) raises TypeError: ``save`` holds those.
    """
    items = _flat_tensors(state_dict)
    header = _header(items, _checked_metadata(metadata))
    _write(path, _chunks(header, items))


def _flat_tensors(state_dict):
    """``state_dict``'s (name, tensor) pairs; TypeError saying why it cannot be saved."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"save_safetensors: expected a dict of str -> Tensor, got "
                        f"{type(state_dict).__name__}")
    items = []
    for key, value in state_dict.items():
        if not isinstance(key, str):
            raise TypeError(f"save_safetensors: key {key!r} is a {type(key).__name__}; safetensors "
                            "names tensors with strings")
        if key == "__metadata__":
            raise ValueError("save_safetensors: '__metadata__' names the header's metadata; "
                             "pass metadata= instead")
        if not isinstance(value, Tensor):
            nested = " (nested state, such as an optimizer's, cannot be)" if isinstance(
                value, (dict, list, tuple)) else ""
            raise TypeError(f"save_safetensors: {key!r} is a {type(value).__name__}, not a Tensor; "
                            f"a safetensors file holds only a flat dict of tensors{nested}: "
                            "save(obj, path) holds anything")
        if value.dtype.name not in _CODE:
            raise TypeError(f"save_safetensors: {key!r} has dtype {value.dtype}, which this stage "
                            "cannot write")
        items.append((key, value))
    return items


def _checked_metadata(metadata):
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("save_safetensors: metadata must be a dict of str -> str")
    return dict(metadata)


def _header(items, metadata):
    """The padded header. Data goes widest dtype first, so that every tensor starts at a
    multiple of its itemsize (the header is padded to 8 bytes); the header lists the
    tensors in the caller's order, which ``load_safetensors`` returns them in."""
    offsets, pos = {}, 0
    for key, t in sorted(items, key=lambda kv: -kv[1].dtype.itemsize):  # stable: ties keep order
        nbytes = _numel(t.shape) * t.dtype.itemsize
        offsets[key] = [pos, pos + nbytes]
        pos += nbytes
    doc = {} if metadata is None else {"__metadata__": metadata}
    for key, t in items:
        doc[key] = {"dtype": _CODE[t.dtype.name], "shape": list(t.shape), "data_offsets": offsets[key]}
    raw = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    return raw + b" " * (-(_LENGTH.size + len(raw)) % 8)


def _chunks(header, items):
    yield _LENGTH.pack(len(header))
    yield header
    for key, t in sorted(items, key=lambda kv: -kv[1].dtype.itemsize):
        raw = _tensor_bytes(t)
        if len(raw) != _numel(t.shape) * t.dtype.itemsize:  # resized while being saved
            raise RuntimeError(f"save_safetensors: {key!r} changed size during the save")
        yield raw


# ------------------------------------------------------------------ load

def load_safetensors(path, device="cpu"):
    """Read a safetensors file (a path or a binary file object) into a dict of str -> Tensor
    of this stage, in the header's order, as safetensors.torch.load_file. Each tensor is a
    fresh, contiguous copy. See ``safetensors_metadata`` for the header's metadata."""
    target = check_device(device, "load_safetensors")
    blob, name = _read_all(path)
    tensors = decode(blob, name)[0]
    return tensors if target.type == "cpu" else {k: t.to(target) for k, t in tensors.items()}


def safetensors_metadata(path):
    """The ``__metadata__`` dict (str -> str) of a safetensors file, or None when it has
    none, as safetensors' ``safe_open(path).metadata()``. The file is checked as
    ``load_safetensors`` checks it; no tensor is converted."""
    blob, name = _read_all(path)
    return _parse(blob, name)[1]


def decode(blob, name):
    """``(tensors, metadata)`` from a safetensors file's bytes; ``name`` is for errors."""
    entries, metadata, data = _parse(blob, name)
    for key, (code, _, _, _) in entries.items():  # refuse before converting anything
        if code not in _OURS or _OURS[code] in dtypes.LACKING:
            raise _unsupported(name, key, code)
    tensors = {key: _tensor_from_bytes(data[begin:end], _OURS[code], shape)
               for key, (code, shape, begin, end) in entries.items()}
    return tensors, metadata


def _unsupported(name, key, code):
    message = f"{name}: tensor {key!r} has dtype {code}"
    if code in _NAMED_ONLY:
        return lacking(__name__, _NAMED_ONLY[code], f"{message} ({_NAMED_ONLY[code]})")
    return CapabilityError(f"{message}, which stagegrad has no dtype for (it computes in "
                           f"{', '.join(d.name for d in dtypes.ALL)})")


def _parse(blob, name):
    """``({key: (dtype code, shape, begin, end)}, metadata or None, data)``, the header
    checked against the file; CheckpointError for anything wrong."""
    def bad(why):
        return CheckpointError(f"{name}: not a valid safetensors file: {why}")

    if len(blob) < _LENGTH.size:
        raise bad(f"truncated ({len(blob)} bytes, shorter than the 8-byte header length)")
    (hlen,) = _LENGTH.unpack_from(blob)
    if hlen > MAX_HEADER:
        raise bad(f"header of {hlen} bytes is too large (the limit is {MAX_HEADER})")
    if len(blob) < _LENGTH.size + hlen:
        raise bad(f"truncated ({len(blob)} bytes, the header alone needs {_LENGTH.size + hlen})")
    raw = bytes(blob[_LENGTH.size:_LENGTH.size + hlen])
    if not raw.startswith(b"{"):
        raise bad("the header does not start with '{'")
    try:
        doc = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique, parse_constant=_no_constant)
    except RecursionError:
        raise bad("the header's JSON is nested too deeply") from None
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise bad(f"the header is not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise bad("the header is not a JSON object")
    metadata = doc.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict)
                                     and all(isinstance(v, str) for v in metadata.values())):
        raise bad("__metadata__ must be an object of string values")
    data = memoryview(blob)[_LENGTH.size + hlen:]
    entries = {key: _entry(key, spec, len(data), bad) for key, spec in doc.items()}
    _check_coverage(entries, len(data), bad)
    return entries, metadata, data


def _unique(pairs):
    doc = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"the name {key!r} appears twice in one object")
        doc[key] = value
    return doc


def _no_constant(word):
    raise ValueError(f"{word} is not JSON")


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _entry(key, spec, data_len, bad):
    if not isinstance(spec, dict) or not {"dtype", "shape", "data_offsets"} <= spec.keys():
        raise bad(f"tensor {key!r} needs an object with dtype, shape and data_offsets")
    code, shape, offsets = spec["dtype"], spec["shape"], spec["data_offsets"]
    if not isinstance(code, str) or code not in _ITEMSIZE:
        raise bad(f"tensor {key!r} has unknown dtype {code!r}")
    if not isinstance(shape, list) or not all(_is_count(s) for s in shape):
        raise bad(f"tensor {key!r} has shape {shape!r}, not a list of non-negative integers")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)
            and offsets[0] <= offsets[1]):
        raise bad(f"tensor {key!r} has data_offsets {offsets!r}, not [begin, end] with begin <= end")
    begin, end = offsets
    if end > data_len:
        raise bad(f"tensor {key!r} ends at byte {end} of the data, which holds {data_len} bytes "
                  "(truncated?)")
    itemsize = _ITEMSIZE[code]
    if itemsize is not None and end - begin != _numel(shape) * itemsize:
        raise bad(f"tensor {key!r} of shape {shape} and dtype {code} needs "
                  f"{_numel(shape) * itemsize} bytes, but its data_offsets span {end - begin}")
    return code, tuple(shape), begin, end


def _check_coverage(entries, data_len, bad):
    """The tensors must tile the data exactly: no overlap, no gap, nothing after them."""
    pos, previous = 0, None
    for key, (_, _, begin, end) in sorted(entries.items(), key=lambda kv: kv[1][2:]):
        if begin < pos:
            raise bad(f"tensor {key!r} (bytes {begin}..{end}) overlaps tensor {previous!r}")
        if begin > pos:
            raise bad(f"bytes {pos}..{begin} of the data belong to no tensor")
        pos, previous = end, key
    if pos != data_len:
        raise bad(f"{data_len - pos} trailing bytes after the last tensor")
