"""``time`` (without time zone) compared with PostgreSQL 15: literals, casts, comparison and
order, ``time ± interval``, ``time - time``, ``date + time``, extract and date_part, ad hoc
and installed as materialized views kept through inserts, updates and deletes (and read again
after a restart), and PostgreSQL's errors. Intervals are compared as text."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import changeflow

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, outcome, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE tt (id int NOT NULL, t time, ts timestamp, tz timestamptz, d date, i interval)",
    "INSERT INTO tt VALUES (1, '12:34:56.789', '2024-03-05 10:11:12.5', '2024-03-05 23:00:01+00',"
    " '2024-03-05', '1 day 02:03:04.5'), (2, '23:59:59.999999', '1999-12-31 23:59:59',"
    " '2000-01-01 00:00:00+00', '2000-01-01', '-5 hours'), (3, NULL, NULL, NULL, NULL, NULL),"
    " (4, '00:00', '2024-01-01', '2024-01-01 12:00+00', '2024-01-01', '30 minutes'),"
    " (5, '1:02:03 PM', '2024-02-29 06:00', '2024-02-29 06:00+00', '2024-02-29', '-25 hours')",
]
CHANGES = [
    "INSERT INTO tt VALUES (6, '07:08:09.010203', '2021-01-03 07:08:09', NULL, '2021-01-03',"
    " '90 seconds'), (7, '12:34:56.789', NULL, NULL, NULL, '1 mon')",
    "UPDATE tt SET t = t + interval '90 minutes', i = i * 2 WHERE id IN (1, 4)",
    "DELETE FROM tt WHERE id = 2",
]
QUERIES = [
    "SELECT id, t, t::text FROM tt",
    "SELECT id, t + interval '1 hour', t - interval '13 hours', interval '25 hours' + t, t + i,"
    " t - i FROM tt",
    "SELECT id, (t - time '12:00')::text, d + t, t + d, d - t, ts + t, t + tz, tz - t FROM tt",
    "SELECT id, ts::time, tz::time, i::time, (t::interval)::text FROM tt",
    "SELECT id FROM tt WHERE t > '12:00' AND t <= time '23:59:59.999999'",
    "SELECT id, t < time '13:00', t = '12:34:56.789', t IS NULL, greatest(t, '12:00') FROM tt",
    "SELECT max(t), min(t), count(DISTINCT t) FROM tt",
    "SELECT t, count(*) FROM tt GROUP BY t",
    "SELECT id, t FROM tt ORDER BY t DESC NULLS LAST, id LIMIT 3",
    "SELECT id, extract(hour FROM t), extract(minute FROM t), extract(second FROM t),"
    " extract(milliseconds FROM t), extract(microseconds FROM t), extract(epoch FROM t) FROM tt",
    "SELECT id, date_part('hour', t), date_part('second', t), date_part('epoch', t),"
    " date_part('milliseconds', t), date_part('us', t) FROM tt",
    "SELECT a.id, b.id FROM tt a JOIN tt b ON a.t = b.t",
]
CONSTANTS = [
    "SELECT TIME '12:34:56.789', '01:02'::time, '1:02:03 PM'::time, '12:00 am'::time,"
    " '2024-01-01 05:06:07'::time, ' 7:08 '::time, '00:00:00.0000005'::time",
    "SELECT time '23:00' + interval '2 hours', time '01:00' - interval '1 day 2 hours',"
    " (time '01:00' - time '23:00')::text, date '2024-02-29' + time '23:59'",
    "SELECT pg_typeof(localtime), pg_typeof(localtime(2)), pg_typeof(now()::time),"
    " pg_typeof(time '01:00'), localtime(0)::text NOT LIKE '%.%', localtime IS NOT NULL",
]


def as_text(conn, sql: str) -> tuple:  # noqa: ANN001
    return outcome(conn, sql, sort=True)


def test_time_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "tt", *SETUP) as (ours, pg):
        for sql in CONSTANTS:
            assert as_text(ours, sql) == as_text(pg, sql), sql
        maintained_as_postgres(ours, pg, QUERIES[:-4] + QUERIES[-3:], CHANGES, rows=as_text)
        expected = [as_text(pg, sql)[2] for sql in QUERIES[:-4] + QUERIES[-3:]]
        same_errors(
            ours,
            pg,
            [
                "SELECT '25:00'::time",
                "SELECT 'abc'::time",
                "SELECT '13:00 pm'::time",
                "SELECT extract(day FROM t) FROM tt",
                "SELECT extract(fortnight FROM t) FROM tt",
                "SELECT t + 1 FROM tt",
                "SELECT t + t FROM tt",
                "SELECT d::time FROM tt",
                "SELECT t = 1 FROM tt",
            ],
        )
        ours.close()
        again = changeflow.connect(home, host_seconds=0)
        try:
            for i, rows in enumerate(expected):
                assert as_text(again, f"SELECT * FROM v{i}")[2] == rows, i
        finally:
            again.close()


def test_a_cluster_view_of_time_is_refused(tmp_path: Path) -> None:
    """A plan holding time stays in the process (Spark has no time of day): a view of it on
    the cluster tier is refused with 0A000, the same view in the process is kept."""
    from changeflow.adapter.connection import DatabaseError

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    try:
        for sql in SETUP:
            conn.execute(sql)
        for sql in ["SELECT id, t FROM tt", "SELECT id, t::text AS s FROM tt"]:
            with pytest.raises(DatabaseError) as caught:
                conn.execute(f"CREATE MATERIALIZED VIEW c WITH (CLUSTER = true) AS {sql}")
            assert caught.value.sqlstate == "0A000"
            assert "an expression of type time without time zone" in str(caught.value), sql
        conn.execute("CREATE MATERIALIZED VIEW p AS SELECT id, t FROM tt")
        expected = conn.execute("SELECT id, t FROM tt ORDER BY id").fetchall()
        assert conn.execute("SELECT id, t FROM p ORDER BY id").fetchall() == expected
    finally:
        conn.close()


def test_a_sink_of_time_writes_its_text(tmp_path: Path) -> None:
    """A sink of a view with time columns writes each time as ISO text (SQLite has no time
    type), kept through an update."""
    import sqlite3
    from datetime import time

    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    target = tmp_path / "out.sqlite"
    try:
        conn.execute("CREATE TABLE ts (id int NOT NULL, t time)")
        conn.execute("INSERT INTO ts VALUES (1, '12:34:56.789'), (2, NULL), (3, '23:30')")
        conn.execute(
            "CREATE MATERIALIZED VIEW later AS SELECT id, t, t + interval '1 hour' AS h FROM ts"
        )
        conn.execute(f"CREATE SINK later_out FROM later INTO 'sqlite:{target}' KEY (id)")
        conn.execute("UPDATE ts SET t = '06:00' WHERE id = 2")
        conn.env.tick()
        with sqlite3.connect(target) as db:
            got = sorted(db.execute("SELECT id, t, h FROM later_out").fetchall())
        read = [(i, time.fromisoformat(t), time.fromisoformat(h)) for i, t, h in got]
        assert read == [
            (1, time(12, 34, 56, 789000), time(13, 34, 56, 789000)),
            (2, time(6), time(7)),
            (3, time(23, 30), time(0, 30)),
        ]
    finally:
        conn.close()


END_OF_DAY = [
    "SELECT '24:00:00'::time::text, time '24:00'::text, '24:00:00.0000001'::time::text",
    "SELECT ('24:00'::time + interval '1 hour')::text, ('24:00'::time - interval '1 us')::text,"
    " ('24:00'::time - '00:00'::time)::text, ('24:00'::time)::interval::text",
    "SELECT '24:00'::time > '23:59:59.999999'::time, '24:00'::time = '00:00'::time,"
    " '00:00'::time < '24:00'::time, '24:00'::time = time '24:00:00'",
    "SELECT extract(hour FROM '24:00'::time), (date '2024-02-28' + time '24:00')::text",
    "SELECT id, t::text, (t < '24:00')::text, greatest(t, '24:00')::text FROM tt",
    "SELECT x::text FROM (VALUES ('24:00'::time), ('01:00'::time), (NULL)) v(x) ORDER BY x",
    "SELECT max(x)::text, min(x)::text FROM (VALUES ('24:00'::time), ('01:00'::time)) v(x)",
]


def test_end_of_day_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    """``24:00:00`` is a time PostgreSQL accepts: read, shown, compared (after every other
    time), ordered and computed with as PostgreSQL does; stored in a table (inserted,
    updated, read back after a restart) and kept in materialized views, as there."""
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "tt", *SETUP) as (ours, pg):
        for sql in END_OF_DAY:
            assert as_text(ours, sql) == as_text(pg, sql), sql
        same_errors(ours, pg, ["SELECT '24:00:01'::time", "SELECT '24:00:00.000001'::time"])
        stored = [
            "SELECT id, t::text FROM tt",
            "SELECT id, (t = '24:00')::text, (t + interval '1 minute')::text FROM tt",
            "SELECT max(t)::text, count(*) FROM tt GROUP BY t = '24:00'",
            "SELECT id FROM tt WHERE t >= '23:59'",
        ]
        changes = [
            "INSERT INTO tt (id, t) VALUES (8, '24:00')",
            "UPDATE tt SET t = '24:00' WHERE id = 1",
            "INSERT INTO tt (id, t) SELECT 9, '24:00'::time",
            "UPDATE tt SET t = '12:00' WHERE id = 8",
        ]
        maintained_as_postgres(ours, pg, stored, changes, rows=as_text)
        ours.close()
        ours = changeflow.connect(home, host_seconds=0)
        for i, sql in enumerate(stored):
            assert as_text(ours, sql) == as_text(pg, sql), sql
            assert as_text(ours, f"SELECT * FROM v{i}")[2] == as_text(pg, sql)[2], sql
        ours.close()
