"""Aggregates with ORDER BY (string_agg, array_agg) compared with PostgreSQL 15: the same
statements on the same data, ad hoc and installed as materialized views kept through inserts,
updates, deletes and a restart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, materialize, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE a (id int NOT NULL, g int, x int, s text)"
INSERT = (
    "INSERT INTO a VALUES (1, 1, 3, 'b'), (2, 1, 1, 'a'), (3, 1, 2, 'b'), (4, 2, NULL, 'c'),"
    " (5, 2, 5, NULL), (6, 3, -1, 'z'), (7, NULL, 4, 'n'), (8, 2, 7, 'd')"
)
CHANGES = [
    "INSERT INTO a VALUES (9, 1, 0, 'e'), (10, 3, 8, 'y')",
    "UPDATE a SET s = 'q' WHERE id IN (2, 8)",
    "DELETE FROM a WHERE id IN (1, 6)",
    "UPDATE a SET g = 3 WHERE id = 4",
]
# Each: grouped by g; the aggregates' orders leave no ties between different values.
QUERIES = [
    "SELECT g, string_agg(s, ',' ORDER BY s DESC) FROM a GROUP BY g",
    "SELECT g, string_agg(s, '' ORDER BY x NULLS FIRST, s) FROM a GROUP BY g",
    "SELECT g, string_agg(DISTINCT s, '-' ORDER BY s) FROM a GROUP BY g",
    "SELECT g, string_agg(s || x, ';' ORDER BY id DESC), count(*) FROM a GROUP BY g",
    "SELECT string_agg(s, ',' ORDER BY id) FROM a WHERE x > 0",
]


def _both(ours, pg, sql: str) -> tuple[list, list]:
    return sorted(ours.execute(sql).fetchall(), key=str), sorted(
        pg.execute(sql).fetchall(), key=str
    )


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "a", CREATE, INSERT) as pair:
        yield pair


def test_ordered_aggregates_ad_hoc_and_maintained_as_postgres(tmp_path: Path, both) -> None:
    ours, pg = both
    for i, sql in enumerate(QUERIES):
        materialize(ours, pg, f"v{i}", sql)
    for n, change in enumerate([None, *CHANGES]):
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        if n == 2:  # the views' plans are read back from the catalog
            ours.close()
            ours = changeflow.connect(tmp_path / "home", host_seconds=0)
            ours.autocommit = True
        for i, sql in enumerate(QUERIES):
            got, want = _both(ours, pg, sql)
            assert got == want, (sql, change)
            view = sorted(ours.execute(f"SELECT * FROM v{i}").fetchall(), key=str)
            assert view == want, (sql, change)
    ours.close()


REFUSED = [
    "SELECT string_agg(DISTINCT s, ',' ORDER BY x) FROM a",
    "SELECT string_agg(s, ',' ORDER BY count(*)) FROM a",
    "SELECT string_agg(s, ',' ORDER BY nope) FROM a",
]


def test_ordered_aggregate_errors_as_postgres_gives_them(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)


def test_a_change_recomputes_only_its_group(tmp_path: Path) -> None:
    """An insert into one group of a maintained string_agg changes no other group's row."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE p (id int, g int)")
    conn.execute("INSERT INTO p VALUES " + ", ".join(f"({i}, {i % 3})" for i in range(1, 31)))
    conn.execute(
        "CREATE MATERIALIZED VIEW pv AS SELECT g, string_agg(id::text, ',' ORDER BY id DESC) "
        "FROM p GROUP BY g"
    )
    before = set(conn.execute("SELECT * FROM pv").fetchall())
    conn.execute("INSERT INTO p VALUES (100, 1)")
    after = set(conn.execute("SELECT * FROM pv").fetchall())
    assert {row[0] for row in before ^ after} == {1}
    assert (1, "100," + ",".join(str(i) for i in range(28, 0, -3))) in after
    conn.close()


def test_array_agg_without_group_by_as_postgres(both) -> None:
    """No GROUP BY: array_agg keeps its input's NULLs but nothing more (no NULL for SQL's one
    row), and over no rows it is NULL, ad hoc and in views while the input empties and fills."""
    queries = [
        "SELECT array_agg(x ORDER BY x) FROM a",
        "SELECT count(*), array_agg(DISTINCT g ORDER BY g), sum(x) FROM a",
        "SELECT jsonb_agg(s ORDER BY s)::text FROM a WHERE g = 2",
        "SELECT array_agg(g ORDER BY g) FROM a WHERE g > 5",
    ]
    changes = [
        "DELETE FROM a WHERE g = 2",
        "DELETE FROM a",
        "INSERT INTO a VALUES (9, 2, NULL, 'z')",
    ]
    maintained_as_postgres(*both, queries, changes)


FILTERED = [
    "SELECT g, array_agg(x ORDER BY x) FILTER (WHERE x > 1) FROM a GROUP BY g",
    "SELECT g, array_agg(s ORDER BY id DESC) FILTER (WHERE id <> 3), count(*) FROM a GROUP BY g",
    "SELECT array_agg(x ORDER BY id) FILTER (WHERE s IS NOT NULL) FROM a",
    "SELECT g, string_agg(s, ',' ORDER BY s) FILTER (WHERE x > 0) FROM a GROUP BY g",
]
JSON_FILTERED = [  # jsonb_agg and json_agg are array_agg inside: FILTER goes to it
    "SELECT g, (jsonb_agg(x ORDER BY x) FILTER (WHERE x > 1))::text,"
    " (json_agg(s ORDER BY id) FILTER (WHERE s IS NOT NULL))::text FROM a GROUP BY g",
]


def test_filter_on_array_agg_and_string_agg_as_postgres(both) -> None:
    """FILTER (WHERE …) leaves rows out of array_agg (NULLs it keeps stay apart from the
    rows left out), string_agg, jsonb_agg and json_agg, ad hoc and in views through the
    changes."""
    maintained_as_postgres(*both, FILTERED + JSON_FILTERED, CHANGES)


@pytest.mark.spark
def test_ordered_aggregates_on_the_cluster_tier_as_postgres(spark, both) -> None:
    """string_agg with ORDER BY and array_agg (ordered, DISTINCT, FILTERed) kept on the
    cluster tier give PostgreSQL's rows through the changes."""
    ours, pg = both
    # the grouped aggregates of QUERIES and FILTERED in one view, the ungrouped in another:
    # each dataflow on the cluster steps as Spark jobs, so fewer views cost less time
    queries = [
        "SELECT g, string_agg(s, ',' ORDER BY s DESC), string_agg(s, '' ORDER BY x NULLS FIRST,"
        " s), string_agg(DISTINCT s, '-' ORDER BY s), string_agg(s || x, ';' ORDER BY id DESC),"
        " count(*), array_agg(x ORDER BY x) FILTER (WHERE x > 1), array_agg(s ORDER BY id DESC)"
        " FILTER (WHERE id <> 3), string_agg(s, ',' ORDER BY s) FILTER (WHERE x > 0) FROM a"
        " GROUP BY g",
        "SELECT string_agg(s, ',' ORDER BY id) FILTER (WHERE x > 0), array_agg(x ORDER BY id)"
        " FILTER (WHERE s IS NOT NULL), count(*), array_agg(DISTINCT g ORDER BY g) FROM a",
    ]
    maintained_as_postgres(ours, pg, queries, CHANGES, options="CLUSTER = true")
    for i in range(len(queries)):
        plan = ours.execute(f"EXPLAIN MATERIALIZED VIEW v{i}").fetchall()
        assert plan[0][0].startswith("Tier: cluster"), plan
