"""A materialized view whose input holds a row its query cannot evaluate (22012 division by
zero, 22003 overflow) reports the error on every read, as PostgreSQL's query does, while that
row is there (after later writes and after a restart too), and is exact again once the row is
gone (Materialize's rule: the error is the view's content until its input changes it away)."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

import changeflow
from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import outcome  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE te (id int NOT NULL, a int, b int)"
INSERT = "INSERT INTO te VALUES (1, 6, 2), (2, 6, 3), (3, 2147483647, 1)"
VIEWS = {
    "quotients": "SELECT id, a / b AS q FROM te",
    "totals": "SELECT a % 2 AS g, sum(a / b) AS s, count(*) AS n FROM te GROUP BY a % 2",
    "joined": "SELECT x.id, y.id AS other FROM te x JOIN te y ON x.a / x.b = y.id",
    "doubled": "SELECT id, a * 2 AS d FROM te WHERE b >= 0",
}
# Each step: a change, then what every view must show (PostgreSQL's query is the oracle).
STEPS = [
    None,
    "INSERT INTO te VALUES (4, 1, 0)",  # 22012 in every view but doubled's (22003 there)
    "INSERT INTO te VALUES (5, 8, 4)",  # still failing: the offending rows are there
    "restart",
    "UPDATE te SET a = 5 WHERE id = 3",  # doubled is exact again; the others still fail
    "DELETE FROM te WHERE id = 4",  # every view exact again
    "restart",
    "INSERT INTO te VALUES (6, 0, 0), (7, 3, 1)",
    "DELETE FROM te WHERE b = 0",
]


def _shown(ours: changeflow.Connection, sql: str) -> tuple:
    return outcome(ours, sql, sort=True)


@pytest.mark.parametrize(
    "options", ["", pytest.param("WITH (CLUSTER = true)", marks=pytest.mark.spark)]
)
def test_a_failing_view_reports_its_error_until_the_row_is_gone(
    request: pytest.FixtureRequest, tmp_path: Path, postgres_url: str, options: str
) -> None:
    if options:
        request.getfixturevalue("spark")  # the session the cluster tier runs on
    home = tmp_path / "home"
    ours = changeflow.connect(home, host_seconds=0)
    ours.autocommit = True
    pg = psycopg.connect(postgres_url, autocommit=True)
    pg.execute("DROP TABLE IF EXISTS te")
    try:
        for conn in (ours, pg):
            conn.execute(CREATE)
            conn.execute(INSERT)
        for name, sql in VIEWS.items():
            ours.execute(f"CREATE MATERIALIZED VIEW {name} {options} AS {sql}")
        for step in STEPS:
            if step == "restart":
                ours.close()
                ours = changeflow.connect(home, host_seconds=0)
                ours.autocommit = True
            elif step is not None:
                for conn in (ours, pg):
                    conn.execute(step)
            for name, sql in VIEWS.items():
                expected = outcome(pg, sql, sort=True)
                for _ in range(3):  # every read, not only the first
                    got = _shown(ours, f"SELECT * FROM {name}")
                    assert got[0] == expected[0] and got[-1] == expected[-1], (step, name, got)
    finally:
        pg.execute("DROP TABLE te")
        pg.close()
        ours.close()


def test_other_views_keep_up_with_the_host_while_one_fails(tmp_path: Path) -> None:
    """The host steps the other items when one view's step raises."""
    with changeflow.connect(tmp_path / "home", host_seconds=0) as ours:
        ours.execute(CREATE)
        ours.execute(INSERT)
        ours.execute(f"CREATE MATERIALIZED VIEW quotients AS {VIEWS['quotients']}")
        ours.execute("CREATE MATERIALIZED VIEW ids AS SELECT id FROM te")
        ours.execute("INSERT INTO te VALUES (4, 1, 0)")
        ours.env.tick()
        assert ours.env.host_error is not None and ours.env.host_error.sqlstate == "22012"
        state = ours.env.catalog.load()
        ids = state.get("ids").id
        upper = ours.env.storage.state(ids).upper
        assert ours.env.storage.state(state.get("te").id).upper == upper
        with pytest.raises(DatabaseError) as caught:
            ours.execute("SELECT * FROM quotients")
        assert caught.value.sqlstate == "22012"
