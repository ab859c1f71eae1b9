"""Where ``stagegrad train`` reads its data from: ``--data DIR`` and ``--download``.

The datasets' own search path (``sg.datasets.mnist.search_dirs``) falls back from a root
that lacks the files to ``$STAGEGRAD_DATA``, the shared folder and the user cache. A
command line must not: ``--data DIR`` names the one directory to read (``DIR`` itself or
``DIR/mnist``, ``DIR/shakespeare``), and a directory that does not exist or lacks the
files is an error naming it. Without ``--data`` the search path applies. Either way the
directory found is returned, for the run to say where its data came from, and is handed
to the dataset as its root, which it searches first.

The file layout is the same on every stage (they share stage 0's dataset modules), so the
look-up uses stage 0's.
"""
from pathlib import Path

from . import load_stage


def _datasets():
    return load_stage("0").datasets


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
                         f"holds the dataset; --download fetches MNIST into it)")
    return root


def mnist_dir(data=None, download=False, say=print):
    """The directory holding both MNIST splits: in ``data`` (or ``data/mnist``) when given,
    else on the datasets' search path; with ``download``, fetched there (or into the user
    cache) when absent. ``ValueError`` names where it looked and what to pass."""
    mnist = _datasets().mnist
    names = mnist.FILES[True] + mnist.FILES[False]
    listed = ", ".join(names)
    if data is not None:
        root = _given_dir(data, download)
        dirs, target = [root, root / "mnist"], root
    else:
        dirs = mnist.search_dirs(None)
        target = dirs[-1]  # the user cache, the last place searched
    for d in dirs:
        if _holds(d, names):
            return d
    if not download:
        where = (f"in {dirs[0]} (nor in {dirs[1]})" if data is not None else
                 "in any of: " + ", ".join(str(d) for d in dirs))
        raise ValueError(f"the MNIST files ({listed}, each optionally .gz) were not found {where}. "
                         f"Pass --data DIR naming a directory that holds them, or --download to "
                         f"fetch them into {target}")
    say(f"downloading MNIST into {target}")
    mnist.download_files(names, target)
    return target


def shakespeare_dir(data=None, download=False):
    """The directory holding the Shakespeare archive: in ``data`` (or ``data/shakespeare``)
    when given, else on the datasets' search path. The archive has no download source, so
    ``download`` only changes what the error says."""
    shakespeare = _datasets().shakespeare
    archive = shakespeare.ARCHIVE
    if data is not None:
        root = _given_dir(data, False)
        dirs = [root, root / "shakespeare"]
    else:
        dirs = shakespeare.search_dirs(None)
    for d in dirs:
        if (d / archive).is_file():
            return d
    where = (f"in {dirs[0]} (nor in {dirs[1]})" if data is not None else
             "in any of: " + ", ".join(str(d) for d in dirs))
    why = ("; --download fetches MNIST only, the archive has no download source" if download else
           "; it cannot be downloaded (--download fetches MNIST only)")
    raise ValueError(f"{archive} was not found {where}. Pass --data DIR naming a directory that "
                     f"holds it{why}")
