"""Check that stage 2's kernels never touch the Python interpreter.

Runs ``cython -a`` on every stage-2 module (with the directives setup.py uses) and reads
the annotation report: each source line gets a score, the number of Python C-API calls
Cython generated for it (the yellow lines of the HTML report). Kernel bodies -- functions
declared ``nogil`` and ``with nogil:`` blocks -- must score 0. Prints a summary per module
and every offending line; exits 1 if there is one.

    .venv/bin/python tools/check_cython_annotation.py [--html DIR]
"""
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / "stage2_cython"
DIRECTIVES = "boundscheck=False,wraparound=False,initializedcheck=False,cdivision=True"
LINE = re.compile(r'<pre class="cython line score-(\d+)"[^>]*>.*?<span class="">(\d+)</span>')


def render_templates():
    """Each template rendered where the build renders it (setup.py's GENERATED folder)."""
    from Cython import Tempita
    rendered = []
    for tp in STAGE.glob("*.pyx.tp"):
        pyx = ROOT / "build" / "cython" / STAGE.name / tp.with_suffix("").name
        if not pyx.exists() or pyx.stat().st_mtime < tp.stat().st_mtime:
            pyx.parent.mkdir(parents=True, exist_ok=True)
            pyx.write_text("# Generated from " + tp.name + ": edit that file.\n"
                           + Tempita.sub(tp.read_text(encoding="utf-8")), encoding="utf-8")
        rendered.append(pyx)
    return rendered


def kernel_lines(source):
    """Line numbers (1-based) of bodies of nogil functions and ``with nogil:`` blocks."""
    lines = source.splitlines()
    found = set()
    i = 0
    while i < len(lines):
        text = lines[i]
        stripped = text.strip()
        header_end = None
        if stripped.startswith(("cdef ", "cpdef ")) and "(" in stripped:
            j = i  # a signature may wrap: find the line ending it
            while not lines[j].rstrip().endswith(":") and j + 1 < len(lines):
                j += 1
            if "nogil" in " ".join(lines[i:j + 1]):
                header_end = j
        elif stripped == "with nogil:":
            header_end = i
        if header_end is None:
            i += 1
            continue
        indent = len(text) - len(text.lstrip())
        k = header_end + 1
        while k < len(lines) and (not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) > indent):
            if lines[k].strip() and not lines[k].strip().startswith("#"):
                found.add(k + 1)
            k += 1
        i = k
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--html", help="keep the annotated HTML reports in this folder")
    args = p.parse_args()
    rendered = render_templates()
    out = Path(args.html) if args.html else Path(tempfile.mkdtemp(prefix="stage2-annotate-"))
    out.mkdir(parents=True, exist_ok=True)
    bad = 0
    for pyx in sorted(STAGE.glob("*.pyx")) + rendered:
        c_file = out / (pyx.stem + ".c")
        subprocess.run([sys.executable, "-m", "cython", "-a", "-3", "--directive", DIRECTIVES,
                        "-I", str(ROOT), str(pyx), "-o", str(c_file)], check=True, cwd=ROOT)
        html = c_file.with_suffix(".html").read_text(encoding="utf-8")
        scores = {int(n): int(s) for s, n in LINE.findall(html)}
        kernels = kernel_lines(pyx.read_text(encoding="utf-8"))
        source = pyx.read_text(encoding="utf-8").splitlines()
        offending = sorted(n for n in kernels if scores.get(n, 0) > 0)
        python_lines = sum(1 for s in scores.values() if s > 0)
        print(f"{pyx.name:20s} kernel lines {len(kernels):4d}, with Python interaction {len(offending)}"
              f"   (lines outside kernels touching Python: {python_lines - len(offending)})")
        for n in offending:
            print(f"    {pyx.name}:{n}: score {scores[n]}: {source[n - 1].strip()}")
        bad += len(offending)
    print(f"annotated reports: {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
