"""The README's Python blocks run as pasted: each alone, in a fresh home, and twice.

A block runs in a fresh subprocess with ``CHANGEFLOW_HOME`` and the working folder in a new
temporary folder, then again in the same place, as a reader pasting it twice would. An HTML
comment right before a block tags it: ``<!-- readme-test: spark -->`` runs it on
``local[1]`` (and marks the test spark and slow), ``once`` runs it only once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(
    r"(?:<!-- readme-test: (?P<tags>[^>]*?) -->\n)?```python\n(?P<code>.*?)^```", re.S | re.M
)


def _blocks() -> Iterator[pytest.ParameterSet]:
    text = README.read_text()
    for match in BLOCK.finditer(text):
        tags = frozenset(t.strip() for t in (match["tags"] or "").split(",") if t.strip())
        line = text.count("\n", 0, match.start("code")) + 1
        marks = [pytest.mark.spark, pytest.mark.slow] if "spark" in tags else []
        yield pytest.param(match["code"], tags, id=f"README.md:{line}", marks=marks)


def run(code: str, folder: Path, spark: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGEFLOW_")}
    env["CHANGEFLOW_HOME"] = str(folder / "changeflow-data")
    if spark:
        env["CHANGEFLOW_SPARK_MASTER"] = "local[1]"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def blocks() -> list[pytest.ParameterSet]:
    """The README's Python blocks, each with its tags, named by its first line's number."""
    return list(_blocks())


def test_the_readme_has_python_blocks() -> None:
    assert len(blocks()) >= 5


@pytest.mark.parametrize("code, tags", blocks())
def test_a_readme_block_runs_alone_and_again(
    code: str, tags: frozenset[str], tmp_path: Path
) -> None:
    for attempt in ("first", "second")[: 1 if "once" in tags else 2]:
        result = run(code, tmp_path, "spark" in tags)
        assert result.returncode == 0, f"{attempt} run:\n{result.stderr}"
        assert "Traceback" not in result.stderr, f"{attempt} run:\n{result.stderr}"
