"""``stagegrad train``: train on MNIST with any installed stage: an MLP, a CNN, or the zoo's
ResNet-18 and MobileNetV2 (``--model``). ``--model gpt`` and ``lstm`` train a language model
on Shakespeare's plays instead: ``train_text`` runs those. This module is the command: it
checks the options and wires together what ``training`` provides (the models, the data, the
loop, the checkpoint read back).

The same program runs on every stage: only ``sg`` changes. Progress shows live loss and
throughput; the summary gives test accuracy, samples/s and wall time. ``--save`` writes a
checkpoint after every epoch and ``--resume`` continues from one, bit for bit: the
shuffling generator's and the learning-rate schedule's states travel in the checkpoint.
The learning rate falls from ``--lr`` to 0 along a cosine over the run's steps
(``CosineAnnealingLR``), which is worth a few tenths of a percent of test accuracy over a
constant rate: the CNN reaches 99% in three epochs.

``--stage torch`` runs the same program on PyTorch itself, so one command compares wall
time and accuracy, and the run checks that the stages' API is PyTorch's: the training
loop, the model, the optimizer, data loading, seeding and checkpoints are written in
PyTorch's names (``sg.utils.data``, ``sg.nn.functional``, ``sg.Generator().manual_seed``,
``sg.save``/``sg.load``), which every stage also exports. The one piece PyTorch lacks is
the MNIST reader: ``mnist`` reads the same IDX files with ours and hands PyTorch their
bytes as a ``TensorDataset``. PyTorch's checkpoints are its own (``torch.save``, loaded
with ``weights_only=True``); a stage's and PyTorch's do not resume in each other. The
header line names the threads each runs on (``OMP_NUM_THREADS`` sets them for both).
samples/s times the whole loop, data loading included: PyTorch's ``DataLoader`` indexes and
collates sample by sample, where a stage's MNIST hands over whole batches (``get_batch``).

``--cuda-graph`` trains on the cuda device and, after ``WARMUP_STEPS`` eager steps, captures
the training step into one CUDA graph and replays it for every batch of the captured size,
each batch first copied into the step's static input tensors (a smaller last batch steps
eagerly). A replay repeats the values the host computed at capture, so what the graph holds
depends on the optimizer: with ``--optimizer sgd --constant-lr`` the whole step (forward,
backward, optimizer step); otherwise forward and backward, and the optimizer steps eagerly
after each replay (one launch per parameter group), since AdamW's bias correction (from its
step count) and the cosine schedule's rate change every step.

``--nproc N`` trains on N processes of this machine, each on one thread: the command
starts itself again under ``mpirun`` (``stagegrad.mpi``), and each process (rank) trains
a replica wrapped in ``DistributedDataParallel`` on its ``DistributedSampler`` share of
the images, ``--batch-size`` of them per step, so a step sees N times as many. A
program that ``mpirun`` started (``mpirun -n N --hostfile hosts stagegrad train ...``,
across hosts) does the same without ``--nproc``. Rank 0 alone prints and writes the
checkpoint; every rank reads ``--resume`` and the data, which must be on every host. The
test images are split among the ranks and their counts summed.

``--data DIR`` is the one directory the data is read from (``datafiles``): a directory
that does not exist or lacks the dataset is an error naming it, and ``--download`` fetches
the dataset into it. Without ``--data`` the datasets' search path applies, and a dataset
found nowhere is downloaded into the user cache (offline, the error names the small slice
the package carries). Either way the run prints where its data came from.

Arguments are checked when they are parsed (a usage error, exit status 2): counts must be
positive, the learning rate finite and positive, the weight decay finite and not negative,
the seed in [0, 2**64), and ``--save`` must name a file in an existing, writable directory,
so that no run trains for an hour and then cannot write its result. A ``--resume`` file
that is missing or is not a checkpoint ``--save`` wrote is refused before training starts.
"""
import argparse
import subprocess
import sys
import time

from . import datafiles, installed_text, load_stage, mpi, stage_type, train_text
from . import train_parts as P
from .progress import seconds, stat
from .train_parts import is_torch
from .training import (
    IMAGE_MODELS,
    WARMUP_STEPS,
    CapturedStep,
    build_model,
    evaluate,
    fit,
    load_training_checkpoint,
    mnist,
    resume,
)

TEXT_MODELS = ("gpt", "lstm")


def add_arguments(p):
    """``stagegrad train``'s options, the language models' among them."""
    p.add_argument("--stage", default="0", type=stage_type(peers=True),
                   help=f"the stage to train with, by number or package: {installed_text()} are "
                        f"installed here; or 'torch' for PyTorch itself (default 0)")
    p.add_argument("--model", default="mlp", choices=IMAGE_MODELS + TEXT_MODELS,
                   help="mlp, cnn, resnet18 or mobilenetv2 train on MNIST; gpt and lstm on Shakespeare's "
                        "plays (default mlp)")
    p.add_argument("--width", type=P.width, default=1.0,
                   help="channel multiplier of resnet18 and mobilenetv2 (default 1.0, the papers' width)")
    p.add_argument("--epochs", type=P.positive, default=1, help="passes over the MNIST subset (default 1)")
    p.add_argument("--batch-size", type=P.positive, default=64,
                   help="images per training step (default 64)")
    p.add_argument("--lr", type=P.learning_rate, default=2e-3,
                   help="the learning rate at the start of the cosine schedule, or throughout with "
                        "--constant-lr (default 0.002)")
    p.add_argument("--weight-decay", type=P.weight_decay, default=0.0,
                   help="AdamW's decoupled weight decay (default 0); with --optimizer sgd, SGD's")
    p.add_argument("--optimizer", default="adamw", choices=("adamw", "sgd"),
                   help="adamw, or sgd with momentum 0.9 (default adamw)")
    p.add_argument("--constant-lr", action="store_true",
                   help="keep --lr for the whole run instead of a cosine schedule down to 0")
    p.add_argument("--cuda-graph", action="store_true",
                   help=f"train on the cuda device, the training step captured into a CUDA graph after "
                        f"{WARMUP_STEPS} eager steps and replayed for each batch: the whole step with "
                        f"--optimizer sgd --constant-lr, else forward and backward, the optimizer stepping "
                        f"eagerly (its bias correction and scheduled rate change every step)")
    p.add_argument("--subset", type=P.count, default=6000,
                   help="train on the first N training images, or 'all' (default: 6000, which "
                        "keeps the pure-Python stages to about a minute per epoch)")
    p.add_argument("--test-subset", type=P.count, default=None,
                   help="evaluate on the first N test images, or 'all' (default: all 10,000)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="the directory holding the MNIST IDX files (in DIR or DIR/mnist), or the "
                        "Shakespeare archive for gpt and lstm (in DIR or DIR/shakespeare); nothing "
                        "else is read when it is given (default: $STAGEGRAD_DATA, the shared "
                        "datasets folder beside the checkout, then the user cache, where it is "
                        "downloaded when found nowhere)")
    p.add_argument("--download", action="store_true",
                   help="fetch the dataset into --data if it is not there")
    p.add_argument("--seed", type=P.seed, default=0, help="an integer in [0, 2**64) (default 0)")
    p.add_argument("--save", type=P.writable_file, default=None,
                   help="write a checkpoint here after every epoch (default: none)")
    p.add_argument("--resume", default=None,
                   help="continue from this checkpoint, which --save wrote (default: start afresh)")
    p.add_argument("--nproc", type=P.positive, default=None, metavar="N",
                   help="train on N processes of this machine, one thread each, under mpirun (Open MPI): "
                        "each takes --batch-size images per step. Under `mpirun -n N stagegrad train` "
                        "(across hosts) leave it out (default: one process)")
    train_text.add_arguments(p.add_argument_group("language models (gpt, lstm)"))


def _captures_whole_step(args):
    """Whether ``--cuda-graph`` captures the optimizer step too: only when the values the
    host computes for it stay the same from step to step (SGD at a constant rate)."""
    return args.optimizer == "sgd" and args.constant_lr


def _check_capturable(sg, args):
    """``--cuda-graph``'s refusal: a stage without a cuda device."""
    if not sg.cuda.is_available():
        why = getattr(sg.cuda, "unavailable_reason", lambda: "")()
        raise ValueError(f"--cuda-graph trains on the cuda device, which {sg.__name__} cannot use here"
                         + (f" ({why})" if why else ""))


def _launch(args):
    """``--nproc N``: this command again, without ``--nproc``, as N ranks under mpirun."""
    _check_distributable(args)
    cmd = mpi.mpirun_command(args.nproc, mpi.python_module("stagegrad", "train", *_rank_arguments(args)))
    print("launching: " + " ".join(cmd), flush=True)
    status = subprocess.run(cmd, check=False).returncode
    if status != 0:
        raise RuntimeError(f"the {args.nproc} training processes failed (mpirun exited with status {status}; "
                           f"their messages are above)")


def _check_distributable(args):
    if args.model in TEXT_MODELS:
        raise ValueError(f"--model {args.model} trains in one process; --nproc and mpirun train the image "
                         f"models ({', '.join(IMAGE_MODELS)})")
    if getattr(args, "cuda_graph", False):
        raise ValueError("--cuda-graph trains in one process, on its cuda device: leave out --nproc and "
                         "mpirun")
    if str(args.stage) == "torch":
        raise ValueError("--stage torch trains in one process: distributed training runs on the stages "
                         "(sg.distributed on MPI); PyTorch's CPU wheels have no MPI backend")


def _rank_arguments(args):
    """The command line each rank runs: every option that differs from its default,
    except ``--nproc``."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = []
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "nproc"):
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default:
            continue
        if action.nargs == 0:  # a flag
            out.append(action.option_strings[0])
        else:
            out += [action.option_strings[0], "all" if value is None else str(value)]
    return out


def run(args):
    """Train as ``args`` say (a language model with ``train_text``); the run's summary. With
    ``--nproc``, start the ranks under mpirun instead, which print their own (None)."""
    if getattr(args, "nproc", None) is not None:
        if mpi.launched_by_mpirun():
            raise ValueError("--nproc starts mpirun itself; in a program mpirun started, leave it out")
        return _launch(args)
    if mpi.launched_by_mpirun():
        _check_distributable(args)
    if args.model in TEXT_MODELS:
        image_only = [flag for flag, on in (
            ("--cuda-graph", getattr(args, "cuda_graph", False)),
            ("--optimizer sgd", getattr(args, "optimizer", "adamw") != "adamw"),
            ("--constant-lr", getattr(args, "constant_lr", False))) if on]
        if image_only:
            raise ValueError(f"{', '.join(image_only)}: the image models' options; --model {args.model} "
                             f"trains with AdamW on a cosine schedule")
        return train_text.run(args)
    sg = load_stage(args.stage, peers=True)  # a stage, or PyTorch itself
    dist = None
    if mpi.launched_by_mpirun():
        dist = sg.distributed
        dist.init_process_group()
        try:
            summary = _train(sg, args, dist)
        except Exception:
            if dist.get_world_size() > 1:  # the other ranks would wait for this one forever
                sys.excepthook(*sys.exc_info())  # sg.distributed's: the traceback, then the job aborts
            raise
        dist.destroy_process_group()
        return summary
    return _train(sg, args, None)


def _train(sg, args, dist):
    if args.epochs < 1 or args.batch_size < 1:
        raise ValueError("--epochs and --batch-size must be positive")
    graphed = getattr(args, "cuda_graph", False)
    if graphed:
        _check_capturable(sg, args)
    device = "cuda" if graphed else None
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    quiet = rank != 0
    say = print if not quiet else (lambda *a, **k: None)
    ckpt = load_training_checkpoint(sg, args.resume, args.model) if args.resume else None
    data = sg.utils.data
    root = datafiles.mnist_dir(args.data, args.download, say=say)
    say(f"data: MNIST from {root}")
    train_set, test_set = mnist(sg, root, train=True), mnist(sg, root, train=False)
    if args.subset is not None:
        train_set = data.Subset(train_set, range(min(args.subset, len(train_set))))
    if args.test_subset is not None:
        test_set = data.Subset(test_set, range(min(args.test_subset, len(test_set))))

    sg.manual_seed(args.seed)
    model = build_model(sg, args.model, args.width)
    if device is not None:
        model.to(device)
    sgd = getattr(args, "optimizer", "adamw") == "sgd"
    if sgd:
        opt = sg.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.weight_decay)
    else:
        opt = sg.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    shuffle = sg.Generator().manual_seed(args.seed)
    sampler = None
    if dist is not None:  # each rank its share, reshuffled each epoch by seed + epoch, alike on every rank
        sampler = data.DistributedSampler(train_set, world, rank, shuffle=True, seed=args.seed)
        loader = data.DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    else:
        loader = data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    constant = getattr(args, "constant_lr", False)
    if constant:  # a factor of 1: the rate stays --lr (and the checkpoint keeps a schedule's state)
        schedule = sg.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=0)
    else:
        schedule = sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(loader))
    start_epoch = 0
    if ckpt is not None:
        start_epoch = resume(ckpt, args.resume, model, opt, schedule, shuffle)
        say(f"resumed from {args.resume} after epoch {start_epoch}")
    # the replicas: rank 0's weights are broadcast when wrapping; checkpoints hold the model itself
    net = sg.nn.parallel.DistributedDataParallel(model) if dist is not None else model

    threads = sg.get_num_threads()
    name = f"torch (PyTorch {sg.__version__})" if is_torch(sg) else sg.__name__
    ranks = f", {world} processes (MPI)" if dist is not None else ""
    say(f"stage {name}, {threads} thread{'s' if threads != 1 else ''}{ranks}, model {args.model} "
        f"({sum(p.numel() for p in model.parameters()):,} parameters), {len(train_set):,} "
        f"training images, batch {args.batch_size}{' per process' if ranks else ''}, "
        f"{'SGD' if sgd else 'AdamW'} lr {args.lr:g} ({'constant' if constant else 'cosine to 0'})"
        + (f", on cuda, {'the whole step' if _captures_whole_step(args) else 'forward and backward'} "
           f"captured into a CUDA graph" if graphed else ""))
    wall = time.perf_counter()

    def checkpoint(epoch):
        if args.save and rank == 0:
            sg.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": schedule.state_dict(), "epoch": epoch, "model_kind": args.model,
                     "width": args.width,
                     "shuffle_state": shuffle.get_state()}, args.save)
            say(f"checkpoint written to {args.save}")

    seen, train_time, loss_value = fit(sg, net, opt, schedule, loader, args.epochs, start_epoch,
                                       on_epoch=checkpoint, sampler=sampler, world=world, quiet=quiet,
                                       step=CapturedStep(sg, model, opt, whole=_captures_whole_step(args))
                                       if graphed else None)
    accuracy = evaluate(sg, model, test_set, dist=dist, quiet=quiet, device=device)
    wall = time.perf_counter() - wall
    summary = {"stage": sg.__name__, "model": args.model, "train_images_seen": seen,
               "final_loss": loss_value, "test_accuracy": accuracy,
               "samples_per_s": seen / train_time if train_time else float("nan"), "wall_s": wall}
    say(f"test accuracy {accuracy:.2%} on {len(test_set):,} images | final train loss "
        f"{loss_value:.4f} | {stat('samples/s', summary['samples_per_s'])} | wall time {seconds(wall)}")
    return summary
