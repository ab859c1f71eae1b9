"""The chapters' measured tables, written into the chapters from a committed reference run.

A chapter marks where a table goes with a pair of comments, so that a reader on a Git host,
who builds nothing, sees the table itself:

    <!-- results: models -->
    (the table, written by ``stagegrad results --chapters``)
    <!-- end results -->

Each block's name says what it shows (``BLOCKS``): a file of the run (``gemm_ladder``: its
``gemm_ladder.md``, and its figure when the run has one), one stage beside the stage before
it and the peers (``journey/stage2``, from ``journey.json``), or ``standing`` (the closing
chapter's table). ``stagegrad results --chapters`` writes every block from the newest run
under ``docs/results/``; ``stale`` lists the blocks a run would change, and the docs build
renders them from the run it was given. ``unbacked`` lists each measured figure the prose
quotes (a ratio, a rate, a time, a share) that no committed results file contains: prose
quotes its tables, never a number of its own.
"""
import json
import os
import re
from pathlib import Path

from . import STAGES
from . import journey_report as R

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
HARDWARE = DOCS / "hardware"  # runs on machines this one is not (the GPU's), committed as measured

BLOCK = re.compile(r"^<!-- results: (?P<name>\S+) -->\n(?P<body>.*?)^<!-- end results -->$", re.M | re.S)
# the blocks that show a file of the run as it is: the name, its table, its figure if any
FILES = {"stage1_views": ("stage1_views.md", None), "matmul_loop_order": ("matmul_loop_order.md", None),
         "simd": ("simd.md", None), "gemm_ladder": ("gemm_ladder.md", "gemm_ladder.png"),
         "gemm_sweep": ("gemm_sweep.md", "gemm_sweep.png"), "profile": ("profile.md", None),
         "conv_ladder": ("conv_ladder.md", None), "models": ("models.md", None),
         "devices": ("devices.md", None), "systems": ("systems.md", "systems_threads.png"),
         "distributed": ("distributed.md", None), "loadtest": ("loadtest.md", None)}
# the GPU's tables: committed from the GPU machine's own run (docs/hardware/)
GPU_FILES = {"cuda_ladder": "cuda_ladder.md", "gpu_steps": "zoo_steps.md"}
# the closing chapter's rows: the journey's workloads that say most about a stage
STANDING = ("overhead", "add", "matmul", "mlp_step", "conv", "mnist")

# a measured figure in prose: a ratio, a rate, a time or a share
FIGURE = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(?:x|×|%|\s?(?:[GMT]FLOP/s|GB/s|µs|ms|ns))(?![\w/])")
_FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
_NOT_PROSE = (_FENCE, re.compile(r"`[^`\n]*`"), re.compile(r"<!--.*?-->", re.S), re.compile(r"\]\([^)]*\)"))


def runs():
    """The committed reference runs, oldest first (by the date their folder ends with)."""
    found = [p for p in RESULTS.glob("*") if (p / "README.md").exists()] if RESULTS.is_dir() else []
    return sorted(found, key=lambda p: (p.name[-10:], p.name))


def newest():
    """The newest committed run's folder; an error when there is none."""
    found = runs()
    if not found:
        raise FileNotFoundError(f"no reference run under {RESULTS}: `stagegrad results` measures one")
    return found[-1]


def _gpu_run():
    found = sorted(HARDWARE.glob("cuda-*"), key=lambda p: p.name[-10:]) if HARDWARE.is_dir() else []
    return found[-1] if found else None


def _where(run, page):
    """The run's folder as a path from ``page``, for its figures."""
    return Path(os.path.relpath(Path(run).resolve(), page.parent.resolve())).as_posix()


def _machine(run):
    """The machine a run was measured on, in a few words."""
    path = Path(run) / "machine.json"
    if not path.exists():
        return ""
    m = json.loads(path.read_text())
    return f"{m['cpu_model']}, {m['cores']['usable']} cores, {'/'.join(m['isa'][-3:]) or 'no SIMD listed'}"


def packages_of(report):
    """The stage packages a journey report measured, in order (a stage with two GEMMs counts once)."""
    return list(dict.fromkeys(i.get("package", i["name"]) for i in report["implementations"]
                              if i["kind"] == "stage"))


def _journey(run, number):
    """Stage ``number`` beside the stage before it and the peers, from the run's journey."""
    report = json.loads((Path(run) / "journey.json").read_text())
    packages = packages_of(report)
    pkg = STAGES[str(number)]
    if pkg not in packages:
        return f"*The run `{Path(run).name}` did not measure {pkg}.*"
    k = packages.index(pkg)
    near = packages[max(0, k - 1):k + 1]
    shown = [i["name"] for i in report["implementations"] if i.get("package", i["name"]) in near]
    peers = [i["name"] for i in report["implementations"] if i["kind"] == "peer"]
    return R.table(report, impls=shown + peers)


def _standing(run):
    """Every stage and the peers on the workloads that say most about a stage."""
    report = json.loads((Path(run) / "journey.json").read_text())
    return R.table(report, workloads=STANDING)


def render(name, run, page):
    """The body of the block ``name`` in ``page``, from the run in folder ``run``."""
    run = Path(run)
    if name in GPU_FILES:
        gpu = _gpu_run()
        if gpu is None:
            return "*No GPU run is committed under `docs/hardware/`.*\n"
        return (f"*Measured on the GPU machine of `docs/hardware/{gpu.name}/` "
                f"(`{GPU_FILES[name]}`; `machine.txt` there describes it).*\n\n"
                + (gpu / GPU_FILES[name]).read_text().strip() + "\n")
    source = "journey.json" if name.startswith("journey/") or name == "standing" else FILES[name][0]
    head = (f"*Reference run `{run.name}` ({_machine(run)}): `docs/results/{run.name}/{source}`, "
            f"measured by `stagegrad results`.*\n\n")
    if name.startswith("journey/stage"):
        return head + _journey(run, name[len("journey/stage"):]).strip() + "\n"
    if name == "standing":
        return head + _standing(run).strip() + "\n"
    table, figure = FILES[name]
    if not (run / table).exists():
        return head + f"*This run has no `{table}`.*\n"
    where = _where(run, page)
    # the table's own figures, named from its folder, named from the page instead
    text = re.sub(r"\]\(([^)/]+\.png)\)", lambda m: f"]({where}/{m[1]})" if (run / m[1]).exists() else m[0],
                  (run / table).read_text().strip())
    body = head + text + "\n"
    if figure and (run / figure).exists() and f"{where}/{figure}" not in text:
        body += f"\n![{name.replace('_', ' ')}]({where}/{figure})\n"
    return body


def known(name):
    """Whether ``name`` is a block this module can write."""
    return (name in FILES or name in GPU_FILES or name == "standing"
            or (name.startswith("journey/stage") and name[len("journey/stage"):] in STAGES))


def pages():
    """The chapters: every Markdown page of the site outside the reference and its results."""
    skip = ("_build", "_generated", "results", "hardware", "api")
    return sorted(p for p in DOCS.rglob("*.md") if not set(p.relative_to(DOCS).parts) & set(skip))


def filled(text, run, page):
    """``text`` with each block's body written from ``run``."""
    def one(m):
        if not known(m["name"]):
            raise ValueError(f"{page.name}: no results block named {m['name']!r}")
        return f"<!-- results: {m['name']} -->\n{render(m['name'], run, page)}<!-- end results -->"
    return BLOCK.sub(one, text)


def write(run=None):
    """Write every chapter's blocks from ``run`` (default: the newest committed run); the
    pages changed."""
    run = Path(run) if run else newest()
    changed = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = filled(text, run, page)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def stale(run=None):
    """``[(page, block)]``: the blocks whose text differs from what ``run`` (default: the
    newest committed run) writes."""
    run = Path(run) if run else newest()
    out = []
    for page in pages():
        for m in BLOCK.finditer(page.read_text(encoding="utf-8")):
            if known(m["name"]) and m["body"] != render(m["name"], run, page):
                out.append((page.name, m["name"]))
    return out


def prose(text):
    """``text`` without its results blocks, code, comments and link targets: what the
    chapter says in its own words."""
    text = BLOCK.sub("", text)
    for pattern in _NOT_PROSE:
        text = pattern.sub(" ", text)
    return text


def _committed_text():
    files = [p for root in (RESULTS, HARDWARE) if root.is_dir() for p in root.rglob("*")
             if p.suffix in (".md", ".txt") and "logs" not in p.parts]
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)


def unbacked(paths=None):
    """``[(page, figure)]``: each measured figure the prose of ``paths`` (default: every
    chapter) quotes that no committed results file contains."""
    committed = _committed_text()
    numbers = set(re.findall(r"\d+(?:[.,]\d+)*", committed))
    out = []
    for page in paths or pages():
        for m in FIGURE.finditer(prose(page.read_text(encoding="utf-8"))):
            if m[1] not in numbers:
                out.append((page.name, m[0]))
    return out
