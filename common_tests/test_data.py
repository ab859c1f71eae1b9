"""Datasets, the DataLoader and default_collate (against PyTorch's), and the MNIST reader
(against the IDX files decoded here with NumPy)."""
import collections
import gzip
import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest

from .helpers_nested import assert_same_nested
from .helpers_optim import stage_tensor
from .oracle import assert_close, need_torch, np_

SAMPLE = Path(__file__).resolve().parents[1] / "stage0_python" / "datasets" / "sample"


def _dataset(sg, n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) * 10
    return sg.data.TensorDataset(stage_tensor(sg, x), stage_tensor(sg, y)), x, y


# ------------------------------------------------------------------ datasets and loader

def test_tensor_dataset(sg):
    ds, x, y = _dataset(sg)
    assert len(ds) == 10
    xi, yi = ds[4]
    assert_close(xi, x[4])
    assert yi.item() == y[4]
    with pytest.raises(ValueError, match="Size mismatch"):
        sg.data.TensorDataset(sg.zeros(3, 2), sg.zeros(4))


@pytest.mark.parametrize("n,bs,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (9, 3, True),
                                            (5, 8, False), (5, 8, True)])
def test_loader_batches_in_order(sg, n, bs, drop_last):
    ds, x, y = _dataset(sg, n)
    loader = sg.data.DataLoader(ds, batch_size=bs, drop_last=drop_last)
    batches = list(loader)
    expected = [(x[i:i + bs], y[i:i + bs]) for i in range(0, n, bs)
                if not drop_last or i + bs <= n]
    assert len(loader) == len(batches) == len(expected)
    for (bx, by), (ex, ey) in zip(batches, expected):
        assert_close(bx, ex)
        assert_close(by, ey)


def _order(batches):
    return [int(v) for _, by in batches for v in np_(by) // 10]


def test_shuffle_is_a_seeded_permutation(sg):
    ds, _, _ = _dataset(sg, 23)
    loader = sg.data.DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator().manual_seed(7))
    epoch1, epoch2 = _order(loader), _order(loader)
    assert sorted(epoch1) == list(range(23)) and sorted(epoch2) == list(range(23))
    assert epoch1 != epoch2  # each epoch draws a new permutation
    # the order is randperm's on the same generator stream: reproducible on every stage
    g = sg.Generator().manual_seed(7)
    assert epoch1 == sg.randperm(23, generator=g).tolist()
    assert epoch2 == sg.randperm(23, generator=g).tolist()
    again = sg.data.DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator().manual_seed(7))
    assert _order(again) == epoch1


def test_shuffle_uses_the_default_generator(sg):
    ds, _, _ = _dataset(sg, 23)
    loader = sg.data.DataLoader(ds, batch_size=5, shuffle=True)
    sg.manual_seed(11)
    first = _order(loader)
    sg.manual_seed(11)
    assert _order(loader) == first
    sg.manual_seed(11)
    assert first == sg.randperm(23).tolist()


def test_batch_fast_path_equals_per_sample_collate(sg):
    ds, _, _ = _dataset(sg, 11)
    fast = sg.data.DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator().manual_seed(1))
    slow = sg.data.DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator().manual_seed(1),
                              collate_fn=lambda b: sg.data.default_collate(b))
    for (fx, fy), (sx, sy) in zip(fast, slow):
        assert fx.dtype is sx.dtype and fy.dtype is sy.dtype
        np.testing.assert_array_equal(np_(fx), np_(sx))
        np.testing.assert_array_equal(np_(fy), np_(sy))


def test_subset_and_custom_collate(sg):
    ds, x, y = _dataset(sg, 10)
    sub = sg.data.Subset(ds, [7, 2, 5])
    assert len(sub) == 3
    assert_close(sub[0][0], x[7])
    (bx, by), = list(sg.data.DataLoader(sub, batch_size=3))
    assert_close(bx, x[[7, 2, 5]])
    sums = list(sg.data.DataLoader(sub, batch_size=2, collate_fn=lambda b: [s[1].item() for s in b]))
    assert sums == [[70, 20], [50]]
    singles = list(sg.data.DataLoader(sub, batch_size=None))
    assert [s[1].item() for s in singles] == [70, 20, 50]


def test_loader_argument_errors(sg):
    ds, _, _ = _dataset(sg)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="batch_size"):
            sg.data.DataLoader(ds, batch_size=bad)
    with pytest.raises(ValueError, match="drop_last"):
        sg.data.DataLoader(ds, batch_size=None, drop_last=True)


Point = collections.namedtuple("Point", "x y")


def _samples(lib, make):
    """The same batch of nested samples, with tensors made by ``make``."""
    rng = np.random.default_rng(3)
    out = []
    for i in range(3):
        img = rng.standard_normal((2, 2)).astype(np.float32)
        out.append({"img": make(img), "label": i, "weight": 0.5 * i, "flag": i % 2 == 0, "name": f"s{i}",
                    "pair": (make(np.array([i, i + 1])), i * 1.5), "pt": Point(i, make(img[0]))})
    return out


@pytest.mark.needs_torch
@pytest.mark.capability("float64")
def test_default_collate_matches_torch(sg):
    torch = need_torch()
    from torch.utils.data import default_collate as torch_collate
    ours = sg.data.default_collate(_samples(sg, lambda a: stage_tensor(sg, a)))
    theirs = torch_collate(_samples(torch, torch.tensor))
    assert_same_nested(ours, theirs, torch, "batch")
    assert ours["label"].dtype is sg.int64 and ours["weight"].dtype is sg.float64
    assert ours["flag"].dtype is sg.bool
    with pytest.raises(RuntimeError, match="equal size"):
        sg.data.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate"):
        sg.data.default_collate([object(), object()])


def test_utils_data_is_torch_spelling_of_data(sg):
    import importlib
    assert sg.utils.data.DataLoader is sg.data.DataLoader and sg.utils.data.Subset is sg.data.Subset
    module = importlib.import_module(f"{sg.__name__}.utils.data")  # as ``import torch.utils.data``
    assert set(module.__all__) == set(sg.data.__all__)
    assert all(getattr(module, name) is getattr(sg.data, name) for name in module.__all__)


# ------------------------------------------------------------------ MNIST

def _mnist_dir():
    """The slice of MNIST the package carries: real files, 1,024 training and 256 test images."""
    return SAMPLE / "mnist"


def _np_idx(path):
    raw = gzip.decompress(path.read_bytes())
    ndim = raw[3]
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


@pytest.fixture(scope="module")
def mnist_test_np():
    d = _mnist_dir()
    return _np_idx(d / "t10k-images-idx3-ubyte.gz"), _np_idx(d / "t10k-labels-idx1-ubyte.gz")


def test_mnist_reads_the_test_split(sg, mnist_test_np):
    images, labels = mnist_test_np
    ds = sg.datasets.MNIST(root=_mnist_dir(), train=False)
    assert len(ds) == len(labels) == 256 and ds.is_sample
    assert ds.targets.dtype is sg.int64
    np.testing.assert_array_equal(np_(ds.targets), labels)
    x, y = ds.as_tensors(100, 164)
    assert tuple(x.shape) == (64, 1, 28, 28) and x.dtype is sg.float32
    # bit-exact with PyTorch's ToTensor: uint8 -> float32, divided by 255
    np.testing.assert_array_equal(np_(x), (images[100:164, None].astype(np.float32) / np.float32(255)))
    np.testing.assert_array_equal(np_(y), labels[100:164])
    img, label = ds[-1]
    assert tuple(img.shape) == (1, 28, 28) and isinstance(label, int) and label == labels[-1]
    np.testing.assert_array_equal(np_(img)[0], images[-1].astype(np.float32) / np.float32(255))
    with pytest.raises(IndexError):
        ds[256]


def test_mnist_loader_batches_and_transforms(sg, mnist_test_np):
    images, labels = mnist_test_np
    ds = sg.datasets.MNIST(root=_mnist_dir(), train=False)
    idx = [5, 255, 0, 42]
    bx, by = ds.get_batch(idx)
    np.testing.assert_array_equal(np_(bx), images[idx, None].astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(np_(by), labels[idx])
    loader = sg.data.DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator().manual_seed(0))
    bx2, by2 = next(iter(loader))
    order = sg.randperm(256, generator=sg.Generator().manual_seed(0)).tolist()[:4]
    np.testing.assert_array_equal(np_(by2), labels[order])
    flipped = sg.datasets.MNIST(root=_mnist_dir(), train=False, transform=lambda t: 1 - t,
                                target_transform=lambda y: y + 100)
    img, label = flipped[3]
    assert label == labels[3] + 100
    np.testing.assert_allclose(np_(img)[0], 1 - images[3] / 255.0, atol=1e-6)
    fx, fy = flipped.get_batch([3])  # with transforms the batch goes through them too
    np.testing.assert_array_equal(np_(fx), np_(img)[None])


def test_mnist_data_attribute(sg, tmp_path):
    imgs, lbls = _fake_split(tmp_path, 6)
    ds = sg.datasets.MNIST(root=tmp_path, train=False, verify=False)
    assert tuple(ds.data.shape) == (6, 28, 28) and ds.data.dtype is sg.uint8  # as torchvision's
    np.testing.assert_array_equal(np_(ds.data), imgs)
    np.testing.assert_array_equal(np_(ds.targets), lbls)
    images, labels = ds.raw_bytes()  # as read, for NumPy or PyTorch in one step
    assert isinstance(images, bytes) and isinstance(labels, bytes)
    np.testing.assert_array_equal(np.frombuffer(images, np.uint8).reshape(6, 28, 28), imgs)
    np.testing.assert_array_equal(np.frombuffer(labels, np.uint8), lbls)


def _write_idx(path, arr, compress=True, cut=0):
    arr = np.asarray(arr, np.uint8)
    kind = {1: 0x0801, 3: 0x0803}[arr.ndim]
    raw = struct.pack(">I", kind) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()
    raw = raw[:len(raw) - cut]
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return hashlib.sha256(raw).hexdigest()


def _fake_split(d, n=5, train=False, compress=True, cut=0):
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(n)
    imgs = rng.integers(0, 256, (n, 28, 28))
    lbls = rng.integers(0, 10, n)
    prefix = "train" if train else "t10k"
    suffix = ".gz" if compress else ""
    _write_idx(d / f"{prefix}-images-idx3-ubyte{suffix}", imgs, compress, cut)
    _write_idx(d / f"{prefix}-labels-idx1-ubyte{suffix}", lbls, compress)
    return imgs, lbls


@pytest.mark.parametrize("compress", [True, False])
def test_mnist_reads_plain_or_gzipped_files_without_verification(sg, tmp_path, compress):
    imgs, lbls = _fake_split(tmp_path, 5, train=True, compress=compress)
    ds = sg.datasets.MNIST(root=tmp_path, train=True, verify=False)
    assert len(ds) == 5 and ds.root == tmp_path
    x, y = ds.as_tensors()
    np.testing.assert_array_equal(np_(x), imgs[:, None].astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(np_(y), lbls)


def test_mnist_checksum_is_verified(sg, tmp_path):
    _fake_split(tmp_path, 5)
    with pytest.raises(ValueError, match="SHA-256"):
        sg.datasets.MNIST(root=tmp_path, train=False)
    with pytest.raises(sg.datasets.DatasetError, match="SHA-256"):
        sg.datasets.MNIST(root=tmp_path, train=False)
    # read_idx checks whichever digest it is given
    mnist = sg.datasets.mnist
    f = tmp_path / "t10k-labels-idx1-ubyte.gz"
    digest = hashlib.sha256(gzip.decompress(f.read_bytes())).hexdigest()
    dims, payload = mnist.read_idx(f, sha256=digest)
    assert dims == (5,) and len(payload) == 5


def test_mnist_corrupt_and_truncated_files(sg, tmp_path):
    mnist = sg.datasets.mnist
    _fake_split(tmp_path / "short", 5, cut=100)
    with pytest.raises(mnist.DatasetError, match="truncated IDX"):
        sg.datasets.MNIST(root=tmp_path / "short", train=False, verify=False)
    _fake_split(tmp_path / "gz", 5)
    f = tmp_path / "gz" / "t10k-images-idx3-ubyte.gz"
    f.write_bytes(f.read_bytes()[:-30])
    with pytest.raises(mnist.DatasetError, match="gzip"):
        sg.datasets.MNIST(root=tmp_path / "gz", train=False, verify=False)
    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"\x00\x00\x0d\x01" + struct.pack(">I", 3) + b"\0" * 12)  # float32 data, not bytes
    with pytest.raises(mnist.DatasetError, match="unsigned-byte"):
        mnist.read_idx(bad)
    pair = tmp_path / "pair"
    pair.mkdir()
    _write_idx(pair / "t10k-images-idx3-ubyte", np.zeros((3, 28, 28)), compress=False)
    _write_idx(pair / "t10k-labels-idx1-ubyte", np.zeros(4), compress=False)
    with pytest.raises(mnist.DatasetError, match=r"\[3, 28, 28\] and \[4\]"):
        sg.datasets.MNIST(root=pair, train=False, verify=False)


def test_mnist_search_order(sg, tmp_path, monkeypatch):
    mnist = sg.datasets.mnist
    monkeypatch.setenv("STAGEGRAD_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    dirs = mnist.search_dirs(tmp_path / "root")
    assert dirs[:3] == [tmp_path / "root", tmp_path / "root" / "mnist", tmp_path / "env" / "mnist"]
    assert dirs[-1] == tmp_path / "cache" / "stagegrad" / "mnist"
    shared = [d for d in dirs[3:-1]]
    assert [d.parts[-3:] for d in shared] == [("shared", "datasets", "mnist")]
    # the environment variable is used when the root lacks the files; the root wins when it has them
    _fake_split(tmp_path / "env" / "mnist", 4)
    assert len(sg.datasets.MNIST(root=tmp_path / "empty", train=False, verify=False)) == 4
    _fake_split(tmp_path / "root" / "mnist", 6)
    assert len(sg.datasets.MNIST(root=tmp_path / "root", train=False, verify=False)) == 6


def test_mnist_not_found_and_download(sg, tmp_path, monkeypatch, capsys):
    mnist = sg.datasets.mnist
    src = _mnist_dir()
    monkeypatch.setattr(mnist, "search_dirs", lambda root=None: [Path(root)])
    with pytest.raises(FileNotFoundError, match="download=True"):
        sg.datasets.MNIST(root=tmp_path, train=False)

    # a fake network that serves the bundled slice's real test files (their digests stand in
    # for the full files' here), then one that is offline, then one serving something else
    monkeypatch.delenv("STAGEGRAD_OFFLINE", raising=False)
    monkeypatch.setattr(mnist, "SHA256", mnist.SAMPLE_SHA256)
    served = []

    def serve(url, timeout=None):
        served.append(url)
        return _Response((src / url.rsplit("/", 1)[1]).read_bytes())

    monkeypatch.setattr(sg.datasets.download.urllib.request, "urlopen", serve)
    ds = sg.datasets.MNIST(root=tmp_path / "dl", train=False, download=True)
    assert len(ds) == 256 and sorted(p.name for p in (tmp_path / "dl").iterdir()) == \
        ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    assert all(u.startswith(mnist.MIRRORS[0]) for u in served)
    # not a terminal: one line as each file starts and one as it ends, never a flood
    progress = capsys.readouterr().err.splitlines()
    size = (src / "t10k-images-idx3-ubyte.gz").stat().st_size
    assert progress[:2] == [f"downloading t10k-images-idx3-ubyte.gz ({size / 1e6:.1f} MB)",
                            f"  t10k-images-idx3-ubyte.gz: {size / 1e6:.1f} MB received"] and len(progress) == 4

    def offline(url, timeout=None):
        raise sg.datasets.download.urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(sg.datasets.download.urllib.request, "urlopen", offline)
    with pytest.raises(RuntimeError, match="(?s)could not download.*unreachable"):
        sg.datasets.MNIST(root=tmp_path / "off", train=False, download=True)

    def wrong(url, timeout=None):
        return _Response(gzip.compress(b"not mnist"))

    monkeypatch.setattr(sg.datasets.download.urllib.request, "urlopen", wrong)
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        sg.datasets.MNIST(root=tmp_path / "bad", train=False, download=True)
    assert not any((tmp_path / "bad").iterdir())  # nothing unverified is kept
    monkeypatch.setenv("STAGEGRAD_OFFLINE", "1")  # refused before the network is tried
    monkeypatch.setattr(sg.datasets.download.urllib.request, "urlopen", serve)
    with pytest.raises(RuntimeError, match="STAGEGRAD_OFFLINE is set"):
        sg.datasets.MNIST(root=tmp_path / "air", train=False, download=True)


class _Response:
    """What ``urlopen`` returns, serving ``blob`` in the pieces asked for."""

    def __init__(self, blob):
        self.blob, self.headers = blob, {"Content-Length": str(len(blob))}

    def read(self, n=-1):
        part, self.blob = (self.blob, b"") if n < 0 else (self.blob[:n], self.blob[n:])
        return part

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_shakespeare_downloads_the_pinned_text_when_no_corpus_is_found(sg, tmp_path, monkeypatch):
    shakespeare = sg.datasets.shakespeare
    monkeypatch.delenv("STAGEGRAD_OFFLINE", raising=False)
    monkeypatch.setattr(shakespeare, "search_dirs", lambda root=None: [Path(root)])
    with pytest.raises(FileNotFoundError, match="download=True"):
        sg.datasets.Shakespeare(tmp_path / "none")
    text = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 40)
    monkeypatch.setattr(shakespeare, "TEXT_SHA256", hashlib.sha256(text.encode()).hexdigest())
    served = []

    def serve(url, timeout=None):
        served.append(url)
        return _Response(text.encode())

    monkeypatch.setattr(sg.datasets.download.urllib.request, "urlopen", serve)
    ds = sg.datasets.Shakespeare(tmp_path / "dl", block_size=8, download=True)
    assert served == list(shakespeare.TEXT_URLS) and (tmp_path / "dl" / shakespeare.TEXT).read_text() == text
    assert ds.text == text[:int(len(text) * 0.9)]  # the text as it is: already in the layout
    assert sg.datasets.Shakespeare(tmp_path / "dl", block_size=8).text == ds.text  # found: not fetched again
    assert len(served) == 1
    (tmp_path / "dl" / shakespeare.TEXT).write_text(text + "tampered")
    with pytest.raises(sg.datasets.DatasetError, match="SHA-256 differs"):
        sg.datasets.Shakespeare(tmp_path / "dl", block_size=8)
