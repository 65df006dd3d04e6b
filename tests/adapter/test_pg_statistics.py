"""stddev, stddev_samp, stddev_pop, variance, var_samp and var_pop compared with PostgreSQL 15:
of integers, numerics and doubles (numeric results at PostgreSQL's scales, NULL for one row in
the sample forms, DISTINCT, FILTER and OVER), ad hoc and maintained in materialized views through
inserts, updates, deletes and a restart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, materialize, outcome, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE st (id int NOT NULL, g int, i int, b bigint, x numeric(10,2), f float8)"
INSERT = (
    "INSERT INTO st VALUES (1, 1, 1, 10, 1.50, 1), (2, 1, 4, 20, 2.25, 2), (3, 1, 4, NULL,"
    " -0.75, 3), (4, 2, 7, 5, 3.00, 6), (5, 2, NULL, 5, NULL, NULL), (6, 3, 2, 1, 0.10, 0.5),"
    " (7, NULL, -3, 8, 12.34, -2.5), (8, 2, 9, 6, 3.00, 6)"
)
FORMS = ["stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop"]
AD_HOC = [
    "SELECT " + ", ".join(f"{f}(i), {f}(b), {f}(x), {f}(f)" for f in FORMS) + " FROM st",
    "SELECT g, " + ", ".join(f"{f}(x), {f}(f)" for f in FORMS) + " FROM st GROUP BY g ORDER BY 1",
    "SELECT g, stddev(DISTINCT i), var_pop(DISTINCT x), variance(i) FILTER (WHERE id > 1),"
    " stddev_pop(f * 2) FROM st GROUP BY g ORDER BY 1",
    "SELECT stddev(x), var_samp(f) FROM st WHERE id = 1",
    "SELECT stddev(x), var_pop(i) FROM st WHERE id > 100",
    "SELECT pg_typeof(stddev(i)), pg_typeof(variance(f)), pg_typeof(var_pop(x)),"
    " pg_typeof(stddev(1::int2)) FROM st",
    "SELECT variance(v), stddev(v), var_pop(v) FROM (VALUES (1.5), (2.25), (-0.125)) t(v)",
    "SELECT stddev(v), var_samp(v) FROM (VALUES (1e10), (1e10), (1e10)) t(v)",
    "SELECT stddev('1'), variance(NULL), var_pop('2.5'), pg_typeof(stddev_pop(NULL))",
    "SELECT id, stddev(x) OVER (PARTITION BY g), round((var_pop(f) OVER (ORDER BY id))"
    "::numeric, 10), variance(i) FILTER (WHERE id > 1) OVER (PARTITION BY g ORDER BY id"
    " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), stddev_pop(b) OVER w FROM st"
    " WINDOW w AS (ORDER BY id) ORDER BY id",
]
# In a view, a numeric keeps 10 decimals (an unconstrained numeric column's scale): its
# results here are compared as text and rounded, which the view computes before storing. A
# double's last digit is PostgreSQL's where its own running sums (Youngs-Cramer, in the rows'
# order) round as the count, sum and sum of squares do; where they do not, it is rounded.
MAINTAINED = [
    "SELECT g, stddev(f), stddev_pop(f), variance(f), var_pop(f) FROM st GROUP BY g",
    "SELECT g, stddev(x)::text, var_samp(x)::text, stddev_pop(i)::text, var_pop(b)::text"
    " FROM st GROUP BY g",
    "SELECT g, round(variance(i), 6), round(stddev_samp(x), 4), count(*) FROM st GROUP BY g",
    "SELECT stddev(i)::text, round(var_pop(f)::numeric, 10), variance(DISTINCT x)::text FROM st",
    "SELECT g, stddev_pop(x)::text FROM st WHERE i > 0 GROUP BY g HAVING variance(f) >= 0",
    "SELECT id, stddev(x) OVER (PARTITION BY g)::text, var_samp(f) OVER (PARTITION BY g"
    " ORDER BY id) FROM st",
]
CHANGES = [
    "INSERT INTO st VALUES (9, 3, 5, 2, 0.30, 1.5), (10, 4, 1, 1, 1.00, 8)",
    "UPDATE st SET x = x + 1.25, f = f * 2 WHERE g = 1",
    "DELETE FROM st WHERE id IN (1, 6)",
    "UPDATE st SET g = 2 WHERE id = 2",
    "DELETE FROM st WHERE g = 4",
]
ERRORS = [
    "SELECT var_pop(g::text) FROM st",
    "SELECT stddev(id > 1) FROM st",
    "SELECT stddev(DISTINCT i) OVER () FROM st",
    "SELECT variance() OVER () FROM st",
]


def rows(conn, sql: str) -> list:  # noqa: ANN001
    return sorted(outcome(conn, sql)[-1], key=str)


def test_statistics_ad_hoc_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "st", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)


def test_statistics_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "st", CREATE, INSERT) as (ours, pg):
        for i, sql in enumerate(MAINTAINED):
            materialize(ours, pg, f"v{i}", sql)
        for n, change in enumerate([None, *CHANGES]):
            if change is not None:
                for c in (ours, pg):
                    c.execute(change)
            if n == 3:  # the views' plans are read back from the catalog
                ours.close()
                ours = changeflow.connect(tmp_path / "home", host_seconds=0)
                ours.autocommit = True
            for i, sql in enumerate(MAINTAINED):
                want = rows(pg, sql)
                assert rows(ours, sql) == want, (sql, change)
                assert rows(ours, f"SELECT * FROM v{i}") == want, (sql, change)
