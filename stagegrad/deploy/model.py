"""The model a deployment serves: a checkpoint ``stagegrad train --save`` wrote, loaded on a
stage, in eval mode, with the two things a client asks of it (class probabilities for
images, generated text for the language models) and the checks on what a client sends."""
import base64
import binascii
import hashlib
import io
import math
import struct
import tempfile
from pathlib import Path

from .. import load_stage, train_parts, train_text, training
from ..dashboard import architecture

IMAGE = (1, 28, 28)  # the shape an image model takes (MNIST's)
TEXT_KINDS = ("gpt", "lstm")
PEERS = ("torch", "onnxruntime")  # runtimes that serve a checkpoint beside the stages
FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]  # the models run in float32
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class CheckpointError(ValueError):
    """The checkpoint cannot be served; the message names the path and the reason."""


class BadInput(ValueError):
    """A request's content is wrong; the message says what, ``status`` the 4xx to answer."""

    status = 422


class TooLarge(BadInput):
    """An instance larger than the server reads (an image past Pillow's decompression-bomb limit)."""

    status = 413


class Served:
    """A trained model ready for inference, on a stage or on a peer runtime.

    ``backend`` is a stage (number or package), ``"torch"`` (PyTorch, from the checkpoint's
    weights) or ``"onnxruntime"`` (the model exported to ONNX by the stage, with a softmax
    on its logits; image models only). ``kind`` is the model (mlp, cnn, resnet18,
    mobilenetv2, gpt, lstm, or custom: layers built in the dashboard), ``name`` what the API
    calls it (the checkpoint's file name without its suffix unless given), ``text`` whether
    it is a language model."""

    def __init__(self, path, backend="3", name=None):
        backend = str(backend)
        # the checkpoint is the stages' format: a peer reads it through the fastest stage here
        self.sg = sg = load_stage(_reader() if backend in PEERS else backend)
        self.path, self.backend = Path(path), backend if backend in PEERS else sg.__name__
        try:
            ckpt = sg.load(str(path), format="stagegrad")
        except Exception as e:  # a foreign or corrupt file: whatever the reader raised, say why
            raise CheckpointError(f"{path}: not a checkpoint 'stagegrad train --save' wrote "
                                  f"({type(e).__name__}: {e})") from None
        if not isinstance(ckpt, dict) or "model" not in ckpt or "model_kind" not in ckpt:
            raise CheckpointError(f"{path}: a checkpoint, but not one 'stagegrad train --save' wrote "
                                  f"(it holds {train_parts.contents(ckpt)})")
        self.kind = ckpt["model_kind"]
        self.text = self.kind in TEXT_KINDS
        try:
            self.model = self._build(sg, ckpt)
            self.model.load_state_dict(ckpt["model"])
        except (KeyError, ValueError, RuntimeError, TypeError) as e:
            raise CheckpointError(f"{path}: its {self.kind!r} model cannot be rebuilt from it "
                                  f"({type(e).__name__}: {e})") from None
        self.model.eval()
        self.parameters = sum(p.numel() for p in self.model.parameters())
        self.sha256 = _sha256(self.path)  # which file is served, for a client to check
        self.name = name or self.path.stem
        self.context = self.config.get("context") if self.text else None
        self._run = self._stage_forward
        if backend == "torch":
            self._to_torch(ckpt)
        elif backend == "onnxruntime":
            self._to_onnxruntime()

    def _build(self, lib, ckpt):
        if self.text:
            self.tokenizer = load_stage("0").datasets.CharTokenizer(ckpt["vocab"])
            self.config = ckpt["config"]
            return train_text.build_model(lib, self.kind, self.tokenizer.vocab_size, self.config)
        if self.kind == "custom":  # built layer by layer in the dashboard: the layers are in the file
            return architecture.build(lib, ckpt["architecture"])
        return training.build_model(lib, self.kind, ckpt.get("width", 1.0))  # older checkpoints: 1.0

    def _to_torch(self, ckpt):
        import torch
        self.lib, sd = torch, self.model.state_dict()
        self.model = self._build(torch, ckpt)
        self.model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()})
        self.model.eval()
        self._run = self._torch_forward

    def _to_onnxruntime(self):
        if self.text:
            raise CheckpointError(f"{self.path}: ONNX Runtime serves the image models here, not a "
                                  f"{self.kind!r} language model (sampling is a loop in Python)")
        try:
            import onnxruntime
        except ImportError as e:
            raise CheckpointError(f"onnxruntime is not installed ({e}): "
                                  f"pip install 'stagegrad[onnx]'") from None
        sg = self.sg
        probabilities = sg.nn.Sequential(self.model, sg.nn.Softmax(dim=-1))
        with tempfile.TemporaryDirectory() as folder:
            onnx_path = str(Path(folder) / "model.onnx")
            sg.onnx.export(probabilities, (sg.zeros(1, *IMAGE),), onnx_path, input_names=["x"],
                           output_names=["p"], dynamic_axes={"x": {0: "batch"}, "p": {0: "batch"}})
            options = onnxruntime.SessionOptions()
            self.session = onnxruntime.InferenceSession(onnx_path, options,
                                                        providers=["CPUExecutionProvider"])
        self._run = self._onnx_forward

    def describe(self):
        """What ``GET /v1/models`` and ``GET /v1/models/NAME`` say of the model: its name,
        kind, backend, parameter count, the checkpoint's SHA-256, and its input (28 x 28
        images, 10 classes) or vocabulary and context."""
        about = {"name": self.name, "kind": self.kind, "backend": self.backend, "parameters": self.parameters,
                 "sha256": self.sha256}
        if self.text:
            about.update(vocabulary="".join(self.tokenizer.chars), context=self.context)
        else:
            about.update(input=list(IMAGE), classes=10)
        return about

    # ------------------------------------------------------------ images

    def images(self, instances):
        """Check ``instances`` and flatten them: a list of 784-float lists, or BadInput naming
        the first bad one. An instance is a 28 x 28 or 1 x 28 x 28 nested list of finite
        numbers that float32 holds, or ``{"b64": ...}``: a base64 PNG of 28 x 28 grey pixels, read
        as MNIST's bytes (divided by 255)."""
        out = []
        for i, inst in enumerate(instances):
            if isinstance(inst, dict):
                out.append(_png_pixels(inst, i))
                continue
            channel = isinstance(inst, list) and len(inst) == 1 and isinstance(inst[0], list)
            rows = inst[0] if channel else inst  # 1 x 28 x 28 or 28 x 28
            if not (isinstance(rows, list) and len(rows) == IMAGE[1]
                    and all(isinstance(r, list) and len(r) == IMAGE[2] for r in rows)):
                raise BadInput(f"instance {i}: expected a 28 x 28 image (or 1 x 28 x 28) of numbers, got "
                               f"{_shape_of(inst)}")
            flat = [v for r in rows for v in r]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat):
                raise BadInput(f"instance {i}: every pixel must be a number")
            if not all(math.isfinite(v) for v in flat if isinstance(v, float)):
                raise BadInput(f"instance {i}: a pixel is not finite (NaN or infinity)")
            # compared as they are: a JSON integer of hundreds of digits does not fit a float
            if not all(-FLOAT32_MAX <= v <= FLOAT32_MAX for v in flat):
                raise BadInput(f"instance {i}: a pixel is beyond float32's range (at most {FLOAT32_MAX:.7g} "
                               f"in magnitude), in which the model runs")
            out.append(flat)
        return out

    def predict(self, flat_images):
        """Class probabilities of each image (784 floats), as lists: one forward for them all."""
        return self._run(flat_images)

    def _stage_forward(self, flat_images):
        sg = self.sg
        with sg.no_grad():
            x = sg.tensor(flat_images, dtype=sg.float32).reshape(len(flat_images), *IMAGE)
            return sg.nn.functional.softmax(self.model(x), dim=-1).tolist()

    def _torch_forward(self, flat_images):
        torch = self.lib
        with torch.inference_mode():
            x = torch.tensor(flat_images, dtype=torch.float32).reshape(len(flat_images), *IMAGE)
            return torch.softmax(self.model(x), dim=-1).tolist()

    def _onnx_forward(self, flat_images):
        import numpy as np  # ONNX Runtime's own interface
        x = np.asarray(flat_images, dtype=np.float32).reshape(len(flat_images), *IMAGE)
        return self.session.run(None, {"x": x})[0].tolist()

    # ------------------------------------------------------------ text

    def prompt_ids(self, prompt):
        """The prompt's token ids, or BadInput (a character outside the vocabulary, too long)."""
        if not isinstance(prompt, str):
            raise BadInput("prompt: expected a string")
        try:
            ids = self.tokenizer.encode(prompt or "\n")
        except ValueError as e:
            raise BadInput(f"prompt: {e}") from None
        if self.kind == "gpt" and len(ids) > self.context:
            raise BadInput(f"prompt: {len(ids)} characters is past the model's context of {self.context}")
        return ids

    def stream(self, ids, max_tokens, temperature, top_k, seed):
        """Yield each generated character, sampled as ``stagegrad sample`` samples them."""
        lib = getattr(self, "lib", self.sg)
        gen = lib.Generator().manual_seed(seed)
        for token in self.model.stream(lib.tensor([ids]), max_tokens, temperature=temperature, top_k=top_k,
                                       generator=gen):
            yield self.tokenizer.decode(token[0].tolist())


def _png_pixels(inst, i):
    """The 784 pixels in [0, 1] of a ``{"b64": PNG}`` instance, decoded by Pillow (never by
    pickle) once its header says 28 x 28, or BadInput (TooLarge past Pillow's
    decompression-bomb limit)."""
    if set(inst) != {"b64"} or not isinstance(inst["b64"], str):
        raise BadInput(f"instance {i}: an object instance must be {{\"b64\": \"<base64 PNG>\"}}")
    try:
        from PIL import Image
    except ImportError:
        raise BadInput(f"instance {i}: PNG instances need Pillow on the server "
                       f"(pip install pillow)") from None
    try:
        data = base64.b64decode(inst["b64"], validate=True)
    except (binascii.Error, ValueError) as e:
        raise BadInput(f"instance {i}: not a base64 PNG ({type(e).__name__}: {e})") from None
    # the size is read from the header before Pillow decodes anything
    if data[:8] != PNG_SIGNATURE or data[12:16] != b"IHDR" or len(data) < 24:
        raise BadInput(f"instance {i}: not a base64 PNG (no PNG signature and header)")
    width, height = struct.unpack(">II", data[16:24])
    bound = Image.MAX_IMAGE_PIXELS
    if bound is not None and width * height > bound:
        raise TooLarge(f"instance {i}: the PNG claims {width} x {height} pixels, past the {bound:,} "
                       f"that Pillow decodes (its decompression-bomb limit); expected 28 x 28")
    if (width, height) != (IMAGE[2], IMAGE[1]):
        raise BadInput(f"instance {i}: the PNG is {width} x {height} pixels (width x height); "
                       f"expected 28 x 28")
    try:
        image = Image.open(io.BytesIO(data), formats=["PNG"])
        return [v / 255 for v in image.convert("L").tobytes()]
    except Exception as e:  # whatever the decoder raises on these bytes, they are the client's
        raise BadInput(f"instance {i}: not a readable PNG ({type(e).__name__}: {e})") from None


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _reader():
    """The stage that reads a checkpoint for a peer: the fastest built here."""
    for stage in ("3", "2"):
        try:
            return load_stage(stage).__name__
        except RuntimeError:  # not built here
            continue
    return "0"


def _shape_of(value):
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return "a " + " x ".join(map(str, shape)) + " list" if shape else type(value).__name__
