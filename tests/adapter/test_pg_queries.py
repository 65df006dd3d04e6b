"""DISTINCT ON, GROUPING SETS/ROLLUP/CUBE, table functions in FROM and ordered aggregates,
compared with PostgreSQL 15: the same statements on the same data, ad hoc and (where they can
be maintained) as materialized views kept through inserts, updates and deletes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, materialize, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE q (id int NOT NULL, g int, h text, x numeric(10,2), s text)"
INSERT = (
    "INSERT INTO q VALUES (1, 1, 'a', 10.50, 'p'), (2, 1, 'b', 3, 'q'), (3, 2, 'a', 3, 'r'),"
    " (4, 2, NULL, NULL, 's'), (5, 1, 'a', 10.50, 't'), (6, 3, 'c', -7.25, NULL),"
    " (7, 2, 'b', 20, 'u'), (8, NULL, 'a', 1, 'v')"
)
CHANGES = [
    "INSERT INTO q VALUES (9, 1, 'c', 4, 'w'), (10, 3, 'a', 100, 'x')",
    "UPDATE q SET x = x + 1, h = 'b' WHERE id IN (2, 7)",
    "DELETE FROM q WHERE id IN (1, 6)",
]
MAINTAINED = [
    "SELECT DISTINCT ON (g) g, id, x FROM q ORDER BY g, x DESC NULLS LAST, id",
    "SELECT DISTINCT ON (g, h) id, g, h FROM q ORDER BY h, g, id DESC",
    "SELECT DISTINCT ON (g % 2) g % 2 AS parity, s FROM q ORDER BY g % 2, s",
    "SELECT g, h, sum(x), count(*), grouping(g, h) FROM q GROUP BY ROLLUP (g, h) ORDER BY 5, 1, 2",
    "SELECT g, h, count(*), max(s), grouping(h) FROM q GROUP BY CUBE (g, h) ORDER BY 5, 4, 1, 2",
    "SELECT g, h, min(x) FROM q GROUP BY GROUPING SETS ((g), (h), ()) HAVING count(*) > 1 "
    "ORDER BY 1, 2, 3",
    "SELECT g, h, count(*) FROM q GROUP BY g, ROLLUP (h) ORDER BY 1, 2, 3",
    # comparisons inside ROLLUP, CUBE and GROUPING SETS (were syntax errors)
    "SELECT g > 1, count(*) FROM q GROUP BY ROLLUP (g > 1) ORDER BY 1, 2",
    "SELECT g, x > 1, count(*) FROM q GROUP BY CUBE (g, x > 1) ORDER BY 1, 2, 3",
    "SELECT g, h IS NULL, count(*) FROM q GROUP BY GROUPING SETS (g, h IS NULL, ())"
    " ORDER BY 1, 2, 3",
    "SELECT s.i, count(q.id) FROM generate_series(0, 4) AS s(i) LEFT JOIN q ON q.g = s.i "
    "GROUP BY s.i ORDER BY 1",
    "SELECT u.h, u.n, q.id FROM unnest(ARRAY['a', 'b', NULL]) WITH ORDINALITY AS u(h, n) "
    "JOIN q ON q.h = u.h ORDER BY 3",
    "SELECT id, (g, h) = (1, 'a'), (g, h) <> (2, 'b'), (g, x) < (2, 3), (g, x) >= (2, 3) FROM q "
    "WHERE (g, h) IS NOT NULL OR NOT (h, x) IS NULL ORDER BY id",
    "SELECT id FROM q WHERE (g, h, s) > (1, 'a', 'p') AND (g, id) <= (3, 9) ORDER BY id",
    "SELECT q.id, d FROM q, generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-01' + "
    "q.g * INTERVAL '1 day', INTERVAL '1 day') AS d ORDER BY 1, 2",
]
AD_HOC = [
    "SELECT * FROM generate_series(10, 1, -3) ORDER BY 1",
    "SELECT x, x * 2 FROM generate_series(1.5, 3, 0.5) AS x ORDER BY 1",
    "SELECT * FROM unnest(ARRAY[1, 2, 3], ARRAY['a', 'b']) AS u ORDER BY 1",
    "SELECT * FROM generate_series(1, 3) WITH ORDINALITY ORDER BY 1",
    "SELECT count(*) FROM generate_series(5, 1)",
    "SELECT * FROM generate_series(DATE '2024-01-30', DATE '2024-04-01', INTERVAL '1 month') "
    "AS g(d) ORDER BY 1",
    "SELECT generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-02', '6 hours') ORDER BY 1",
    "SELECT count(*), max(d) FROM generate_series(TIMESTAMPTZ '2024-01-03 00:00+00', "
    "TIMESTAMPTZ '2024-01-01 00:00+00', INTERVAL '-1 day') AS d",
    "SELECT count(*), min(q.id) FROM public.q",
    "SELECT g, h, avg(x) FROM q GROUP BY GROUPING SETS ((g), (h), ()) ORDER BY 1, 2, 3",
    "SELECT DISTINCT ON (h) h, id FROM q ORDER BY h NULLS FIRST, id LIMIT 2",
]
REFUSED = [
    "SELECT DISTINCT ON (g) g, id FROM q ORDER BY id",
    "SELECT g, grouping(id) FROM q GROUP BY ROLLUP (g)",
    "SELECT g, h FROM q GROUP BY ROLLUP (g)",
    "SELECT * FROM generate_series(1, 3, 0)",
    "SELECT * FROM generate_series('a'::text, 'b'::text)",
    "SELECT (1, 2) = (1, 2, 3)",
    "SELECT * FROM generate_series(DATE '2024-01-01', DATE '2024-01-02')",
    "SELECT generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-02', INTERVAL '0 days')",
]


def _shown(rows: list[tuple]) -> list[tuple]:
    """Rows as PostgreSQL prints them, in their order (every query here orders its rows)."""
    return [tuple("NULL" if v is None else str(v) for v in r) for r in rows]


def _texts(rows: list[tuple]) -> list[tuple]:
    return sorted(_shown(rows), key=str)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "q", CREATE, INSERT) as pair:
        yield pair


def test_queries_ad_hoc_and_maintained_as_postgres(both) -> None:
    ours, pg = both
    for i, sql in enumerate(MAINTAINED):
        materialize(ours, pg, f"m{i}", sql)
    for change in [None, *CHANGES]:
        if change is not None:
            for c in (ours, pg):
                c.execute(change)
        for sql in MAINTAINED + AD_HOC:
            got, want = ours.execute(sql), pg.execute(sql)
            assert [d[0] for d in got.description] == [d[0] for d in want.description], sql
            assert _shown(got.fetchall()) == _shown(want.fetchall()), (sql, change)
        for i, sql in enumerate(MAINTAINED):
            want = _texts(pg.execute(sql).fetchall())
            assert _texts(ours.execute(f"SELECT * FROM m{i}").fetchall()) == want, (sql, change)


def test_errors_as_postgres_gives_them(both) -> None:
    ours, pg = both
    same_errors(ours, pg, REFUSED)
