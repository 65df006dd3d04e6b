"""corr, covar_pop, covar_samp and the regr_* aggregates compared with PostgreSQL 15: of
integers, numerics and doubles, pairs with a NULL left out, groups of none, one and constant
values (NULL or PostgreSQL's value), FILTER, ad hoc and maintained in materialized views
through inserts, updates and deletes. The data's sums are exact in doubles, so PostgreSQL's
Youngs-Cramer accumulation and the exact sums round alike, to its digits."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE rg (id int NOT NULL, g int, y int, x numeric(6,2), f float8)"
INSERT = (
    "INSERT INTO rg VALUES (1, 1, 1, 1.50, 2), (2, 1, 4, 2.25, 3.5), (3, 1, 7, -0.75, 0.5),"
    " (4, 2, 7, 3.00, 6), (5, 2, NULL, 5.00, 1), (6, 3, 2, 0.50, 0.5), (7, NULL, -3, 12.25, -2.5),"
    " (8, 2, 9, 3.00, 6), (9, 4, 5, NULL, NULL), (10, 5, 3, 1.00, 1), (11, 5, 3, 1.00, 4)"
)
FORMS = [
    "corr", "covar_pop", "covar_samp", "regr_count", "regr_sxx", "regr_syy", "regr_sxy",
    "regr_avgx", "regr_avgy", "regr_r2", "regr_slope", "regr_intercept",
]  # fmt: skip
ALL = ", ".join(f"{f}(y, x), {f}(f, y)" for f in FORMS)
# PostgreSQL's running sums depend on the rows' order; where they round (the whole table, and
# any group after updates move rows) the results are compared rounded to 10 places
ROUNDED = ", ".join(f"round({f}(y, x)::numeric, 10), round({f}(f, y)::numeric, 10)" for f in FORMS)
AD_HOC = [
    f"SELECT {ROUNDED} FROM rg",
    f"SELECT g, {ALL} FROM rg GROUP BY g ORDER BY 1",
    "SELECT g, corr(y, f) FILTER (WHERE id > 1), regr_count(x, f) FILTER (WHERE id < 8),"
    " regr_slope(x * 2, y + 1) FROM rg GROUP BY g ORDER BY 1",
    f"SELECT {ALL} FROM rg WHERE id > 100",
    "SELECT corr(v, w), regr_intercept(v, w), regr_r2(v, w), regr_r2(w, v) FROM"
    " (VALUES (1, 5), (2, 5), (3, 5)) t(v, w)",
    "SELECT pg_typeof(corr(y, x)), pg_typeof(regr_count(y, f)), corr(NULL, 1), covar_pop('1', 2)"
    " FROM rg",
]
MAINTAINED = [
    f"SELECT g, {ROUNDED} FROM rg GROUP BY g",
    "SELECT round(corr(y, x)::numeric, 10), round(regr_slope(f, x)::numeric, 10),"
    " regr_count(y, f), round(covar_samp(x, f)::numeric, 10) FROM rg",
    "SELECT g, round(regr_intercept(y, f) FILTER (WHERE id <> 2)::numeric, 10) FROM rg GROUP BY g"
    " HAVING regr_count(y, x) > 0",
]
CHANGES = [
    "INSERT INTO rg VALUES (12, 3, 5, 2.50, 1.5), (13, 6, 1, 1.00, 8)",
    "UPDATE rg SET x = x + 1.25, f = f * 2 WHERE g = 1",
    "DELETE FROM rg WHERE id IN (1, 6)",
    "UPDATE rg SET g = 2 WHERE id = 2",
    "DELETE FROM rg WHERE g = 5",
]
ERRORS = [
    "SELECT corr(y, g::text) FROM rg",
    "SELECT regr_slope(id > 1, x) FROM rg",
    "SELECT covar_pop(y) FROM rg",  # was 42601: one argument, no such function (42883)
    "SELECT corr(y, x, f) FROM rg",  # (its third argument was dropped)
    "SELECT regr_count(y) FROM rg",
]


def test_regression_ad_hoc_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rg", CREATE, INSERT) as (ours, pg):
        same_outcomes(ours, pg, AD_HOC)
        same_errors(ours, pg, ERRORS)


def test_regression_maintained_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rg", CREATE, INSERT) as (ours, pg):
        maintained_as_postgres(ours, pg, MAINTAINED, CHANGES)
