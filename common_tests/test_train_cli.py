"""``stagegrad train`` end to end on real MNIST: it learns, and resuming from a
checkpoint continues exactly where an uninterrupted run would be; ``--stage torch`` runs
the same program on PyTorch itself."""
import argparse
import re
import sys
from pathlib import Path

import pytest

from stagegrad import train, training
from stagegrad.progress import Progress

from . import unprivileged
from .oracle import need_torch

DATA = Path(__file__).resolve().parents[1] / "stage0_python" / "datasets" / "sample" / "mnist"  # real, 1,024 + 256
# what ``run`` returns, on every stage and on PyTorch: the key and the type of its value
SUMMARY = {"stage": str, "model": str, "train_images_seen": int, "final_loss": float,
           "test_accuracy": float, "samples_per_s": float, "wall_s": float}


def _args(sg, tmp_path, **over):
    """The parsed arguments for a run on ``sg``: a stage, or the ``torch`` module."""
    p = argparse.ArgumentParser()
    train.add_arguments(p)
    args = p.parse_args(["--stage", sg.__name__, "--data", str(DATA)])
    for k, v in over.items():
        setattr(args, k, v)
    return args


def test_learns_well_above_chance(sg, tmp_path, capsys):
    out = train.run(_args(sg, tmp_path, subset=512, test_subset=500, epochs=2))
    assert {k: type(v) for k, v in out.items()} == SUMMARY and out["stage"] == sg.__name__
    assert out["train_images_seen"] == 2 * 512
    assert out["test_accuracy"] > 0.6  # chance is 0.1
    text = capsys.readouterr()
    assert "test accuracy" in text.out and "samples/s" in text.err


class _Interrupted(Exception):
    pass


def _stop_at_epoch_2(length, label):
    """Progress, replaced: the run is interrupted as its second epoch starts."""
    if label.startswith("epoch 2/"):
        raise _Interrupted
    return Progress(length, label)


def _straight_and_resumed(sg, tmp_path, monkeypatch, load):
    """The checkpoints of a 2-epoch run and of one interrupted after epoch 1 and resumed."""
    base = dict(subset=192, test_subset=100, batch_size=64, epochs=2)
    straight, half = tmp_path / "straight.ckpt", tmp_path / "half.ckpt"
    train.run(_args(sg, tmp_path, save=str(straight), **base))
    with monkeypatch.context() as m:
        m.setattr(training, "Progress", _stop_at_epoch_2)
        with pytest.raises(_Interrupted):
            train.run(_args(sg, tmp_path, save=str(half), **base))
    assert load(half)["epoch"] == 1
    train.run(_args(sg, tmp_path, save=str(half), resume=str(half), **base))
    a, b = load(straight), load(half)
    assert a["epoch"] == b["epoch"] == 2 and a["scheduler"] == b["scheduler"]
    return a, b


def test_resume_is_bit_identical(sg, tmp_path, monkeypatch):
    a, b = _straight_and_resumed(sg, tmp_path, monkeypatch, sg.load)
    for name, t in a["model"].items():
        assert t.tolist() == b["model"][name].tolist(), name


def test_resume_refuses_another_schedule(sg, tmp_path):
    ckpt = tmp_path / "one.sgt"
    train.run(_args(sg, tmp_path, subset=64, test_subset=50, save=str(ckpt)))
    with pytest.raises(ValueError, match="schedule spans 1 steps and this run's 2"):
        train.run(_args(sg, tmp_path, subset=64, test_subset=50, epochs=2, resume=str(ckpt)))


def test_resume_refuses_another_model(sg, tmp_path):
    ckpt = tmp_path / "mlp.sgt"
    train.run(_args(sg, tmp_path, subset=64, test_subset=50, save=str(ckpt)))
    with pytest.raises(ValueError, match="mlp"):
        train.run(_args(sg, tmp_path, model="cnn", subset=64, test_subset=50, resume=str(ckpt)))


@pytest.mark.slow
def test_mlp_five_epochs_on_the_bundled_slice_reach_83_percent(sg, tmp_path):
    """The slice's 1,024 training images, five times over (80 steps, as many as one epoch of
    6,000 images takes), classify its 256 test images as well as that epoch does (86% here)."""
    out = train.run(_args(sg, tmp_path, subset=None, test_subset=None, epochs=5))
    assert out["train_images_seen"] == 5 * 1024 and out["test_accuracy"] >= 0.83


# ------------------------------------------------------------------ --stage torch

@pytest.mark.needs_torch
def test_torch_runs_the_same_program_and_learns(tmp_path, capsys):
    torch = need_torch()
    out = train.run(_args(torch, tmp_path, subset=512, test_subset=500, epochs=3))
    assert {k: type(v) for k, v in out.items()} == SUMMARY and out["stage"] == "torch"
    assert out["train_images_seen"] == 3 * 512
    assert out["test_accuracy"] > 0.6  # chance is 0.1
    text = capsys.readouterr()
    assert re.search(r"^stage torch \(PyTorch [^)]+\), \d+ threads?, model mlp", text.out, re.M), text.out
    assert "test accuracy" in text.out and "samples/s" in text.err


@pytest.mark.needs_torch
def test_torch_resume_is_bit_identical(tmp_path, monkeypatch):
    torch = need_torch()
    a, b = _straight_and_resumed(torch, tmp_path, monkeypatch, lambda p: torch.load(p, weights_only=True))
    assert torch.equal(a["shuffle_state"], b["shuffle_state"])
    for name, t in a["model"].items():
        assert torch.equal(t, b["model"][name]), name


@pytest.mark.needs_torch
def test_checkpoints_of_a_stage_and_of_torch_do_not_mix(sg, tmp_path, capsys):
    torch = need_torch()
    ours, theirs, odd = tmp_path / "stage.sgt", tmp_path / "torch.pt", tmp_path / "odd.pt"
    layout = {"model": {}, "optimizer": {}, "scheduler": {}, "epoch": 1, "model_kind": "mlp"}
    sg.save({**layout, "shuffle_state": 0}, ours)
    torch.save({**layout, "shuffle_state": torch.Generator().get_state()}, theirs)
    torch.save({**layout, "shuffle_state": 0}, odd)  # a stage's kind of state in PyTorch's file
    for stage, path, message in [
            (torch, ours, "it is a checkpoint a stage wrote; resume it with that stage"),
            (sg, theirs, "not a stagegrad checkpoint: it looks like a zip archive"),
            (torch, odd, r"its shuffling state \(of type int\) is not a torch.Generator state")]:
        assert _cli(stage, "--subset", "64", "--test-subset", "10", "--resume", str(path)) == 1
        text = capsys.readouterr()
        assert re.search(message, text.err) and "Traceback" not in text.err, text.err
        assert "epoch 1/" not in text.out + text.err  # refused before training


def test_stage_torch_without_pytorch_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails, as if not installed
    assert _cli("torch", "--subset", "64") == 1
    err = capsys.readouterr().err
    assert "stagegrad train: error: stage torch (PyTorch itself) is not installed" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------ bad arguments

def _cli(sg, *argv):
    """``stagegrad train`` on ``sg``: a stage, the ``torch`` module, or a stage's name."""
    from stagegrad.cli import main
    return main(["train", "--stage", getattr(sg, "__name__", sg), "--data", str(DATA), *argv])


BAD_ARGUMENTS = [
    (["--test-subset", "0"], "--test-subset: expected a positive count or 'all', got 0"),
    (["--subset", "0"], "--subset: expected a positive count or 'all', got 0"),
    (["--subset", "many"], "--subset: expected a positive count or 'all', got 'many'"),
    (["--lr", "nan"], "--lr: expected a finite positive learning rate, got nan"),
    (["--lr", "inf"], "--lr: expected a finite positive learning rate, got inf"),
    (["--lr", "-0.1"], "--lr: expected a finite positive learning rate, got -0.1"),
    (["--lr", "0"], "--lr: expected a finite positive learning rate, got 0"),
    (["--weight-decay", "-0.5"], "--weight-decay: expected a finite weight decay >= 0, got -0.5"),
    (["--weight-decay", "nan"], "--weight-decay: expected a finite weight decay >= 0, got nan"),
    (["--seed", str(2**64)], r"--seed: expected a seed in \[0, 2\*\*64\), got 18446744073709551616"),
    (["--seed", "-1"], r"--seed: expected a seed in \[0, 2\*\*64\), got -1"),
    (["--epochs", "0"], "--epochs: expected a positive integer, got 0"),
    (["--batch-size", "-8"], "--batch-size: expected a positive integer, got -8"),
]


@pytest.mark.parametrize("argv,message", BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in BAD_ARGUMENTS])
def test_bad_arguments_are_usage_errors(sg, capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        _cli(sg, *argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "usage:" in err and "Traceback" not in err, err


def test_arguments_at_their_limits_are_accepted():
    p = argparse.ArgumentParser()
    train.add_arguments(p)
    args = p.parse_args(["--seed", str(2**64 - 1), "--subset", "all", "--test-subset", "all",
                         "--lr", "1e-300", "--weight-decay", "0"])
    assert (args.seed, args.subset, args.test_subset, args.lr, args.weight_decay) == (2**64 - 1, None, None,
                                                                                    1e-300, 0.0)


def test_save_into_a_missing_directory_fails_before_training(sg, tmp_path, capsys):
    target = tmp_path / "no" / "such" / "dir" / "ckpt.sgt"
    with pytest.raises(SystemExit) as info:
        _cli(sg, "--subset", "64", "--test-subset", "10", "--save", str(target))
    assert info.value.code == 2
    text = capsys.readouterr()
    assert f"directory {target.parent} does not exist" in text.err and "epoch 1/" not in text.out + text.err
    with pytest.raises(SystemExit):
        _cli(sg, "--save", str(tmp_path))
    assert "is a directory" in capsys.readouterr().err


def test_save_into_a_read_only_directory_fails_before_training(sg, tmp_path):
    """Run without privileges (under root too: root writes anywhere). A writable folder is
    accepted by the same process: it goes on to fail at the missing ``--resume`` file."""
    def train_saving_to(folder):
        return unprivileged.run([sys.executable, "-m", "stagegrad", "train", "--stage", sg.__name__,
                                 "--data", str(DATA), "--resume", str(tmp_path / "missing.sgt"),
                                 "--save", str(folder / "ckpt.sgt")])
    with unprivileged.read_only_folder(tmp_path / "read_only") as read_only:
        r = train_saving_to(read_only)
    assert r.returncode == 2, r.stderr[-3000:]
    assert f"cannot write {read_only / 'ckpt.sgt'}: directory {read_only} is not writable" in r.stderr
    assert "epoch 1/" not in r.stdout + r.stderr and "Traceback" not in r.stderr
    (tmp_path / "writable").mkdir()
    r = train_saving_to(tmp_path / "writable")
    assert r.returncode == 1 and "cannot resume from" in r.stderr, r.stderr
    assert "not writable" not in r.stderr


RESUMES = {
    "state_dict": (lambda sg: sg.nn.Linear(2, 2).state_dict(), "a dict with keys 'weight', 'bias'"),
    "list": (lambda sg: [1, 2], "a list"),
    "epoch_string": (lambda sg: {"model": {}, "optimizer": {}, "scheduler": {}, "epoch": "1", "model_kind": "mlp",
                                 "shuffle_state": 0}, r"epoch \('1'\)"),
}


@pytest.mark.parametrize("kind", list(RESUMES))
def test_resume_from_something_else_is_a_clear_error(sg, tmp_path, capsys, kind):
    make, message = RESUMES[kind]
    path = tmp_path / "other.sgc"
    sg.save(make(sg), path)
    assert _cli(sg, "--subset", "64", "--test-subset", "10", "--resume", str(path)) == 1
    text = capsys.readouterr()
    assert f"stagegrad train: error: cannot resume from {path}" in text.err
    assert re.search(message, text.err) and "Traceback" not in text.err, text.err
    assert "epoch 1/" not in text.out + text.err  # refused before training


def test_resume_from_a_missing_file_is_a_clear_error(sg, tmp_path, capsys):
    path = tmp_path / "missing.sgt"
    assert _cli(sg, "--resume", str(path)) == 1
    err = capsys.readouterr().err
    assert f"cannot resume from {path}: No such file or directory" in err and "Traceback" not in err
