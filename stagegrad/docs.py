"""``stagegrad docs``: build the documentation site with warnings as errors.

The stage chapters show the journey report's table and figures, which the build reads
from ``docs/_generated/``. By default this command first measures a quick journey into
it (on one thread, as the journey's default), so the site shows numbers from the machine
that built it and the build stays fast, and its landing page says that they come from a
quick run; ``--from DIR`` takes a report already written by ``stagegrad journey --out DIR``
(a full run) instead. ``--skip`` leaves some of the stages' own tables unmeasured (each
page then names the command that measures it), for a build that checks the site rather
than the machine.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REPORT_FILES = ("journey.json", "journey.md", "ladder.png", "roofline.png")
# the stages' own measurements (stage 1's views, stage 3's GEMM and convolution ladders, SIMD
# paths, profile and real models, stage 4's devices, distributed training, what the machine does,
# serving): copied from --from DIR when there, else the build measures quick ones (the real models
# and the convolution ladder only come from a journey's folder)
MEASUREMENT_FILES = ("stage1_views.md", "gemm_ladder.json", "gemm_ladder.md", "gemm_ladder.png",
                     "conv_ladder.json", "conv_ladder.md", "simd.json", "simd.md", "profile.json",
                     "profile.md", "models.json", "models.md", "devices.json", "devices.md",
                     "distributed.json", "distributed.md", "systems.json", "systems.md",
                     "systems_threads.png", "loadtest.json", "loadtest.md")


def add_arguments(p):
    p.add_argument("--out", default=str(DOCS / "_build" / "html"),
                   help="where the HTML goes (default docs/_build/html)")
    p.add_argument("--from", dest="source", default=None, metavar="DIR",
                   help="use the journey report in DIR (from `stagegrad journey --out DIR`) "
                        "(default: measure a quick one)")
    p.add_argument("--stages", default=None,
                   help="comma-separated stages for the quick journey (default: every installed stage)")
    p.add_argument("--skip", default="", metavar="TABLES",
                   help="comma-separated tables of the stages' own measurements not to measure, by "
                        "file name (devices, distributed, systems, loadtest, gemm_ladder, simd, profile, "
                        "stage1_views): each page says which command measures it (default: none)")


def run(args):
    if not (DOCS / "conf.py").exists():
        raise FileNotFoundError(f"{DOCS / 'conf.py'} not found: build the docs from a source checkout")
    gen = DOCS / "_generated"
    gen.mkdir(exist_ok=True)
    for f in MEASUREMENT_FILES:  # never a stale measurement beside a fresh journey
        (gen / f).unlink(missing_ok=True)
    if args.source:
        src = Path(args.source)
        missing = [f for f in REPORT_FILES if not (src / f).exists()]
        if missing:
            raise FileNotFoundError(f"{src}: no {', '.join(missing)}; "
                                    f"run `stagegrad journey --out {src}` first")
        for f in REPORT_FILES + tuple(f for f in MEASUREMENT_FILES if (src / f).exists()):
            shutil.copy2(src / f, gen / f)
    else:
        from . import load_stage
        from .journey import QUICK_BUDGET, measure_all, write
        from .measure import set_threads
        set_threads(1)  # as `stagegrad journey` by default: every library on one thread
        stages = [load_stage(s.strip()).__name__ for s in args.stages.split(",") if s.strip()] \
            if args.stages else None
        write(measure_all(stages=stages, quick=True, budget=QUICK_BUDGET, threads=1), gen)
    out = Path(args.out)
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
           str(DOCS), str(out), "-d", str(out.parent / ".doctrees")]
    print("building the site: " + " ".join(cmd), file=sys.stderr)
    env = dict(os.environ, STAGEGRAD_DOCS_SKIP=args.skip)  # read by docs/_ext/stagegrad_docs.py
    if subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode != 0:
        raise RuntimeError("the documentation build failed (warnings are errors; see above)")
    print(f"site written to {out / 'index.html'}")
