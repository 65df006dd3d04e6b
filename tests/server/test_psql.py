"""The real psql client (from the machine's PostgreSQL binaries) against ``changeflow serve``."""

from __future__ import annotations

from collections.abc import Callable
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
    out = psql(server, "-c", "SELECT * FROM pg_catalog.pg_policy p, pg_catalog.pg_type t")
    assert out.returncode == 0 and "(0 rows)" in out.stdout, out.stderr
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


def test_describe_commands(start_server) -> None:
    server = start_server()
    setup = [
        "CREATE TABLE items (id int NOT NULL, name text DEFAULT 'x', price numeric(12,2))",
        "CREATE INDEX items_id ON items (id)",
        "CREATE VIEW named AS SELECT id, name FROM items",
        "CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS n FROM items",
    ]
    for sql in setup:
        assert psql(server, "-c", sql).returncode == 0

    def run(command: str) -> list[str]:
        out = psql(server, "-A", "-F", "|", "-c", command)
        assert out.returncode == 0 and "ERROR" not in out.stderr, (command, out.stderr)
        return out.stdout.splitlines()

    assert run("\\dt")[1:4] == ["Schema|Name|Type|Owner", "public|items|table|tester", "(1 row)"]
    assert run("\\dv")[2] == "public|named|view|tester"
    assert run("\\dm")[2] == "public|totals|materialized view|tester"
    assert run("\\di")[2] == "public|items_id|index|tester|items"
    assert [line.split("|")[1] for line in run("\\d")[2:5]] == ["items", "named", "totals"]
    table = run("\\d items")
    assert table[0] == 'Table "public.items"'
    assert table[2:5] == [
        "id|integer||not null|",
        "name|text|||'x'::text",  # as PostgreSQL deparses it
        "price|numeric(12,2)|||",
    ]
    assert '"items_id" btree (id)' in "\n".join(table)
    assert run("\\d named")[0] == 'View "public.named"'
    assert run("\\d totals")[2] == "n|bigint|||"  # PostgreSQL's views have no NOT NULL
    assert run("\\d items_id")[0] == 'Index "public.items_id"'
    assert run("\\l")[2].startswith("materialize|tester|UTF8|")
    assert run("\\dn")[2] == "public|pg_database_owner"
    roles = run("\\du")
    assert roles[1:3] == [
        "Role name|Attributes|Member of",
        "tester|Superuser, Create role, Create DB, Replication, Bypass RLS|{}",
    ]


def test_settings_functions_and_information_schema(server, table_name: str) -> None:
    assert psql(server, "-c", f"CREATE TABLE {table_name} (a int NOT NULL, b text)").returncode == 0

    def rows(sql: str) -> list[str]:
        out = psql(server, "-At", "-c", sql)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    assert rows("SELECT setting FROM pg_settings WHERE name = 'server_version'") == ["15.0"]
    assert rows("SELECT count(*) > 0 FROM pg_catalog.pg_proc WHERE proname = 'upper'") == ["t"]
    assert rows(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        f"WHERE table_name = '{table_name}' ORDER BY ordinal_position"
    ) == ["a|integer|NO", "b|text|YES"]
    assert rows(
        f"SELECT table_type FROM information_schema.tables WHERE table_name = '{table_name}'"
    ) == ["BASE TABLE"]
    assert "public" in rows("SELECT schema_name FROM information_schema.schemata")
    assert psql(server, "-c", f"DROP TABLE {table_name}").returncode == 0


def test_catalog_words_in_a_user_query_are_not_catalog_queries(server, table_name: str) -> None:
    out = psql(
        server,
        "-At",
        "-c",
        f"CREATE TABLE {table_name} (name text)",
        "-c",
        f"INSERT INTO {table_name} VALUES ('pg_class')",
        "-c",
        f"SELECT count(*) FROM {table_name} WHERE name = 'pg_class'",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "1"


def _without_size(out: str) -> str:
    """psql's unaligned output without its Size column (PostgreSQL's heap pages have no
    counterpart here)."""
    lines = out.splitlines()
    header = next((line.split("|") for line in lines if "|Size|" in line), None)
    if header is None:
        return out
    i = header.index("Size")
    fields = [line.split("|") for line in lines]
    return "\n".join(
        "|".join(f[:i] + f[i + 1 :]) if len(f) == len(header) else line
        for f, line in zip(fields, lines, strict=True)
    )


def _same_psql_output(
    server,
    postgres_url: str,
    setup: list[str],
    commands: list[str],
    teardown: list[str],
    shown: Callable[[str], str] = str,
) -> None:
    """Each psql command prints the same on the server as on PostgreSQL after the same setup
    (as ``shown`` shows it)."""
    import subprocess

    from serve_clients import PSQL

    def on_postgres(*args: str) -> str:
        cmd = [PSQL, "-X", "-w", "-A", "-F", "|", postgres_url, *args]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    try:
        for sql in setup:
            on_postgres("-c", sql)
            assert psql(server, "-c", sql).returncode == 0
        for command in commands:
            theirs = on_postgres("-c", command).replace("|postgres", "|tester")
            ours = psql(server, "-A", "-F", "|", "-c", command)
            assert ours.returncode == 0, ours.stderr
            assert shown(ours.stdout) == shown(theirs), command
    finally:
        on_postgres(*(arg for sql in teardown for arg in ("-c", sql)))


@pytest.mark.postgres
def test_describe_output_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE TABLE pgd (id int NOT NULL, name text DEFAULT 'x', price numeric(12,2),"
        " at timestamptz, ok boolean)",
        "CREATE INDEX pgd_id ON pgd (id)",
        "CREATE VIEW pgd_v AS SELECT id, name FROM pgd",
    ]
    commands = ["\\d pgd", "\\d pgd_v", "\\dt pgd*", "\\dv pgd*", "\\di pgd*", "\\d pgd_id"]
    commands += ["\\df", "\\d+ pgd"]
    teardown = ["DROP VIEW IF EXISTS pgd_v", "DROP TABLE IF EXISTS pgd"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)


@pytest.mark.postgres
def test_describe_functions_as_postgres(server, postgres_url: str) -> None:
    """\\df of built-in functions: each of PostgreSQL's overloads, its result and argument
    types (named arguments too), as PostgreSQL lists them."""
    commands = [
        "\\df abs",
        "\\df initcap",
        "\\df make_date",
        "\\df upper",
        "\\dfS json_extract_path",
    ]
    _same_psql_output(server, postgres_url, [], commands, [])


@pytest.mark.postgres
def test_describe_settings_as_postgres(server, postgres_url: str) -> None:
    """\\dconfig lists run-time parameters with PostgreSQL's values, units and types."""
    commands = ["\\dconfig work*", "\\dconfig *timeout", "\\dconfig+ enable_*"]
    _same_psql_output(server, postgres_url, [], commands, [])


@pytest.mark.postgres
def test_describe_keys_and_unique_indexes_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE TABLE pgk (id int PRIMARY KEY, code text UNIQUE, n int, v varchar(5))",
        "CREATE UNIQUE INDEX pgk_n ON pgk (n)",
        "CREATE INDEX pgk_vn ON pgk (v, n)",
    ]
    commands = ["\\d pgk", "\\di pgk*", "\\d+ pgk", "\\d pgk_pkey", "\\d pgk_n"]
    _same_psql_output(start_server(), postgres_url, setup, commands, ["DROP TABLE IF EXISTS pgk"])


@pytest.mark.postgres
def test_describe_comments_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE TABLE pgc (id int, note text)",
        "CREATE VIEW pgc_v AS SELECT id FROM pgc",
        "CREATE MATERIALIZED VIEW pgc_m AS SELECT count(*) AS n FROM pgc",
        "COMMENT ON TABLE pgc IS 'notes'",
        "COMMENT ON COLUMN pgc.note IS 'free text'",
        "COMMENT ON VIEW pgc_v IS 'ids'",
        "COMMENT ON COLUMN pgc_v.id IS 'the id'",
        "COMMENT ON MATERIALIZED VIEW pgc_m IS 'how many'",
    ]
    commands = ["\\d+ pgc", "\\dt+ pgc*", "\\dv+ pgc*", "\\dm+ pgc*"]
    teardown = ["DROP TABLE IF EXISTS pgc CASCADE"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown, _without_size)


@pytest.mark.postgres
def test_information_schema_columns_as_postgres(server, postgres_url: str, table_name: str) -> None:
    import psycopg

    create = (
        f"CREATE TABLE {table_name} (a int NOT NULL, b bigint, c smallint, d numeric(12,2), "
        "e numeric, f double precision, g text DEFAULT 'x', h date, i timestamp, j timestamptz, "
        "k boolean, l varchar(20))"
    )
    sql = (
        "SELECT column_name, ordinal_position, column_default, is_nullable, data_type, "
        "character_maximum_length, format_type(atttypid, atttypmod), numeric_precision, "
        "numeric_scale, datetime_precision, udt_name "
        "FROM information_schema.columns JOIN pg_attribute ON attname = column_name "
        f"AND attrelid = '{table_name}'::regclass WHERE table_name = '{table_name}' "
        "ORDER BY ordinal_position"
    )
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        for conn in (ours, pg):
            conn.execute(create)
        try:
            assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall()
        finally:
            for conn in (ours, pg):
                conn.execute(f"DROP TABLE {table_name}")


@pytest.mark.postgres
def test_psql_lists_schemas_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE SCHEMA sq",
        "CREATE TABLE sq.items (id int NOT NULL, name text)",
        "CREATE VIEW sq.named AS SELECT name FROM sq.items",
        "CREATE TABLE sq_public (id int)",
        "ALTER TABLE sq.items ADD COLUMN price numeric(8,2) DEFAULT 1.5",
        "ALTER TABLE sq.items RENAME COLUMN name TO title",
    ]
    commands = ["\\dn sq*", "\\dt sq.*", "\\dv sq.*", "\\d sq.items", "\\d sq.named", "\\dt sq*"]
    teardown = ["DROP SCHEMA IF EXISTS sq CASCADE", "DROP TABLE IF EXISTS sq_public"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)


@pytest.mark.postgres
def test_describe_serial_table_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE TABLE pgs (id serial, b bigserial, v text, i int GENERATED ALWAYS AS IDENTITY,"
        " j smallint GENERATED BY DEFAULT AS IDENTITY)",
        "CREATE SEQUENCE pgs_o INCREMENT 3 MAXVALUE 99 CYCLE",
    ]
    commands = ["\\d pgs", "\\dt pgs*", "\\ds pgs*", "\\d pgs_id_seq", "\\d pgs_i_seq"]
    commands += ["\\d pgs_j_seq", "\\d pgs_o"]
    teardown = ["DROP TABLE IF EXISTS pgs", "DROP SEQUENCE IF EXISTS pgs_o"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)


def test_sizes_in_describe_plus(server, table_name: str) -> None:
    """``\\dt+``, ``\\dv+`` and ``\\l+`` show a Size: the table's bytes, a view's 0 bytes,
    the database's."""
    out = psql(
        server,
        "-c",
        f"CREATE TABLE {table_name} (a int, b text)",
        "-c",
        f"INSERT INTO {table_name} SELECT g, repeat('x', 50) FROM generate_series(1, 500) g",
        "-c",
        f"CREATE VIEW {table_name}_v AS SELECT a FROM {table_name}",
    )
    assert out.returncode == 0, out.stderr
    for command, name in [("\\dt+", table_name), ("\\dv+", f"{table_name}_v")]:
        out = psql(server, "-A", "-F", "|", "-c", f"{command} {name}")
        assert out.returncode == 0, out.stderr
        header, row = out.stdout.splitlines()[1:3]
        size = row.split("|")[header.split("|").index("Size")]
        if command == "\\dt+":
            number, unit = size.split()
            assert int(number) > 0 and unit in ("bytes", "kB"), size
        else:
            assert size == "0 bytes", out.stdout
    out = psql(server, "-A", "-F", "|", "-c", "\\l+")  # the database's Size: its tables'
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()[1:3]
    number, unit = row.split("|")[header.split("|").index("Size")].split()
    assert int(number) > 0 and unit in ("bytes", "kB", "MB"), out.stdout


@pytest.mark.postgres
def test_describe_defaults_and_checks_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE TABLE pgx (id serial PRIMARY KEY, price numeric(10,2) DEFAULT 0 "
        "CHECK (price > 0), at timestamp DEFAULT now(), name varchar(20) DEFAULT 'n' "
        "CHECK (name <> ''), ok boolean DEFAULT true, qty int DEFAULT 1 + 2, "
        "CHECK (qty * 2 + 1 > 0 AND (qty < 100 OR ok)), CHECK (qty IN (1, 2, 3)))",
    ]
    commands = ["\\d pgx", "\\d+ pgx"]
    teardown = ["DROP TABLE IF EXISTS pgx"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)


@pytest.mark.postgres
def test_describe_index_forms_as_postgres(start_server, postgres_url: str) -> None:
    setup = [
        "CREATE TABLE pgi (a int, b text, c varchar(10))",
        "CREATE INDEX pgi_a ON pgi (a DESC NULLS LAST) INCLUDE (b) WITH (fillfactor = 80)",
        "CREATE INDEX pgi_b ON pgi USING hash (b)",
        "CREATE UNIQUE INDEX pgi_c ON pgi (c varchar_pattern_ops, a)",
    ]
    commands = ["\\d pgi", "\\d pgi_a", "\\d pgi_b", "\\d pgi_c", "\\di pgi*"]
    teardown = ["DROP TABLE IF EXISTS pgi"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)
