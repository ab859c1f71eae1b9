"""The documentation's cross-references hold: every relative link reaches a file (and its
``#anchor`` a heading of that page), every ``{include}``, ``{literalinclude}`` and
``{image}`` a file, every literalinclude marker its text in that file, every ``:pyobject:``
a definition, and every results block (``<!-- results: NAME -->`` ... ``<!-- end results
-->``) is closed.

Plain text checks, with no Sphinx and no stage imported, so that a section moved to another
chapter or a marker dropped from a source file fails here in a second rather than as a
warning of the site's build. ``_generated/`` targets are exempt: the build writes them.
"""
import ast
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SKIPPED = {"_build", "_generated"}  # folders of pages that the build makes
GENERATED = "_generated"  # targets the build writes, so absent from a checkout
# MyST anchors headings down to this level (conf.py's myst_heading_anchors)
ANCHOR_LEVELS = int(re.search(r"^myst_heading_anchors\s*=\s*(\d+)", (DOCS / "conf.py").read_text(),
                              re.M).group(1))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
TARGET = re.compile(r"^\(([^)\s]+)\)=\s*$")  # an explicit MyST target, (name)=
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
OPTION = re.compile(r"^:([\w-]+):\s*(.*?)\s*$")
RESULTS_OPEN = re.compile(r"^<!-- results: ([a-z0-9_]+(?:/[a-z0-9_]+)?) -->$")
RESULTS_END = "<!-- end results -->"
MARKERS = ("start-after", "start-at", "end-before", "end-at")


def pages():
    """Every Markdown page of the docs (not the build's own output), and the README."""
    found = [p for p in DOCS.rglob("*.md") if not SKIPPED & set(p.relative_to(DOCS).parts)]
    return sorted(found) + [ROOT / "README.md"]


def _id(page):
    return str(page.relative_to(ROOT))


@lru_cache(maxsize=None)
def parse(page):
    """(prose, directives, headings) of a page. prose: (line number, paragraph) outside
    fences; directives: (line number, name, argument, options) of each ```{name} fence;
    headings: (level, text) of the ATX headings outside fences, and explicit targets."""
    lines = page.read_text(encoding="utf-8").splitlines()
    prose, directives, headings, para, start = [], [], [], [], 0
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            if para:
                prose.append((start, "\n".join(para)))
                para = []
            mark, info, opened = fence.group(1), fence.group(2).strip(), i + 1
            body = []
            i += 1
            while i < len(lines) and not re.match(rf"^ {{0,3}}{mark[0]}{{{len(mark)},}}\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            directive = re.match(r"^\{([\w-]+)\}\s*(.*)$", info)
            if directive:
                options = {}
                for b in body:
                    option = OPTION.match(b)
                    if not option:
                        break
                    options[option.group(1)] = _unquote(option.group(2))
                directives.append((opened, directive.group(1), directive.group(2).strip(), options))
            i += 1
            continue
        heading, target = HEADING.match(line), TARGET.match(line)
        if heading:
            headings.append((len(heading.group(1)), heading.group(2)))
        elif target:
            headings.append((0, target.group(1)))
        if line.strip():
            if not para:
                start = i + 1
            para.append(line)
        elif para:
            prose.append((start, "\n".join(para)))
            para = []
        i += 1
    if para:
        prose.append((start, "\n".join(para)))
    return prose, directives, headings


def _unquote(value):
    """A directive option's value as MyST reads it: quoted strings unquoted."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def slugify(title):
    """MyST's heading anchor (its GitHub-style slug): the heading's text (a link's text, a
    code span's content) lower-cased, spaces to hyphens, every other non-word character
    dropped."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", title)
    text = CODE_SPAN.sub(r"\2", text)
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", text.strip().lower().replace(" ", "-"))


@lru_cache(maxsize=None)
def anchors(page):
    """The anchors a page offers: its headings' slugs (duplicates suffixed -1, -2, ...), and
    its explicit targets."""
    found = set()
    for level, text in parse(page)[2]:
        if level == 0:
            found.add(text)
            continue
        if level > ANCHOR_LEVELS:
            continue
        slug, base, n = slugify(text), slugify(text), 1
        while slug in found:
            slug, n = f"{base}-{n}", n + 1
        found.add(slug)
    return frozenset(found)


def _resolve(page, target):
    """A directive's or link's path: relative to the page, or to docs/ when it starts with /."""
    return (DOCS / target.lstrip("/")) if target.startswith("/") else (page.parent / target)


def _generated(path):
    return GENERATED in Path(path).parts


@pytest.mark.parametrize("page", pages(), ids=_id)
def test_relative_links_reach_a_file_and_a_heading(page):
    problems = []
    for line, paragraph in parse(page)[0]:
        for url in LINK.findall(CODE_SPAN.sub("", paragraph)):
            if not url or SCHEME.match(url) or _generated(url):
                continue
            path, _, anchor = url.partition("#")
            target = _resolve(page, path) if path else page
            if not target.exists():
                problems.append(f"line {line}: {url}: no file {target.relative_to(ROOT)}")
            elif anchor and target.suffix == ".md" and DOCS in target.resolve().parents:
                if anchor not in anchors(target.resolve()):
                    problems.append(f"line {line}: {url}: no heading of {_id(target.resolve())} has "
                                    f"the anchor #{anchor}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", pages(), ids=_id)
def test_includes_exist_and_their_markers_and_objects_are_there(page):
    problems = []
    for line, name, argument, options in parse(page)[1]:
        if name not in ("include", "literalinclude", "image", "figure") or _generated(argument):
            continue
        target = _resolve(page, argument)
        if not target.is_file():
            problems.append(f"line {line}: {{{name}}} {argument}: no such file")
            continue
        if name == "literalinclude":
            problems += [f"line {line}: {argument}: {p}" for p in _listing_problems(target, options)]
    assert not problems, "\n".join(problems)


def _listing_problems(target, options):
    """What a literalinclude's options would fail on, as Sphinx reads them: the object first,
    then the first line holding the start text, then the end text in the lines after it."""
    lines = target.read_text(encoding="utf-8").splitlines()
    if "pyobject" in options:
        span = _definition(target, options["pyobject"])
        if span is None:
            return [f":pyobject: {options['pyobject']} is no def or class there"]
        lines = lines[span[0] - 1:span[1]]
    start = next((k for k in ("start-after", "start-at") if k in options), None)
    if start:
        at = next((i for i, text in enumerate(lines) if options[start] in text), None)
        if at is None:
            return [f":{start}: {options[start]!r} is not in it"]
        lines = lines[at + 1:] if start == "start-after" else lines[at:]
    end = next((k for k in ("end-before", "end-at") if k in options), None)
    if end:
        first = 1 if end == "end-before" else 0  # Sphinx skips a match on the first line there
        at = next((i for i, text in enumerate(lines) if i >= first and options[end] in text), None)
        if at is None:
            return [f":{end}: {options[end]!r} is not in it" + (f" after :{start}:" if start else "")]
        lines = lines[:at] if end == "end-before" else lines[:at + 1]
    if not any(text.strip() for text in lines):
        return ["the listing its markers select is empty"]
    return []


def _definition(path, dotted):
    """(first, last) line of the def or class ``dotted`` names (``Class.method``) in a Python
    file, or None."""
    try:
        body = ast.parse(path.read_text(encoding="utf-8")).body
    except (SyntaxError, ValueError):
        return None
    node = None
    for part in dotted.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node.lineno, node.end_lineno


@pytest.mark.parametrize("page", pages(), ids=_id)
def test_results_blocks_are_well_formed(page):
    """Each ``<!-- results: NAME -->`` on a line of its own after a blank line, closed by an
    ``<!-- end results -->`` (followed by a blank line) before the next one opens."""
    lines = page.read_text(encoding="utf-8").splitlines()
    problems, open_at = [], None
    for i, line in enumerate(lines):
        text = line.strip()
        if "results" not in text or "<!--" not in text:
            continue
        opening = RESULTS_OPEN.match(text)
        if opening:
            if open_at is not None:
                problems.append(f"line {open_at + 1}: not closed before the block at line {i + 1}")
            if i > 0 and lines[i - 1].strip():
                problems.append(f"line {i + 1}: a results block needs a blank line before it")
            open_at = i
        elif text == RESULTS_END:
            if open_at is None:
                problems.append(f"line {i + 1}: {RESULTS_END} with no block open")
            if i + 1 < len(lines) and lines[i + 1].strip():
                problems.append(f"line {i + 1}: a results block needs a blank line after it")
            open_at = None
        else:
            problems.append(f"line {i + 1}: {text!r} is neither '<!-- results: NAME -->' nor {RESULTS_END!r}")
    if open_at is not None:
        problems.append(f"line {open_at + 1}: never closed")
    assert not problems, "\n".join(problems)
