"""``save(obj, path)`` and ``load(path)``: checkpoints that never unpickle anything
(unless a PyTorch file is loaded with ``weights_only=False``).

Three formats, told apart by ``load`` from a file's first bytes (``format=`` insists on
one): stagegrad's own checkpoint, described below, the default for ``save``; safetensors
(``save(..., format="safetensors")``, ``save_safetensors``: a flat dict of tensors, see
``safetensors_io``); and PyTorch's ``.pt`` files, which PyTorch itself reads and writes
(``save(..., format="torch")``; see ``torch_checkpoint``; PyTorch must be installed).
The rest of this docstring is about the stagegrad format.

What can be saved: tensors, ``None``, bools, ints, floats (including inf and nan),
complex numbers, strings, bytes, dtypes, shapes (``Size``), devices, and lists, tuples, dicts,
``OrderedDict``s and sets of these (dict keys: str, int, float, bool or None): what
PyTorch's ``weights_only`` loading accepts by default, and what covers module and optimizer
state dicts. Beside them, what ``torch.save`` pickles and PyTorch's loader reads back only
when asked (``weights_only=False``, or ``add_safe_globals``/``safe_globals``): NumPy arrays
and scalars, objects (a whole ``nn.Module``) as their class and attributes, and functions
and classes by name; the file still holds no pickle (see ``checkpoint_objects``). Other
values (a frozenset, a lambda, an object that reduces itself its own way) are refused.
Containers nest up to ``MAX_DEPTH`` (200) deep: ``save`` refuses deeper objects and
``load`` deeper headers, so that neither runs into Python's recursion limit. A tensor is
saved as its values, dtype, shape and ``requires_grad``; it loads as a fresh, contiguous
tensor of the loading stage, so a checkpoint written by one stage loads in any other.

File layout (version 1; all integers little-endian)::

    offset  size  field
    0       8     magic  b"\\x89SGRAD\\r\\n"  (the high byte and CR LF expose text-mode mangling)
    8       4     format version, uint32 (= 1)
    12      8     header length H, uint64
    20      8     data length D, uint64
    28      H     header: UTF-8 JSON, see below
    28+H    P     zero padding so the data starts at a multiple of 64
    28+H+P  D     tensor data: each tensor's elements, row-major, little-endian
                  (bool: one byte 0/1; int32, int64, float32, float64: native widths),
                  each tensor starting at a multiple of 64 within the data
    end-32  32    SHA-256 of every byte before it

The header is ``{"format": "stagegrad", "root": NODE}``. A NODE is a JSON null, boolean,
number (finite floats are written with ``repr``, so they read back exactly) or string
standing for itself, or an object with exactly one key saying what it is:
``{"list": [NODE...]}``, ``{"tuple": [NODE...]}``, ``{"dict": [[KEY NODE, NODE]...]}``
(order kept), ``{"ordered_dict": ...}`` (as dict), ``{"set": [NODE...]}``,
``{"size": [int...]}``, ``{"device": "cpu"}``, ``{"complex": [NODE, NODE]}``,
``{"bytes": "<base64>"}``, ``{"float": "inf" | "-inf" | "nan"}``, ``{"dtype": "float32"}`` and
``{"tensor": {"dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24,
"requires_grad": false}}`` (``offset`` counts from the start of the data section; a
``"parameter": true`` member makes it an ``nn.Parameter``), and the ``ndarray``,
``object``, ``global`` and ``same`` nodes of ``checkpoint_objects``.

``save`` writes to a temporary file in the target's directory, fsyncs it and renames it
over the target (``os.replace``), so a crash leaves either the old file or the new one,
never a mix. An error names the path the caller gave, as ``open`` would, never the
temporary file. The temporary file is named
``.<target name>.sgsave.<host>-<pid>.<random>.tmp`` (``<host>``: this machine's name,
letters, digits, ``-`` and ``_`` only; ``<pid>``: the writer's process id). A process
killed while saving leaves it behind; every ``save`` to a path first removes the stale
ones in that directory: files with exactly that naming pattern, that are regular files,
and either written on this host by a process that is no longer running, or (a writer on
another host sharing the directory, whose processes cannot be seen from here; or a system
where liveness cannot be asked safely) last modified more than ``STALE_AFTER_S`` (12
hours, what git allows a lock taken on another host) ago. A live writer's file is never removed, nor
anything else in the directory.

``load`` checks the magic, version, lengths and checksum before it decodes anything, and
raises ``CheckpointError`` (a ``ValueError``) for a foreign, truncated, corrupted or
malformed file, and ``WeightsOnlyError`` (also a ``pickle.UnpicklingError``, as PyTorch
raises) for one holding what ``weights_only`` loading was not allowed to build.
"""
import base64
import errno
import hashlib
import io
import json
import math
import os
import pickle  # for its exception class only: nothing here pickles or unpickles
import re
import socket
import stat
import struct
import sys
import tempfile
import time
from array import array
from collections import OrderedDict

from stage0_python.layout import prod as _numel  # also safetensors_io's

from . import backend as B
from . import checkpoint_objects as objects
from . import dtypes
from .capabilities import lacking
from .checkpoint_objects import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals  # noqa: F401
from .device import CPU, check_device, device
from .dtypes import BY_NAME, DType
from .tensor import Size, Tensor

MAGIC = b"\x89SGRAD\r\n"
VERSION = 1
_PREAMBLE = struct.Struct("<8sIQQ")
_DIGEST = 32
_ALIGN = 64
MAX_DEPTH = 200  # containers in containers; each costs frames of Python's recursion limit
STALE_AFTER_S = 12 * 3600
_TEMP_NAME = re.compile(r"\..*\.sgsave\.(?P<host>[A-Za-z0-9_-]+)-(?P<pid>[0-9]+)\.[a-z0-9_]+\.tmp\Z",
                        re.DOTALL)
_TYPECODES = {"bool": "B", "uint8": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
              "float32": "f", "float64": "d"}
_ITEMSIZE = {name: array(code).itemsize for name, code in _TYPECODES.items()}
# the 2-byte floats have no array code: their bytes pass through the buffer protocol, which
# every stage that computes in them exports (_tensor_bytes, _tensor_from_bytes)
_ITEMSIZE.update(float16=2, bfloat16=2)
# torch.save's two layouts: a zip archive, or (before PyTorch 1.6) pickles led by this one
_TORCH_LEGACY = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
# file signatures worth naming when a foreign file is passed to load()
_KNOWN = ((b"PK\x03\x04", "a zip archive (a PyTorch .pt file?)"), (b"\x80", "a Python pickle"),
          (b"\x93NUMPY", "a NumPy .npy file"), (b"\x1f\x8b", "a gzip file"), (b"\x89HDF", "an HDF5 file"))


class CheckpointError(ValueError):
    """The file is not a readable stagegrad checkpoint: foreign, truncated or corrupted."""


class WeightsOnlyError(CheckpointError, pickle.UnpicklingError):
    """``load(weights_only=True)`` met a global (a class, a function, NumPy's array
    constructors) that ``add_safe_globals`` did not allow; PyTorch raises UnpicklingError."""


# ------------------------------------------------------------------ save

FORMATS = ("stagegrad", "safetensors", "torch")  # what save writes


def save(obj, f, *, format="stagegrad"):  # noqa: A002  (PyTorch-style keyword)
    """Write ``obj`` to ``f`` (a path, written atomically, or a binary file object), as
    torch.save. ``format="safetensors"`` writes a flat dict of str -> Tensor as
    ``save_safetensors`` does; ``format="torch"`` writes the file ``torch.save`` would, for
    ``torch.load`` to read (tensors, NumPy arrays and plain data; needs PyTorch, see
    ``torch_checkpoint``); the default, ``"stagegrad"``, holds any nesting."""
    if format == "safetensors":
        from .safetensors_io import save_safetensors  # here: it imports this module
        return save_safetensors(obj, f)
    if format == "torch":
        from .torch_checkpoint import save_pt
        return _write(f, [save_pt(obj)])
    if format != "stagegrad":
        raise ValueError(f"save: format must be one of {FORMATS}, got {format!r}")
    plan = _Plan()
    root = _encode(obj, plan, "obj", set())
    header = json.dumps({"format": "stagegrad", "root": root}, allow_nan=False,
                        separators=(",", ":")).encode("utf-8")
    _write(f, _chunks(header, plan))


def _write(f, chunks):
    """Write ``chunks`` to a binary file object, or atomically to the path ``f``."""
    if hasattr(f, "write"):
        for c in chunks:
            f.write(c)
        return
    _atomic_write(os.fspath(f), chunks)


class _Plan:
    """The tensors (or NumPy arrays' bytes) to write, in order, where the next one starts in
    the data section, and the tensors, arrays and objects met so far (``{"same": k}``)."""

    def __init__(self):
        self.tensors = []
        self.end = 0
        self.memo = {}  # id -> its number among the memoized, in encoding order
        self.kept = []  # the memoized objects themselves, so that no id is reused meanwhile

    def add(self, t, nbytes=None):
        offset = _aligned(self.end)
        if nbytes is None:
            nbytes = _numel(t.shape) * _ITEMSIZE[t.dtype.name]
        self.tensors.append((t, nbytes))
        self.end = offset + nbytes
        return offset, nbytes

    def seen(self, obj):
        """``{"same": k}`` if ``obj`` was encoded before; else None, and it is remembered."""
        if id(obj) in self.memo:
            return {"same": self.memo[id(obj)]}
        self.memo[id(obj)] = len(self.kept)
        self.kept.append(obj)
        return None


def _aligned(n):
    return -(-n // _ALIGN) * _ALIGN


def _encode(obj, plan, where, active):
    """The JSON node for ``obj``; tensors are added to ``plan`` in data order."""
    np = objects.numpy_of(obj)  # first: NumPy's float64 and bool_ pass for Python's float and bool
    if np is not None:
        body, raw = objects.encode_numpy(obj, np, where)
        same = plan.seen(obj) if isinstance(obj, np.ndarray) else None
        if same:
            return same
        body["offset"], body["nbytes"] = plan.add(raw, len(raw))
        return {"ndarray": body}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        if math.isfinite(obj):
            return float(obj)
        return {"float": "nan" if obj != obj else ("inf" if obj > 0 else "-inf")}
    if isinstance(obj, Tensor):
        if obj.dtype.name not in _ITEMSIZE:
            raise TypeError(f"save: {where} has dtype {obj.dtype}, which checkpoints cannot hold")
        same = plan.seen(obj)
        if same:
            return same
        offset, nbytes = plan.add(obj)
        spec = {"dtype": obj.dtype.name, "shape": list(obj.shape), "offset": offset,
                "nbytes": nbytes, "requires_grad": bool(obj.requires_grad)}
        if type(obj).__name__ == "Parameter":
            spec["parameter"] = True
        return {"tensor": spec}
    if isinstance(obj, DType) and obj.name in _ITEMSIZE:
        return {"dtype": obj.name}
    if isinstance(obj, complex):
        return {"complex": [_encode(obj.real, plan, where, active), _encode(obj.imag, plan, where, active)]}
    if isinstance(obj, (bytes, bytearray)):
        return {"bytes": base64.b64encode(bytes(obj)).decode("ascii")}
    if isinstance(obj, Size):
        return {"size": [int(n) for n in obj]}
    if isinstance(obj, device):  # PyTorch's weights_only loading accepts a torch.device too
        return {"device": str(obj)}
    if isinstance(obj, (list, tuple, dict, set)):
        if id(obj) in active:
            raise ValueError(f"save: {where} contains itself; cyclic structures cannot be saved")
        if len(active) >= MAX_DEPTH:  # active: the containers this one is inside
            raise ValueError(f"save: obj nests lists, tuples and dicts more than {MAX_DEPTH} deep; "
                             "a checkpoint holds at most that many levels")
        active.add(id(obj))
        try:
            if isinstance(obj, dict):
                items = []
                for k, v in obj.items():
                    if not (k is None or isinstance(k, (str, int, float))):
                        raise TypeError(f"save: {where} has a key of type {type(k).__name__}; "
                                        "keys must be str, int, float, bool or None")
                    items.append([_encode(k, plan, where, active),
                                  _encode(v, plan, f"{where}[{k!r}]", active)])
                return {"ordered_dict" if isinstance(obj, OrderedDict) else "dict": items}
            kind = next(k for t, k in _SEQUENCES if isinstance(obj, t))
            items = sorted(obj, key=repr) if kind == "set" else obj  # the same bytes each run
            return {kind: [_encode(v, plan, f"{where}[{i}]", active) for i, v in enumerate(items)]}
        finally:
            active.discard(id(obj))
    if objects.is_global(obj):
        return {"global": objects.encode_global(obj, where)}
    module = type(obj).__module__
    if module == "builtins":
        raise TypeError(f"save: {where} is a {type(obj).__name__}; a checkpoint holds tensors, NumPy arrays, "
                        "numbers, strings, bytes, None, bools, dtypes, shapes, lists/tuples/dicts/sets of "
                        "them, and objects as their class and attributes")
    return _encode_object(obj, plan, where, active)


def _encode_object(obj, plan, where, active):
    """An object node: its class by name and its attributes, as pickle's default protocol
    would save them (``checkpoint_objects``)."""
    same = plan.seen(obj)
    if same:
        return same
    state = objects.object_state(obj, where)
    if len(active) >= MAX_DEPTH:
        raise ValueError(f"save: obj nests objects and containers more than {MAX_DEPTH} deep; "
                         "a checkpoint holds at most that many levels")
    active.add(id(obj))
    try:
        cls = type(obj)
        return {"object": [cls.__module__, cls.__qualname__, _encode(state, plan, f"{where}.__dict__", active)]}
    finally:
        active.discard(id(obj))


# the sequence kinds, each with its node name (tuple before list: a Size is a tuple)
_SEQUENCES = ((tuple, "tuple"), (list, "list"), (set, "set"))


def _chunks(header, plan):
    """The file's bytes, piece by piece, with the trailing digest last."""
    digest = hashlib.sha256()

    def emit(b):
        digest.update(b)
        return b

    yield emit(_PREAMBLE.pack(MAGIC, VERSION, len(header), plan.end))
    yield emit(header)
    start = _PREAMBLE.size + len(header)
    yield emit(bytes(_aligned(start) - start))
    pos = 0
    for t, nbytes in plan.tensors:
        yield emit(bytes(_aligned(pos) - pos))
        raw = t if isinstance(t, bytes) else _tensor_bytes(t)
        if len(raw) != nbytes:  # the tensor was resized while being saved
            raise RuntimeError(f"save: a tensor changed size during the save ({len(raw)} != {nbytes} bytes)")
        pos = _aligned(pos) + len(raw)
        yield emit(raw)
    yield digest.digest()


def _tensor_bytes(t):
    if sys.byteorder == "little":
        try:  # a stage whose storage exports the buffer protocol hands over its bytes at once
            return memoryview(t.detach().cpu()._data).tobytes()
        except TypeError:
            pass
    name = t.dtype.name
    values = t.detach().reshape(-1).tolist()
    if name == "bool":
        values = [1 if v else 0 for v in values]
    arr = array(_TYPECODES[name], values)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tobytes()


def _atomic_write(path, chunks):
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):  # refused before anything is written
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    _remove_stale_temporaries(directory)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=directory)
    except OSError as e:
        raise _naming(e, path) from None
    try:
        with os.fdopen(fd, "wb") as out:
            for c in chunks:
                out.write(c)
            out.flush()
            os.fsync(out.fileno())
        _default_permissions(tmp)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _naming(e, path) from None
        raise
    _fsync_dir(directory)


def _naming(error, path):
    """``error`` as it reads when it names the caller's ``path`` instead of the temporary
    file (the temporary name means nothing to the caller)."""
    if error.filename is None:
        return error
    return type(error)(error.errno, error.strerror, path)


def _host():
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:64] or "host"


def _temp_prefix(path):
    # the target's name is cut so that the whole name stays within 255 bytes
    return f".{os.path.basename(path)[:100]}.sgsave.{_host()}-{os.getpid()}."


def _remove_stale_temporaries(directory):
    """Remove what killed saves left in ``directory`` (the rule: module docstring)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return  # the save itself reports an unusable directory
    host, now = _host(), time.time()
    for name in names:
        m = _TEMP_NAME.match(name)
        if m is None:
            continue
        full = os.path.join(directory, name)
        try:
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode):
                continue
            dead_here = m["host"] == host and not _pid_alive(int(m["pid"]))
            if dead_here or now - st.st_mtime > STALE_AFTER_S:
                os.unlink(full)
        except OSError:
            pass  # gone already (another process cleaned it), or not ours to remove


def _pid_alive(pid):
    """Whether process ``pid`` runs on this machine; ``True`` when that cannot be known."""
    if os.name != "posix" or not 0 < pid < 2**31:
        return True  # os.kill(pid, 0) would terminate the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # PermissionError: it runs, as another user
    return True


def _default_permissions(path):
    # mkstemp makes the file private (0600); give it the mode a plain open() would
    if os.name == "posix":
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(path, 0o666 & ~mask)


def _fsync_dir(directory):
    # make the rename itself durable; not possible (nor needed) on every platform
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ------------------------------------------------------------------ load

def load(f, map_location=None, weights_only=None, *, format=None):  # noqa: A002
    """Read a checkpoint from a path or a binary file object, as torch.load.

    ``format=None`` tells the file's kind by its first bytes: a stagegrad checkpoint
    (``save``), a safetensors file (loads as a dict of tensors, as ``load_safetensors``) or
    a PyTorch ``.pt`` file (``torch.save``'s zip archive, or its pre-1.6 pickles; needs
    PyTorch, which reads it with ``weights_only=True``; its tensors become this stage's, see
    ``torch_checkpoint``). Any other pickle is refused unread.
    ``format="stagegrad"``, ``"safetensors"`` or ``"torch"`` insists on that kind.

    ``map_location`` is PyTorch's: ``None``, ``"cpu"``, ``"cpu:0"`` or ``sg.device("cpu")``
    keep every tensor on the CPU, where checkpoints are saved from; a dict maps saved
    locations to targets (``{"cuda:0": "cpu"}``: a saved tensor's location is ``"cpu"``);
    a callable is called as ``fn(tensor, "cpu")`` for each tensor (the tensor standing for
    PyTorch's storage) and its result is loaded in its place. A map to any other device
    raises DeviceError naming it.

    ``weights_only`` is PyTorch 2.13's: ``None`` or ``True`` (the default) loads tensors and
    plain data, and NumPy arrays, objects and globals only where ``add_safe_globals`` or
    ``safe_globals`` allowed what PyTorch would ask for (``checkpoint_objects``); else it
    raises ``WeightsOnlyError`` saying how to load the file. ``weights_only=False`` loads
    everything, importing the classes and functions the file names (as unpickling does: do
    it only for a file you trust). A PyTorch ``.pt`` file is handed to ``torch.load`` with
    the same ``weights_only`` and this stage's allowed globals.
    """
    if weights_only not in (None, True, False):
        raise TypeError(f"load: weights_only must be a bool or None, got {weights_only!r}")
    if format not in (None, "stagegrad", "safetensors", "torch"):
        raise ValueError(f"load: format must be None (detect it), 'stagegrad', 'safetensors' or "
                         f"'torch', got {format!r}")
    relocate = _relocation(map_location)
    blob, name = _read_all(f)
    kind = format or _sniff(blob)
    if kind == "stagegrad":
        resolver = objects.Resolver(weights_only is not False, __name__.rpartition(".")[0])
        root = _decode_checkpoint(blob, name, resolver)
    elif kind == "safetensors":
        from .safetensors_io import decode  # here: it imports this module
        root = decode(blob, name)[0]
    else:
        from .torch_checkpoint import load_pt
        root = load_pt(blob, name, weights_only is not False)
    return root if relocate is None else _relocated(root, relocate)


def get_unsafe_globals_in_checkpoint(f):
    """The ``module.name`` of each class and function the checkpoint ``f`` would have
    ``load(weights_only=True)`` build that the allowlist (``add_safe_globals``,
    ``safe_globals``) does not hold, as torch.serialization.get_unsafe_globals_in_checkpoint.
    For a NumPy array it also names the dtype's class, which PyTorch asks for while
    loading but its static scan of the pickle does not see. A PyTorch file is scanned by
    PyTorch."""
    blob, name = _read_all(f)
    kind = _sniff(blob)
    if kind == "safetensors":
        return []
    if kind == "torch":
        from .torch_checkpoint import _torch
        torch = _torch(f"get_unsafe_globals_in_checkpoint: {name} looks like a PyTorch .pt file", "reading one")
        with torch.serialization.safe_globals(get_safe_globals()):
            return torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(blob))
    header, _ = _verified_sections(blob, name)
    try:
        return objects.unsafe_globals(json.loads(header.decode("utf-8"))["root"])
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise CheckpointError(f"{name}: malformed checkpoint header ({type(e).__name__}: {e})") from None


def _read_all(f):
    """The bytes of ``f`` (a path or a binary file object) and the name errors give it."""
    if hasattr(f, "read"):
        return f.read(), getattr(f, "name", "<file object>")
    name = os.fspath(f)
    with open(name, "rb") as fh:
        return fh.read(), name


def _sniff(blob):
    """The format ``blob`` is written in, by its first bytes; an unknown file counts as a
    stagegrad checkpoint, whose errors describe what it looks like."""
    if blob.startswith(MAGIC):
        return "stagegrad"
    if blob[8:9] == b"{":  # a safetensors header length, then its JSON
        return "safetensors"
    if blob.startswith(b"PK\x03\x04") or blob.startswith(_TORCH_LEGACY):
        return "torch"
    return "stagegrad"


def _decode_checkpoint(blob, name, resolver):
    header, data = _verified_sections(blob, name)
    try:
        doc = json.loads(header.decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("format") != "stagegrad":
            raise ValueError("the header does not name the stagegrad format")
        root = _decode(doc["root"], _Reader(data, resolver), 0)
    except CheckpointError:
        raise
    except RecursionError:  # json's parser, on a header nested far deeper than MAX_DEPTH
        raise CheckpointError(f"{name}: malformed checkpoint header (nested too deeply to "
                              f"decode; a checkpoint nests at most {MAX_DEPTH} containers)") from None
    except (ValueError, KeyError, TypeError, IndexError) as e:
        raise CheckpointError(f"{name}: malformed checkpoint header ({e})") from None
    return root


def _relocation(map_location):
    """What ``map_location`` asks of each loaded tensor: None (leave it), or a function."""
    if map_location is None:
        return None
    if isinstance(map_location, dict):
        return _moving_to(map_location.get("cpu", map_location.get(CPU, "cpu")))  # keys as str or device
    if callable(map_location) and not isinstance(map_location, device):
        def apply(t):
            out = map_location(t, "cpu")
            if not isinstance(out, Tensor):
                raise TypeError(f"load: map_location returned {type(out).__name__}, not a Tensor")
            return out
        return apply
    return _moving_to(map_location)


def _moving_to(target):
    """A function moving each loaded tensor to the device ``target`` (refused where this
    stage lacks it), or None for the CPU, where tensors load."""
    d = check_device(target, "load(map_location=...)")
    return None if d.type == "cpu" else (lambda t: t.to(d))


def _relocated(obj, fn):
    """``obj`` with ``fn`` applied to every tensor in it (containers rebuilt; no deeper than
    the ``MAX_DEPTH`` that decoding already enforced)."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [_relocated(v, fn) for v in obj]
    if isinstance(obj, tuple) and not isinstance(obj, Size):
        return tuple(_relocated(v, fn) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _relocated(v, fn)) for k, v in obj.items())
    return obj


def _verified_sections(blob, name):
    n = len(blob)
    if not blob.startswith(MAGIC):
        if 0 < n < len(MAGIC) and MAGIC.startswith(blob):
            raise CheckpointError(f"{name}: truncated checkpoint ({n} bytes)")
        raise CheckpointError(f"{name} is not a stagegrad checkpoint: {_describe(blob)}")
    if n < _PREAMBLE.size:
        raise CheckpointError(f"{name}: truncated checkpoint ({n} bytes, shorter than the "
                              f"{_PREAMBLE.size}-byte preamble)")
    _, version, hlen, dlen = _PREAMBLE.unpack_from(blob)
    if version != VERSION:
        raise CheckpointError(f"{name}: checkpoint format version {version} is not supported "
                              f"(this stagegrad reads version {VERSION})")
    data_start = _aligned(_PREAMBLE.size + hlen)
    expected = data_start + dlen + _DIGEST
    if n < expected:
        raise CheckpointError(f"{name}: truncated checkpoint ({n} bytes, expected {expected})")
    if n > expected:
        raise CheckpointError(f"{name}: corrupted checkpoint ({n - expected} unexpected trailing bytes)")
    if hashlib.sha256(blob[:-_DIGEST]).digest() != blob[-_DIGEST:]:
        raise CheckpointError(f"{name}: corrupted checkpoint (SHA-256 checksum mismatch)")
    return blob[_PREAMBLE.size:_PREAMBLE.size + hlen], memoryview(blob)[data_start:data_start + dlen]


def _describe(blob):
    if not blob:
        return "the file is empty"
    for sig, what in _KNOWN:
        if blob.startswith(sig):
            return f"it looks like {what}"
    return f"it starts with {bytes(blob[:8])!r}, not {MAGIC!r}"


_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_CONTAINERS = {"list": list, "tuple": tuple, "dict": dict, "ordered_dict": OrderedDict, "set": set}


class _Reader:
    """What decoding needs beside the header: the data section, the tensors, arrays and
    objects decoded so far (for ``{"same": k}``), and what ``weights_only`` allows."""

    def __init__(self, data, resolver):
        self.data, self.resolver, self.memo = data, resolver, []

    def remember(self, obj):
        self.memo.append(obj)
        return obj

    def section(self, spec, what):
        """The bytes ``spec``'s offset and nbytes name, checked to lie in the data section."""
        offset, nbytes = spec["offset"], spec["nbytes"]
        if not (isinstance(offset, int) and isinstance(nbytes, int) and nbytes >= 0
                and 0 <= offset <= len(self.data) - nbytes):
            raise ValueError(f"{what} does not fit the data section (offset {offset}, {nbytes} bytes, "
                             f"section of {len(self.data)} bytes)")
        return self.data[offset:offset + nbytes]


def _decode(node, reader, depth):
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if not isinstance(node, dict) or len(node) != 1:
        raise ValueError(f"unknown node {node!r:.80}")
    (kind, body), = node.items()
    if (kind in _CONTAINERS or kind == "object") and depth >= MAX_DEPTH:
        raise ValueError(f"containers nested more than {MAX_DEPTH} deep")
    if kind in ("dict", "ordered_dict"):
        return _CONTAINERS[kind]((_decode(k, reader, depth + 1), _decode(v, reader, depth + 1)) for k, v in body)
    if kind in _CONTAINERS:
        return _CONTAINERS[kind](_decode(v, reader, depth + 1) for v in body)
    if kind == "complex":
        re_, im = (_decode(v, reader, depth) for v in body)
        return complex(re_, im)
    if kind == "bytes":
        return base64.b64decode(body.encode("ascii"), validate=True)
    if kind == "size":
        return Size(int(n) for n in body)
    if kind == "float":
        return _SPECIAL_FLOATS[body]
    if kind == "dtype":
        return _dtype(body)
    if kind == "device":
        return device(body)
    if kind == "tensor":
        t = _decode_tensor(body, reader)
        if body.get("parameter"):
            from .nn.module import Parameter  # here: nn imports much of the stage
            t = Parameter(t, t.requires_grad)
        return reader.remember(t)
    if kind == "same":
        if not (isinstance(body, int) and 0 <= body < len(reader.memo)):
            raise ValueError(f"reference to object {body!r}, of {len(reader.memo)} met so far")
        return reader.memo[body]
    if kind == "ndarray":
        raw = reader.section(body, f"NumPy array of shape {body.get('shape')}")
        arr = objects.decode_numpy(body, raw, reader.resolver)
        return arr if body.get("scalar") else reader.remember(arr)
    if kind == "global":
        return reader.resolver.resolve(*body)
    if kind == "object":
        module, qualname, state = body
        cls = reader.resolver.resolve(module, qualname)
        if not isinstance(cls, type):
            raise ValueError(f"{module}.{qualname} is not a class")
        obj = reader.remember(cls.__new__(cls))
        objects.restore_object(obj, _decode(state, reader, depth + 1))
        return obj
    raise ValueError(f"unknown node kind {kind!r}")


def _dtype(name):
    if name not in _ITEMSIZE:
        raise ValueError(f"unknown dtype {name!r}")
    if name in dtypes.LACKING:
        raise lacking(__name__, name, f"load: the checkpoint holds a {name} tensor")
    return BY_NAME[name]


def _decode_tensor(spec, reader):
    name, shape = spec["dtype"], tuple(spec["shape"])
    _dtype(name)  # refuses an unknown one
    if not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ValueError(f"bad tensor shape {list(shape)}")
    what = f"tensor of shape {list(shape)} and dtype {name}"
    if spec["nbytes"] != _numel(shape) * _ITEMSIZE[name]:
        raise ValueError(f"{what} does not fit the data section ({spec['nbytes']} bytes)")
    t = _tensor_from_bytes(reader.section(spec, what), name, shape)
    if spec.get("requires_grad"):
        t.requires_grad_(True)
    return t


def _tensor_from_bytes(raw, dtype_name, shape):
    """A fresh tensor of this stage from ``raw``: the elements of dtype ``dtype_name``
    (one of ``_TYPECODES``), row-major, little-endian; ``len(raw)`` must fit ``shape``."""
    dtype = BY_NAME[dtype_name]
    if sys.byteorder == "little" and dtype_name != "bool":  # a bool byte may be any nonzero
        buf = B.full(tuple(shape), 0, dtype)
        try:  # written in place where the storage exports the buffer protocol
            memoryview(buf).cast("B")[:] = raw
            return Tensor._make(buf)
        except (TypeError, ValueError, NotImplementedError):
            pass
    arr = array(_TYPECODES[dtype_name])
    arr.frombytes(raw)
    if sys.byteorder == "big":
        arr.byteswap()
    # bool bytes stay ints: every backend's from_list stores any nonzero as True
    return _tensor_from_values(arr.tolist(), BY_NAME[dtype_name], shape)


def _tensor_from_values(values, dtype, shape):
    """A fresh tensor of ``shape`` holding the flat list ``values`` (which fit ``dtype``).
    Made with its shape, not reshaped: on a stage without views a reshaped tensor counts
    as a view, and would refuse in-place updates (of a loaded optimizer buffer, say)."""
    return Tensor._make(B.from_list(values, tuple(shape), dtype))
