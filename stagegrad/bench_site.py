"""``stagegrad bench-site``: publish the asv benchmark site so that it works offline.

``asv publish`` writes a page that loads jQuery, Flot and its plugins, stupidtable,
blueimp-md5 and Bootstrap 3 from public CDNs; without internet access it shows only
asv's "Can not determine continental origin of swallow" error. This command runs
``asv publish``, copies each library from the system's installed packages (Debian's
``libjs-*`` and ``node-blueimp-md5``, under /usr/share/javascript) into the site's
``vendor/`` folder, and rewrites the page's references to those copies. A library
that cannot be found locally, or whose installed version the page cannot use, is
reported by name with what the page lacks without it; its tag is removed, so the rest
of the page still works instead of redirecting to the error page.
"""
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_JS = Path("/usr/share/javascript")  # where Debian's libjs-* packages install
VENDOR = "vendor"


@dataclass(frozen=True)
class Library:
    name: str
    url: str  # regular expression matched against the page's CDN address
    package: str | None  # the Debian package holding a local copy; None: none exists
    path: str | None  # the file under SYSTEM_JS
    majors: tuple  # major versions of the local copy known to work with asv's page
    lacks: str  # what the page loses without it
    plugin: str | None = None  # a Flot plugin: its registered name (Debian's Flot bundles many)
    extra: tuple = ()  # folders the file refers to relatively (Bootstrap's fonts)


# Versions: asv 0.6 asks for jQuery 3.3.1, Flot 0.8.3, stupidtable 1.0.1, blueimp-md5 2.19.0
# and Bootstrap 3.1.1. Debian 12 ships jQuery 3.6.1, stupidtable 1.1.3, md5 2.19.0 and
# Bootstrap 3.4.1 (same major versions, compatible) and Flot 4.2.1, whose one file (it calls
# itself 3.0.0) includes the time, selection, categories and axis-label plugins; the browser test
# (common_tests/test_bench_site.py) checks that asv's page draws its graphs with it.
LIBRARIES = (
    Library("jQuery", r"//code\.jquery\.com/jquery-[\d.]+(\.min)?\.js$", "libjs-jquery",
            "jquery/jquery.min.js", (3,), "everything: the whole page is built with jQuery"),
    Library("Flot", r"/flot/[\d.]+/jquery\.flot(\.min)?\.js$", "libjs-jquery-flot",
            "jquery-flot/jquery.flot.min.js", (0, 4), "every graph"),
    Library("Flot time plugin", r"/flot/[\d.]+/jquery\.flot\.time(\.min)?\.js$", "libjs-jquery-flot",
            "jquery-flot/jquery.flot.time.min.js", (0, 4), "graphs with a date axis", plugin="time"),
    Library("Flot selection plugin", r"/flot/[\d.]+/jquery\.flot\.selection(\.min)?\.js$",
            "libjs-jquery-flot", "jquery-flot/jquery.flot.selection.min.js", (0, 4),
            "zooming a graph by selecting a range", plugin="selection"),
    Library("Flot categories plugin", r"/flot/[\d.]+/jquery\.flot\.categories(\.min)?\.js$",
            "libjs-jquery-flot", "jquery-flot/jquery.flot.categories.min.js", (0, 4),
            "graphs over a parameter with text values", plugin="categories"),
    # no distribution packages flot-orderBars; without it the series of a bar chart over a
    # parameter are drawn over each other instead of side by side
    Library("flot-orderBars", r"/flot-orderbars@[\d.]+/", None, None, (),
            "side-by-side bars: in the bar chart over a parameter the series overlap"),
    Library("stupidtable", r"/stupidtable/[\d.]+/stupidtable(\.min)?\.js$", "libjs-jquery-stupidtable",
            "jquery-stupidtable/stupidtable.min.js", (1,), "sorting the benchmark list's columns"),
    Library("blueimp-md5", r"/blueimp-md5/[\d.]+/js/md5(\.min)?\.js$", "node-blueimp-md5",
            "blueimp-md5/md5.min.js", (2,),
            "hiding a regression on the regressions page (it names each by an md5 hash)"),
    Library("Bootstrap (script)", r"/bootstrap@3[\d.]*/dist/js/bootstrap(\.min)?\.js$", "libjs-bootstrap",
            "bootstrap/js/bootstrap.min.js", (3,), "tooltips, popovers and the error dialog"),
    Library("Bootstrap (style)", r"/bootstrap@3[\d.]*/dist/css/bootstrap(\.min)?\.css$", "libjs-bootstrap",
            "bootstrap/css/bootstrap.min.css", (3,), "the page's layout and styles",
            extra=("bootstrap/fonts",)),
)
TAG = re.compile(r"<script\b[^>]*?\bsrc=\"(?P<s>[^\"]+)\"[^>]*>\s*</script>|"
                 r"<link\b[^>]*?\bhref=\"(?P<l>[^\"]+)\"[^>]*>", re.S)
REMOTE = re.compile(r"^(https?:)?//")
# asv ships an axis-label plugin written for Flot 0.8; Flot 4 draws axis labels itself, and
# with both every label is drawn twice
ASV_AXISLABELS = "jquery.flot.axislabels.js"
# Flot 4's legend plugin draws the legend's background as an SVG rectangle whose fill it leaves to the page's
# style sheet (or to a legend.backgroundColor option that asv does not set): SVG's default fill
# is black, so without this the legend is a black box. White, as Flot 0.8 drew it.
FLOT4_CSS = ".legendLayer rect.background { fill: #fff; }\n"
# Flot 4 autoscales an axis unless its autoScale option is "none", ignoring the min and max the
# page gives; asv's page sets them (the y axis starts at zero unless "zoom y axis" is on, a
# reference point rescales it), as Flot 0.8 honoured them. This plugin restores that meaning.
FLOT4_JS = """(function ($) {
    // an axis given its range is not autoscaled, as in Flot 0.8 (one given only a min, such
    // as the overview's y axis, keeps Flot 4's autoscaling: its "none" mode would not
    // find the other end)
    function fixed_range(plot, options) {
        $.each(options.xaxes.concat(options.yaxes), function (i, axis) {
            if (typeof axis.min === "number" && typeof axis.max === "number") {
                axis.autoScale = "none";
            }
        });
    }
    $.plot.plugins.push({name: "asv-flot4-ranges", options: {},
                         init: function (plot) { plot.hooks.processOptions.push(fixed_range); }});
})(jQuery);
"""


def add_arguments(p):
    p.add_argument("--config", default=str(ROOT / "asv.conf.json"),
                   help="asv's configuration (default: the project's asv.conf.json)")
    p.add_argument("--no-publish", action="store_true",
                   help="only make an already published site self-contained")
    p.add_argument("--system-js", default=str(SYSTEM_JS),
                   help=f"where the installed JavaScript libraries are (default {SYSTEM_JS})")


def run(args):
    config = Path(args.config).resolve()
    html = html_dir(config)
    if not args.no_publish:
        proc = subprocess.run([sys.executable, "-m", "asv", "publish", "--config", str(config)],
                              cwd=config.parent, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"asv publish failed (exit status {proc.returncode})")
    if not (html / "index.html").exists():
        raise FileNotFoundError(f"{html / 'index.html'} not found: run asv publish first")
    report = make_self_contained(html, Path(args.system_js))
    for line in report_lines(report):
        print(line)
    print(f"site: {html} (serve it with `asv preview` or any static server; "
          "it loads its data with requests, so not from the file system)")


def html_dir(config):
    """The site folder that ``config`` (asv.conf.json: JSON5, as asv reads it) names."""
    try:
        import json5  # asv's own reader, installed with it
        data = json5.loads(config.read_text())
    except ImportError:  # plain JSON with whole-line // comments, as the project's file has
        data = json.loads("\n".join(re.sub(r"^\s*//.*$", "", line)
                                    for line in config.read_text().splitlines()))
    return (config.parent / data.get("html_dir", "html")).resolve()


def local_version(lib, path):
    """The installed version of a library's file: its package's, else what the file states."""
    try:  # several minified files state no version; the package that installed them does
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", lib.package],
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0 and path.resolve().is_relative_to(Path("/usr/share")):
            m = re.match(r"(?:\d+:)?(\d+(?:\.\d+)*)", proc.stdout)
            if m:
                return m.group(1)
    except OSError:  # no dpkg: not a Debian system
        pass
    text = path.read_text(errors="replace")
    m = re.search(r"\bv(?:ersion)?\s*(\d+\.\d+(?:\.\d+)?)", text[:400], re.I)
    return m.group(1) if m else None


def _bundled_plugins(system_js):
    """The Flot plugins that the installed Flot file registers itself (Debian's bundles them)."""
    core = system_js / next(lib.path for lib in LIBRARIES if lib.name == "Flot")
    if not core.exists():
        return set()
    return set(re.findall(r"\bname:\s*[\"'](\w+)[\"']", core.read_text(errors="replace")))


def resolve(lib, system_js, bundled):
    """(status, file, version, detail) for one library: 'copied', 'bundled' or 'missing'."""
    if lib.plugin is not None and lib.plugin in bundled:
        return "bundled", None, None, "included in the installed Flot file"
    if lib.path is None:
        return "missing", None, None, "no installable package provides it"
    src = system_js / lib.path
    if not src.exists():
        return "missing", None, None, f"not installed (apt-get install {lib.package})"
    version = local_version(lib, src)
    if version is None:
        return "copied", src, "(version unknown)", f"from {src}, its version not checked"
    if int(version.split(".")[0]) not in lib.majors:
        return ("missing", None, version, f"the installed version {version} ({lib.package}) is not "
                "one asv's page works with")
    return "copied", src, version, f"from {lib.package}"


def make_self_contained(html, system_js=SYSTEM_JS):
    """Copy the page's libraries into ``html/vendor`` and point every page at them.

    Returns one entry per remote reference found: a dict with the library's name, the
    address the page asked for, the status ('copied', 'bundled', 'missing', 'unknown'),
    the installed version, the local path and a detail line.
    """
    system_js = Path(system_js)
    bundled = _bundled_plugins(system_js)
    report = {}

    def flot_copied():
        return any(e["name"] == "Flot" and e["status"] == "copied" for e in report.values())

    def replace(m):
        url = m.group("s") or m.group("l")
        if url == ASV_AXISLABELS and "axisLabels" in bundled and flot_copied():
            report[url] = dict(name="asv's axis-label plugin for Flot 0.8", url=url, status="bundled",
                               version=None, local=None, lacks="",
                               detail="left out: the installed Flot draws axis labels itself")
            return ""
        if not REMOTE.match(url):
            return m.group(0)
        if m.group("l") is not None and not re.search(r"rel=\"stylesheet\"", m.group(0)):
            return m.group(0)  # a link that loads nothing (an alternate feed, an icon elsewhere)
        lib = next((lib for lib in LIBRARIES if re.search(lib.url, url)), None)
        if lib is None:
            report[url] = dict(name=url, url=url, status="unknown", version=None, local=None,
                               lacks="(unknown)", detail="not a library this command knows")
            return ""
        status, src, version, detail = resolve(lib, system_js, bundled)
        entry = dict(name=lib.name, url=url, status=status, version=version, local=None,
                     lacks=lib.lacks, detail=detail)
        report[url] = entry
        if status != "copied":
            return ""  # a tag left pointing at the internet would send the page to error.html
        dest = html / VENDOR / lib.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        for folder in lib.extra:
            if (system_js / folder).is_dir():
                shutil.copytree(system_js / folder, html / VENDOR / folder, dirs_exist_ok=True)
        entry["local"] = f"{VENDOR}/{lib.path}"
        if m.group("s") is not None:
            tag = f'<script src="{entry["local"]}"></script>'
            if lib.name == "Flot" and "legend" in bundled:  # Flot 4: its SVG legend is a plugin
                (html / VENDOR / "flot4-asv.css").write_text(FLOT4_CSS)
                (html / VENDOR / "flot4-asv.js").write_text(FLOT4_JS)
                tag += (f'\n    <script src="{VENDOR}/flot4-asv.js"></script>'
                        f'\n    <link rel="stylesheet" href="{VENDOR}/flot4-asv.css">')
            return tag
        return f'<link rel="stylesheet" href="{entry["local"]}">'

    for page in sorted(html.glob("*.html")):
        text = page.read_text()
        new = TAG.sub(replace, text)
        if new != text:
            page.write_text(new)
    return list(report.values())


def report_lines(report):
    """What was copied, and what could not be, in words."""
    lines = []
    for e in report:
        if e["status"] == "copied":
            lines.append(f"  {e['name']} {e['version']}: {e['local']} ({e['detail']})")
        elif e["status"] == "bundled":
            lines.append(f"  {e['name']}: {e['detail']}")
    missing = [e for e in report if e["status"] in ("missing", "unknown")]
    for e in missing:
        lines.append(f"  MISSING {e['name']}: {e['detail']}; the page lacks {e['lacks']}")
    head = (f"bench-site: {len(report) - len(missing)} of {len(report)} remote references now "
            "served from the site")
    return [head] + lines
