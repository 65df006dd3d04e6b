"""ANALYZE, VACUUM and CHECKPOINT as PostgreSQL 15 takes them (scripts, migrations and
restores run them): their command tags, the WARNING for a view (not VERBOSE's statistics),
the errors for an unknown relation, column or option and for VACUUM in a transaction block,
over the wire and embedded, compared with the same statements on a throwaway PostgreSQL
server."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest
from serve_clients import notices_of

sys.path.insert(0, str(Path(__file__).parent.parent / "adapter"))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

ACCEPTED = [
    "ANALYZE {t}",
    "ANALYSE {t} (a, b)",
    "ANALYZE VERBOSE {t}, {t}_m",
    "ANALYZE (VERBOSE, SKIP_LOCKED) {t}",
    "ANALYZE {t}_v",
    "VACUUM {t}",
    "VACUUM FULL FREEZE VERBOSE ANALYZE {t} (a)",
    "VACUUM (INDEX_CLEANUP off, PARALLEL 2, ANALYZE) {t}, {t}_m",
    "VACUUM {t}_v",
    "CHECKPOINT",
]
REFUSED = [
    "ANALYZE {t}_nosuch",
    "ANALYZE {t} (c)",
    "ANALYZE (foo) {t}",
    "VACUUM (foo) {t}",
    "VACUUM {t}_nosuch",
    "CHECKPOINT {t}",
]


def test_maintenance_over_the_wire_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    setup = [
        f"CREATE TABLE {t} (a int, b text)",
        f"CREATE VIEW {t}_v AS SELECT a FROM {t}",
        f"CREATE MATERIALIZED VIEW {t}_m AS SELECT a FROM {t}",
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        try:
            for sql in setup:
                ours.execute(sql)
                pg.execute(sql)
            for statement in ACCEPTED:
                sql = statement.format(t=t)
                if "VERBOSE" not in sql:  # (PostgreSQL's INFO lines count its pages)
                    assert notices_of(ours, sql) == notices_of(pg, sql), sql
                assert ours.execute(sql).statusmessage == pg.execute(sql).statusmessage, sql
            for statement in REFUSED:
                sql = statement.format(t=t)
                with pytest.raises(psycopg.Error) as theirs:
                    pg.execute(sql)
                with pytest.raises(psycopg.Error) as mine:
                    ours.execute(sql)
                assert mine.value.sqlstate == theirs.value.sqlstate, sql
                assert mine.value.diag.message_primary == theirs.value.diag.message_primary, sql
        finally:
            pg.execute(f"DROP TABLE IF EXISTS {t} CASCADE")


def test_maintenance_in_transactions_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    create = "CREATE TABLE mt (a int)"
    with beside_postgres(tmp_path / "home", postgres_url, "mt", create) as (ours, pg):
        for conn in (ours, pg):
            conn.execute("BEGIN")
        same_outcomes(ours, pg, ["SELECT 1"])
        for sql in ("ANALYZE mt", "CHECKPOINT"):
            ours.execute(sql)
            pg.execute(sql)
        same_errors(ours, pg, ["VACUUM mt"])
        for conn in (ours, pg):
            conn.execute("ROLLBACK")
