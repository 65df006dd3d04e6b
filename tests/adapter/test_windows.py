"""Window functions compared with PostgreSQL 15: the same statements on the same data, ad hoc
and installed as materialized views kept through inserts, updates and deletes."""

from __future__ import annotations

import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

import changeflow

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, materialize, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE w (id int NOT NULL, g int, x numeric(12,2), f float8, s text)"
INSERT = (
    "INSERT INTO w VALUES (1, 1, 10.50, 0.5, 'a'), (2, 1, 3, 1.5, 'b'), (3, 2, 3, NULL, 'c'),"
    " (4, 2, NULL, 2.25, NULL), (5, 1, 10.50, -1, 'e'), (6, 3, -7.25, 0, 'f'),"
    " (7, 2, 20, 4.5, 'g'), (8, NULL, 1, 8, 'h')"
)
CHANGES = [
    "INSERT INTO w VALUES (9, 1, 4, 0.25, 'i'), (10, 3, 100, 1, 'j')",
    "UPDATE w SET x = x + 1 WHERE id IN (2, 7)",
    "DELETE FROM w WHERE id IN (1, 6)",
    "UPDATE w SET g = 3 WHERE id = 3",
]
# Each: the select list over w; rows are compared ordered by id (the first column).
QUERIES = [
    "id, row_number() OVER (PARTITION BY g ORDER BY x DESC, id), rank() OVER (PARTITION BY g "
    "ORDER BY x), dense_rank() OVER (ORDER BY g), percent_rank() OVER (PARTITION BY g ORDER BY "
    "x), cume_dist() OVER (ORDER BY x NULLS FIRST)",
    "id, ntile(3) OVER (ORDER BY id), ntile(2) OVER (PARTITION BY g ORDER BY id), "
    "row_number() OVER ()",
    "id, lag(x) OVER (ORDER BY id), lead(x, 2) OVER (PARTITION BY g ORDER BY id), "
    "lag(x, 1, 0) OVER (ORDER BY id), lead(s, 1, 'none') OVER (ORDER BY id DESC)",
    "id, first_value(x) OVER (PARTITION BY g ORDER BY id), last_value(s) OVER (PARTITION BY g "
    "ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), nth_value(x, 2) "
    "OVER (PARTITION BY g ORDER BY id), last_value(id) OVER (ORDER BY g)",
    "id, sum(x) OVER (PARTITION BY g ORDER BY id), count(*) OVER (PARTITION BY g), avg(x) "
    "OVER (PARTITION BY g), min(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING),"
    " max(f) OVER (ORDER BY id ROWS 2 PRECEDING), avg(id) OVER (ORDER BY id)",
    "id, sum(x) OVER (ORDER BY x RANGE BETWEEN 5 PRECEDING AND 10 FOLLOWING), count(*) OVER "
    "(ORDER BY g GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW), sum(id) OVER (ORDER BY g RANGE "
    "BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING EXCLUDE CURRENT ROW), sum(id) OVER (ORDER BY g "
    "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE GROUP), sum(id) OVER "
    "(ORDER BY g GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE TIES)",
    "id, count(*) FILTER (WHERE x > 3) OVER (PARTITION BY g), bool_and(x > 0) OVER "
    "(PARTITION BY g), sum(f) OVER (ORDER BY f DESC RANGE BETWEEN 1 PRECEDING AND CURRENT ROW)",
    "id, count(*) OVER (ORDER BY x NULLS FIRST RANGE BETWEEN UNBOUNDED PRECEDING AND 1 "
    "PRECEDING), count(*) OVER (ORDER BY x RANGE BETWEEN 15 FOLLOWING AND UNBOUNDED FOLLOWING),"
    " sum(id) OVER (ORDER BY x DESC RANGE BETWEEN 2 FOLLOWING AND 8 FOLLOWING), count(*) OVER "
    "(ORDER BY f DESC NULLS LAST RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING)",
    "id, sum(id) OVER (ORDER BY id ROWS BETWEEN '1' PRECEDING AND '1' FOLLOWING), count(*) "
    "OVER (ORDER BY x RANGE BETWEEN '2.5' PRECEDING AND CURRENT ROW)",  # quoted offsets
    "id, row_number() OVER (PARTITION BY g % 2 ORDER BY x * -1, id), sum(x) OVER v, "
    "rank() OVER v FROM w WINDOW v AS (PARTITION BY g ORDER BY s)",
]
GROUPED = [
    "SELECT g, sum(x), rank() OVER (ORDER BY sum(x) DESC), sum(sum(x)) OVER () FROM w GROUP BY g",
    "SELECT DISTINCT g, count(*) OVER (PARTITION BY g) FROM w",
    "SELECT g, count(*), lag(count(*)) OVER (ORDER BY g) FROM w WHERE x IS NOT NULL GROUP BY g",
]


def _sql(select: str) -> str:
    if select.startswith("SELECT"):
        return select
    return f"SELECT {select}" + ("" if " FROM w" in select else " FROM w")


def _texts(rows: list[tuple], scales: bool = True) -> list[tuple]:
    """Rows as PostgreSQL prints them, sorted; without ``scales``, numerics rounded to 10
    decimals without trailing zeros: a view stores a numeric column whose values differ in
    scale (avg's, lag's with a default of another scale) as an unconstrained numeric, at 10
    decimals, where PostgreSQL keeps each value's own."""

    def shown(v: object) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, Decimal) and not scales:
            v = v.quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)
            return str(v.normalize()) if v != v.to_integral_value() else str(int(v))
        return str(v)

    return sorted((tuple(shown(v) for v in r) for r in rows), key=str)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "w", CREATE, INSERT) as pair:
        yield pair


def test_window_functions_ad_hoc_and_maintained_as_postgres(both) -> None:
    ours, pg = both
    queries = [_sql(q) for q in QUERIES + GROUPED]
    for i, sql in enumerate(queries):
        materialize(ours, pg, f"v{i}", sql)
    for change in [None, *CHANGES]:
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        for i, sql in enumerate(queries):
            theirs = pg.execute(sql).fetchall()
            assert _texts(ours.execute(sql).fetchall()) == _texts(theirs), (sql, change)
            view = ours.execute(f"SELECT * FROM v{i}").fetchall()
            assert _texts(view, False) == _texts(theirs, False), (sql, change)


def test_window_column_names_and_order_by_a_window(both) -> None:
    ours, pg = both
    sql = (
        "SELECT id, rank() OVER (ORDER BY x) AS r, row_number() OVER (ORDER BY id), "
        "sum(x) OVER () FROM w ORDER BY r, id DESC"
    )
    got, want = ours.execute(sql), pg.execute(sql)
    assert [d[0] for d in got.description] == [d[0] for d in want.description]
    assert got.fetchall() == want.fetchall()


REFUSED = [
    "SELECT id FROM w WHERE row_number() OVER () > 1",
    "SELECT sum(row_number() OVER ()) FROM w",
    "SELECT id, sum(x) OVER (ORDER BY x, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT id, count(*) OVER (ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM w",
    "SELECT id, count(*) OVER (ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM w",
    "SELECT id, count(*) OVER (ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT id, count(DISTINCT x) OVER () FROM w",
    "SELECT id, rank() OVER nope FROM w",
    "SELECT id, ntile(0) OVER (ORDER BY id) FROM w",
    "SELECT id, count(*) OVER (ORDER BY x RANGE BETWEEN 'a' PRECEDING AND CURRENT ROW) FROM w",
    "SELECT id, count(*) OVER (ORDER BY x ROWS BETWEEN 'a' PRECEDING AND CURRENT ROW) FROM w",
    "SELECT g, x, rank() OVER (ORDER BY x) FROM w GROUP BY g",
]


def test_window_errors_as_postgres_gives_them(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)


def test_a_change_recomputes_only_its_partition(tmp_path: Path) -> None:
    """A maintained window's step touches the partitions its changes fall in: an insert into
    one partition changes no row of another."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE p (id int, g int)")
    conn.execute("INSERT INTO p VALUES " + ", ".join(f"({i}, {i % 3})" for i in range(1, 31)))
    conn.execute(
        "CREATE MATERIALIZED VIEW pv AS SELECT id, g, row_number() OVER (PARTITION BY g "
        "ORDER BY id DESC) AS rn FROM p"
    )
    (flow,) = conn.env.dataflows.values()
    before = set(conn.execute("SELECT * FROM pv").fetchall())
    conn.execute("INSERT INTO p VALUES (100, 1)")
    after = set(conn.execute("SELECT * FROM pv").fetchall())
    changed = {row[1] for row in before ^ after}
    assert changed == {1} and flow.tier == "process"
    conn.close()


def _rows(conn, sql: str) -> list[tuple]:
    return sorted(conn.execute(sql).fetchall(), key=repr)


@pytest.mark.spark
def test_a_window_view_runs_on_the_cluster_tier_exactly(spark, tmp_path: Path) -> None:
    view = (
        "SELECT id, g, rank() OVER (PARTITION BY g ORDER BY id DESC) AS r, "
        "sum(id) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s, "
        "lag(id) OVER (ORDER BY id) AS before FROM p"
    )
    home = tmp_path / "home"
    conn = changeflow.connect(home, host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE p (id int, g int)")
    conn.cursor().executemany("INSERT INTO p VALUES (%s, %s)", [(i, i % 3) for i in range(20)])
    conn.execute(f"CREATE MATERIALIZED VIEW c WITH (CLUSTER = true) AS {view}")
    assert "Tier: cluster" in conn.execute("EXPLAIN MATERIALIZED VIEW c").fetchall()[0][0]
    assert _rows(conn, "SELECT * FROM c") == _rows(conn, view)
    conn.execute("INSERT INTO p VALUES (7, 1), (100, NULL)")
    conn.execute("UPDATE p SET g = 2 WHERE id = 4")
    conn.execute("DELETE FROM p WHERE id = 11")
    assert _rows(conn, "SELECT * FROM c") == _rows(conn, view)
    conn.close()
    again = changeflow.connect(home, host_seconds=0)  # a restart resumes on the cluster
    again.execute("DELETE FROM p WHERE g = 0")
    assert _rows(again, "SELECT * FROM c") == _rows(again, view)
    again.close()
