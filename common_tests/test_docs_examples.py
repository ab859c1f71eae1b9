"""The landing page's example runs as printed, on every stage (with its import swapped,
as the page says), and trains: the loss falls."""
import re
from pathlib import Path

INDEX = Path(__file__).resolve().parents[1] / "docs" / "index.md"


def landing_example():
    """The first Python block of docs/index.md."""
    return re.search(r"```python\n(.*?)```", INDEX.read_text(), re.S).group(1)


def test_landing_page_example_runs(sg, capsys):
    code = landing_example()
    assert code.startswith("import stage0_python as sg")
    exec(compile(code.replace("stage0_python", sg.__name__, 1), "docs/index.md", "exec"), {})
    losses = [float(v) for v in re.findall(r"loss ([0-9.]+)", capsys.readouterr().out)]
    assert len(losses) >= 2 and losses[-1] < losses[0]
