"""The README's benchmark tables: each sits between ``<!-- bench:NAME -->`` markers."""

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def update_readme(name: str, table: str) -> bool:
    """Replace the text between the ``bench:NAME`` markers; False if the README has none."""
    text = README.read_text()
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    README.write_text(f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}")
    return True
