"""Starting programs under MPI: the ``mpirun`` command line that ``stagegrad train
--nproc``, ``stagegrad distributed`` and the tests use, and whether this process is one
that ``mpirun`` started.

One thread per rank (``OMP_NUM_THREADS=1`` and its OpenBLAS and MKL siblings, unless
set already): ranks that each spawned a thread per core would fight over the cores.
``--oversubscribe`` lets a job have more ranks than the machine has cores, and
``--allow-run-as-root`` is added when this process runs as root (containers and CI do),
which Open MPI otherwise refuses.
"""
import os
import shutil
import sys

from .machine import THREAD_VARIABLES

# what the launchers set in a rank's environment: Open MPI, MPICH and Intel MPI, PMIx
_RANK_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")


def launched_by_mpirun():
    """Whether ``mpirun`` (or another MPI launcher) started this process."""
    return any(v in os.environ for v in _RANK_VARIABLES)


def mpirun_path():
    """The ``mpirun`` executable, or None."""
    return shutil.which("mpirun")


def mpirun_command(nproc, program, threads=None):
    """The command that runs ``program`` (a list: the executable and its arguments) as
    ``nproc`` ranks on this machine, with ``threads`` threads each (default: the thread
    variables' values where set, else 1)."""
    mpirun = mpirun_path()
    if mpirun is None:
        raise RuntimeError("mpirun was not found: install Open MPI (Debian: openmpi-bin libopenmpi-dev) "
                           "and mpi4py (pip install 'stagegrad[distributed]')")
    cmd = [mpirun, "-n", str(nproc), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    for name in THREAD_VARIABLES:
        value = threads if threads is not None else os.environ.get(name, 1)
        cmd += ["-x", f"{name}={value}"]
    return cmd + list(program)


def python_module(*args):
    """``python -m args...`` with this interpreter: what a rank runs."""
    return [sys.executable, "-m", *args]
