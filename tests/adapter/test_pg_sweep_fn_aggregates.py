"""The ordered-set aggregates (``percentile_cont``, ``percentile_disc``, ``mode() WITHIN
GROUP``), ``bit_and``/``bit_or``/``bit_xor`` and ``count(DISTINCT (a, b))`` here and on
PostgreSQL 15: the same rows ad hoc, and as materialized views kept through changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE ag (id int PRIMARY KEY, g int, x int, y float8, s text, n numeric(6,2))",
    "INSERT INTO ag VALUES (1, 1, 3, 1.5, 'b', 1.25), (2, 1, 5, 2.5, 'a', NULL),"
    " (3, 2, NULL, NULL, NULL, 3), (4, 2, 6, 4.0, 'x', 3), (5, 2, 6, 4.0, 'q', 0.5),"
    " (6, NULL, 12, -1, 'q', 7.75)",
]
AD_HOC = [
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM ag",
    "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY y DESC),"
    " percentile_cont(1) WITHIN GROUP (ORDER BY n), percentile_cont(0) WITHIN GROUP (ORDER BY x)"
    " FROM ag",
    "SELECT g, percentile_cont(0.3) WITHIN GROUP (ORDER BY y) FROM ag GROUP BY g ORDER BY g",
    "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x),"
    " percentile_disc(0.1) WITHIN GROUP (ORDER BY s DESC),"
    " percentile_disc(0) WITHIN GROUP (ORDER BY n) FROM ag",
    "SELECT percentile_cont(ARRAY[0.25, 0.5, NULL]) WITHIN GROUP (ORDER BY x)::text FROM ag",
    "SELECT percentile_disc(ARRAY[0.5, 1]) WITHIN GROUP (ORDER BY s)::text FROM ag",
    "SELECT mode() WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY s DESC) FROM ag",
    "SELECT g, mode() WITHIN GROUP (ORDER BY s) FROM ag GROUP BY g ORDER BY g",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FILTER (WHERE id > 1) FROM ag",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY s)"
    " FROM ag WHERE false",
    "SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY x) FROM ag",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM ag",
    "SELECT bit_and(x), bit_or(x), bit_xor(x), bit_and(g::int2), bit_or(id::bigint) FROM ag",
    "SELECT g, bit_and(x), bit_or(x), bit_xor(x) FROM ag GROUP BY g ORDER BY g",
    "SELECT bit_and(x) FILTER (WHERE id < 3), bit_or(x) FROM ag WHERE id > 9",
    "SELECT bool_and(x > 2), bool_or(x > 5), every(x > 0) FROM ag",
    "SELECT count(DISTINCT (g, x)), count(DISTINCT (s, n)) FROM ag",
    "SELECT g, count(DISTINCT (x, s)) FROM ag GROUP BY g ORDER BY g",
]
QUERIES = [
    "SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS p,"
    " percentile_disc(0.5) WITHIN GROUP (ORDER BY y DESC) AS d FROM ag GROUP BY g",
    "SELECT g, mode() WITHIN GROUP (ORDER BY s) AS m FROM ag GROUP BY g",
    "SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY n) AS p FROM ag",
    "SELECT g, bit_and(x) AS a, bit_or(x) AS o, bit_xor(id) AS x FROM ag GROUP BY g",
    "SELECT g, count(DISTINCT (x, s)) AS c FROM ag GROUP BY g",
]
CHANGES = [
    "INSERT INTO ag VALUES (7, 1, 9, 0.5, 'a', 2), (8, 2, 6, 8, 'q', NULL)",
    "UPDATE ag SET x = 1, s = 'z' WHERE id = 4",
    "DELETE FROM ag WHERE id IN (1, 5)",
    "UPDATE ag SET g = 1 WHERE id = 6",
]


def test_ordered_sets_and_bits_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ag", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)


def test_ordered_sets_and_bits_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ag", *SETUP) as (ours, pg):
        maintained_as_postgres(ours, pg, QUERIES, CHANGES)
