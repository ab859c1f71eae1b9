"""Zero-size dimensions through every layer, forward and backward, against PyTorch.

The cases live in ``zero_size_cases.py``; each stage runs them in an interpreter of its
own, because a zero-size dimension once reached a division by zero in compiled code
(a convolution with no input channels: SIGFPE), which a test in this process could not
survive.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .oracle import need_torch
from .zero_size_cases import CASES

ROOT = Path(__file__).resolve().parents[1]
# the only cases PyTorch refuses outright (an RNN over no time steps; the maximum of
# nothing): the stage must refuse them too, and every other case must be answered
REFUSED = {"lstm sequence 0", "gru sequence 0 batch_first", "max over 0"}


def test_zero_size_dimensions_match_pytorch(sg):
    need_torch()
    args = [sys.executable, "-m", "common_tests.zero_size_cases", sg.__name__]
    if getattr(sg, "DEVICE", None):
        args.append(sg.DEVICE)
    try:
        proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        started = [ln[6:] for ln in (e.stdout or b"").decode().splitlines() if ln.startswith("START ")]
        pytest.fail(f"{sg.__name__} hung on {started[-1] if started else 'start-up'}")
    if proc.returncode != 0:
        started = [ln[6:] for ln in proc.stdout.splitlines() if ln.startswith("START ")]
        pytest.fail(f"{sg.__name__} died (exit {proc.returncode}) on {started[-1] if started else '?'}: "
                    f"{proc.stderr[-800:]}")
    outcomes = dict(json.loads(ln[5:]) for ln in proc.stdout.splitlines() if ln.startswith("DONE "))
    assert set(outcomes) == set(CASES)
    wrong = {name: out for name, out in outcomes.items()
             if out != ("refused, as by PyTorch" if name in REFUSED else "ok")}
    assert not wrong, "\n".join(f"{name}: {out}" for name, out in wrong.items())
