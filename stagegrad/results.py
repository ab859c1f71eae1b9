"""``stagegrad results``: the reference run the documentation quotes, measured on this machine.

One command runs every measurement the chapters show, each as its own command in its own
process (so each sets its threads before its libraries load): the full journey (which also
measures stage 4's devices and stage 3's convolution ladder on one thread), the zoo's models
on one thread and on every core, the GEMM ladder with a size sweep from L1 to past L3, the
SIMD paths, the step profile, the systems chapter, distributed training, the deploy load
test with ``--compare``, stage 1's views and stage 2's loop orders. Everything goes into
one folder, ``docs/results/<machine>-<date>/`` by default, beside a ``README.md`` that
names the machine, the commit, and each step's command, wall time and outcome, and the
machine's description (``machine.json``). Each step's output is kept in ``logs/`` there
(not committed).

A failed step is reported in the README and the run goes on; the command then exits with
an error. ``--quick`` runs each step's quick form (for tests: the numbers are not worth
quoting); ``--only`` picks steps. The chapters' tables are then written from the newest
run by ``stagegrad results --chapters`` (``chapters.py``).
"""
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import machine
from .formatting import markdown_table
from .progress import seconds

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"


@dataclass(frozen=True)
class Step:
    """One measurement of the run: a ``stagegrad`` command (or, where ``script`` is set, a
    script in ``tools/`` whose Markdown output is kept in ``keep``), full and quick."""
    name: str
    full: tuple
    quick: tuple
    script: str = ""
    keep: str = ""


# The GEMM sweep's sizes: A, B and C fit in L1 at the smallest, and spill a 105 MiB L3 at the
# largest (3 x 3072² floats are 108 MiB).
SWEEP = "32,64,128,256,512,1024,2048,3072"
STEPS = (
    Step("journey", ("journey",), ("journey", "--quick")),
    Step("models", ("models",), ("models", "--quick", "--models", "cnn", "--threads", "1")),
    Step("gemm-ladder", ("gemm-ladder", "--size", "1024", "--sizes", SWEEP),
         ("gemm-ladder", "--size", "64", "--budget", "0.1", "--sizes", "16,32", "--sweep-budget", "0.1")),
    Step("simd-paths", ("simd-paths",), ("simd-paths", "--n", "5000", "--side", "32")),
    Step("profile", ("profile",), ("profile", "--steps", "5")),
    Step("systems", ("systems",), ("systems", "--quick")),
    Step("distributed", ("distributed",), ("distributed", "--quick")),
    Step("loadtest", ("loadtest", "--compare"), ("loadtest", "--compare", "--quick")),
    Step("stage1-views", ("--only", "movement"), ("--quick", "--only", "movement"),
         script="tools/measure_stage1.py", keep="stage1_views.md"),
    Step("matmul-loop-order", (), ("--sizes", "32"), script="tools/matmul_loop_order.py",
         keep="matmul_loop_order.md"),
)


def add_arguments(p):
    """The command's options."""
    p.add_argument("--out", default=None,
                   help="the run's folder (default docs/results/<machine>-<date>)")
    p.add_argument("--quick", action="store_true",
                   help="each step's quick form: a check that everything runs, not numbers to quote")
    p.add_argument("--only", default=None,
                   help=f"comma-separated steps (default: all of {', '.join(s.name for s in STEPS)})")
    p.add_argument("--chapters", action="store_true",
                   help="measure nothing: write the chapters' results tables from the newest run under "
                        "docs/results (or --out)")


def machine_name():
    """A short name for this machine: the CPU's family and the usable cores, e.g. ``xeon-2core``."""
    words = re.sub(r"\((R|TM|C)\)|\bCPU\b|\bProcessor\b|@.*|\b(Intel|AMD|Core)\b", " ",
                   machine.cpu_model(), flags=re.I).split()
    family = "-".join(w.lower() for w in words[:2]) or "cpu"
    return f"{re.sub(r'[^a-z0-9-]', '', family)}-{machine.cores()['usable']}core"


def _commit():
    """The checkout's commit, marked when its tree has changes; None outside a checkout."""
    def git(*argv):
        r = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, check=False)
        return r.stdout.strip() if r.returncode == 0 else None
    head = git("rev-parse", "--short", "HEAD")
    return head and head + (" (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no")
                            else "")


def _command(step, quick, out):
    """The argv that runs ``step`` into ``out``."""
    argv = step.quick if quick else step.full
    if step.script:
        return [sys.executable, str(ROOT / step.script), *argv]
    return [sys.executable, "-m", "stagegrad", *argv, "--out", str(out)]


def _shown(argv):
    """A command as the README shows it: the program's name, not the interpreter's path."""
    if argv[1] == "-m":
        return " ".join(argv[2:-2] + ["--out", "."])
    return " ".join(["python", str(Path(argv[1]).relative_to(ROOT)), *argv[2:]])


def run_step(step, out, quick):
    """Run ``step`` into ``out``, its output echoed to stderr as it comes and kept in
    ``logs/``: the step's row for the README."""
    argv = _command(step, quick, out)
    log = out / "logs" / f"{step.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "wb") as kept:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        printed = bytearray()
        while chunk := proc.stdout.read1(4096):
            kept.write(chunk)
            sys.stderr.buffer.write(chunk)
            sys.stderr.flush()
            if step.keep:
                printed += chunk
        code = proc.wait()
    wall = time.perf_counter() - start
    if step.keep and code == 0:  # the script's table: what it printed, less its headings
        text = printed.decode()
        table = [line for line in text.splitlines() if not line.startswith("#")]
        (out / step.keep).write_text("\n".join(table).strip() + "\n")
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] if code else []
    return {"step": step.name, "command": _shown(argv), "seconds": round(wall, 1),
            "status": "ok" if code == 0 else f"failed (exit {code}): {tail[0] if tail else ''}"}


def readme(name, described, commit, rows, quick):
    """The run's ``README.md``: what was measured, where, when, and how each step went."""
    cores = described["cores"]
    lines = [f"# Reference run `{name}`", "",
             ("A quick run (each step's `--quick` form): a check that everything runs, not numbers to quote."
              if quick else "The numbers the chapters quote: `stagegrad results` measured all of them in one "
              "run, on this machine, one step after another with nothing else running."), "",
             f"- **Machine:** {described['cpu_model']}, {cores['usable']} usable core(s) of {cores['logical']}; "
             f"SIMD: {' '.join(described['isa']) or 'unknown'}; {described['platform']}.",
             f"- **Software:** Python {described['python']}, NumPy {described['numpy']}, "
             f"PyTorch {described['torch']}.",
             f"- **Commit:** {commit or 'not a git checkout'}.",
             f"- **OpenBLAS pins:** {_pins(described)}.",
             f"- **Measured:** {time.strftime('%Y-%m-%d %H:%M %Z')}.", "",
             "Each step ran in its own process; its output is in `logs/` where the run was made "
             "(not committed). Thread counts are each command's own: the journey, the convolution "
             "ladder and the profile on one thread for every library, the models on one thread and "
             "on every core, both sides on the same count.", "",
             *markdown_table(["step", "command", "wall", "outcome"],
                             [[r["step"], f"`{r['command']}`", seconds(r["seconds"]), r["status"]] for r in rows])]
    return "\n".join(lines) + "\n"


def _pins(described):
    unset = described.get("openblas_unpinned")
    return f"unset for this run ({unset})" if unset else "none set"


def chosen(only):
    """The steps ``--only`` names, in the run's order; an error naming the known ones."""
    if not only:
        return list(STEPS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {s.name: s for s in STEPS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"no step named {', '.join(unknown)} (the steps: {', '.join(known)})")
    return [s for s in STEPS if s.name in names]


def run(args):
    """Measure every step into the run's folder, write its README and machine description;
    an error when a step failed (after writing both). ``--chapters`` writes the chapters'
    tables instead."""
    if args.chapters:
        from . import chapters
        for path in chapters.write(Path(args.out) if args.out else None):
            print(f"wrote {path}")
        return
    steps = chosen(args.only)
    name = f"{machine_name()}-{time.strftime('%Y-%m-%d')}"
    out = Path(args.out) if args.out else RESULTS / name
    out.mkdir(parents=True, exist_ok=True)
    described = machine.describe()
    (out / "machine.json").write_text(json.dumps(described, indent=1) + "\n")
    rows = []
    for k, step in enumerate(steps, 1):
        print(f"results [{k}/{len(steps)}] {step.name}", file=sys.stderr, flush=True)
        rows.append(run_step(step, out, args.quick))
        print(f"results [{k}/{len(steps)}] {step.name}: {rows[-1]['status']}, {seconds(rows[-1]['seconds'])}",
              file=sys.stderr, flush=True)
        (out / "README.md").write_text(readme(out.name, described, _commit(), rows, args.quick))
    print(f"wrote {out}")
    failed = [r["step"] for r in rows if r["status"] != "ok"]
    if failed:
        raise RuntimeError(f"{len(failed)} step(s) failed: {', '.join(failed)} (see {out / 'README.md'})")
