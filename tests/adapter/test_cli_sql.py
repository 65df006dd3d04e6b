"""``changeflow sql`` as a user runs it: -c and -f in order, formats, errors in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def sql(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "changeflow.cli", "sql", "--home", str(home), *args],
        capture_output=True,
        text=True,
        input=stdin,
    )


def test_statements_run_in_order_and_rows_go_to_stdout(tmp_path: Path) -> None:
    home = tmp_path / "h"
    script = tmp_path / "more.sql"
    script.write_text("INSERT INTO t VALUES (2, 'two');\nINSERT INTO t VALUES (3, NULL);\n")
    done = sql(
        home,
        "-c",
        "CREATE TABLE t (id int NOT NULL, name text)",
        "-c",
        "INSERT INTO t VALUES (1, 'one')",
        "-f",
        str(script),
        "-c",
        "SELECT id, name FROM t ORDER BY id",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"id": 1, "name": "one"},
        {"id": 2, "name": "two"},
        {"id": 3, "name": None},
    ]
    assert done.stderr.splitlines() == [
        "CREATE TABLE",
        "INSERT 0 1",
        "INSERT 0 1",
        "INSERT 0 1",
        "SELECT 3",
    ]
    csv = sql(home, "-c", "SELECT id, name FROM t WHERE id < 3 ORDER BY id", "--format", "csv")
    assert csv.stdout == "id,name\n1,one\n2,two\n"
    piped = sql(home, "--format", "json", stdin="SELECT count(*) AS n FROM t;")
    assert json.loads(piped.stdout) == {"n": 3}


def test_errors_are_one_line_and_stop_the_script(tmp_path: Path) -> None:
    home = tmp_path / "h"
    done = sql(
        home,
        "-c",
        "CREATE TABLE t (id int NOT NULL)",
        "-c",
        "INSERT INTO t VALUES (NULL)",
        "-c",
        "INSERT INTO t VALUES (1)",
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith('error: null value in column "id"')
    assert "Traceback" not in done.stderr
    count = sql(home, "-c", "SELECT count(*) FROM t", "--format", "json")
    assert json.loads(count.stdout) == {"count": 0}
    missing = sql(home, "-f", str(tmp_path / "nope.sql"))
    assert missing.returncode != 0 and "nope.sql" in missing.stderr


def test_subscribe_streams_until_up_to(tmp_path: Path) -> None:
    home = tmp_path / "h"
    sql(home, "-c", "CREATE TABLE t (a int)", "-c", "INSERT INTO t VALUES (5)")
    done = sql(home, "-c", "SUBSCRIBE t UP TO 0", "--format", "json")
    assert done.returncode == 0 and done.stdout == ""
    import changeflow

    with changeflow.connect(home, host_seconds=0) as c:
        ts = c.env.oracle("EpochMilliseconds").read_ts()
    done = sql(home, "-c", f"SUBSCRIBE t AS OF {ts} UP TO {ts + 1}", "--format", "json")
    assert [json.loads(x) for x in done.stdout.splitlines()] == [
        {"mz_timestamp": ts, "mz_diff": 1, "a": 5}
    ]
