"""``sg.cuda.amp``: stage 0's ``cuda_amp.py`` (PyTorch's older mixed-precision spellings),
as this package's submodule."""
from ..cuda_amp import GradScaler, autocast  # noqa: F401

__all__ = ["autocast", "GradScaler"]
