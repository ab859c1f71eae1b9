"""``stagegrad docs``: build the documentation site with warnings as errors.

The site shows one reference run of ``stagegrad results`` (``docs/_ext/stagegrad_docs.py``):
by default the newest committed under ``docs/results/``, so the build measures nothing.
``--from DIR`` shows the run in DIR (``stagegrad results --out DIR``), and ``--measure``
first measures a quick one on this machine; either way every page with tables says that
they are not the reference run's.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def add_arguments(p):
    p.add_argument("--out", default=str(DOCS / "_build" / "html"),
                   help="where the HTML goes (default docs/_build/html)")
    p.add_argument("--from", dest="source", default=None, metavar="DIR",
                   help="show the run in DIR, from `stagegrad results --out DIR` (default: the newest "
                        "committed run under docs/results)")
    p.add_argument("--measure", action="store_true",
                   help="first measure a quick run on this machine (`stagegrad results --quick`) and show it")


def run(args):
    if not (DOCS / "conf.py").exists():
        raise FileNotFoundError(f"{DOCS / 'conf.py'} not found: build the docs from a source checkout")
    env = dict(os.environ)
    env.pop("STAGEGRAD_DOCS_RUN", None)
    if args.source or args.measure:
        shown = DOCS / "_generated" / "run"  # inside the site's tree, where Sphinx finds its figures
        shutil.rmtree(shown, ignore_errors=True)
        if args.measure:
            if subprocess.run([sys.executable, "-m", "stagegrad", "results", "--quick", "--out", str(shown)],
                              cwd=ROOT, check=False).returncode != 0:
                raise RuntimeError(f"the quick run failed: {shown / 'README.md'} says which step")
        else:
            if not (Path(args.source) / "journey.json").exists():
                raise FileNotFoundError(f"{args.source}: no journey.json; run `stagegrad results --out "
                                        f"{args.source}` first")
            shutil.copytree(args.source, shown)
        env["STAGEGRAD_DOCS_RUN"] = str(shown)  # read by docs/_ext/stagegrad_docs.py
    out = Path(args.out)
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
           str(DOCS), str(out), "-d", str(out.parent / ".doctrees")]
    print("building the site: " + " ".join(cmd), file=sys.stderr)
    if subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode != 0:
        raise RuntimeError("the documentation build failed (warnings are errors; see above)")
    print(f"site written to {out / 'index.html'}")
