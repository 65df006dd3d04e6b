"""Spark's JDBC reader (PostgreSQL's JDBC driver) reading a table through ``changeflow serve``,
compared with the same read of PostgreSQL 15: numeric(p,s) columns are read as decimal(p,s),
from the type modifiers of the server's RowDescription, as from PostgreSQL's."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

SETUP = [
    "CREATE TABLE {t} (id int PRIMARY KEY, name text, at timestamptz, ok boolean, n bigint, "
    "f double precision, d date, s smallint, p numeric(10,2), q numeric(5), v varchar(12))",
    "INSERT INTO {t} VALUES (1, 'a', '2020-01-01 00:00:00+00', true, 5, 1.5, '2020-01-02', 3, "
    "1470.1, 12345, 'x'), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]


def _driver() -> Path:
    """PostgreSQL's JDBC driver from the local Maven repository, else skip (it is not
    fetched)."""
    jars = sorted(Path.home().glob(".m2/repository/org/postgresql/postgresql/*/postgresql-*.jar"))
    if not jars:
        pytest.skip("PostgreSQL's JDBC driver is not in ~/.m2")
    return jars[-1]


def _read(spark, url: str, user: str, table: str) -> tuple:  # noqa: ANN001
    frame = (
        spark.read.format("jdbc")
        .option("url", url)
        .option("user", user)
        .option("dbtable", table)
        .option("driver", "org.postgresql.Driver")
        .load()
    )
    return frame.schema.simpleString(), sorted(frame.collect(), key=lambda r: r.id)


def test_spark_jdbc_read_as_on_postgres(spark, server, postgres_url: str, table_name: str) -> None:
    spark.sql(f"ADD JAR '{_driver()}'")
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            for sql in SETUP:
                conn.execute(sql.format(t=table_name))
        try:
            hostport = postgres_url.split("@", 1)[1]
            theirs = _read(spark, f"jdbc:postgresql://{hostport}", "postgres", table_name)
            served = f"jdbc:postgresql://{server.host}:{server.port}/materialize"
            assert _read(spark, served, "tester", table_name) == theirs
            assert len(theirs[1]) == 2
        finally:
            pg.execute(f"DROP TABLE {table_name}")
            ours.execute(f"DROP TABLE {table_name}")
