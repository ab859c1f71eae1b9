"""``sg.onnx``: export a model to ONNX, so that it runs in ONNX Runtime or any other
runtime that reads the format.

``sg.onnx.export(model, example_inputs, "model.onnx", dynamic_axes={"x": {0: "batch"}})``
traces one forward (``trace.py``), maps each recorded operation to ONNX operators
(``primitives.py`` for the backend primitives, ``functions.py`` for convolution, pooling,
normalisation, softmax, embedding and the recurrent layers) and writes the model with the ``onnx`` package,
checked by ``onnx.checker``. Sizes that change with a dynamic axis are found by tracing
again at other sizes (``sizes.py``). Needs the ``onnx`` extra: ``pip install
stagegrad[onnx]``.
"""
from .errors import ExportError


def export(model, args, f=None, **kwargs):
    """Export ``model`` to ONNX by tracing ``model(*args)``; see ``exporter.export``."""
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        raise ImportError(f"sg.onnx.export needs the onnx package ({e.name} is missing): "
                          f"pip install 'stagegrad[onnx]'") from None
    from .exporter import export as _export
    return _export(model, args, f, **kwargs)


__all__ = ["export", "ExportError"]
