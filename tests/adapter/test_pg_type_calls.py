"""A type's name called as a function with one argument is a cast, as in PostgreSQL 15
(``float8(x)``, ``int4(x)``, ``text(x)`` …): the same values, column names and errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres


def test_type_names_called_as_casts(tmp_path: Path, postgres_url: str) -> None:
    setup = ("CREATE TABLE tc (n bigint, s text)", "INSERT INTO tc VALUES (7, '12'), (-3, 'x')")
    with beside_postgres(tmp_path / "home", postgres_url, "tc", *setup) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "SELECT n, float8(n), int4(n), int2(n), text(n), bpchar(n) FROM tc ORDER BY n",
                "SELECT n::float8, CAST(n AS int4) FROM tc ORDER BY 1",
                "SELECT float8(count(*)) / 4 AS q FROM tc",
                "SELECT int8(s) FROM tc WHERE n > 0",
                "SELECT int8(s) FROM tc",  # 22P02, as a cast
                "SELECT int2(70000)",  # 22003
                "SELECT bool('yes'), jsonb('[1, 2]'), timestamptz('2020-01-02 03:04:05+00')",
                "SELECT int4(n, 2) FROM tc",  # not a cast: no such function (42883)
            ],
        )
