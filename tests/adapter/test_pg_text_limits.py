"""Text functions asked for a value past PostgreSQL's 1 GB limit refuse it as PostgreSQL 15
does (54000: "requested length too large", format's "out of memory") instead of building it
in memory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres


def test_too_long_text_is_refused_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    setup = ("CREATE TABLE tl (s text, n int)", "INSERT INTO tl VALUES ('ab', 3), ('é', 2)")
    with beside_postgres(tmp_path / "home", postgres_url, "tl", *setup) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "SELECT repeat(s, n), lpad(s, n + 2, '-'), rpad(s, n) FROM tl ORDER BY n",
                "SELECT repeat(s, 2147483647) FROM tl",
                "SELECT repeat('é', 600000000)",
                "SELECT lpad(s, 2147483647) FROM tl",
                "SELECT rpad('x', 300000000, 'ab')",
                "SELECT format('%-2147483647s', s) FROM tl",
                "SELECT format('%1073741823s', 'a'), length(format('%5s|%-3s|', 'a', 'b'))",
            ],
        )
