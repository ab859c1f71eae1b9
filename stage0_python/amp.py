"""``sg.amp``: dynamic loss scaling, as ``torch.amp.GradScaler``, and ``autocast``
(``autocast.py``), as ``torch.amp.autocast``.

Design: small gradients of a low-precision loss underflow to zero. The scaler multiplies
the loss by a large factor before the backward, divides the gradients by it before the
step, and adjusts the factor as training goes: a step whose gradients hold an inf or a
NaN is skipped and the factor shrinks (``backoff_factor``); after ``growth_interval``
steps without one it grows (``growth_factor``). The factor is kept as a float32 value
and every update is rounded to float32, as PyTorch keeps it in a float32 tensor, so the
two agree step by step.
"""
import enum
import struct
import warnings

from .autocast import autocast
from .autograd import no_grad
from .tensor import Tensor

__all__ = ["GradScaler", "autocast"]


def _f32(v):
    """``v`` rounded to float32 (inf beyond its range)."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


class _Stage(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


class GradScaler:
    """See torch.amp.GradScaler. ``device`` is where the scaled tensors live (``"cuda"``,
    PyTorch's default, disables the scaler with a warning where there is no CUDA, as
    PyTorch does; ``"cpu"`` and ``"webgpu"`` are this project's)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._device == "cuda" and self._enabled:
            from . import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # set by the first scale(), as PyTorch's
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._growth_tracker = 0
            self._states = {}

    def _state(self, optimizer):
        return self._states.setdefault(id(optimizer), {"stage": _Stage.READY, "found_inf": None})

    def _require_scale(self, what):
        if self._scale is None:
            raise AssertionError(f"Attempted {what} but _scale is None.  This may indicate your script did "
                                 f"not use scaler.scale(loss or outputs) earlier in the iteration.")

    def scale(self, outputs):
        """``outputs`` (a tensor, or tensors in lists, tuples and other iterables) times the
        scale factor; unchanged when the scaler is disabled."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = _f32(self._init_scale)
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale factor, in place, and note whether
        any of them holds an inf or a NaN (that step is then skipped)."""
        if not self._enabled:
            return
        self._require_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] is _Stage.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last "
                               "update().")
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = _f32(1.0 / self._scale)  # PyTorch: the reciprocal in float64, rounded to float32
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    found = found or not bool(p.grad.isfinite().all())
                    p.grad.mul_(inv)
        state["found_inf"] = found
        state["stage"] = _Stage.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, unless one of them holds
        an inf or a NaN: then the step is skipped (and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._require_scale("step")
        state = self._state(optimizer)
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _Stage.READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _Stage.STEPPED
        return result

    def update(self, new_scale=None):
        """Adjust the scale factor after this iteration's steps: shrink it if any step found
        an inf or a NaN, grow it after ``growth_interval`` clean iterations; or set it to
        ``new_scale`` (a float, or a one-element tensor that needs no gradient)."""
        if not self._enabled:
            return
        self._require_scale("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError("new_scale should be a float or a 1-element torch.cuda.FloatTensor "
                                         "or torch.FloatTensor with requires_grad=False.")
                new_scale = new_scale.item()
            self._scale = _f32(new_scale)
        else:
            found = [s["found_inf"] for s in self._states.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(found):
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            elif self._growth_tracker + 1 == self._growth_interval:
                grown = _f32(self._scale * self._growth_factor)
                if grown != float("inf"):
                    self._scale = grown
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
        self._states = {}

    def get_scale(self):
        """The scale factor (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return _f32(self._init_scale) if self._scale is None else self._scale

    def get_growth_factor(self):
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The factor the scale shrinks by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Set the factor the scale shrinks by."""
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """Clean iterations before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Set the clean iterations before the scale grows."""
        self._growth_interval = new_interval

    def is_enabled(self):
        """Whether the scaler scales (False where it was disabled, or its device is missing)."""
        return self._enabled

    def state_dict(self):
        """The scaler's state, in PyTorch's keys (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        """Restore a state from ``state_dict`` (ours or PyTorch's)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = _f32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = int(state_dict["_growth_tracker"])
