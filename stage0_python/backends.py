"""``sg.backends``: switches among a stage's implementations of a primitive, as
``torch.backends`` holds PyTorch's.

``gemm``: the matrix product. A stage with more than one (stage 3: ``"blas"``, OpenBLAS,
and ``"own"``, its own BLIS-style GEMM) lists them in its backend's ``GEMMS``, also
accepts ``"auto"`` (its default, or ``STAGEGRAD_GEMM``: each product on the GEMM that is
faster for its shape on this machine), and a stage with one says ``"builtin"``. Setting
a name the stage does not have raises ValueError listing those it has.
"""
import sys
import types

from . import backend as _B


class _Backends(types.ModuleType):
    @property
    def gemm(self):
        """The matrix product in use."""
        return _B.get_gemm() if hasattr(_B, "get_gemm") else "builtin"

    @gemm.setter
    def gemm(self, name):
        choices = ("auto",) + _B.GEMMS if hasattr(_B, "GEMMS") else ("builtin",)
        if name not in choices:
            raise ValueError(f"backends.gemm: this stage has {', '.join(map(repr, choices))}, not {name!r}")
        if hasattr(_B, "set_gemm"):
            _B.set_gemm(name)


sys.modules[__name__].__class__ = _Backends
