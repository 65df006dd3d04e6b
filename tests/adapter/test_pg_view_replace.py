"""CREATE OR REPLACE VIEW as PostgreSQL 15's: a new view, or the view defined anew (its OID
kept) when its columns stay, in name and type, with new ones after them; the errors for a
dropped, renamed or retyped column, a table of the name and MATERIALIZED; ROLLBACK puts the
old definition back. Compared with PostgreSQL statement by statement."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = (
    "DROP VIEW IF EXISTS vr",
    "CREATE TABLE vr_t (a int, b text)",
    "INSERT INTO vr_t VALUES (1, 'x'), (2, 'y')",
)
STATEMENTS = [
    "CREATE OR REPLACE VIEW vr AS SELECT a FROM vr_t",
    "SELECT * FROM vr ORDER BY a",
    "CREATE OR REPLACE VIEW vr AS SELECT a, b FROM vr_t WHERE a > 1",
    "SELECT * FROM vr ORDER BY a",
    "BEGIN",
    "CREATE OR REPLACE VIEW vr AS SELECT a, b, 'in' AS c FROM vr_t",
    "SELECT * FROM vr ORDER BY a",
    "ROLLBACK",
    "SELECT * FROM vr ORDER BY a",
    "SELECT attname FROM pg_attribute WHERE attrelid = 'vr'::regclass AND attnum > 0 "
    "ORDER BY attnum",
]
REFUSED = [
    "CREATE OR REPLACE VIEW vr AS SELECT b FROM vr_t",
    "CREATE OR REPLACE VIEW vr AS SELECT a AS z, b FROM vr_t",
    "CREATE OR REPLACE VIEW vr AS SELECT a::text, b FROM vr_t",
    "CREATE OR REPLACE VIEW vr AS SELECT a FROM vr_t",
    "CREATE OR REPLACE VIEW vr_t AS SELECT 1 AS a",
    "CREATE OR REPLACE MATERIALIZED VIEW vr AS SELECT 1",
]


def test_create_or_replace_view_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "vr_t CASCADE", *SETUP) as (ours, pg):
        first = outcome(ours, "CREATE VIEW vr0 AS SELECT 1 AS one")
        oid = ours.execute("SELECT 'vr0'::regclass::oid").fetchone()
        ours.execute("CREATE OR REPLACE VIEW vr0 AS SELECT 1 AS one, 2 AS two")
        assert first == ("ok",)
        assert ours.execute("SELECT 'vr0'::regclass::oid").fetchone() == oid  # the same view
        same_outcomes(ours, pg, STATEMENTS)
        same_errors(ours, pg, REFUSED)
        assert outcome(ours, "SELECT * FROM vr ORDER BY a") == outcome(
            pg, "SELECT * FROM vr ORDER BY a"
        )


def test_a_view_others_read_is_not_replaced(tmp_path: Path) -> None:
    import changeflow
    from changeflow.adapter.connection import DatabaseError

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    conn.execute("CREATE TABLE t (a int)")
    conn.execute("CREATE VIEW v AS SELECT a FROM t")
    conn.execute("CREATE MATERIALIZED VIEW m AS SELECT count(*) AS n FROM v")
    with pytest.raises(DatabaseError) as e:
        conn.execute("CREATE OR REPLACE VIEW v AS SELECT a, a + 1 AS b FROM t")
    assert e.value.sqlstate == "0A000" and "m" in str(e.value)
    assert [d[0] for d in conn.execute("SELECT * FROM v").description] == ["a"]
    conn.close()
