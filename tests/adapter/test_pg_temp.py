"""Temporary tables here and on PostgreSQL 15: CREATE TEMP TABLE (… AS, SELECT … INTO TEMP),
a temporary table shadowing a permanent one, its writes, TRUNCATE and DROP, ON COMMIT DELETE
ROWS and DROP, a ROLLBACK of its creation, views over it (temporary, with PostgreSQL's
NOTICE) and materialized views over it (refused), and the catalogs that show it. Then what
PostgreSQL does not show from one connection: another connection, and a process killed with
its temporary table, leave nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_errors, same_outcomes  # noqa: E402

import changeflow  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = ["CREATE TABLE tp (a int, b text)", "INSERT INTO tp VALUES (1, 'permanent')"]
STATEMENTS = [
    "CREATE TEMP TABLE tp (a int, b text)",
    "SELECT * FROM tp",
    "INSERT INTO tp VALUES (2, 'temporary'), (3, 'x')",
    "SELECT * FROM tp ORDER BY a",
    "SELECT * FROM public.tp",
    "INSERT INTO public.tp VALUES (9, 'p')",
    "UPDATE public.tp SET b = 'q' WHERE a = 9",
    "SELECT * FROM public.tp ORDER BY a",
    "CREATE VIEW public.pv AS SELECT * FROM public.tp",
    "SELECT * FROM pv ORDER BY a",
    "DROP VIEW public.pv",
    "SELECT * FROM pg_temp.tp ORDER BY a",
    "SET search_path TO public, pg_temp",
    "SELECT * FROM tp ORDER BY a",
    "SET search_path TO DEFAULT",
    "SELECT * FROM tp ORDER BY a",
    "UPDATE tp SET b = 'y' WHERE a = 3",
    "DELETE FROM tp WHERE a = 2",
    "SELECT * FROM tp",
    "CREATE TEMPORARY TABLE tq AS SELECT a * 10 AS c FROM public.tp",
    "SELECT * FROM tq",
    "SELECT a + 1 AS d INTO TEMP tz FROM tp",
    "SELECT * FROM tz",
    "CREATE TABLE pg_temp.tw (k int PRIMARY KEY)",
    "INSERT INTO tw VALUES (1)",
    "INSERT INTO tw VALUES (1)",
    "SELECT c.relname, c.relpersistence, n.nspname LIKE 'pg_temp%' FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relname IN ('tp', 'tq', 'tz', 'tw') ORDER BY 1, 2",
    "SELECT table_name, table_type, table_schema LIKE 'pg_temp%' FROM information_schema.tables"
    " WHERE table_name IN ('tp', 'tq', 'tz', 'tw') ORDER BY 1, 2",
    "SELECT c.relname FROM pg_class c WHERE c.relname IN ('tp', 'tq')"
    " AND pg_table_is_visible(c.oid) ORDER BY 1",
    "CREATE TEMP TABLE ts (id serial PRIMARY KEY, b text)",
    "INSERT INTO ts (b) VALUES ('a'), ('b')",
    "CREATE INDEX ts_b ON ts (b)",
    "ALTER TABLE ts ADD COLUMN c int",
    "SELECT * FROM ts ORDER BY id",
    "SELECT relname, relkind, relpersistence FROM pg_class WHERE relname LIKE 'ts%' ORDER BY 1",
    "DROP TABLE ts",
    "SELECT count(*) FROM pg_class WHERE relname LIKE 'ts%'",
    "TRUNCATE tp",
    "SELECT count(*) FROM tp",
    "BEGIN",
    "CREATE TEMP TABLE tr (a int)",
    "INSERT INTO tr VALUES (1)",
    "SELECT * FROM tr",
    "ROLLBACK",
    "SELECT * FROM tr",
    "CREATE TEMP TABLE td (a int) ON COMMIT DELETE ROWS",
    "INSERT INTO td VALUES (1)",
    "SELECT * FROM td",
    "BEGIN",
    "INSERT INTO td VALUES (2)",
    "SELECT * FROM td",
    "COMMIT",
    "SELECT * FROM td",
    "CREATE TEMP TABLE tk (a int) ON COMMIT PRESERVE ROWS",
    "INSERT INTO tk VALUES (4)",
    "SELECT * FROM tk",
    "BEGIN",
    "CREATE TEMP TABLE tdd (a int) ON COMMIT DROP",
    "INSERT INTO tdd VALUES (1)",
    "SELECT * FROM tdd",
    "COMMIT",
    "SELECT * FROM tdd",
    "CREATE TEMP TABLE gone (a int) ON COMMIT DROP",
    "SELECT * FROM gone",
    "CREATE TEMP TABLE cd ON COMMIT DELETE ROWS AS SELECT 1 AS a",
    "SELECT * FROM cd",
    "INSERT INTO cd VALUES (1) RETURNING a",
    "SELECT * FROM cd",
    "DROP TABLE tp",
    "SELECT * FROM tp",
    "DROP TABLE tq, tz, tw, td, tk, cd",
    "SELECT * FROM tq",
]
REFUSED = [
    "CREATE TEMP TABLE public.tx (a int)",
    "CREATE MATERIALIZED VIEW mq AS SELECT * FROM tv",
    "SELECT * FROM pg_temp.tp",
    "CREATE TABLE pfk (a int REFERENCES tv)",
    "CREATE TABLE pc (a int) ON COMMIT DROP",
    "CREATE TEMP TABLE tf (a int) ON COMMIT FOO",
]


def test_temporary_tables_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "tp", *SETUP) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
        for c in (ours, pg):
            c.execute("CREATE TEMP TABLE tv (a int PRIMARY KEY)")
        same_errors(ours, pg, REFUSED)


def test_a_view_over_a_temporary_table_is_temporary(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "tp", *SETUP) as (ours, pg):
        heard: list[str] = []
        pg.add_notice_handler(lambda d: heard.append(d.message_primary))
        statements = [
            "CREATE TEMP TABLE tv (a int)",
            "INSERT INTO tv VALUES (7)",
            "CREATE VIEW vv AS SELECT tv.a, tp.b FROM tv, public.tp",
            "SELECT * FROM vv",
            "SELECT c.relpersistence, n.nspname LIKE 'pg_temp%' FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'vv'",
            "CREATE TEMP VIEW vw AS SELECT 1 AS one",
            "SELECT * FROM vw",
            "SELECT relpersistence FROM pg_class WHERE relname = 'vw'",
            "DROP VIEW vv",
            "SELECT * FROM vv",
        ]
        same_outcomes(ours, pg, statements)
        ours_heard = [n.split(":", 1)[1].strip() for n in ours.notices]
        assert heard == ['view "vv" will be a temporary view']
        assert ours_heard == heard


def test_temporary_sequences_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "tp", *SETUP) as (ours, pg):
        same_outcomes(
            ours,
            pg,
            [
                "CREATE TEMP SEQUENCE tseq",
                "SELECT currval('tseq')",
                "SELECT nextval('tseq'), nextval('tseq'), currval('tseq')",
                "SELECT currval('tseq'), nextval('tseq'), currval('tseq')"
                " FROM generate_series(1, 3)",
                "CREATE TEMPORARY SEQUENCE IF NOT EXISTS tseq START 5",
                "CREATE TEMP SEQUENCE ts2 START 10 INCREMENT 5",
                "SELECT nextval('ts2'), nextval('pg_temp.ts2')",
                "SELECT relname, relpersistence, relkind FROM pg_class"
                " WHERE relname IN ('tseq', 'ts2') ORDER BY 1",
                "CREATE TEMP SEQUENCE public.ts3",
                "DROP SEQUENCE ts2",
                "SELECT nextval('ts2')",
            ],
        )
        pg.execute("DROP SEQUENCE tseq")
        ours.close()
        again = changeflow.connect(tmp_path / "home", host_seconds=0)
        assert outcome(again, "SELECT nextval('tseq')") == ("error", "42P01")
        again.close()


def test_another_connection_does_not_see_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    one = changeflow.connect(home, host_seconds=0)
    one.autocommit = True
    other = changeflow.connect(home, host_seconds=0)
    other.autocommit = True
    try:
        one.execute("CREATE TABLE shared (a int)")
        one.execute("INSERT INTO shared VALUES (1)")
        one.execute("CREATE TEMP TABLE shared (a int)")
        one.execute("CREATE TEMP TABLE mine (a int)")
        one.execute("INSERT INTO shared VALUES (2)")
        assert one.execute("SELECT * FROM shared").fetchall() == [(2,)]
        assert other.execute("SELECT * FROM shared").fetchall() == [(1,)]
        assert outcome(other, "SELECT * FROM mine") == ("error", "42P01")
        assert [r for r in other.execute("SHOW TABLES").fetchall() if "mine" in r[0]] == []
        schema = one.execute(
            "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relname = 'mine'"
        ).fetchall()[0][0]
        assert schema.startswith("pg_temp_")
        assert outcome(other, f"SELECT * FROM {schema}.mine") == ("error", "0A000")
        assert outcome(other, f"SELECT * FROM {schema}.absent") == ("error", "42P01")
        assert outcome(other, f"CREATE TABLE {schema}.x (a int)") == ("error", "0A000")
        other.execute("CREATE TEMP TABLE mine (b text)")  # its own, of the same name
        other.execute("INSERT INTO mine VALUES ('x')")
        assert one.execute("SELECT * FROM mine").fetchall() == []
    finally:
        one.close()
    assert other.execute("SELECT * FROM shared").fetchall() == [(1,)]
    assert other.execute("SELECT * FROM mine").fetchall() == [("x",)]
    left = other.execute(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        f" WHERE n.nspname = '{schema}'"
    ).fetchall()
    other.close()
    assert left == [(0,)]
    again = changeflow.connect(home, host_seconds=0)
    try:
        assert outcome(again, "SELECT * FROM mine") == ("error", "42P01")
    finally:
        again.close()


KILLED = """
import sys, changeflow
c = changeflow.connect(sys.argv[1], host_seconds=0)
c.autocommit = True
c.execute("CREATE TEMP TABLE doomed (a int, b text)")
c.execute("INSERT INTO doomed VALUES (1, 'a'), (2, 'b')")
print("ready", flush=True)
sys.stdin.read()
"""


def test_nothing_of_it_survives_a_killed_process(tmp_path: Path) -> None:
    home = tmp_path / "home"
    changeflow.connect(home, host_seconds=0).close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED), str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        watcher = changeflow.connect(home, host_seconds=0)  # the owner is alive: kept, unseen
        assert outcome(watcher, "SELECT * FROM doomed") == ("error", "42P01")
        items = watcher.session.env.catalog.load().items.values()
        shards = {i.shard for i in items if "temp" in i.options}
        assert len(shards) == 1
        watcher.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    after = changeflow.connect(home, host_seconds=0)
    try:
        env_after = after.session.env
        assert [i for i in env_after.catalog.load().items.values() if "temp" in i.options] == []
        assert not shards & set(env_after.storage.catalog().entries)
        spaces = "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp%'"
        assert outcome(after, spaces) == ("ok", ["count"], [("0",)])
    finally:
        after.close()
