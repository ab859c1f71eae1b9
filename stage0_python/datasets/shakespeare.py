"""Shakespeare's plays as one character-level corpus, for the language models of the zoo.

The source is ``shakespeare-plays-gutenberg.tar.gz`` (42 plays and poems from Project
Gutenberg, one ``<title>_gut.txt`` each), looked for in ``root`` (the folder itself, then
``root/shakespeare``), ``$STAGEGRAD_DATA/shakespeare``, ``shared/datasets/shakespeare``
beside the source checkout and the user cache, as MNIST is. The plays are normalised to the
layout people know as "tiny Shakespeare" (``normalise``): front matter before the first act
dropped, act and scene headings and bracketed stage directions removed, each speaker's name
on its own line as ``First Citizen:``, one blank line between speeches. The poems (no acts)
are left out. The first 90% of the text is the training split, the rest validation: a split
by position keeps every validation window unseen, where random windows would overlap.

Where the archive is nowhere, the same places are searched for ``TEXT``, the corpus known as
"tiny Shakespeare" (about 40,000 lines of the plays, already in that layout, public domain
like its source), which ``download=True`` fetches into ``root`` (or the user cache) with a
progress line, pinned by its SHA-256 (``TEXT_SHA256``). The package also carries a slice of
the archive, ``Shakespeare(SAMPLE_ROOT)``: three plays (Hamlet, Macbeth, A Midsummer Night's
Dream), which no search finds by itself.
"""
import hashlib
import os
import re
import tarfile
from pathlib import Path

from .. import creation
from ..data.dataset import Dataset
from ..dtypes import int64
from . import download
from .mnist import DatasetError

ARCHIVE = "shakespeare-plays-gutenberg.tar.gz"
TEXT = "tinyshakespeare.txt"
# the file at a fixed commit of the repository that published it, so the bytes cannot change
TEXT_URLS = ("https://raw.githubusercontent.com/karpathy/char-rnn/"
             "6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e/data/tinyshakespeare/input.txt",)
TEXT_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
_ACT = re.compile(r"^\s*act\s+\w+\.?(\s+scene\b.*)?\s*$", re.IGNORECASE)
_FIRST_ACT = re.compile(r"^\s*act\s+(i|1|first)\.?\s*$", re.IGNORECASE | re.MULTILINE)
_SCENE = re.compile(r"^\s*scene\s+\w+\b.*$", re.IGNORECASE)
_DIRECTION = re.compile(r"\[[^\]]*\]")
_SPEAKER = re.compile(r"^([A-Z][A-Za-z' \-]{0,30})\.$")


def search_dirs(root=None):
    """The directories looked in for the archive, in order."""
    dirs = [Path(root), Path(root) / "shakespeare"] if root is not None else []
    if os.environ.get("STAGEGRAD_DATA"):
        dirs.append(Path(os.environ["STAGEGRAD_DATA"]) / "shakespeare")
    dirs.append(Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "shakespeare")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(Path(base) / "stagegrad" / "shakespeare")
    return dirs


def locate(root=None, download=False):
    """The corpus's path: the archive in the first folder that holds it, else ``TEXT``; with
    ``download``, ``TEXT`` fetched into ``root`` (or the user cache) when neither is found.
    ``FileNotFoundError`` names every place looked in."""
    dirs = search_dirs(root)
    for name in (ARCHIVE, TEXT):
        for d in dirs:
            if (d / name).is_file():
                return d / name
    if download:
        return download_text(Path(root) if root is not None else dirs[-1])
    raise FileNotFoundError(f"neither {ARCHIVE} nor {TEXT} found; looked in: "
                            f"{', '.join(str(d) for d in dirs)} (pass root= or --data DIR, set "
                            f"STAGEGRAD_DATA, or download=True / --download to fetch {TEXT})")


def download_text(target, progress=True):
    """Fetch ``TEXT`` into the folder ``target``, checked against ``TEXT_SHA256``; its path."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    blob = download.fetch(TEXT_URLS, download.sha256_check(TEXT_SHA256), TEXT, progress)
    download.write_atomic(target / TEXT, blob)
    return target / TEXT


def normalise(play):
    """One play's Gutenberg text in the tiny-Shakespeare layout, or None for a poem (no acts)."""
    start = _FIRST_ACT.search(play)
    if start is None:
        return None
    text = _DIRECTION.sub("", play[start.start():].replace("\r\n", "\n"))
    out, blank = [], True
    for line in text.split("\n"):
        line = line.rstrip()
        if _ACT.match(line) or _SCENE.match(line):
            continue
        if not line:
            blank = True
            continue
        speaker = _SPEAKER.match(line) if blank else None
        if out and blank:
            out.append("")
        # a name alone after a blank line opens a speech; speech lines follow it directly
        out.append(speaker.group(1).strip().title() + ":" if speaker else line)
        blank = False
    return "\n".join(out) + "\n"


def load_text(root=None, download=False):
    """The normalised plays, concatenated in file-name order (a fixed order: the split is
    the same on every machine); or ``TEXT`` as it is, checked against its SHA-256."""
    path = locate(root, download)
    if path.name == TEXT:
        raw = path.read_bytes()
        if hashlib.sha256(raw).hexdigest() != TEXT_SHA256:
            raise DatasetError(f"{path}: SHA-256 differs from {TEXT_SHA256}; the file is corrupted "
                               "or not the expected one (delete it to download it again)")
        return raw.decode("ascii", errors="replace")
    plays = []
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith("_gut.txt")),
                             key=lambda m: m.name)
            for m in members:
                text = normalise(tar.extractfile(m).read().decode("ascii", errors="replace"))
                if text:
                    plays.append(text)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise DatasetError(f"{path}: not a readable gzipped tar archive ({e})") from None
    if not plays:
        raise DatasetError(f"{path}: holds no plays (no <title>_gut.txt file with acts)")
    return "\n".join(plays)


class CharTokenizer:
    """Characters to integer ids and back: the sorted characters of ``text`` are the vocabulary."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self._ids = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self):
        """The number of distinct characters."""
        return len(self.chars)

    def encode(self, text):
        """The ids of ``text``; ``ValueError`` names a character outside the vocabulary."""
        try:
            return [self._ids[c] for c in text]
        except KeyError as e:
            raise ValueError(f"character {e.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids):
        """The text of ``ids`` (any iterable of ints)."""
        return "".join(self.chars[int(i)] for i in ids)


class Shakespeare(Dataset):
    """Windows of ``block_size`` characters of the plays and the same windows shifted by one
    (the next-character targets), as ``(x, y)`` int64 tensors.

    ``split`` is ``"train"`` (the first ``1 - val_fraction`` of the text) or ``"val"``.
    ``max_chars`` keeps only the start of the corpus (quick runs and tests); the vocabulary
    is that of the text kept, so both splits share it. ``tokens`` holds the split as one
    1-d tensor; ``tokenizer`` encodes and decodes. ``download=True`` fetches ``TEXT`` when no
    corpus is found (see the module's docstring)."""

    def __init__(self, root=None, split="train", block_size=64, val_fraction=0.1, max_chars=None,
                 download=False):
        if split not in ("train", "val"):
            raise ValueError(f"Shakespeare: split must be 'train' or 'val', got {split!r}")
        if not 0 < val_fraction < 1:
            raise ValueError(f"Shakespeare: val_fraction must be in (0, 1), got {val_fraction}")
        if block_size < 1:
            raise ValueError(f"Shakespeare: block_size must be positive, got {block_size}")
        text = load_text(root, download)
        if max_chars is not None:
            text = text[:max_chars]
        self.tokenizer = CharTokenizer(text)
        cut = int(len(text) * (1 - val_fraction))
        self.text = text[:cut] if split == "train" else text[cut:]
        if len(self.text) <= block_size:
            raise ValueError(f"Shakespeare: the {split} split has {len(self.text)} characters, too few "
                             f"for windows of {block_size}")
        self.block_size = block_size
        self.tokens = creation.tensor(self.tokenizer.encode(self.text), dtype=int64)

    def __len__(self):
        return len(self.text) - self.block_size

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError(f"Shakespeare: index {index} out of range for {len(self)} windows")
        index %= len(self)
        window = self.tokens[index:index + self.block_size + 1]
        return window[:-1], window[1:]

    def __repr__(self):
        return (f"Shakespeare({len(self.text):,} characters, {self.tokenizer.vocab_size} distinct, "
                f"block_size={self.block_size})")
