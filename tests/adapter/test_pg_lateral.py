"""LATERAL subqueries compared with PostgreSQL 15: the same statements on the same data, ad
hoc and as materialized views kept through inserts, updates and deletes of both sides; what
cannot be decorrelated is refused (0A000)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE lu (k int, v int NOT NULL)",
    "CREATE TABLE lt (id int, k int)",
    "INSERT INTO lt VALUES (1, 1), (2, 2), (3, NULL), (NULL, 9), (5, 1)",
    "INSERT INTO lu VALUES (1, 10), (1, 20), (1, 30), (1, 40), (2, 5), (NULL, 7), (9, 1)",
]
CHANGES = [
    "INSERT INTO lu VALUES (1, 25), (2, 50), (3, 3)",
    "UPDATE lt SET k = 2 WHERE id = 5",
    "DELETE FROM lu WHERE v IN (40, 5)",
    "UPDATE lu SET v = v + 100 WHERE k = 1 AND v < 25",
    "INSERT INTO lt VALUES (6, 3), (7, NULL)",
    "DELETE FROM lt WHERE id = 1",
]
QUERIES = [
    "SELECT lt.id, x.v FROM lt, LATERAL (SELECT lt.id * 2 AS v) x",
    "SELECT lt.id, x.v FROM lt LEFT JOIN LATERAL"
    " (SELECT lu.v FROM lu WHERE lu.k = lt.k ORDER BY lu.v DESC LIMIT 3) x ON true",
    "SELECT lt.id, x.v FROM lt CROSS JOIN LATERAL"
    " (SELECT lu.v FROM lu WHERE lu.k = lt.k ORDER BY lu.v LIMIT 2 OFFSET 1) x",
    "SELECT lt.id, x.s FROM lt, LATERAL"
    " (SELECT lu.k, sum(lu.v) AS s FROM lu WHERE lu.k = lt.k GROUP BY lu.k) x",
    "SELECT * FROM lt, LATERAL (SELECT lt.id + lt.k AS n) x WHERE x.n > 2",
    "SELECT lt.id, x.v, x.w FROM lt JOIN LATERAL"
    " (SELECT lu.v, lu.v + lt.id AS w FROM lu WHERE lu.k <= lt.k) x ON x.v > 10",
    "SELECT lt.id, x.* FROM lt, LATERAL (SELECT count(*), max(lu.v) FROM lu WHERE lu.k = lt.k) x",
    "SELECT lt.id, x.c FROM lt, LATERAL"
    " (SELECT count(lu.v) + lt.id AS c, sum(lu.v) AS s FROM lu WHERE lu.k < lt.k) x",
    "SELECT * FROM lt, LATERAL (SELECT lt.id + 1 AS n) x, LATERAL (SELECT x.n * lt.k AS m) y",
    # outer columns named bare (they were 42703), an output name and a position in ORDER BY
    "SELECT id, x.n FROM lt, LATERAL (SELECT id * 2 AS n) x",
    "SELECT id, x.m FROM lt, LATERAL (SELECT max(v) AS m FROM lu WHERE lu.k = k) x",
    "SELECT id, x.v FROM lt LEFT JOIN LATERAL (SELECT v FROM lu WHERE lu.k = lt.k AND v > id)"
    " x ON true",
    "SELECT id, x.w FROM lt, LATERAL (SELECT v AS w FROM lu WHERE lu.k = lt.k ORDER BY w DESC"
    " LIMIT 1) x",
    "SELECT id, x.w FROM lt, LATERAL (SELECT v + id AS w, v FROM lu WHERE lu.k = lt.k"
    " ORDER BY 2 LIMIT 1) x",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS lu")
    with beside_postgres(tmp_path / "home", postgres_url, "lt", *SETUP) as pair:
        try:
            yield pair
        finally:
            pair[1].execute("DROP TABLE lu")


def test_lateral_ad_hoc_and_maintained_as_postgres(both) -> None:
    maintained_as_postgres(*both, QUERIES, CHANGES)


def test_lateral_that_cannot_be_decorrelated_is_refused(both) -> None:
    ours, pg = both
    sql = (
        "SELECT lt.id, x.c FROM lt,"
        " LATERAL (SELECT count(*) AS c FROM lu WHERE lu.k = lt.k HAVING count(*) > 1) x"
    )
    assert pg.execute(sql).fetchall()
    with pytest.raises(DatabaseError) as caught:
        ours.execute(sql)
    assert caught.value.sqlstate == "0A000" and "LATERAL" in str(caught.value)


def test_lateral_columns_keep_their_names(both) -> None:
    """A LATERAL select item that is an outer column keeps its name (it was an internal one,
    ambiguous: 42702), and its bare * is its own FROM's columns only."""
    same_outcomes(
        *both,
        [
            "SELECT * FROM lt a JOIN lt b ON a.id = b.id, LATERAL (SELECT a.id, b.k) x"
            " ORDER BY 1, 2",
            "SELECT * FROM lt, LATERAL (SELECT lt.k, lt.id + 1, lt.id AS i) x ORDER BY 1, 2",
            "SELECT * FROM lt, LATERAL (SELECT * FROM lu WHERE lu.k = lt.k) x ORDER BY 1, 2, 4",
            "SELECT x.* FROM lt, LATERAL (SELECT *, lt.id FROM lu, lt t2"
            " WHERE lu.k = lt.k AND t2.id = lt.id) x ORDER BY 1, 2, 3",
        ],
    )
