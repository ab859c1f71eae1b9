"""Sphinx extension: the site's generated material.

At the start of a build it makes sure a journey report exists in ``_generated/`` (a quick
run when there is none) and writes Markdown fragments from it and from the installed
stages: the machine summary, the full table, one table per stage, and the table of which
stage implements which backend primitive natively; for the landing page, the headline
ratios and where each stage stands (ready, in progress or planned). Every stage chapter (``stageN.md``)
whose stage appears in the report gets its measured results appended, so a new stage's
chapter shows its numbers without anyone typing them in; the chapter of a stage that is
in progress or planned says so at its top.
"""
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from stagegrad import STAGES, coverage
from stagegrad import journey_report as R
from stagegrad.workloads import MLP_SHAPE, stage_packages

GENERATED = "_generated"
_REPORT = {}


ROOT = Path(__file__).resolve().parents[2]
# the stages' own measurements, quick versions when the folder has none: the file each
# writes, the stage it needs, the command
STAGE_RUNS = {"gemm_ladder.md": ("stage3_simd", ["gemm-ladder", "--size", "256", "--budget", "0.5"]),
              "simd.md": ("stage3_simd", ["simd-paths", "--n", "100000", "--side", "128"]),
              "profile.md": ("stage3_simd", ["profile", "--steps", "50"]),
              "devices.md": ("stage4_gpu", ["devices", "--quick"]),
              "distributed.md": ("stage3_simd", ["distributed", "--quick"]),
              "systems.md": ("stage3_simd", ["systems", "--quick"]),
              "loadtest.md": ("stage3_simd", ["loadtest", "--compare", "--quick"])}
# measurements by scripts in tools/ that print Markdown: the file, the stage it needs, the
# script and its arguments (the table is what follows the script's headings)
TOOL_RUNS = {"stage1_views.md": ("stage1_strides",
                                   ["tools/measure_stage1.py", "--quick", "--only", "movement"])}
# stage 3's tables that the journey measures (`./dev journey` writes them beside its report) and
# a site build shows only when built from it (`stagegrad docs --from DIR`): the file, its command
JOURNEY_TABLES = {"models.md": "stagegrad models", "conv_ladder.md": "stagegrad conv-ladder"}
# the note in place of a table when the stage does not import
NOT_HERE = {"stage3_simd": "stage 3 is not built where this site was",
            "stage4_gpu": "stage 4 does not import where this site was built"}


def ensure_report(gen):
    path = gen / "journey.json"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "stagegrad", "journey", "--quick", "--out", str(gen)],
                       cwd=ROOT, check=True)
    return json.loads(path.read_text())


def skipped():
    """The tables ``stagegrad docs --skip`` leaves unmeasured (its ``STAGEGRAD_DOCS_SKIP``), by
    file name; an unknown name stops the build, naming the known ones."""
    names = [n.strip() for n in os.environ.get("STAGEGRAD_DOCS_SKIP", "").split(",") if n.strip()]
    known = [Path(f).stem for f in (*STAGE_RUNS, *TOOL_RUNS)]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"stagegrad docs --skip: no table named {', '.join(unknown)} (the tables: "
                         f"{', '.join(known)})")
    return {f"{n}.md" for n in names}


def ensure_measurements(gen):
    """Stage 1's views table, stage 3's GEMM ladder, SIMD-path and profile tables, stage 4's
    devices table and the distributed training table: measured here when absent, or a note
    that the stage does not import where the site was built, or that the build skipped it.
    Stage 3's real-model and convolution-ladder tables come from the journey's folder, or a
    note says so."""
    skip = skipped()
    for name in skip:
        if not (gen / name).exists():
            command = f"stagegrad {STAGE_RUNS[name][1][0]}" if name in STAGE_RUNS else f"python {TOOL_RUNS[name][1][0]}"
            (gen / name).write_text(f"*Not in this build: the site was built with `stagegrad docs --skip "
                                    f"{Path(name).stem}`; `{command}` measures this table.*\n")
    failed = {}
    for pkg in dict.fromkeys(pkg for pkg, _ in (*STAGE_RUNS.values(), *TOOL_RUNS.values())):
        try:
            importlib.import_module(pkg)
        except ImportError as e:
            failed[pkg] = str(e)
    for name, (pkg, cmd) in STAGE_RUNS.items():
        if (gen / name).exists():
            continue
        if pkg not in failed:
            subprocess.run([sys.executable, "-m", "stagegrad", *cmd, "--out", str(gen)], cwd=ROOT, check=True)
        else:
            (gen / name).write_text(f"*Not measured: {NOT_HERE[pkg]} ({failed[pkg]}).*\n")
    for name, (pkg, cmd) in TOOL_RUNS.items():
        if (gen / name).exists():
            continue
        if pkg in failed:
            (gen / name).write_text(f"*Not measured: {pkg} does not import here ({failed[pkg]}).*\n")
            continue
        printed = subprocess.run([sys.executable, *cmd], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout
        table = [line for line in printed.splitlines() if not line.startswith("#")]
        (gen / name).write_text("\n".join(table).strip() + "\n")
    for name, command in JOURNEY_TABLES.items():
        if not (gen / name).exists():
            (gen / name).write_text(f"*Not in this build: `./dev journey` measures this table (as "
                                    f"`{command}` does alone) and `stagegrad docs --from out/journey` "
                                    "builds the site with it.*\n")


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
    measured = set(_packages(report))
    lines = ["| stage | what it rewrites | status here |", "|---|---|---|"]
    for number, pkg in STAGES.items():
        title, rewrites, declared = _chapter_summary(number)
        status = stage_status(number)
        if status == "ready":
            status = (declared + "; " if declared else "") + (
                "measured in this report" if pkg in measured else "not in this report")
        lines.append(f"| [stage {number}: {title}](stage{number}.md) | {rewrites} | {status} |")
    return "\n".join(lines)


def write_fragments(gen, report):
    (gen / "machine.md").write_text(R.machine_summary(report) + "\n")
    (gen / "headline.md").write_text(R.headline(report) + "\n")
    (gen / "stages.md").write_text(stages_table(report) + "\n")
    (gen / "table.md").write_text(R.table(report) + "\n")
    kind = "a quick run (smallest sizes, short timing)" if report["quick"] else "a full run"
    (gen / "provenance.md").write_text(
        f"Generated by `stagegrad journey` ({kind}) on {report['created']}, per-cell budget "
        f"{report['budget_s']:g} s. Rebuild the site to measure your own machine.\n")
    peers = [i["name"] for i in report["implementations"] if i["kind"] == "peer"]
    packages = _packages(report)
    for k, pkg in enumerate(packages):  # each stage beside the one before it (all its GEMMs)
        near = packages[max(0, k - 1):k + 1]
        shown = [i["name"] for i in report["implementations"] if i.get("package", i["name"]) in near]
        (gen / f"results_{pkg}.md").write_text(R.table(report, impls=shown + peers) + "\n")
    (gen / "primitives.md").write_text(primitives_table() + "\n")
    (gen / "coverage.md").write_text(coverage.markdown() + "\n")
    introspection_fragments(gen)
    onnx_fragment(gen)


def _packages(report):
    """The stage packages measured, in order (a stage with two GEMMs counts once)."""
    return list(dict.fromkeys(i.get("package", i["name"]) for i in report["implementations"]
                              if i["kind"] == "stage"))


def _builder_inited(app):
    gen = Path(app.srcdir) / GENERATED
    gen.mkdir(exist_ok=True)
    _REPORT["report"] = report = ensure_report(gen)
    ensure_measurements(gen)
    write_fragments(gen, report)


def _source_read(app, docname, source):
    m = re.fullmatch(r"stage(\d)", docname)
    report = _REPORT.get("report")
    if m and m.group(1) in STAGES and stage_status(m.group(1)) in ("planned", "in progress"):
        title, _, rest = source[0].partition("\n")
        source[0] = (f"{title}\n\n```{{note}}\nThis stage is {stage_status(m.group(1))}: this chapter "
                     "describes what it will do, and has no measurements yet.\n```\n{rest}")
        return
    if not m or report is None or STAGES.get(m.group(1)) not in _packages(report):
        return
    name = STAGES[m.group(1)]
    source[0] += f"""

## Measured by the journey report

This stage next to the one before it and the peers, from the report the site was built
with (see [the journey](journey.md) for every stage and the plots):

```{{include}} {GENERATED}/results_{name}.md
```

```{{include}} {GENERATED}/provenance.md
```
"""


def setup(app):
    app.connect("builder-inited", _builder_inited)
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
