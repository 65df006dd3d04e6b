"""Numeric infinities in arithmetic, division, sums and the aggregates that divide (``avg``,
``var_*``, ``stddev_*``): PostgreSQL's answers (an infinity keeps its sign, a finite number
over one is 0; infinity over infinity, a sum of both infinities and the spread of values with
an infinity are NaN), never an internal error. Tables store no numeric infinity, so these are
ad hoc only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = ["CREATE TABLE ni (id int)"]
AD_HOC = [
    "SELECT 'infinity'::numeric / 3, '-infinity'::numeric / 3, 'infinity'::numeric / -0.5,"
    " 7 / 'infinity'::numeric, -7 / '-infinity'::numeric",
    "SELECT 'infinity'::numeric / 'infinity'::numeric, 'NaN'::numeric / 'infinity'::numeric",
    "SELECT 'infinity'::numeric / 0",
    "SELECT sum(x::numeric), avg(x::numeric), var_pop(x::numeric), var_samp(x::numeric),"
    " stddev_pop(x::numeric), stddev_samp(x::numeric) FROM (VALUES ('1'), ('infinity')) v(x)",
    "SELECT avg(x::numeric), var_pop(x::numeric) FROM (VALUES ('-infinity'), ('-infinity'),"
    " ('2.5')) v(x)",
    "SELECT var_pop('infinity'::numeric), var_samp('infinity'::numeric),"
    " stddev_pop('-infinity'::numeric), stddev_samp('-infinity'::numeric)",
    "SELECT sum(x::numeric), avg(x::numeric), var_pop(x::numeric) FROM (VALUES ('-infinity'),"
    " ('infinity'), ('1')) v(x)",
    "SELECT sum(x::numeric), avg(x::numeric) FROM (VALUES ('-infinity'), ('-infinity')) v(x)",
    "SELECT g, avg(x::numeric), var_samp(x::numeric) FROM (VALUES (1, '3'), (1, 'infinity'),"
    " (2, '4'), (2, '6')) v(g, x) GROUP BY g ORDER BY g",
    # infinities that cancel are NaN; an infinity's remainder too
    "SELECT 'infinity'::numeric + '-infinity'::numeric, 'infinity'::numeric - 'infinity'::numeric,"
    " '-infinity'::numeric * 0, 'infinity'::numeric % 3, 5 % 'infinity'::numeric,"
    " 'infinity'::numeric + 5, '-infinity'::numeric * -2",
    "SELECT 'infinity'::numeric % 0",
]


def test_numeric_infinities_divide_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ni", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
