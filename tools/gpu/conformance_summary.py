"""The conformance step's JUnit XML as a short Markdown summary: how many tests ran,
passed, failed and were skipped (and why, grouped), and each failure with the first line
of its message. ``python tools/gpu/conformance_summary.py conformance.xml machine.txt > conformance.md``
"""
import collections
import sys
import xml.etree.ElementTree as ET


def summary(xml_path, machine_path=None):
    root = ET.parse(xml_path).getroot()
    suite = next(root.iter("testsuite"))
    n, failed, errors, skipped = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
    where = ""
    if machine_path:
        facts = dict(line.split(":", 1) for line in open(machine_path, encoding="utf-8") if ":" in line)
        where = f" on {facts.get('gpu', '?').strip()} ({facts.get('date', '?').strip()})"
    lines = [f"The suite on `stage4_gpu[cuda]`{where}: {n} tests, {n - failed - errors - skipped} passed, "
             f"{failed + errors} failed, {skipped} skipped (`-m \"not slow\"`).", ""]
    reasons, failures = collections.Counter(), []
    for case in root.iter("testcase"):
        for item in case:
            message = (item.get("message") or "").strip().splitlines()
            if item.tag == "skipped":
                reasons[(message[0] if message else "?")[:110]] += 1
            elif item.tag in ("failure", "error"):
                text = " ".join(m.strip() for m in message[:3])[:200]
                failures.append((case.get("name"), text or item.tag))
    if failures:
        lines += ["| failed test | its message |", "|---|---|"]
        lines += [f"| `{name}` | {msg.replace('|', '/')} |" for name, msg in failures]
        lines.append("")
    if reasons:
        lines += ["| skipped | why |", "|---|---|"]
        lines += [f"| {count} | {why.replace('|', '/')} |" for why, count in reasons.most_common()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(summary(*sys.argv[1:3]))
