"""Sphinx extension: the site's generated material, from one reference run.

The site shows one run of ``stagegrad results``: by default the newest committed under
``docs/results/``, so a build measures nothing; ``stagegrad docs --from DIR`` or
``--measure`` (a fresh quick run) choose another through ``STAGEGRAD_DOCS_RUN``, and every
page that shows its tables then says so at its top. The chapters carry their tables
between ``<!-- results: NAME -->`` comments (``stagegrad/chapters.py``); each is rendered
here from the chosen run. From the run's journey it writes the landing page's headline and
stages table, the machine summary and the full table into ``_generated/``, with the table
of which stage implements which backend primitive natively and the op coverage.

The build fails when a chapter quotes a measured figure that no committed results file
contains, when a stage chapter has no results table, or (built from the committed run)
when a chapter's table differs from what the run writes (``stagegrad results --chapters``
rewrites them).
"""
import importlib
import inspect
import json
import os
import re
import shutil
import sys
from pathlib import Path

from sphinx.errors import ExtensionError

from stagegrad import STAGES, chapters, coverage
from stagegrad import journey_report as R
from stagegrad.workloads import MLP_SHAPE, stage_packages

GENERATED = "_generated"
_STATE = {}
ROOT = Path(__file__).resolve().parents[2]
RUN_FILES = ("ladder.png", "roofline.png")  # the journey's figures the landing and journey pages show


def chosen_run():
    """``(folder, fresh)``: the run the site shows, and whether it is other than the newest
    committed one."""
    path = os.environ.get("STAGEGRAD_DOCS_RUN")
    return (Path(path), True) if path else (chapters.newest(), False)


def check(fresh):
    """Stop the build on a figure no results file backs, a stage chapter without a results
    table, or (from the committed run) a chapter whose tables are out of date."""
    problems = [f"{page}: {figure} is quoted but no committed results file contains it"
                for page, figure in chapters.unbacked()]
    for page in sorted(chapters.DOCS.glob("stage*.md")):
        if not chapters.BLOCK.search(page.read_text(encoding="utf-8")):
            problems.append(f"{page.name}: a stage chapter without a results table")
    if not fresh:
        problems += [f"{page}: the table {name} differs from the reference run's (run `stagegrad results "
                     "--chapters`)" for page, name in chapters.stale()]
    if problems:
        raise ExtensionError("the chapters' numbers:\n  " + "\n  ".join(problems))


# ------------------------------------------------------------------ primitives

def primitive_names():
    """The primitives, then the helpers the frontend also calls: the reference backend's
    ``PRIMITIVES`` and ``HELPERS`` (the contract a test checks every stage against)."""
    backend = importlib.import_module("stage0_python.backend")
    return list(backend.PRIMITIVES) + list(backend.HELPERS)


def native(stage, fn):
    """Whether ``fn`` is defined in a file of ``stage``'s own: in its folder, or in its folder
    of built modules (``build/ext/<stage>`` in a checkout), the entries of its ``__path__``
    named after it (a stage reuses the earlier stages' files as its own modules, so the
    module name alone cannot tell)."""
    own = [Path(p).resolve() for p in stage.__path__ if Path(p).name == stage.__name__]
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    try:
        source = inspect.getsourcefile(fn) or getattr(module, "__file__", None)
    except TypeError:  # compiled functions have no Python source
        source = getattr(module, "__file__", None)
    return source is not None and any(o in Path(source).resolve().parents for o in own)


def primitives_table():
    stages = [importlib.import_module(pkg) for pkg in stage_packages()]
    backends = [importlib.import_module(f"{s.__name__}.backend") for s in stages]
    labels = {pkg: f"stage {n}" for n, pkg in STAGES.items()}
    head = ["primitive"] + [f"{labels[s.__name__]} (`{s.__name__}`)" for s in stages]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in primitive_names():
        cells = []
        for s, b in zip(stages, backends):
            fn = getattr(b, name, None)
            cells.append("missing" if fn is None else "**native**" if native(s, fn) else "inherited")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    fused = sorted(set().union(*(getattr(b, "FUSED", ()) for b in backends))) if backends else []
    for name in fused:
        cells = ["**fused**" if name in getattr(b, "FUSED", ()) else "composite" for b in backends]
        lines.append(f"| `{name}` (fused) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------ introspection

def introspection_fragments(gen, batch=8):
    """The stage 0 chapter's picture of the journey's MLP loss graph (``sg.viz``) and its
    ``sg.nn.summary`` table. A small batch: only the shapes matter, and stage 0 is slow.
    Without Graphviz the chapter shows the DOT text instead, with a note."""
    sg = importlib.import_module("stage0_python")
    sg.manual_seed(0)
    d_in, d_hidden, d_out = MLP_SHAPE
    model = sg.nn.Sequential(sg.nn.Linear(d_in, d_hidden), sg.nn.ReLU(), sg.nn.Linear(d_hidden, d_out))
    x, y = sg.randn(batch, d_in), sg.randint(0, d_out, (batch,))
    loss = sg.nn.functional.cross_entropy(model(x), y)
    picture = sg.viz.graph(loss, params=dict(model.named_parameters()))
    try:
        picture.render(gen / "mlp_graph.svg")
        shown = ("```{image} /_generated/mlp_graph.svg\n:alt: the autograd graph of the MLP's loss\n"
                 ":align: center\n```\n")
    except sg.viz.GraphvizNotFoundError:
        shown = ("*Graphviz's `dot` was not installed where this site was built, so here is the DOT "
                 "text that it would have drawn (paste it into any Graphviz viewer).*\n\n"
                 f"```text\n{picture.source}```\n")
    (gen / "mlp_graph.md").write_text(shown)
    table = sg.nn.summary(model, input_size=(batch, d_in), verbose=0)
    (gen / "mlp_summary.md").write_text(f"```text\n{table}\n```\n")


def onnx_fragment(gen):
    """The interop page's round trip: the journey's MLP and a small CNN exported from the
    fastest installed stage with a dynamic batch, run in ONNX Runtime at two batch sizes
    and compared with the stage's own outputs."""
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        (gen / "onnx_roundtrip.md").write_text(f"*Not run: {e.name} is not installed where this site was "
                                               f"built (`pip install 'stagegrad[onnx]'`).*\n")
        return
    name = stage_packages()[-1]
    sg = importlib.import_module(name)
    sg.manual_seed(0)
    nn = sg.nn
    d_in, d_hidden, d_out = MLP_SHAPE
    models = {
        "MLP": (nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out)), (d_in,)),
        "CNN": (nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(8 * 14 * 14, d_out)), (1, 28, 28)),
    }
    lines = [f"Exported from `{name}` with `dynamic_axes={{\"x\": {{0: \"batch\"}}}}`, run by ONNX Runtime "
             f"{ort.__version__}:", "",
             "| model | ONNX operators | parameters | largest difference, batch 4 | batch 9 |",
             "|---|---|---:|---:|---:|"]
    for label, (model, shape) in models.items():
        model.eval()
        proto = sg.onnx.export(model, (sg.randn(4, *shape),), input_names=["x"],
                               dynamic_axes={"x": {0: "batch"}})
        session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        diffs = []
        for batch in (4, 9):
            x = sg.randn(batch, *shape)
            theirs = session.run(None, {"x": np.array(x.tolist(), dtype=np.float32)})[0]
            diffs.append(float(np.abs(np.array(model(x).tolist()) - theirs).max()))
        ops = sorted({n.op_type for n in proto.graph.node} - {"Identity"})
        params = sum(p.numel() for p in model.parameters())
        lines.append(f"| {label} | {', '.join(ops)} | {params:,} | {diffs[0]:.1e} | {diffs[1]:.1e} |")
    (gen / "onnx_roundtrip.md").write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------ fragments

def stage_status(number):
    """Where stage ``number`` stands on this machine: ``ready`` (a package that imports),
    ``in progress`` (a folder without ``__init__.py`` yet), ``not built`` (it does not import,
    for want of its compiled parts) or ``planned`` (no folder)."""
    pkg = STAGES[number]
    if pkg in stage_packages():
        return "ready"
    folder = ROOT / pkg
    if not folder.is_dir():
        return "planned"
    return "in progress" if not (folder / "__init__.py").exists() else "not built"


def _chapter_summary(number):
    """The chapter's title, its "rewrites" line and the status it declares (if any), as the
    chapter's header states them."""
    text = (Path(__file__).resolve().parents[1] / f"stage{number}.md").read_text()
    heading = text.splitlines()[0].lstrip("# ")
    field = {}
    for key in ("rewrites", "status"):
        found = re.search(rf"\*\*{key}:\*\* (.*?)(?: ·|\.\s|\n\n)", text, re.S)
        field[key] = " ".join(found.group(1).split()) if found else ""
    return heading.partition(": ")[2] or heading, field["rewrites"], field["status"]


def stages_table(report):
    measured = set(chapters.packages_of(report))
    lines = ["| stage | what it rewrites | status here |", "|---|---|---|"]
    for number, pkg in STAGES.items():
        title, rewrites, declared = _chapter_summary(number)
        status = stage_status(number)
        if status == "ready":
            status = (declared + "; " if declared else "") + (
                "measured in this report" if pkg in measured else "not in this report")
        lines.append(f"| [stage {number}: {title}](stage{number}.md) | {rewrites} | {status} |")
    return "\n".join(lines)


def write_fragments(gen, report, run, fresh):
    (gen / "machine.md").write_text(R.machine_summary(report) + "\n")
    (gen / "headline.md").write_text(R.headline(report) + "\n")
    (gen / "stages.md").write_text(stages_table(report) + "\n")
    (gen / "table.md").write_text(R.table(report) + "\n")
    (gen / "provenance.md").write_text(provenance(report, run, fresh) + "\n")
    (gen / "primitives.md").write_text(primitives_table() + "\n")
    (gen / "coverage.md").write_text(coverage.markdown() + "\n")
    introspection_fragments(gen)
    onnx_fragment(gen)


def provenance(report, run, fresh):
    """Where the site's numbers come from, in a sentence."""
    kind = "a quick run (smallest sizes, short timing)" if report["quick"] else "a full run"
    if fresh:
        return (f"**Measured when this site was built**, by {kind} of `stagegrad results` (`{run}`), not "
                f"the committed reference run the chapters quote.")
    return (f"Measured by `stagegrad results` ({kind}) on {report['created']}: the reference run "
            f"`docs/results/{run.name}/`, committed with the code; `stagegrad results` measures your own.")


def _builder_inited(app):
    gen = Path(app.srcdir) / GENERATED
    gen.mkdir(exist_ok=True)
    run, fresh = chosen_run()
    report = json.loads((run / "journey.json").read_text())
    for name in RUN_FILES:
        if (run / name).exists():
            shutil.copy2(run / name, gen / name)
    _STATE.update(run=run, fresh=fresh)
    check(fresh)
    write_fragments(gen, report, run, fresh)


def _source_read(app, docname, source):
    m = re.fullmatch(r"stage(\d)", docname)
    if m and m.group(1) in STAGES and stage_status(m.group(1)) in ("planned", "in progress"):
        title, _, rest = source[0].partition("\n")
        source[0] = (f"{title}\n\n```{{note}}\nThis stage is {stage_status(m.group(1))}: this chapter "
                     "describes what it will do, and has no measurements yet.\n```\n{rest}")
        return
    if "run" not in _STATE or not chapters.BLOCK.search(source[0]):
        return
    page = Path(app.srcdir) / f"{docname}.md"
    source[0] = chapters.filled(source[0], _STATE["run"], page)
    if _STATE["fresh"]:
        title, _, rest = source[0].partition("\n")
        source[0] = (f"{title}\n\n```{{note}}\nThe tables on this page were measured when this site was "
                     f"built (`{_STATE['run']}`), not by the reference run the prose quotes.\n```\n{rest}")


def setup(app):
    app.connect("builder-inited", _builder_inited)
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
