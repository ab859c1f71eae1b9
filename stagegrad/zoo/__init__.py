"""The model zoo: reference models written as PyTorch programs, built on any stage.

Each model file reads as plain PyTorch (``import torch``, ``from torch import nn``) and
uses only PyTorch's public API. ``models(sg)`` executes the files with ``torch`` resolved
to ``sg`` (a stage, through ``stagegrad run``'s import hook, or PyTorch itself), so the
very same text builds the model on every stage and on PyTorch: copying weights between
them and comparing outputs is a ``load_state_dict`` away. Parameter names follow the
reference definitions people load checkpoints from (torchvision's ResNet and MobileNetV2).

- ``resnet.resnet18``: ResNet-18 (basic blocks), with a small-image stem for 28x28 inputs;
- ``mobilenet.mobilenet_v2``: MobileNetV2 (inverted residuals, depthwise convolutions);
- ``gpt.GPT``: a character-level GPT (causal multi-head attention with optional grouped
  queries, learned or rotary positions, weight tying, a KV cache for decoding);
- ``lstm_lm.LSTMLanguageModel``: an embedding, a multi-layer LSTM and a tied read-out.
"""
import contextlib
import importlib.util
import threading
import types

from ..as_torch import torch_is

FILES = ("resnet", "mobilenet", "gpt", "lstm_lm")
_cache = {}
_lock = threading.Lock()


def _load(name, sg):
    spec = importlib.util.find_spec(f"{__name__}.{name}")
    module = importlib.util.module_from_spec(spec)
    module.__name__ = f"{__name__}.{name}[{sg.__name__}]"  # one copy per framework
    exec(spec.loader.get_code(spec.name), module.__dict__)
    return module


def models(sg):
    """The zoo's model files executed against ``sg``: a namespace with one attribute per
    file (``models(sg).gpt.GPT(...)``). Cached per framework."""
    with _lock:
        if sg.__name__ not in _cache:
            # PyTorch itself as it is; a stage through stagegrad run's import hook, for the
            # files' imports only (a real PyTorch imported elsewhere gets its modules back)
            with contextlib.nullcontext() if sg.__name__ == "torch" else torch_is(sg):
                _cache[sg.__name__] = types.SimpleNamespace(**{f: _load(f, sg) for f in FILES})
        return _cache[sg.__name__]
