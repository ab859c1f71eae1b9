"""The errors of ``sg.onnx``."""


class ExportError(RuntimeError):
    """The model cannot be exported as it is: the message names the operation or the
    construct that has no ONNX form, and what to change where something can be."""
