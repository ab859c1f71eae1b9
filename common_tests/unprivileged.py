"""Run a check in a process without privileges, also when the suite runs as root.

Root passes every file permission check (``CAP_DAC_OVERRIDE``), so a test of what happens
in a read-only folder proves nothing when the suite runs as root, as CI does. ``run``
starts the check as a child process; under root, through util-linux's ``setpriv`` with
every capability dropped (the bounding set too, so that none come back when the child
executes Python). The child keeps uid 0, so it still reads the interpreter and the
checkout wherever they are (``nobody`` cannot reach a Python installed under ``/root``),
while the kernel checks a file's mode bits for it as for any other owner: a folder of mode
0o500 is read-only to it.
"""
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DROP_PRIVILEGES = ("--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--")


def command(argv):
    """``argv`` as a command that runs without privileges (unchanged unless root)."""
    if os.name != "posix":
        pytest.skip("needs POSIX permissions")
    if os.geteuid() != 0:
        return list(argv)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and setpriv (util-linux) is not installed to drop root's privileges")
    return [setpriv, *DROP_PRIVILEGES, *argv]


def run(argv, timeout=300):
    """Run ``argv`` without privileges, in the checkout and importing its packages; the
    completed process, with its output."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run(command(argv), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@contextmanager
def read_only_folder(path):
    """``path`` as a folder its owner may list but not write in (mode 0o500), made writable
    again on leaving so that it can be removed."""
    path.mkdir(exist_ok=True)
    path.chmod(0o500)
    try:
        yield path
    finally:
        path.chmod(0o700)
