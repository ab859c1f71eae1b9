"""What a run asks for, checked field by field before anything starts.

The page posts a JSON object; ``check`` returns it normalized (defaults filled in, only
the fields the chosen model uses) or raises ``SettingsError`` holding one message per
field at fault, which the page shows beside that field. Numbers are bounded so that no
request can ask for an unbounded amount of time or memory without being told.
"""
from . import architecture

# model -> its dataset: the zoo's models (the ones ``stagegrad train`` runs), and a model
# built layer by layer in the page
MODELS = {"mlp": "mnist", "cnn": "mnist", "resnet18": "mnist", "mobilenetv2": "mnist",
          "custom": "mnist", "gpt": "shakespeare", "lstm": "shakespeare"}
DATASETS = ("mnist", "shakespeare")
OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULES = ("cosine", "constant", "step")

# numeric fields: (low, high, default, whole number?); bounds inclusive except a float's 0
NUMBERS = {
    "lr": (0.0, 10.0, 2e-3, False),
    "batch_size": (1, 1024, 64, True),
    "epochs": (1, 50, 1, True),
    "subset": (1, 60000, 6000, True),
    "test_subset": (1, 10000, 1000, True),
    "steps": (1, 100000, 200, True),
    "context": (8, 256, 64, True),
    "width": (0.0, 1.0, 0.25, False),
    "seed": (0, 2**32 - 1, 0, True),
}
COMMON = ("model", "dataset", "stage", "optimizer", "lr", "schedule", "batch_size", "seed")
FIELDS = {  # the fields each dataset's runs use, beyond the common ones
    "mnist": ("epochs", "subset", "test_subset"),
    "shakespeare": ("steps", "context"),
}
BIG_MODELS = ("resnet18", "mobilenetv2", "gpt", "lstm")
BIG_BATCH = 256  # the zoo's larger models: a bound on the batch keeps a step's memory in reason


class SettingsError(ValueError):
    """Settings that cannot run: ``errors`` maps each field at fault to its message."""

    def __init__(self, errors):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def _number(name, value):
    low, high, default, whole = NUMBERS[name]
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, got {value!r}")
    # compared as they are: a huge JSON integer does not fit a float
    if whole:
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"must be a whole number, got {value!r}")
            value = int(value)
        if not low <= value <= high:
            raise ValueError(f"must be between {low:,} and {high:,}, got {architecture.shown(value)}")
        return value
    if not low < value <= high:  # NaN fails this too
        raise ValueError(f"must be more than {low:g} and at most {high:g}, got {architecture.shown(value)}")
    return float(value)


def _choice(name, value, options, default):
    if value is None:
        return default
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(options)}")
    return value


def check(raw, stages):
    """``raw`` (the posted object) as normalized settings; ``stages`` maps each installed
    stage's number to its package. Raises ``SettingsError`` with every field at fault."""
    if not isinstance(raw, dict):
        raise SettingsError({"settings": f"expected a JSON object, got {type(raw).__name__}"})
    errors, out = {}, {}
    known = set(COMMON) | set(NUMBERS) | {"architecture"}
    for name in sorted(set(raw) - known):
        errors[name] = "unknown setting"

    def attempt(name, fn):
        try:
            out[name] = fn()
        except ValueError as e:
            errors[name] = str(e)

    attempt("model", lambda: _choice("model", raw.get("model"), tuple(MODELS), "mlp"))
    model = out.get("model", "mlp")
    attempt("dataset", lambda: _choice("dataset", raw.get("dataset"), DATASETS, MODELS[model]))
    if out.get("dataset", MODELS[model]) != MODELS[model]:
        errors["dataset"] = f"the {model} model trains on {MODELS[model]}, not {out['dataset']}"
    default_stage = "3" if "3" in stages else next(iter(stages), None)
    attempt("stage", lambda: _choice("stage", None if raw.get("stage") is None else str(raw["stage"]),
                                     tuple(stages), default_stage))
    attempt("optimizer", lambda: _choice("optimizer", raw.get("optimizer"), OPTIMIZERS, "adamw"))
    attempt("schedule", lambda: _choice("schedule", raw.get("schedule"), SCHEDULES, "cosine"))
    names = ["lr", "batch_size", "seed", *FIELDS[MODELS[model]]]
    if model in ("resnet18", "mobilenetv2"):
        names.append("width")
    for name in names:
        attempt(name, lambda name=name: _number(name, raw.get(name)))
    if model in BIG_MODELS and out.get("batch_size", 0) > BIG_BATCH:
        errors["batch_size"] = f"at most {BIG_BATCH} for the {model} model (its steps need far more memory)"
    if model == "custom":
        try:
            layers = architecture.check(raw.get("architecture"), out.get("batch_size", 64))["layers"]
            out["architecture"] = [{k: v for k, v in layer.items() if k != "output"} for layer in layers]
        except architecture.ArchitectureError as e:
            errors["architecture"] = str(e)
    elif raw.get("architecture") is not None:
        errors["architecture"] = "an architecture is only used with the model 'custom'"
    if errors:
        raise SettingsError(errors)
    return out
