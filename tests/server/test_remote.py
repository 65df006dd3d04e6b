"""The same ways in, through a server: ``changeflow.connect(url=…)`` and ``changeflow sql --url``
behave as the embedded connection does, and see the embedded processes' writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal

import psycopg
import pytest
from serve_clients import PSQL

import changeflow


def url(server, user: str = "tester") -> str:
    return f"postgresql://{user}@{server.host}:{server.port}/materialize"


def test_connect_by_url_is_the_same_api(server, table_name: str) -> None:
    with changeflow.connect(url=url(server)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {table_name} (id int NOT NULL, price numeric(6,2))")
        cur.executemany(
            f"INSERT INTO {table_name} VALUES (%s, %s)", [(1, Decimal("1.5")), (2, None)]
        )
        result = conn.sql(f"SELECT id, price FROM {table_name} ORDER BY id")
        assert result.rows == [(1, Decimal("1.5")), (2, None)]
        assert result.to_arrow().column("id").to_pylist() == [1, 2]
        with pytest.raises(Exception) as caught:
            conn.execute(f"INSERT INTO {table_name} VALUES (NULL, 1)")
        assert getattr(caught.value, "sqlstate", None) == "23502"


def test_subscribe_by_url_ends_at_up_to(server, table_name: str) -> None:
    with changeflow.connect(url=url(server)) as conn:
        conn.execute(f"CREATE TABLE {table_name} (a int)")
        conn.execute(f"INSERT INTO {table_name} VALUES (5)")
        sub = conn.subscribe(f"SUBSCRIBE {table_name} WITH (PROGRESS)")
        got = []
        while not any(row[1] for row in got):  # until a progress row
            got += sub.poll(1.0)
        assert [(d, a) for _, progressed, d, a in got if not progressed] == [(1, 5)]
        sub.close()


def test_embedded_and_served_processes_agree(server, table_name: str) -> None:
    """A write through the server is seen by an embedded connection on the same home, and the
    other way round."""
    with changeflow.connect(url=url(server)) as remote:
        remote.execute(f"CREATE TABLE {table_name} (a int)")
        remote.execute(f"INSERT INTO {table_name} VALUES (1)")
        with changeflow.connect(server.home, host_seconds=0) as local:
            assert local.execute(f"SELECT a FROM {table_name}").fetchall() == [(1,)]
            local.execute(f"INSERT INTO {table_name} VALUES (2)")
        assert sorted(remote.execute(f"SELECT a FROM {table_name}").fetchall()) == [(1,), (2,)]


def test_changeflow_sql_by_url(server, table_name: str) -> None:
    def sql(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "changeflow.cli", "sql", "--url", url(server), *args]
        return subprocess.run(cmd, capture_output=True, text=True)

    done = sql(
        "-c",
        f"CREATE TABLE {table_name} (a int)",
        "-c",
        f"INSERT INTO {table_name} VALUES (3)",
        "-c",
        f"SELECT a FROM {table_name}",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(x) for x in done.stdout.splitlines()] == [{"a": 3}]
    bad = sql("-c", "SELECT nope FROM nowhere")
    assert (
        bad.returncode == 1 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr
    )


@pytest.mark.postgres
@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
def test_changeflow_sql_prints_notices_as_psql(server, postgres_url: str, table_name: str) -> None:
    """The NOTICEs (and their DETAIL) of ``changeflow sql``, embedded and by url, on standard
    error as psql prints PostgreSQL's; status lines aside."""
    t = table_name
    statements = [
        f"DROP TABLE IF EXISTS {t}_nope",
        f"CREATE TABLE {t} (a int)",
        f"CREATE VIEW {t}_v1 AS SELECT a FROM {t}",
        f"CREATE VIEW {t}_v2 AS SELECT a FROM {t}_v1",
        f"DROP TABLE {t} CASCADE",
        f"CREATE TABLE {t} (a int)",
        f"CREATE VIEW {t}_v1 AS SELECT a FROM {t}",
        f"DROP TABLE {t} CASCADE",
    ]
    args = [a for s in statements for a in ("-c", s)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"PSQLRC": "/dev/null"}
    try:
        theirs = subprocess.run(
            [PSQL, "-X", "-w", "-d", postgres_url, *args], capture_output=True, text=True, env=env
        ).stderr
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as pg:
            pg.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
    statuses = {"CREATE TABLE", "CREATE VIEW", "DROP TABLE"}
    cli = [sys.executable, "-m", "changeflow.cli", "sql"]
    for where in (["--url", url(server)], ["--home", str(server.home)]):
        ours = subprocess.run([*cli, *where, *args], capture_output=True, text=True)
        notes = [line for line in ours.stderr.splitlines() if line not in statuses]
        assert ours.returncode == 0, ours.stderr
        assert notes == theirs.splitlines(), where
