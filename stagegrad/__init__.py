"""Command-line tools shared by every stage: ``stagegrad train`` and friends."""
import argparse
import importlib

STAGES = {
    "0": "stage0_python",
    "1": "stage1_strides",
    "2": "stage2_cython",
    "3": "stage3_simd",
    "4": "stage4_gpu",
}
PEERS = ("torch",)  # what ``load_stage(..., peers=True)`` accepts besides the stages


def load_stage(name, peers=False):
    """Import a stage by number (``"2"``) or package name; a clear error if absent.

    With ``peers=True`` the name may also be ``"torch"``: PyTorch itself, for a command whose
    code uses only the API the stages share with it (``stagegrad train``)."""
    if peers and str(name) in PEERS:
        try:
            return importlib.import_module(str(name))
        except ImportError as e:
            raise RuntimeError(f"stage {name} (PyTorch itself) is not installed: {e}") from e
    pkg = STAGES.get(str(name), str(name))
    if pkg not in STAGES.values():
        raise ValueError(f"unknown stage {name!r}: expected one of {', '.join(STAGES)} "
                         f"or {', '.join(STAGES.values())}" + (f", or {', '.join(PEERS)}" if peers else ""))
    try:
        return importlib.import_module(pkg)
    except ImportError as e:
        raise RuntimeError(f"stage {name} ({pkg}) is not installed or not built: {e}") from e


def installed_stages():
    """The stage packages that import on this machine, in order."""
    out = []
    for pkg in STAGES.values():
        try:
            importlib.import_module(pkg)
        except ImportError:
            continue
        out.append(pkg)
    return out


def installed_text():
    """The installed stages for a help text: ``0 (stage0_python), 1 (stage1_strides), ...``."""
    number = {pkg: n for n, pkg in STAGES.items()}
    return ", ".join(f"{number[pkg]} ({pkg})" for pkg in installed_stages()) or "none"


def stage_type(peers=False):
    """An argparse ``type`` for ``--stage``: a stage's number or package that imports here
    (or, with ``peers``, ``torch``, whose absence the command reports when it runs). Any
    other value is a usage error that lists the installed stages, with the reason a known
    stage does not import."""
    def parse(text):
        if peers and text in PEERS:
            return text
        pkg = STAGES.get(text, text)
        if pkg not in STAGES.values():
            raise argparse.ArgumentTypeError(f"unknown stage {text!r}: installed here: {installed_text()}"
                                             + (f"; or {', '.join(PEERS)}" if peers else ""))
        try:
            importlib.import_module(pkg)
        except ImportError as e:
            raise argparse.ArgumentTypeError(f"stage {text} ({pkg}) is not installed or not built here "
                                             f"({e}); installed: {installed_text()}") from None
        return text
    parse.__name__ = "stage"  # argparse names the type in its messages
    return parse
