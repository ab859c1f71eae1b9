"""``stagegrad train`` end to end on real MNIST: it learns, and resuming from a
checkpoint continues exactly where an uninterrupted run would be."""
import argparse
from pathlib import Path

import pytest

from stagegrad import train

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "mnist"


def _args(sg, tmp_path, **over):
    p = argparse.ArgumentParser()
    train.add_arguments(p)
    args = p.parse_args(["--stage", sg.__name__, "--data", str(DATA)])
    for k, v in over.items():
        setattr(args, k, v)
    return args


@pytest.fixture(autouse=True)
def _need_data():
    if not (DATA / "train-images-idx3-ubyte.gz").exists():
        pytest.skip(f"MNIST is not in {DATA}")


def test_learns_well_above_chance(sg, tmp_path, capsys):
    out = train.run(_args(sg, tmp_path, subset=512, test_subset=500, epochs=2))
    assert out["train_images_seen"] == 2 * 512
    assert out["test_accuracy"] > 0.6  # chance is 0.1
    text = capsys.readouterr()
    assert "test accuracy" in text.out and "samples/s" in text.err


def test_resume_is_bit_identical(sg, tmp_path):
    base = dict(subset=192, test_subset=100, batch_size=64)
    straight = tmp_path / "straight.sgt"
    train.run(_args(sg, tmp_path, epochs=2, save=str(straight), **base))
    half = tmp_path / "half.sgt"
    train.run(_args(sg, tmp_path, epochs=1, save=str(half), **base))
    train.run(_args(sg, tmp_path, epochs=2, save=str(half), resume=str(half), **base))
    a, b = sg.load(straight), sg.load(half)
    assert a["epoch"] == b["epoch"] == 2
    for name, t in a["model"].items():
        assert t.tolist() == b["model"][name].tolist(), name


def test_resume_refuses_another_model(sg, tmp_path):
    ckpt = tmp_path / "mlp.sgt"
    train.run(_args(sg, tmp_path, subset=64, test_subset=50, save=str(ckpt)))
    with pytest.raises(ValueError, match="mlp"):
        train.run(_args(sg, tmp_path, model="cnn", subset=64, test_subset=50, resume=str(ckpt)))


@pytest.mark.slow
def test_mlp_one_epoch_on_6000_images_reaches_87_percent(sg, tmp_path):
    out = train.run(_args(sg, tmp_path, subset=6000, epochs=1))
    assert out["test_accuracy"] >= 0.87
