"""MNIST from its original IDX files, with checksums, a search path and a download.

Where the files are looked for, in order (the first directory holding both files of the
split wins; each file may be gzipped, ``name.gz``, or not):

1. ``root`` when given (the directory itself, then ``root/mnist``);
2. ``$STAGEGRAD_DATA/mnist``;
3. ``shared/datasets/mnist`` beside the source checkout, when it exists;
4. the user cache, ``$XDG_CACHE_HOME/stagegrad/mnist`` (default ``~/.cache/stagegrad/mnist``).

With ``download=True`` and nothing found, the gzipped files are fetched from the mirrors in
``MIRRORS`` into ``root`` (or the user cache), with a progress line, and checked before they
are kept. Every file read is checked against the SHA-256 of its *uncompressed* content
(``SHA256``, or ``SAMPLE_SHA256`` for the bundled slice) unless ``verify=False`` is passed,
which is meant for reading other IDX files in the same layout.

The package carries a slice of the real data, ``MNIST(SAMPLE_ROOT)``: the first 1,024
training and 256 test images with their labels (the sample folder's README names the
licence). It is never found by the search above: a program asks for it by name, so that 1,024
images are never taken for the full 60,000.

Images are kept as raw bytes; tensors are made on request, because building one Python
number per pixel for all 47 million pixels is slow and large in a pure-Python stage.
"""
import gzip
import hashlib
import operator
import os
import struct
import zlib
from pathlib import Path

from .. import creation
from ..data.collate import default_collate
from ..data.dataset import Dataset
from ..device import get_default_device
from ..dtypes import int64, uint8
from . import download

MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/",
           "https://storage.googleapis.com/cvdf-datasets/mnist/",
           "http://yann.lecun.com/exdb/mnist/")
FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
SHA256 = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
# the bundled slice (see the module's docstring): the real files, cut after 1,024 training and
# 256 test images, as IDX files of their own (their headers name the smaller counts)
SAMPLE_ROOT = Path(__file__).resolve().parent / "sample"
SAMPLE_SHA256 = {
    "train-images-idx3-ubyte": "f97c8cbb8f1ea773258a0d7bdab67bce0d5229cad236863c1b4287092297e5a8",
    "train-labels-idx1-ubyte": "a99aaa92d635b763fa053a735f38ba707eddb6295f19988478a10c3f6a56fdcc",
    "t10k-images-idx3-ubyte": "d13186a8171483437b6a936d3a0131b2bb83cc7008923c4be04f42b173a18935",
    "t10k-labels-idx1-ubyte": "7b7f0b73a7c9b36bc8377eb426dd6f4a2b668c90185f8f8f4175105f0d84fb0f",
}
FULL_SIZE = {True: 60000, False: 10000}


def _accepted(name):
    return SHA256[name], SAMPLE_SHA256[name]




class DatasetError(ValueError):
    """A data file is corrupted, truncated, of the wrong kind, or fails its checksum."""


# ------------------------------------------------------------------ IDX files

def read_idx(path, sha256=None):
    """Read an unsigned-byte IDX file (gzipped if its name ends in ``.gz``).

    Returns ``(dims, payload)``: the dimension sizes and the raw data bytes. ``sha256``, when
    given, is the expected digest of the uncompressed file, or a tuple of the digests accepted.
    """
    path = Path(path)
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as e:
            raise DatasetError(f"{path}: not a valid gzip file or truncated ({e})") from None
    if sha256 is not None:
        accepted = (sha256,) if isinstance(sha256, str) else tuple(sha256)
        got = hashlib.sha256(raw).hexdigest()
        if got not in accepted:
            raise DatasetError(f"{path}: SHA-256 of the uncompressed data is {got}, expected "
                               f"{' or '.join(accepted)}; the file is corrupted or not the expected one")
    return parse_idx(raw, str(path))


def parse_idx(raw, name="<bytes>"):
    """``(dims, payload)`` of an IDX file's bytes (big-endian header; unsigned bytes only)."""
    if len(raw) < 4:
        raise DatasetError(f"{name}: truncated IDX file ({len(raw)} bytes)")
    zero, kind, ndim = struct.unpack_from(">HBB", raw)
    if zero != 0 or kind != 0x08:
        raise DatasetError(f"{name}: not an unsigned-byte IDX file (magic {raw[:4].hex()})")
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise DatasetError(f"{name}: truncated IDX header")
    dims = struct.unpack_from(f">{ndim}I", raw, 4)
    n = 1
    for d in dims:
        n *= d
    if len(raw) - head != n:
        what = "truncated" if len(raw) - head < n else "corrupted (trailing bytes)"
        raise DatasetError(f"{name}: {what} IDX file: header {list(dims)} needs {n} data bytes, "
                           f"found {len(raw) - head}")
    return dims, raw[head:]


# ------------------------------------------------------------------ locating and downloading

def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "stagegrad" / "mnist"


def search_dirs(root=None):
    """The directories looked in, in order."""
    dirs = []
    if root is not None:
        dirs += [Path(root), Path(root) / "mnist"]
    env = os.environ.get("STAGEGRAD_DATA")
    if env:
        dirs.append(Path(env) / "mnist")
    checkout = Path(__file__).resolve().parents[2]
    dirs.append(checkout.parent / "shared" / "datasets" / "mnist")
    dirs.append(_cache_dir())
    return dirs


def _locate(names, dirs):
    for d in dirs:
        found = []
        for name in names:
            for candidate in (d / name, d / (name + ".gz")):
                if candidate.is_file():
                    found.append(candidate)
                    break
        if len(found) == len(names):
            return found
    return None


def download_files(names, target, progress=True):
    """Fetch ``name.gz`` for each name into ``target`` from the first mirror that serves it,
    verified against ``SHA256`` before it is kept, written atomically."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        expected = download.sha256_check(SHA256[name])

        def check(blob, expected=expected):
            try:
                return expected(gzip.decompress(blob))
            except (EOFError, OSError, zlib.error) as e:
                return f"not a valid gzip file ({e})"

        blob = download.fetch([m + name + ".gz" for m in MIRRORS], check, name + ".gz", progress)
        download.write_atomic(target / (name + ".gz"), blob)


# ------------------------------------------------------------------ the dataset

class MNIST(Dataset):
    """The MNIST digits: 60,000 training or 10,000 test images of 28x28 pixels.

    - ``ds[i]`` is ``(image, label)``: a float32 tensor of shape (1, 28, 28) scaled to [0, 1]
      (``transform`` applied if given) and an int (``target_transform`` applied if given).
    - ``as_tensors(start, stop)`` gives images ``(n, 1, 28, 28)`` float32 in [0, 1] and labels
      ``(n,)`` int64 in one step: the fast way to get a whole split (transforms not applied).
    - ``targets`` is an int64 tensor of all labels; ``data`` a uint8 tensor ``(N, 28, 28)``
      of the raw pixel values 0..255, as torchvision's, built on first access.
    - ``get_batch(indices)`` lets ``DataLoader`` build a batch without per-sample tensors.
    - ``raw_bytes()`` gives the pixels and labels as read, for handing the split to another
      library (NumPy, PyTorch) in one step.
    - ``root`` is the directory the files were read from; ``verify=False`` skips the checksums.
    - ``is_sample`` is true when the split is not the whole one: the bundled slice
      (``MNIST(SAMPLE_ROOT)``), or a smaller IDX file read with ``verify=False``.
    """

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root=None, train=True, download=False, transform=None, target_transform=None,
                 verify=True):
        self.train = bool(train)
        self.transform = transform
        self.target_transform = target_transform
        names = FILES[self.train]
        dirs = search_dirs(root)
        paths = _locate(names, dirs)
        if paths is None:
            if not download:
                raise FileNotFoundError(
                    f"MNIST {'training' if self.train else 'test'} files {list(names)} (optionally .gz) "
                    "were not found in any of: " + ", ".join(str(d) for d in dirs)
                    + ". Pass download=True to fetch them, or set STAGEGRAD_DATA.")
            download_files(names, Path(root) if root is not None else _cache_dir())
            paths = _locate(names, dirs)
        self.root = paths[0].parent
        # the full files or the bundled slice's, wherever they were copied
        img_dims, self._images = read_idx(paths[0], _accepted(names[0]) if verify else None)
        lbl_dims, self._labels = read_idx(paths[1], _accepted(names[1]) if verify else None)
        if len(img_dims) != 3 or len(lbl_dims) != 1 or img_dims[0] != lbl_dims[0]:
            raise DatasetError(f"{paths[0]} and {paths[1]}: expected images (N, H, W) and labels (N,), "
                               f"got {list(img_dims)} and {list(lbl_dims)}")
        self._n, self._h, self._w = img_dims
        self.is_sample = self._n != FULL_SIZE[self.train]
        self.targets = creation.tensor(list(self._labels), dtype=int64)
        self._data = None

    def __len__(self):
        return self._n

    @property
    def data(self):
        """The images, a uint8 tensor of shape (n, height, width), built on first use."""
        if self._data is None:
            self._data = self._bytes(self._images, self._n, (self._h, self._w))
        return self._data

    @staticmethod
    def _bytes(pixels, n, shape):
        """``pixels`` (bytes) as a uint8 CPU tensor of ``n`` images of ``shape`` (as
        torchvision's): one copy of the bytes, no Python number per pixel from stage 2 on."""
        if not n:
            return creation.zeros(0, *shape, dtype=uint8, device="cpu")
        return creation.frombuffer(pixels, dtype=uint8).reshape(n, *shape)

    def _scaled(self, pixels, n):
        """Images as the model takes them: float32 (n, 1, H, W) in [0, 1] on the default
        device, the bytes cast and divided by the stage's kernels (exactly PyTorch's
        ``x.float() / 255``); cast on the CPU, since a GPU device may lack uint8."""
        return self._bytes(pixels, n, (1, self._h, self._w)).float().to(get_default_device()) / 255

    def _pixels(self, i):
        size = self._h * self._w
        return self._images[i * size:(i + 1) * size]

    def __getitem__(self, index):
        index = operator.index(index)
        if not -self._n <= index < self._n:
            raise IndexError(f"MNIST index {index} is out of range for {self._n} images")
        index %= self._n
        image = self._scaled(self._pixels(index), 1)[0]
        label = self._labels[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label

    def get_batch(self, indices):
        """What ``default_collate`` makes of ``[self[i] for i in indices]``, built in one go."""
        if self.transform is not None or self.target_transform is not None:
            return default_collate([self[i] for i in indices])
        size, data, n = self._h * self._w, self._images, self._n
        for i in indices:
            if not -n <= i < n:
                raise IndexError(f"MNIST index {i} is out of range for {n} images")
        # the pixels gathered as bytes and scaled by the stage's own kernels, not per pixel here
        pixels = b"".join([data[i % n * size:(i % n + 1) * size] for i in indices])
        images = self._scaled(pixels, len(indices))
        labels = creation.tensor([self._labels[i] for i in indices], dtype=int64)
        return images, labels

    def as_tensors(self, start=0, stop=None):
        """Images ``[start, stop)`` as float32 (n, 1, 28, 28) in [0, 1] and their int64 labels."""
        start, stop, _ = slice(start, stop).indices(self._n)
        stop = max(start, stop)
        size = self._h * self._w
        images = self._scaled(self._images[start * size:stop * size], stop - start)
        labels = creation.tensor(list(self._labels[start:stop]), dtype=int64)
        return images, labels

    def raw_bytes(self):
        """``(images, labels)`` as read from the IDX files, as ``bytes``: the pixel values
        0..255 image after image, row-major (``len(self) * H * W`` of them, 28 x 28 for
        MNIST), and one byte per label. The way to hand the split to another library without
        building a number per pixel: ``numpy.frombuffer(images, numpy.uint8)``, or
        ``torch.frombuffer`` likewise; dividing by 255 in float32 then gives exactly the
        values ``ds[i]`` holds. Transforms are not applied."""
        return self._images, self._labels

    def __repr__(self):
        split = "train" if self.train else "test"
        sample = ", the bundled sample" if self.is_sample else ""
        return f"MNIST(split={split}, n={self._n}{sample}, root={str(self.root)!r})"

