"""The benchmarks' results: ``results/NAME.json`` and ``.md``, and the README's table of each,
between ``<!-- bench:NAME -->`` markers."""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
RESULTS = HERE / "results"


def update_readme(name: str, table: str) -> bool:
    """Replace the text between the ``bench:NAME`` markers; False if the README has none."""
    text = README.read_text()
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    README.write_text(f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}")
    return True


def publish(name: str, data: dict, table: str) -> None:
    """Write ``data`` as ``results/NAME.json``, ``table`` as ``results/NAME.md`` and into the
    README, and print the table."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    (RESULTS / f"{name}.md").write_text(table + "\n")
    if not update_readme(name, table):
        print(f"README.md has no bench:{name} markers; its table is left alone", file=sys.stderr)
    print(table)
