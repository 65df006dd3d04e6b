"""Temporary tables through ``changeflow serve``: psycopg connections each see only their own
(a temporary table shadows a permanent one of its name, COPY and every write work on it), one
ends (or runs DISCARD TEMP) and its temporary tables go with it; psql's ``\\dt`` lists them
as PostgreSQL 15 does."""

from __future__ import annotations

import re
import subprocess
import time

import psycopg
import pytest
from serve_clients import PSQL, psql

pytestmark = pytest.mark.postgres


def _temporary_count(conn, schema: str) -> int:
    return conn.execute(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s",
        (schema,),
    ).fetchone()[0]


def test_two_connections_do_not_see_each_others(server, table_name: str) -> None:
    t = table_name
    with server.connect() as one, server.connect() as other:
        one.execute(f"CREATE TABLE {t} (a int, b text)")
        one.execute(f"INSERT INTO {t} VALUES (1, 'permanent')")
        one.execute(f"CREATE TEMP TABLE {t} (a int, b text) ON COMMIT PRESERVE ROWS")
        with one.cursor().copy(f"COPY {t} FROM STDIN") as copy:
            copy.write("2\tcopied\n3\tx\n")
        one.execute(f"UPDATE {t} SET b = 'y' WHERE a = 3")
        assert one.execute(f"SELECT * FROM {t} ORDER BY a").fetchall() == [
            (2, "copied"),
            (3, "y"),
        ]
        assert other.execute(f"SELECT * FROM {t}").fetchall() == [(1, "permanent")]
        same = f"SELECT a FROM {t} WHERE a > 0 ORDER BY a"  # one text, planned for each
        assert one.execute(same).fetchall() == [(2,), (3,)]
        assert other.execute(same).fetchall() == [(1,)]
        schema = one.execute(
            "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relname = %s AND c.relpersistence = 't'",
            (t,),
        ).fetchone()[0]
        assert schema.startswith("pg_temp_")
        other.execute(f"CREATE TEMP TABLE {t}_only (a int)")
        assert one.execute(
            "SELECT count(*) FROM pg_class WHERE relname = %s AND pg_table_is_visible(oid)",
            (f"{t}_only",),
        ).fetchone() == (0,)
        one.close()
        deadline = time.monotonic() + 60  # the server ends the connection after it closes
        while _temporary_count(other, schema) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _temporary_count(other, schema) == 0
        assert other.execute(f"SELECT * FROM {t}").fetchall() == [(1, "permanent")]
        assert other.execute(f"SELECT count(*) FROM {t}_only").fetchone() == (0,)
        other.execute("DISCARD TEMP")  # as PostgreSQL: its temporary tables dropped
        with pytest.raises(psycopg.errors.UndefinedTable):
            other.execute(f"SELECT * FROM {t}_only")
        other.execute(f"DROP TABLE {t}")


@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
def test_psql_lists_them_as_postgres(start_server, postgres_url: str) -> None:
    served = start_server()
    commands = [
        "-c",
        "CREATE TEMP TABLE tmp_listed (a int)",
        "-c",
        "CREATE TEMP VIEW tmp_seen AS SELECT 1 AS one",
        "-c",
        "\\dt",
        "-c",
        "\\dv",
        "-c",
        "\\d tmp_listed",
    ]
    theirs = subprocess.run(
        [PSQL, "-X", "-w", "-A", "-F", "|", postgres_url, *commands],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert theirs.returncode == 0, theirs.stderr
    ours = psql(served, "-A", "-F", "|", *commands)
    assert ours.returncode == 0, ours.stderr

    def shown(out: str) -> str:
        return re.sub(r"pg_temp_\d+", "pg_temp_N", out).replace("|postgres", "|tester")

    assert "pg_temp_N|tmp_listed|table" in shown(ours.stdout)
    assert shown(ours.stdout) == shown(theirs.stdout)
