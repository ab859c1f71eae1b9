"""The ``stagegrad`` command line as a newcomer meets it: ``--data`` is the one place data
is read from and every run says where that was; the progress bar fits the terminal and
writes numbers as the summary does; ``--help`` describes every command and option."""
import argparse
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stagegrad import cli, datafiles, installed_stages, load_stage
from stagegrad.progress import Progress, seconds, stat

SAMPLE = load_stage("0").datasets.SAMPLE_ROOT  # the slices of MNIST and Shakespeare the package carries
MNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
               "t10k-labels-idx1-ubyte.gz")


def _copy_mnist(target):
    target.mkdir(parents=True, exist_ok=True)
    for f in MNIST_FILES:
        shutil.copy(SAMPLE / "mnist" / f, target / f)


def _train(*argv):
    return cli.main(["train", "--stage", "0", "--subset", "64", "--test-subset", "20", *argv])


# ------------------------------------------------------------------ --data and --download

def test_data_that_does_not_exist_is_an_error_naming_it(tmp_path, capsys):
    missing = tmp_path / "no" / "such"
    for model in ("mlp", "gpt"):
        assert _train("--model", model, "--data", str(missing)) == 1
        text = capsys.readouterr()
        assert f"stagegrad train: error: --data {missing}: no such directory" in text.err, text.err
        assert "--download" in text.err and "Traceback" not in text.err
        assert "data:" not in text.out and "epoch 1/" not in text.err  # nothing loaded from elsewhere
    afile = tmp_path / "file"
    afile.write_text("")
    assert _train("--data", str(afile)) == 1
    assert f"--data {afile}: not a directory" in capsys.readouterr().err


def test_data_without_the_dataset_is_an_error_not_a_fallback(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("STAGEGRAD_DATA", str(SAMPLE))  # the files are on the search path...
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _train("--data", str(empty)) == 1  # ...but --data names where to read them
    text = capsys.readouterr()
    assert re.search(rf"MNIST files .* were not found in {re.escape(str(empty))} \(nor in "
                     rf"{re.escape(str(empty / 'mnist'))}\)", text.err), text.err
    assert "--data DIR" in text.err and f"--download to fetch them into {empty}" in text.err
    assert "data:" not in text.out
    assert _train("--model", "gpt", "--data", str(empty)) == 1
    err = capsys.readouterr().err
    assert f"neither shakespeare-plays-gutenberg.tar.gz nor tinyshakespeare.txt was found in {empty}" in err
    assert "--data DIR" in err and "--download to fetch tinyshakespeare.txt" in err


def test_missing_data_without_data_option_names_the_search_path(tmp_path, monkeypatch):
    mnist = load_stage("0").datasets.mnist
    dirs = [tmp_path / "a", tmp_path / "cache"]
    monkeypatch.setattr(mnist, "search_dirs", lambda root=None: dirs)
    with pytest.raises(ValueError) as info:
        datafiles.mnist_dir(None, fetch=False)
    message = str(info.value)
    assert f"in any of: {dirs[0]}, {dirs[1]}" in message
    assert "--data DIR" in message and f"--download to fetch them into {dirs[1]}" in message


def test_data_found_nowhere_is_downloaded_into_the_user_cache(tmp_path, capsys, monkeypatch):
    datasets = load_stage("0").datasets
    cache = tmp_path / "cache"
    monkeypatch.setattr(datasets.mnist, "search_dirs", lambda root=None: [tmp_path / "a", cache])
    monkeypatch.setattr(datasets.shakespeare, "search_dirs", lambda root=None: [tmp_path / "a", cache])
    fetched = []

    def fake_download(names, target):  # the network, replaced by the bundled slice
        fetched.append(Path(target))
        _copy_mnist(Path(target))

    def fake_text(target):
        fetched.append(Path(target))
        Path(target).mkdir(parents=True, exist_ok=True)
        return shutil.copy(SAMPLE / "shakespeare" / datasets.shakespeare.ARCHIVE, target)

    monkeypatch.setattr(datasets.mnist, "download_files", fake_download)
    monkeypatch.setattr(datasets.shakespeare, "download_text", fake_text)
    assert datafiles.mnist_dir(None) == cache and datafiles.shakespeare_dir(None) == cache
    assert fetched == [cache, cache]
    assert "MNIST not found; downloading it into" in capsys.readouterr().out
    assert datafiles.mnist_dir(None) == cache and len(fetched) == 2  # found now: not fetched again


def test_offline_the_error_names_the_bundled_slice(tmp_path, monkeypatch, capsys):
    datasets = load_stage("0").datasets
    monkeypatch.setenv("STAGEGRAD_OFFLINE", "1")
    given = lambda root=None: ([Path(root), Path(root) / "mnist"] if root else []) + [tmp_path / "cache"]  # noqa: E731
    monkeypatch.setattr(datasets.mnist, "search_dirs", given)
    monkeypatch.setattr(datasets.shakespeare, "search_dirs", lambda root=None: [tmp_path / "cache"])
    for find, what in ((datafiles.mnist_dir, "MNIST"), (datafiles.shakespeare_dir, "the Shakespeare corpus")):
        with pytest.raises(ValueError) as info:
            find(None, say=lambda m: None)
        assert f"{what} could not be downloaded" in str(info.value) and "STAGEGRAD_OFFLINE" in str(info.value)
        assert f"--data {SAMPLE}" in str(info.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    # the bundled slice trains, as the error says it can
    assert _train("--data", str(SAMPLE)) == 0
    assert f"data: MNIST from {SAMPLE / 'mnist'}" in capsys.readouterr().out


def test_data_is_read_from_the_directory_given_and_says_so(tmp_path, capsys):
    _copy_mnist(tmp_path / "mine" / "mnist")
    assert datafiles.mnist_dir(tmp_path / "mine") == tmp_path / "mine" / "mnist"
    assert _train("--data", str(tmp_path / "mine")) == 0
    out = capsys.readouterr().out
    assert f"data: MNIST from {tmp_path / 'mine' / 'mnist'}\n" in out and "test accuracy" in out


def test_download_fetches_into_the_data_directory(tmp_path, capsys, monkeypatch):
    mnist = load_stage("0").datasets.mnist
    fetched = []

    def fake_download(names, target):  # the network, replaced by the bundled slice
        fetched.append((tuple(names), Path(target)))
        _copy_mnist(Path(target))

    monkeypatch.setattr(mnist, "download_files", fake_download)
    target = tmp_path / "new"
    assert _train("--data", str(target), "--download") == 0
    out = capsys.readouterr().out
    assert fetched == [(mnist.FILES[True] + mnist.FILES[False], target)]
    assert f"MNIST not found; downloading it into {target}\n" in out and f"data: MNIST from {target}\n" in out
    assert _train("--data", str(target), "--download") == 0  # present now: not fetched again
    assert len(fetched) == 1


def test_journey_data_is_authoritative_too(tmp_path, capsys, monkeypatch):
    out = tmp_path / "report"
    assert cli.main(["journey", "--quick", "--data", str(tmp_path / "none"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"stagegrad journey: error: --data {tmp_path / 'none'}: no such directory" in err, err
    assert "measuring" not in err and not out.exists()  # refused before any measurement
    # a directory that holds the files is where the training-run row reads them, and the
    # run says so; the search path (emptied here) is not consulted
    from stagegrad import journey, workloads
    _copy_mnist(tmp_path / "mine" / "mnist")
    mnist = load_stage("0").datasets.mnist
    monkeypatch.setattr(mnist, "search_dirs",
                        lambda root=None: [Path(root), Path(root) / "mnist"] if root else [tmp_path / "none"])
    monkeypatch.setattr(workloads, "MNIST_ROOT", None)
    monkeypatch.setattr(workloads, "_MNIST_CACHE", {})
    journey._find_mnist(str(tmp_path / "mine"), False)
    assert f"journey: MNIST from {tmp_path / 'mine' / 'mnist'}" in capsys.readouterr().err
    images, labels = workloads.mnist_arrays(3)
    reference = load_stage("0").datasets.MNIST(tmp_path / "mine", train=True).as_tensors(0, 3)
    assert images.tolist() == reference[0].numpy().reshape(3, -1).tolist()
    assert labels.tolist() == reference[1].tolist()
    monkeypatch.setattr(workloads, "MNIST_ROOT", None)  # the search path alone: nothing found
    with pytest.raises(workloads.Unsupported, match="journey --data DIR"):
        workloads.build_mnist(workloads.Impl("stage0_python"), 1)
    # found nowhere and offline: the row runs on the bundled slice, and the report says so
    monkeypatch.setenv("STAGEGRAD_OFFLINE", "1")
    source = journey._find_mnist(None, False)
    assert workloads.MNIST_ROOT == SAMPLE and source.startswith(f"the bundled slice of MNIST in {SAMPLE}")
    assert "STAGEGRAD_OFFLINE" in source and f"journey: MNIST from {source}" in capsys.readouterr().err


# ------------------------------------------------------------------ the progress bar

class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("columns", [80, 60, 30, 12, 200])
def test_progress_line_fits_the_terminal(columns):
    label = "stage3_simd: matmul 1024x1024x1024 on every thread, a long label " * 2
    stream = _Terminal()
    bar = Progress(1000, "epoch 10/10", stream=stream, columns=columns)
    for done in (1, 500, 1000):
        for stats in ({}, {"loss": 2.3125, "samples/s": 123456.7}, {"now": label}):
            line = bar.line(done, 12.5, **stats)
            assert len(line) <= columns - 1, (columns, line)
            assert f"{done}/1000" in line or columns < 20
    bar.update(500, loss=1.5, now=label)
    bar.update(1000, loss=1.25, now=label)
    drawn = stream.getvalue()
    # a redraw returns to the line's start and never leaves a line behind until the end
    assert drawn.count("\n") == 1 and drawn.endswith("\n")
    for piece in drawn.strip("\n").split("\r")[1:]:
        assert len(piece.replace("\033[K", "")) <= columns - 1


def test_progress_follows_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # shutil.get_terminal_size reads it first
    line = Progress(100, "epoch 1/1").line(50, 3.0, loss=2.5, **{"samples/s": 5000.0})
    assert len(line) <= 79
    assert line == "epoch 1/1 [##########..........] 50/100  loss 2.5000  5000 samples/s  eta 3.0 s"
    wide = Progress(100, "epoch 1/1", columns=120).line(50, 3.0, loss=2.5)
    assert wide == "epoch 1/1 [##############..............] 50/100  loss 2.5000  3.0 s elapsed, eta 3.0 s"
    monkeypatch.setenv("COLUMNS", "50")
    narrow = Progress(100, "epoch 1/1").line(50, 3.0, loss=2.5, **{"samples/s": 5000.0})
    assert len(narrow) <= 49 and "loss 2.5000" in narrow and "elapsed" not in narrow


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_progress_on_an_80_column_terminal_never_wraps():
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    program = ("import time\nfrom stagegrad.progress import Progress\n"
               "bar = Progress(50, 'epoch 12/12')\n"
               "for i in range(1, 51):\n"
               "    time.sleep(0.011); bar.update(i, loss=2.0 / i, **{'samples/s': 123456.0 * i})\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, "-c", program], stdout=subprocess.DEVNULL, stderr=slave, env=env,
                          timeout=120)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: everything is read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.returncode == 0
    drawn = b"".join(chunks).decode().replace("\r\n", "\n")  # the terminal turns \n into \r\n
    redraws = [r.replace("\033[K", "") for r in drawn.rstrip("\n").split("\r") if r]
    assert len(redraws) >= 2 and drawn.count("\n") == 1, drawn
    assert all(len(r) <= 79 for r in redraws), [r for r in redraws if len(r) > 79]
    assert "loss 0.0400" in redraws[-1] and "50/50" in redraws[-1]


def test_numbers_read_the_same_in_the_bar_and_the_summary(capsys):
    assert (stat("loss", 2.31234), stat("samples/s", 1049.6), stat("acc", 0.4321), stat("step", 3)) == \
        ("loss 2.3123", "1050 samples/s", "acc 43.21%", "step 3")
    assert (seconds(0.25), seconds(59.94), seconds(61.2), seconds(3600.4)) == ("0.2 s", "59.9 s", "61 s",
                                                                               "3600 s")
    assert _train("--data", str(SAMPLE / "mnist")) == 0
    text = capsys.readouterr()
    bar_loss = re.findall(r"epoch 1/1 \[#+\] 1/1  loss (\d+\.\d{4})  \d+ samples/s", text.err)
    summary = re.search(r"test accuracy (\d+\.\d\d)% on 20 images \| final train loss (\d+\.\d{4}) \| "
                        r"\d+ samples/s \| wall time \d+\.\d s", text.out)
    test_acc = re.findall(r"test \[#+\] 1/1  acc (\d+\.\d\d)%", text.err)
    assert bar_loss and summary and test_acc, text
    assert bar_loss[-1] == summary.group(2) and test_acc[-1] == summary.group(1)


# ------------------------------------------------------------------ --help

def _subparsers():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, sub.choices


def test_every_command_and_option_has_help_with_its_default():
    parser, commands = _subparsers()
    assert list(commands) == [c[0] for c in cli.COMMANDS]
    for name, p in commands.items():
        assert len(p.description) > 40 and "``" not in p.description, name
        text = p.format_help()
        for action in p._actions:
            if not action.option_strings or action.dest == "help":
                continue
            shown = cli.HelpFormatter(name)._get_help_string(action)
            assert shown, (name, action.option_strings)
            if action.nargs != 0:  # flags are off unless given; everything else says its default
                assert "default" in shown.lower(), (name, action.option_strings, shown)
        if name == "train":
            for expected in ("--data DIR", "--download", "images per training step (default 64)",
                             "AdamW's decoupled weight decay (default 0)"):
                assert expected in " ".join(text.split()), expected


def test_help_prints_and_exits_cleanly(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("usage: stagegrad train") and "Train a model on MNIST" in out


def test_stage_option_lists_the_installed_stages(capsys):
    installed = installed_stages()
    assert "stage0_python" in installed
    _, commands = _subparsers()
    for name, option in [("train", "--stage"), ("sample", "--stage"), ("journey", "--stages"),
                         ("profile", "--stages"), ("models", "--stages")]:
        action = next(a for a in commands[name]._actions if option in a.option_strings)
        for pkg in installed:
            assert f"({pkg})" in action.help, (name, action.help)
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "--stage", "9"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --stage: unknown stage '9': installed here: 0 (stage0_python)" in err, err
    assert "or torch" in err and "Traceback" not in err


def test_a_stage_that_does_not_import_is_a_usage_error_with_the_reason(monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "stage2_cython", None)  # as if it were not built
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "--stage", "2"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "stage 2 (stage2_cython) is not installed or not built here" in err, err
    assert "2 (stage2_cython)" not in err.split("installed:")[-1]


# ------------------------------------------------------------------ OpenBLAS pins

def test_measuring_commands_start_again_without_the_openblas_pins(monkeypatch):
    started = []
    monkeypatch.setattr(cli.os, "execve", lambda exe, argv, env: started.append((exe, argv, env)))
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "1048576")
    cli._unpinned_for_measuring(["train", "--stage", "0"])  # not a measurement: left as it is
    assert started == []
    cli._unpinned_for_measuring(["journey", "--quick"])
    [(exe, argv, env)] = started
    assert exe == sys.executable and argv == [sys.executable, "-m", "stagegrad", "journey", "--quick"]
    assert "OPENBLAS_CORETYPE" not in env and "OPENBLAS_L2_SIZE" not in env
    assert env["STAGEGRAD_UNPINNED"] == "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=1048576"
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    monkeypatch.delenv("OPENBLAS_L2_SIZE")
    cli._unpinned_for_measuring(["journey"])  # nothing pinned: nothing to do
    assert len(started) == 1


# ------------------------------------------------------------------ stagegrad models

ROOT = Path(__file__).resolve().parents[1]
COMPILED = [pkg for pkg in ("stage2_cython", "stage3_simd") if pkg in installed_stages()]


def _models(tmp_path, *argv, code=None):
    """``stagegrad models --quick`` on the compiled stages, in a process of its own (the
    command sets every library's threads), optionally after ``code``."""
    if not COMPILED:
        pytest.skip("neither stage 2 nor stage 3 is built here: the real models need a compiled stage")
    args = ["models", "--quick", "--stages", ",".join(COMPILED), "--out", str(tmp_path), *argv]
    run = f"{code}\nimport sys\nfrom stagegrad import cli\nsys.exit(cli.main({args!r}))"
    return subprocess.run([sys.executable, "-c", run], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.needs_torch
def test_models_command_checks_each_stage_against_pytorch_then_times_it(tmp_path):
    from .oracle import need_torch
    need_torch()
    r = _models(tmp_path, "--models", "cnn,gpt", "--threads", "1,2", code="")
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads((tmp_path / "models.json").read_text())
    impls = COMPILED + ["torch"]
    assert [i["name"] for i in report["implementations"]] == impls and report["reference"] == "torch"
    cells = {(row["model"], row["mode"], row["threads"], row["impl"]): row for row in report["rows"]}
    modes = {"cnn": ("train", "loop", "eval"), "gpt": ("train", "eval")}  # the CNN is train's: its loop too
    assert set(cells) == {(m, mode, n, i) for m in modes for mode in modes[m] for n in (1, 2) for i in impls}
    for (model, mode, threads, impl), row in cells.items():
        assert row["status"] == "ok", row
        assert row["library_threads"] == threads  # both sides on the same count
        assert row["flops"] > 0 and math.isfinite(row["time_s"]) and row["time_s"] > 0
        assert math.isfinite(row["vs_torch"]) and row["vs_torch"] > 0
        assert math.isfinite(row["of_peak"]) and row["of_peak"] > 0
        check = row["check"]
        reference = check["reference_loss"]
        assert check["ok"] and abs(check["loss"] - reference) <= 1e-3 * abs(reference)
        if mode == "eval":  # the eval forward's logits are PyTorch's, to float32 rounding
            assert check["logits_max_abs_diff"] < 1e-3, row
        elif mode == "train":  # the first step's gradients are PyTorch's float64 ones, to float32 rounding
            assert check["gradient_error"] < 1e-4 and math.isfinite(check["update_error"]), row
        if impl != "torch":
            assert row["pool_misses_per_step"] >= 0
        else:
            assert row["vs_torch"] == 1.0
    flops = report["flops"]
    assert flops["gpt/4"]["train"] > 2 * flops["gpt/4"]["eval"] > 0  # backward: twice the forward's products
    table = (tmp_path / "models.md").read_text()
    assert "**1 thread** on every side" in table and "**2 threads** on every side" in table
    assert "| MNIST CNN   | 16    | train |" in table and "GPT 4x128" in table
    assert "| MNIST CNN   | 16    | loop  |" in table and "the loop `stagegrad train` runs" in table


@pytest.mark.needs_torch
def test_models_command_refuses_to_time_a_wrong_answer(tmp_path):
    from .oracle import need_torch
    need_torch()
    # the reference's answers shifted: every stage now disagrees with it
    shift = ("from stagegrad import models_bench as mb\nreal = mb.reference\n"
             "def shifted(*a):\n    ref = real(*a)\n    ref['logits'] = ref['logits'] + 1.0\n"
             "    ref['train_loss'] += 1.0\n    ref['loop']['loss'] += 1.0\n    return ref\n"
             "mb.reference = shifted")
    # or only one gradient and one update: the first layer's filters' (a loss alone misses them)
    nudge = ("from stagegrad import models_bench as mb\nreal = mb.reference\n"
             "def nudged(*a):\n    ref = real(*a)\n    name = next(iter(ref['exact']))\n"
             "    g, u = ref['exact'][name]\n    ref['exact'][name] = (g * 1.1, u * 0.9)\n    return ref\n"
             "mb.reference = nudged")
    r = _models(tmp_path, "--models", "cnn", "--threads", "1", code=shift)
    assert r.returncode == 1
    assert "computes a different answer from torch: logits differ by up to" in r.stderr, r.stderr[-3000:]
    assert "first step's loss" in r.stderr
    rows = json.loads((tmp_path / "models.json").read_text())["rows"]
    assert {row["status"] for row in rows if row["impl"] != "torch"} == {"wrong"}
    assert all(row["time_s"] is None for row in rows if row["status"] == "wrong")
    r = _models(tmp_path, "--models", "cnn", "--threads", "1", code=nudge)
    assert r.returncode == 1
    assert "the gradient of" in r.stderr and "the update of" in r.stderr, r.stderr[-3000:]
    rows = json.loads((tmp_path / "models.json").read_text())["rows"]
    assert {(row["mode"], row["status"]) for row in rows if row["impl"] != "torch"} == {
        ("eval", "ok"), ("train", "wrong"), ("loop", "ok")}


# ------------------------------------------------------------------ stagegrad conv-ladder

def _conv_ladder(tmp_path, *argv, code=""):
    """``stagegrad conv-ladder --quick`` in a process of its own (the command sets every
    library's threads), optionally after ``code``."""
    if "stage3_simd" not in installed_stages():
        pytest.skip("stage 3 is not built here: the convolution ladder measures its kernels")
    args = ["conv-ladder", "--quick", "--out", str(tmp_path), *argv]
    run = f"{code}\nimport sys\nfrom stagegrad import cli\nsys.exit(cli.main({args!r}))"
    return subprocess.run([sys.executable, "-c", run], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _table_rows(table):
    """The cells of each row of a Markdown table, stripped."""
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.split("|")[1:-1]] for line in lines]


@pytest.mark.needs_torch
def test_conv_ladder_checks_every_rung_against_pytorch_then_times_it(tmp_path):
    from stagegrad.conv_ladder import LAYERS, PASSES, RUNGS, WINOGRAD_ONLY

    from .oracle import need_torch
    need_torch()
    r = _conv_ladder(tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads((tmp_path / "conv_ladder.json").read_text())
    assert report["reference"] == "torch" and report["threads"] == [1]
    cells = {(row["layer"], row["mode"], row["rung"]): row for row in report["rows"]}
    assert set(cells) == {(layer, mode, rung) for layer in LAYERS for mode in PASSES
                          for rung in (*RUNGS, "torch")
                          if rung not in WINOGRAD_ONLY or LAYERS[layer].winograd}
    assert {layer for layer, _, rung in cells if rung == "winograd"} == {
        key for key in LAYERS if key.startswith("resnet18")}  # its 3x3 layers; the CNN's are 5x5
    for (layer, mode, rung), row in cells.items():
        assert row["status"] == "ok" and row["library_threads"] == 1, row
        assert math.isfinite(row["time_s"]) and row["time_s"] > 0
        assert row["flops"] == LAYERS[layer].flops(mode) and row["gflops"] > 0 and row["of_peak"] > 0
        assert math.isfinite(row["vs_torch"]) and row["vs_torch"] > 0
        if rung != "torch":  # each rung matched PyTorch's output, or each gradient
            assert row["check"]["ok"] and row["check"]["max_rel_diff"] <= report["rtol"]
    # forward+backward: both gradients are a forward each, but the image takes none
    assert LAYERS["resnet18.1"].flops("train") == 3 * LAYERS["resnet18.1"].flops("forward")
    assert LAYERS["cnn.conv1"].flops("train") == 2 * LAYERS["cnn.conv1"].flops("forward")
    table = (tmp_path / "conv_ladder.md").read_text()
    lines = [cells[:3] for cells in _table_rows(table)]
    assert ["ResNet-18 stage 4", "forward+backward", "unfold + GEMM"] in lines
    assert ["ResNet-18 stage 1", "forward", "unfold + GEMM"] in lines
    assert ["", "", "Winograd F(2x2,3x3)"] in lines
    assert ["", "", "direct"] in lines and ["", "", "stage 3's default"] in lines
    assert ["", "", "channels last, by taps"] in lines
    assert "**1 thread** on every side" in table


@pytest.mark.needs_torch
def test_conv_ladder_refuses_to_time_a_wrong_answer(tmp_path):
    from .oracle import need_torch
    need_torch()
    # every answer held against a shifted reference: no rung agrees with PyTorch now
    shift = ("from stagegrad import conv_ladder as cl\nreal = cl.check\n"
             "cl.check = lambda answers, reference: real(answers, [r + 1.0 for r in reference])")
    r = _conv_ladder(tmp_path, "--layers", "cnn.conv1", code=shift)
    assert r.returncode == 1
    assert "10 cell(s) failed" in r.stderr and "computes a different answer from PyTorch" in r.stderr
    rows = json.loads((tmp_path / "conv_ladder.json").read_text())["rows"]
    assert {row["status"] for row in rows if row["rung"] != "torch"} == {"wrong"}
    assert all(row["time_s"] is None for row in rows if row["status"] == "wrong")
    table = (tmp_path / "conv_ladder.md").read_text()
    assert ["MNIST CNN conv1", "forward", "unfold + GEMM", "wrong"] in [row[:4] for row in _table_rows(table)]


def test_conv_ladder_without_pytorch_measures_the_stage_alone(tmp_path):
    # the command looks PyTorch up before it imports it: here it finds none
    hide = ("import importlib.util\nreal = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda name, *a: None if name == 'torch' else real(name, *a)")
    r = _conv_ladder(tmp_path, "--layers", "cnn.conv1", code=hide)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads((tmp_path / "conv_ladder.json").read_text())
    assert report["torch"] is None and report["reference"] == "unfold"
    assert {(row["mode"], row["rung"], row["status"]) for row in report["rows"]} == {
        (mode, rung, "ok") for mode in ("forward", "train")
        for rung in ("unfold", "implicit", "direct", "taps", "auto")}
    table = (tmp_path / "conv_ladder.md").read_text()
    assert "PyTorch is not installed" in table and "vs PyTorch" not in table
