"""``sg.backends``: switches among a stage's implementations of a primitive, as
``torch.backends`` holds PyTorch's.

``gemm``: the matrix product. A stage with more than one (stage 3: ``"blas"``, OpenBLAS,
and ``"own"``, its own BLIS-style GEMM) lists them in its backend's ``GEMMS``, also
accepts ``"auto"`` (its default, or ``STAGEGRAD_GEMM``: each product on the GEMM that is
faster for its shape on this machine), and a stage with one says ``"builtin"``. Setting
a name the stage does not have raises ValueError listing those it has.

``conv``: the convolution (groups 1), likewise. Stage 3 has ``"implicit"`` (an implicit
GEMM), ``"direct"`` (a direct convolution, where it applies: stride 1, dilation 1, padding
below the kernel) and ``"winograd"`` (Winograd F(2x2, 3x3) where it applies: 3x3, stride 1,
dilation 1, padding up to 2), the implicit GEMM where the chosen one does not apply, and
``"auto"``, its default: per pass, the one a fixed rule expects to be fastest for the shape.

The flags PyTorch programs set before training are here too, answered as a CPU-only
PyTorch build answers them, so those lines run unchanged: ``cudnn`` (``benchmark``,
``deterministic``, ``enabled``, ``allow_tf32``: stored and without effect, since no
cuDNN is used; ``is_available()`` False, ``version()`` None), ``cuda`` (``is_built()``
False, ``matmul.allow_tf32``) and ``mps`` (``is_available()`` and ``is_built()`` False).
Each is also importable as a module: ``import sg.backends.cudnn as cudnn``.
"""
import sys
import types

from . import backend as _B


def _choice(kind, doc):
    """The ``backends.<kind>`` switch: the name in use, set to one of the backend's
    ``<KIND>S`` or ``"auto"``; ``"builtin"`` on a stage with one implementation."""
    def get(self):
        return getattr(_B, "get_" + kind)() if hasattr(_B, "get_" + kind) else "builtin"

    def put(self, name):
        names = getattr(_B, kind.upper() + "S", None)
        choices = ("auto",) + names if names is not None else ("builtin",)
        if name not in choices:
            raise ValueError(f"backends.{kind}: this stage has {', '.join(map(repr, choices))}, not {name!r}")
        if hasattr(_B, "set_" + kind):
            getattr(_B, "set_" + kind)(name)
    return property(get, put, doc=doc)


class _Backends(types.ModuleType):
    gemm = _choice("gemm", "The matrix product in use.")
    conv = _choice("conv", "The convolution algorithm in use.")


sys.modules[__name__].__class__ = _Backends


def _submodule(name, doc, **attrs):
    """A ``backends.<name>`` module holding ``attrs``, registered so that
    ``import <stage>.backends.<name>`` finds it."""
    module = types.ModuleType(f"{__name__}.{name}", doc)
    module.__dict__.update(attrs)
    sys.modules[module.__name__] = module
    setattr(sys.modules[__name__], name, module)
    return module


def _false():
    """False: this stage has none."""
    return False


def _none():
    """None: this stage has no cuDNN, so no version."""
    return None


_submodule("cudnn", "cuDNN's switches: stored, without effect (no cuDNN is used here).",
           benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
           is_available=_false, version=_none)
_submodule("mps", "Apple's Metal backend: not available here.", is_available=_false, is_built=_false)
_submodule("cuda", "CUDA's switches: stored, without effect (no CUDA is used here).", is_built=_false,
           matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                        allow_bf16_reduced_precision_reduction=True))
