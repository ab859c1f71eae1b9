"""What every experiment of ``stagegrad systems`` shares: the refusal, the section title,
stage 3, the process's page faults and resident memory, and child processes."""
import importlib.util
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from .. import load_stage

ROOT = Path(__file__).resolve().parents[2]
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 2 ** 20


class Unavailable(Exception):
    """This machine cannot give the experiment's figures; the message says why."""


def titled(title):
    """Give an experiment function the section title the report shows."""
    def mark(fn):
        fn.title = title
        return fn
    return mark


def stage3():
    try:
        return load_stage("3")
    except RuntimeError as e:
        raise Unavailable(f"stage 3 is not built here ({e})") from None


def faults():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt, r.ru_majflt


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / MIB


def child(code, env=None):
    """Run ``code`` (Python) in a fresh interpreter, on one thread, with ``env`` added to the
    environment; the JSON it prints last."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                               **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"a child process failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def has(module):
    return importlib.util.find_spec(module) is not None
