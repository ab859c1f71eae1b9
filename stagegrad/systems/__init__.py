"""``stagegrad systems``: what the hardware and the operating system do to the stages,
measured on this machine.

Each experiment is one function that returns a section: a title, the paragraph that
explains it (the first paragraph of its docstring), and a table of what this run measured,
or the reason this machine cannot give it (no hardware counters in a virtual machine, no
RAPL, no C compiler). Nothing in the report is typed by hand. ``--quick`` shrinks every size
and repeat count, for the docs build and the tests. Writes ``systems.json``, ``systems.md``
and ``systems_threads.png`` (the thread sweep) to ``--out``.

Everything runs on one thread except the thread sweep; the page-fault counts and the
compiler-flag builds run in child processes, so that one experiment's memory or
floating-point mode cannot leak into the next.
"""
import platform
import sys
import time
from pathlib import Path

from .. import machine
from ..formatting import write_tables
from .common import Unavailable
from .compiler import compiler_flags, denormals
from .hardware import counters, energy
from .memory import first_touch, page_faults
from .peak import peak
from .scaling import threads

EXPERIMENTS = {"page_faults": page_faults, "first_touch": first_touch,
               "threads": threads, "compiler_flags": compiler_flags, "denormals": denormals,
               "counters": counters, "energy": energy, "peak": peak}


def add_arguments(p):
    """The command's options."""
    p.add_argument("--out", default="out/systems", help="output folder")
    p.add_argument("--quick", action="store_true",
                   help="small sizes and few repeats (a few seconds per experiment)")
    p.add_argument("--only", default=None,
                   help="comma-separated experiments (default: all of " + ", ".join(EXPERIMENTS) + ")")


def run(args):
    """Run the experiments asked for and write the report."""
    names = [n.strip() for n in args.only.split(",")] if args.only else list(EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise SystemExit(f"systems: unknown experiment(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(EXPERIMENTS)}")
    report = measure(names, quick=args.quick, out=Path(args.out))
    paths = write(report, args.out)
    print(f"wrote {', '.join(str(p) for p in paths)}")


def measure(names, quick=False, out=None, stream=sys.stderr):
    """Run the experiments ``names`` (keys of EXPERIMENTS): the report, a dict."""
    from ..measure import set_threads
    set_threads(1)
    sections = []
    for name in names:
        print(f"systems: {name}...", file=stream, flush=True)
        fn = EXPERIMENTS[name]
        section = {"name": name, "title": fn.title, "about": _about(fn)}
        t0 = time.perf_counter()
        try:
            section.update(fn(quick, out))
        except Unavailable as e:
            section["unavailable"] = str(e)
        section["seconds"] = round(time.perf_counter() - t0, 1)
        sections.append(section)
    return {"machine": machine.describe(), "kernel": platform.release(), "quick": quick, "sections": sections}


def _about(fn):
    """An experiment's explanation: the first paragraph of its docstring, on one line."""
    return " ".join(fn.__doc__.split("\n\n")[0].split())


# ---------------------------------------------------------------- the report

def markdown(report):
    """The report as Markdown: the machine, then a section per experiment."""
    m = report["machine"]
    lines = [f"Measured on {m['cpu_model']} ({m['cores']['usable']} usable cores, {m['isa']}), Linux "
             f"{report['kernel']}, Python {m['python']}{', a quick run' if report['quick'] else ''}, by "
             f"`stagegrad systems{' --quick' if report['quick'] else ''}`.", ""]
    for s in report["sections"]:
        lines += [f"### {s['title']}", "", s["about"], ""]
        if "unavailable" in s:
            lines += [f"*Not measured here: {s['unavailable']}.*", ""]
            continue
        lines += _table(s["head"], s["rows"]) + [""]
        if s.get("note"):
            lines += [f"*{s['note']}.*", ""]
        if s.get("figure"):
            lines += [f"![{s['title']}]({s['figure']})", ""]
    return "\n".join(lines)


def _table(head, rows):
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"] + \
           ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def write(report, out):
    """``systems.json`` and ``systems.md`` in ``out`` (the plot is already there): their paths."""
    return write_tables(out, "systems", report, markdown(report))
