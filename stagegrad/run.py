"""``stagegrad run --stage N SCRIPT [ARGS...]`` (also ``python -m stagegrad.run``): a program
written for PyTorch, unchanged, on stage N. ``import torch`` and every ``torch.*`` module
give the stage's own (``as_torch``); the script runs as ``__main__`` with ``ARGS`` as its
``sys.argv[1:]``, as ``python SCRIPT ARGS`` would run it. ``--stage torch`` runs it on
PyTorch itself, for a comparison."""
import argparse
import os
import runpy
import sys

from . import as_torch, installed_text, load_stage, stage_type


def add_arguments(p):
    """The command's options."""
    p.add_argument("--stage", type=stage_type(peers=True), default="3",
                   help=f"the stage that 'import torch' gives: {installed_text()}; or 'torch' for PyTorch "
                        "itself (default 3)")
    p.add_argument("-m", dest="module", metavar="MODULE",
                   help="run a module as 'python -m MODULE' would, instead of SCRIPT (default: none, SCRIPT runs)")
    p.add_argument("script", nargs="?", metavar="SCRIPT", help="the program's file")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the program's own arguments")


def run(args):
    """Run the program on the stage; its exit status is the process's."""
    if args.script is None and args.module is None:
        raise SystemExit("stagegrad run: give SCRIPT, or -m MODULE")
    if args.module is None and not os.path.isfile(args.script):
        raise SystemExit(f"stagegrad run: no such file: {args.script}")
    if str(args.stage) == "torch":
        load_stage("torch", peers=True)  # a clear error where PyTorch is not installed
    else:
        as_torch.install(str(args.stage))  # for the rest of the process
    if args.module is not None:  # as `python -m MODULE ARGS`: SCRIPT, if given, is its first argument
        sys.argv = [args.module, *([args.script] if args.script else []), *args.args]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [args.script, *args.args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))  # as `python SCRIPT` does
        runpy.run_path(args.script, run_name="__main__")


def main(argv=None):
    """``python -m stagegrad.run [--stage N] SCRIPT [ARGS...]``."""
    p = argparse.ArgumentParser(prog="python -m stagegrad.run", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    run(p.parse_args(argv))


if __name__ == "__main__":
    main()
