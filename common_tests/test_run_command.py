"""``stagegrad run``: programs written for PyTorch (``torch_programs/``) run unchanged on every
stage, with PyTorch's output; and its import hook (``stagegrad.as_torch``) gives one module
object per ``torch.*`` name, refuses what the stage lacks with the stage, the name and the
coverage table, refuses the packages built on PyTorch, and gives PyTorch's modules back."""
import functools
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stagegrad.as_torch import torch_is

from .environment import cpu_neutral_env
from .oracle import need_torch

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = sorted(p.name for p in (ROOT / "common_tests" / "torch_programs").glob("*.py"))
NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?$")


def _env():
    """The caller's environment, less what pins a CPU path, with this checkout importable."""
    return cpu_neutral_env(PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))


def _run(stage, *args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "stagegrad", "run", "--stage", stage, *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=300)


@functools.lru_cache(maxsize=None)
def _on_torch(program, folder):
    os.makedirs(folder, exist_ok=True)
    r = _run("torch", f"common_tests/torch_programs/{program}", folder)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _same_output(ours, theirs):
    """Line by line and word by word: words equal, numbers equal within float32 rounding."""
    a, b = ours.splitlines(), theirs.splitlines()
    assert len(a) == len(b), (ours, theirs)
    for line, expected in zip(a, b):
        words, want = line.split(), expected.split()
        assert len(words) == len(want), (line, expected)
        for w, e in zip(words, want):
            if NUMBER.match(w) and NUMBER.match(e):
                assert float(w) == pytest.approx(float(e), rel=1e-4, abs=2e-5), (line, expected)
            else:
                assert w == e, (line, expected)


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_pytorch_program_runs_unchanged_with_pytorchs_output(sg, program, tmp_path_factory):
    need_torch()
    folder = str(tmp_path_factory.mktemp("run"))
    r = _run(sg.__name__, f"common_tests/torch_programs/{program}", folder)
    assert r.returncode == 0, r.stderr[-3000:]
    _same_output(r.stdout, _on_torch(program, str(tmp_path_factory.getbasetemp() / "torch")))


def test_one_module_object_per_torch_name(sg):
    with torch_is(sg) as torch:
        import torch.nn.modules.rnn
        import torch.nn.parallel
        import torch.optim.lr_scheduler
        import torch.utils.data
        assert torch is sg and torch.nn is sg.nn and torch.nn.functional is sg.nn.functional
        assert torch.nn.modules.rnn is sg.nn.rnn and torch.nn.modules.rnn.LSTM is sg.nn.LSTM
        assert torch.nn.parallel is sg.nn.parallel and torch.optim.lr_scheduler is sg.optim.lr_scheduler
        assert torch.utils.data is importlib.import_module(f"{sg.__name__}.utils.data")
        # no file loaded a second time under a torch name: each torch.* entry is a stage module
        for name, module in list(sys.modules.items()):
            if name == "torch" or name.startswith("torch."):
                assert module.__name__.startswith(sg.__name__), (name, module.__name__)
                # the module keeps its own spec (none, for one the stage builds in code)
                assert getattr(module.__spec__, "name", module.__name__) == module.__name__, name


def test_nn_modules_is_there_after_the_import_alone(sg):
    """As after ``import torch``: ``torch.nn.modules.dropout.Dropout`` with no import of
    ``nn.modules`` (a fresh process, where nothing else has imported it)."""
    stage = sg.__name__
    code = f"import {stage}; print({stage}.nn.modules.dropout.Dropout is {stage}.nn.Dropout)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=_env())
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr[-2000:]


def test_what_the_stage_lacks_is_refused_naming_it(sg):
    tensor = sg.tensor
    with torch_is(sg) as torch:
        with pytest.raises(ModuleNotFoundError, match=rf"{sg.__name__} has no module torch\.nosuch.*coverage"):
            import torch.nosuch  # noqa: F401
        with pytest.raises(ModuleNotFoundError, match="torch.tensor"):  # a function, not a module
            import torch.tensor  # noqa: F401
        assert torch.tensor is tensor  # and the function stays
        with pytest.raises(AttributeError, match=rf"{sg.__name__}.*'no_such_op'.*coverage"):
            torch.no_such_op
        with pytest.raises(AttributeError, match=rf"{sg.__name__}\.nn'.*'NoSuchLayer'.*coverage"):
            torch.nn.NoSuchLayer
        with pytest.raises(ModuleNotFoundError, match="torchvision is a package built on PyTorch"):
            import torchvision  # noqa: F401


def test_pytorchs_own_modules_come_back():
    torch = need_torch()
    import stage0_python
    with torch_is(stage0_python) as alias:
        import torch as inside
        assert inside is alias is stage0_python
    import torch as after
    assert after is torch and sys.modules["torch.nn"] is torch.nn


def test_the_command_passes_arguments_and_exit_status(tmp_path):
    (tmp_path / "prog.py").write_text("import sys, torch\nprint(torch.__name__, sys.argv[1:])\nsys.exit(3)\n")
    r = _run("0", str(tmp_path / "prog.py"), "--lr", "0.1", "x")
    assert r.returncode == 3 and r.stdout.strip() == "stage0_python ['--lr', '0.1', 'x']", r.stderr
    (tmp_path / "mod.py").write_text("import sys, torch.nn\nprint(torch.nn.__name__, sys.argv[1:])\n")
    r = _run("1", "-m", "mod", "a", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "stage1_strides.nn ['a']", r.stderr
    r = _run("0", str(tmp_path / "absent.py"))
    assert r.returncode != 0 and "no such file" in r.stderr
    (tmp_path / "boom.py").write_text("raise RuntimeError('the program failed')\n")
    r = _run("0", str(tmp_path / "boom.py"))  # the program's own error: its traceback, as under python
    assert r.returncode == 1 and "Traceback" in r.stderr and "RuntimeError: the program failed" in r.stderr
