"""Where the commands read their data from: ``--data DIR``, the search path, a download.

The datasets' own search path (``sg.datasets.mnist.search_dirs``) falls back from a root
that lacks the files to ``$STAGEGRAD_DATA``, the shared folder and the user cache. A
command line must not: ``--data DIR`` names the one directory to read (``DIR`` itself or
``DIR/mnist``, ``DIR/shakespeare``), and a directory that does not exist or lacks the
files is an error naming it, unless ``--download`` asks to fetch them into it. Without
``--data`` the search path applies, and when it finds nothing the data is downloaded into
the user cache (with a progress line, checked against its SHA-256), as the README promises:
MNIST from its mirrors, Shakespeare as the pinned "tiny Shakespeare" text. Offline, the
error names the bundled slice (``sg.datasets.SAMPLE_ROOT``) as what ``--data`` can point at.
``STAGEGRAD_OFFLINE=1`` makes every download fail at once instead of trying the network.

Either way the directory found is returned, for the run to say where its data came from,
and is handed to the dataset as its root, which it searches first.

The file layout is the same on every stage (they share stage 0's dataset modules), so the
look-up uses stage 0's.
"""
from pathlib import Path

from . import load_stage


def _datasets():
    return load_stage("0").datasets


def offline():
    """Whether downloads are refused (``STAGEGRAD_OFFLINE``): a dataset found nowhere is then
    an error at once."""
    return _datasets().download.offline()


def _holds(directory, names):
    """Whether ``directory`` holds every file of ``names``, each plain or gzipped."""
    return all((directory / n).is_file() or (directory / (n + ".gz")).is_file() for n in names)


def _given_dir(data, download):
    """``--data`` as a Path; an error when it exists but is not a directory, or does not
    exist and nothing is to be downloaded into it."""
    root = Path(data)
    if root.exists() and not root.is_dir():
        raise ValueError(f"--data {data}: not a directory")
    if not root.exists() and not download:
        raise ValueError(f"--data {data}: no such directory (--data must name a directory that "
                         f"holds the dataset; --download fetches it there)")
    return root


class NotDownloaded(ValueError):
    """A dataset found nowhere that could not be downloaded. The message names the bundled
    slice as what ``--data`` can point at; ``why`` is the first source's failure, one line."""

    def __init__(self, name, error):
        lines = str(error).splitlines()  # a header, then one line per source that failed
        self.why = lines[1].strip() if len(lines) > 1 else lines[0]
        super().__init__(f"{name} could not be downloaded ({error}). Pass --data DIR naming a "
                         f"directory that holds it, or --data {_datasets().SAMPLE_ROOT} for the "
                         f"small slice this package carries")


def _where(data, dirs):
    """Where a look-up looked, for its error."""
    return (f"in {dirs[0]} (nor in {dirs[1]})" if data is not None else
            "in any of: " + ", ".join(str(d) for d in dirs))


def _places(data, download, sub, module, fetch):
    """Where a dataset is looked for, where it is fetched to when found nowhere, and whether it
    may be: ``data`` and ``data/sub`` when given, fetched into ``data`` only with ``download``;
    else the search path of the dataset's ``module``, and the user cache, its last place."""
    if data is not None:
        root = _given_dir(data, download)
        return [root, root / sub], root, download
    dirs = module.search_dirs(None)
    return dirs, dirs[-1], fetch


def _fetched(name, target, say, note, fetch):
    """``fetch()`` a dataset into ``target`` after saying ``note``; ``target``, or
    ``NotDownloaded`` naming the dataset (``name``) when every source failed."""
    say(note)
    try:
        fetch()
    except RuntimeError as e:
        raise NotDownloaded(name, e) from None
    return target


def mnist_dir(data=None, download=False, say=print, fetch=True):
    """The directory holding both MNIST splits: in ``data`` (or ``data/mnist``) when given,
    else on the datasets' search path. When absent, they are fetched into ``data`` (with
    ``download``) or, without ``data``, into the user cache (unless ``fetch`` is false).
    ``ValueError`` names where it looked and what to pass."""
    mnist = _datasets().mnist
    names = mnist.FILES[True] + mnist.FILES[False]
    listed = ", ".join(names)
    dirs, target, fetch = _places(data, download, "mnist", mnist, fetch)
    for d in dirs:
        if _holds(d, names):
            return d
    if not fetch:
        raise ValueError(f"the MNIST files ({listed}, each optionally .gz) were not found "
                         f"{_where(data, dirs)}. "
                         f"Pass --data DIR naming a directory that holds them, or --download to "
                         f"fetch them into {target}")
    return _fetched("MNIST", target, say, f"MNIST not found; downloading it into {target}",
                    lambda: mnist.download_files(names, target))


def shakespeare_dir(data=None, download=False, fetch=True, say=print):
    """The directory holding the Shakespeare corpus (the archive, or the downloaded text): in
    ``data`` (or ``data/shakespeare``) when given, else on the datasets' search path. When
    absent, the text is fetched as ``mnist_dir`` fetches MNIST."""
    shakespeare = _datasets().shakespeare
    files = (shakespeare.ARCHIVE, shakespeare.TEXT)
    dirs, target, fetch = _places(data, download, "shakespeare", shakespeare, fetch)
    for name in files:
        for d in dirs:
            if (d / name).is_file():
                return d
    if not fetch:
        raise ValueError(f"neither {files[0]} nor {files[1]} was found {_where(data, dirs)}. Pass --data DIR "
                         f"naming a directory that holds one, or --download to fetch {files[1]}")
    return _fetched("the Shakespeare corpus", target, say,
                    f"Shakespeare not found; downloading {files[1]} into {target}",
                    lambda: shakespeare.download_text(target))
