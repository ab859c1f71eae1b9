"""A stage under PyTorch's name: an import hook that makes ``import torch`` (and every
``torch.*`` submodule) give a stage's own modules, so a PyTorch program runs unchanged.

Design: a finder at the front of ``sys.meta_path`` answers for ``torch`` and ``torch.X.Y``
with the module object that ``import stage.X.Y`` gives (imported once, under its own name);
its loader hands that object back and runs nothing. So each name has one module object
(``torch.nn is stage.nn``): no file is loaded a second time under a ``torch.`` name, and the
attribute the import system sets on the parent is the one already there. A ``torch.X``
that the stage has as something other than a module (``torch.tensor``, a function) is no
module, as in PyTorch. Packages built on PyTorch (``torchvision`` ...) are not faked: their
import is refused with the reason.
"""
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from stage0_python.missing_names import COVERAGE

from . import load_stage

# packages built on PyTorch that a program may import: real ones would run on the stage's
# ``torch`` and fail somewhere inside, so they are refused up front
THIRD_PARTY = ("torchvision", "torchaudio", "torchtext", "torchdata", "torchmetrics", "torchrec",
               "torch_geometric", "lightning", "pytorch_lightning", "timm", "transformers", "accelerate")


class MissingName(ModuleNotFoundError):
    """A ``torch.*`` module the stage does not have."""


class _Existing(importlib.abc.Loader):
    """Loads a module that is already imported: hands it back and runs nothing."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec  # the import system set the torch name's: the module keeps its own


class TorchFinder(importlib.abc.MetaPathFinder):
    """The finder: ``torch`` and ``torch.*`` are ``stage`` and ``stage.*``; the packages of
    ``THIRD_PARTY`` are refused with the reason."""

    def __init__(self, stage):
        self.stage = stage

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in THIRD_PARTY:
            raise ModuleNotFoundError(
                f"{fullname} is a package built on PyTorch, and {self.stage.__name__} runs PyTorch's own API "
                f"only (what it offers: {COVERAGE}); run this program with PyTorch itself", name=fullname)
        if top != "torch":
            return None
        module = self.module(fullname)
        return importlib.machinery.ModuleSpec(fullname, _Existing(module), is_package=hasattr(module, "__path__"))

    def module(self, fullname):
        """The stage's module for the ``torch.*`` name ``fullname``, or MissingName."""
        if fullname == "torch":
            return self.stage
        parent_name, _, child = fullname.rpartition(".")
        parent = sys.modules.get(parent_name) or self.module(parent_name)
        found = getattr(parent, child, None)
        if isinstance(found, types.ModuleType):
            return found
        name = f"{parent.__name__}.{child}"
        if found is None:
            try:
                return importlib.import_module(name)
            except ModuleNotFoundError as e:
                if e.name != name:  # a module the stage's own code lacks: not this program's name
                    raise
        raise MissingName(f"{self.stage.__name__} has no module {fullname} (as {name}); what it offers "
                          f"under PyTorch's names: {COVERAGE}", name=fullname)


def _is_torch_name(name):
    return name.partition(".")[0] in ("torch",) + THIRD_PARTY


def install(stage):
    """Make ``import torch`` give ``stage`` (a stage's number, package name or module) from now
    on: the stage's module, and a function that undoes it. PyTorch's own modules, if this
    process imported them, are set aside until then."""
    stage = load_stage(stage) if isinstance(stage, str) else stage
    saved = {k: sys.modules.pop(k) for k in [k for k in sys.modules if _is_torch_name(k)]}
    finder = TorchFinder(stage)
    sys.meta_path.insert(0, finder)

    def undo():
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if _is_torch_name(k)]:
            del sys.modules[k]
        sys.modules.update(saved)
    return stage, undo


@contextlib.contextmanager
def torch_is(stage):
    """``install(stage)`` for the block only: PyTorch's modules come back afterwards, and the
    stage's modules imported as ``torch.*`` go."""
    module, undo = install(stage)
    try:
        yield module
    finally:
        undo()
