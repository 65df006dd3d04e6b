"""A view's shown definition (SHOW CREATE VIEW, pg_views and pg_matviews) names the current
tables and columns after ALTER TABLE … RENAME, as PostgreSQL 15's pg_get_viewdef does: the
relations, columns and output names in the two definitions are the same, and the definition
shown still gives the view's rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, unordered  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE vt (a int, b text)",
    "INSERT INTO vt VALUES (1, 'x'), (2, 'y'), (-1, 'z')",
    "CREATE VIEW vv AS SELECT a, b AS bb, a + 1 AS c, upper(b) FROM vt WHERE a > 0",
    "CREATE VIEW vv2 AS SELECT x.a FROM vt x JOIN vv ON x.a = vv.a",
    "CREATE VIEW vv3 AS SELECT * FROM vt",
    "CREATE VIEW vv4 AS SELECT s.a, (SELECT count(*) FROM vt) AS n FROM (SELECT a FROM vt) s",
]
RENAMES = ["ALTER TABLE vt RENAME COLUMN a TO a2", "ALTER TABLE vt RENAME TO vt2"]
VIEWS = {"vv": "view", "vv2": "view", "vv3": "view", "vv4": "view"}


def _names(definition: str) -> tuple:
    """The relations, columns and output names a definition mentions."""
    tree = sqlglot.parse_one(definition.strip().rstrip(";"), read="postgres")
    return (
        sorted({t.name for t in tree.find_all(exp.Table)}),
        sorted({c.name for c in tree.find_all(exp.Column)}),
        [s.alias_or_name for s in tree.selects],
    )


def test_view_definitions_follow_renames_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "vt2 CASCADE") as (ours, pg):
        pg.execute("DROP TABLE IF EXISTS vt CASCADE")  # left by a run stopped midway
        for conn in (ours, pg):
            for sql in [*SETUP, "CREATE MATERIALIZED VIEW mv AS SELECT b, a FROM vt"]:
                conn.execute(sql)
        for sql in RENAMES:
            ours.execute(sql)
            pg.execute(sql)
        for name in [*VIEWS, "mv"]:
            table, key = (
                ("pg_matviews", "matviewname") if name == "mv" else ("pg_views", "viewname")
            )
            query = f"SELECT definition FROM {table} WHERE {key} = '{name}'"
            (theirs,) = pg.execute(query).fetchone()
            (shown,) = ours.execute(query).fetchone()
            assert _names(shown) == _names(theirs), (name, shown, theirs)
            kind = "MATERIALIZED VIEW" if name == "mv" else "VIEW"
            ((_, create),) = ours.execute(f"SHOW CREATE {kind} {name}").fetchall()
            assert create.rstrip(";").endswith(shown.rstrip(";")), (create, shown)
            rows = unordered(ours, f"SELECT * FROM {name}")
            assert unordered(ours, shown.rstrip(";")) == rows == unordered(pg, f"TABLE {name}")
