"""The real psql client (from the machine's PostgreSQL binaries) against ``changeflow serve``."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_clients import PSQL, psql

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql is not installed")


def test_commands_and_output(server, table_name: str) -> None:
    out = psql(
        server,
        "-c",
        f"CREATE TABLE {table_name} (a int, b text, f double precision, t timestamptz)",
        "-c",
        f"INSERT INTO {table_name} VALUES (1, 'one', 'NaN', '2024-05-06 07:08:09.25+00'), "
        "(2, NULL, 'Infinity', NULL)",
        "-c",
        f"SELECT * FROM {table_name} ORDER BY a",
        "-A",
        "-F",
        "|",
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == ["CREATE TABLE", "INSERT 0 2"]
    assert lines[2:5] == ["a|b|f|t", "1|one|NaN|2024-05-06 07:08:09.25+00", "2||Infinity|"]
    assert lines[5] == "(2 rows)"


def test_file_with_several_statements_stops_at_an_error(
    server, table_name: str, tmp_path: Path
) -> None:
    script = tmp_path / "script.sql"
    script.write_text(
        f"CREATE TABLE {table_name} (a int NOT NULL);\n"
        f"INSERT INTO {table_name} VALUES (1); INSERT INTO {table_name} VALUES (2);\n"
        "SELECT 1/0;\n"
        f"INSERT INTO {table_name} VALUES (3);\n"
    )
    out = psql(server, "-v", "ON_ERROR_STOP=1", "-f", str(script))
    assert out.returncode == 3
    assert "ERROR:  division by zero" in out.stderr
    assert "Traceback" not in out.stderr
    count = psql(server, "-At", "-c", f"SELECT count(*) FROM {table_name}")
    assert count.stdout.strip() == "2"
    # one Query message holding several statements: an error stops the rest
    out = psql(
        server,
        "-c",
        f"INSERT INTO {table_name} VALUES (4); SELECT nope; INSERT INTO {table_name} VALUES (5)",
    )
    assert out.returncode == 1 and 'column "nope" does not exist' in out.stderr
    count = psql(server, "-At", "-c", f"SELECT count(*) FROM {table_name}")
    assert count.stdout.strip() == "3"


def test_errors_and_catalog_queries(server) -> None:
    out = psql(server, "-c", "SELECT * FROM no_such_table")
    assert out.returncode == 1
    assert 'ERROR:  relation "no_such_table" does not exist' in out.stderr
    out = psql(server, "-c", "\\dt")
    assert out.returncode == 1 and "SHOW TABLES" in out.stderr
    out = psql(server, "-At", "-c", "SHOW TABLES")
    assert out.returncode == 0, out.stderr


def test_copy_out_and_in(server, table_name: str, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text('1,one\n2,"two, too"\n3,\n')
    out = psql(
        server,
        "-c",
        f"CREATE TABLE {table_name} (a int, b text)",
        "-c",
        f"\\copy {table_name} FROM '{data}' WITH (FORMAT csv)",
    )
    assert out.returncode == 0, out.stderr
    assert "COPY 3" in out.stdout
    out = psql(server, "-c", f"COPY (SELECT * FROM {table_name} ORDER BY a) TO STDOUT")
    assert out.stdout == "1\tone\n2\ttwo, too\n3\t\\N\n"
    target = tmp_path / "out.csv"
    out = psql(
        server,
        "-c",
        f"\\copy (SELECT * FROM {table_name} ORDER BY a) TO '{target}' WITH (FORMAT csv, HEADER)",
    )
    assert out.returncode == 0, out.stderr
    assert target.read_text() == 'a,b\n1,one\n2,"two, too"\n3,\n'


def test_subscribe_in_psql(server, table_name: str) -> None:
    out = psql(
        server,
        "-At",
        "-c",
        f"CREATE TABLE {table_name} (a int)",
        "-c",
        f"INSERT INTO {table_name} VALUES (7)",
        "-c",
        f"BEGIN; DECLARE c CURSOR FOR SUBSCRIBE {table_name}; "
        "FETCH ALL c WITH (timeout = '2s'); COMMIT",
    )
    assert out.returncode == 0, out.stderr
    row = [line for line in out.stdout.splitlines() if line.endswith("|1|7")]
    assert len(row) == 1
