"""A jsonb string with a lone Unicode surrogate escape (``"\\ud800"``) is refused as in
PostgreSQL 15 (22P02); it was accepted, then failed as an internal error where it was
stored (a materialized view)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres


def test_lone_surrogate_escapes(tmp_path: Path, postgres_url: str) -> None:
    setup = ("CREATE TABLE js (j text)", "INSERT INTO js VALUES ('[\"\\ud83d\\ude00\"]')")
    with beside_postgres(tmp_path / "home", postgres_url, "js", *setup) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "SELECT (j::jsonb)::text FROM js",
                "SELECT '\"\\ud800\"'::jsonb",
                'SELECT \'{"a": "x\\udc00"}\'::jsonb',
                "SELECT '\"\\ud83d\\ude00\"'::jsonb = '\"😀\"'::jsonb",
            ],
        )
