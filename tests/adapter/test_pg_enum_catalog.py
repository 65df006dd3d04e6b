"""Enum types as PostgreSQL 15's catalogs and clients show them, side by side with PostgreSQL
through ``changeflow serve``: their pg_type and pg_enum rows, their columns' pg_attribute and
information_schema.columns rows, format_type, regtype and pg_typeof (qualified where the search
path does not find the type), the wire's type OID and binary format, psql's ``\\dT+`` and
``\\d``, psycopg's EnumInfo, and SQLAlchemy's inspector and create_all/drop_all of an Enum."""

from __future__ import annotations

import enum
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))
from serve_clients import PSQL, psql  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TYPE enc_mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE SCHEMA enc_s",
    "CREATE TYPE enc_s.enc_color AS ENUM ('red', 'green')",
    "CREATE TYPE \"enc odd\" AS ENUM ('a b', 'it''s')",
    'CREATE TABLE enc_t (id int NOT NULL, m enc_mood, c enc_s.enc_color, o "enc odd")',
    "INSERT INTO enc_t VALUES (1, 'ok', 'red', 'a b'), (2, 'happy', NULL, NULL)",
    "CREATE VIEW enc_v AS SELECT id, m FROM enc_t",
]
TEARDOWN = [
    "DROP VIEW IF EXISTS enc_v",
    "DROP TABLE IF EXISTS enc_t",
    "DROP TYPE IF EXISTS enc_mood",
    'DROP TYPE IF EXISTS "enc odd"',
    "DROP SCHEMA IF EXISTS enc_s CASCADE",
]
QUERIES = [
    "SELECT typname, typlen, typbyval, typtype, typcategory, typispreferred, typisdefined, "
    "typdelim, typrelid, typelem, typinput::text, typoutput::text, typreceive::text, "
    "typsend::text, typalign, typstorage, typnotnull, typbasetype, typtypmod, typndims, "
    "typcollation, typdefault FROM pg_type WHERE typtype = 'e' AND typname ILIKE 'enc%' "
    "ORDER BY 1",
    "SELECT t.typname, e.enumsortorder, e.enumlabel FROM pg_enum e "
    "JOIN pg_type t ON t.oid = e.enumtypid WHERE t.typname ILIKE 'enc%' ORDER BY 1, 2",
    "SELECT n.nspname, t.typname, pg_type_is_visible(t.oid), format_type(t.oid, NULL), "
    "t.oid::regtype::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
    "WHERE t.typtype = 'e' AND t.typname ILIKE 'enc%' ORDER BY 1, 2",
    "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attlen, a.attbyval, "
    "a.attalign, a.attstorage, a.attcollation, t.typname FROM pg_attribute a "
    "JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = 'enc_t'::regclass "
    "AND a.attnum > 0 ORDER BY a.attnum",
    "SELECT table_name, column_name, data_type, udt_schema, udt_name "
    "FROM information_schema.columns WHERE table_name IN ('enc_t', 'enc_v') "
    "ORDER BY table_name, ordinal_position",
    "SELECT id, pg_typeof(m), pg_typeof(c), pg_typeof(o), m, c, o FROM enc_t ORDER BY id",
    "SELECT 'enc_mood'::regtype, 'enc_s.enc_color'::regtype, '\"enc odd\"'::regtype",
    "SELECT to_regtype('enc_mood'), to_regtype('enc_color'), to_regtype('enc_s.enc_color')",
    "SELECT t.typname FROM pg_type t WHERE t.oid = 'enc_mood'::regtype::oid",
    "SELECT format_type(to_regtype('\"enc odd\"'), NULL)",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``changeflow serve`` on a fresh home, for this module's tests."""
    root = tmp_path_factory.mktemp("enum_serve")
    cmd = [sys.executable, "-m", "changeflow.cli", "serve", "--home", str(root / "home")]
    cmd += ["--listen", "127.0.0.1:0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with (root / "server.log").open("a") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    assert proc.stdout is not None
    m = re.search(r"listening on ([\d.]+):(\d+)", proc.stdout.readline())
    if m is None:
        proc.kill()
        raise RuntimeError((root / "server.log").read_text())
    yield SimpleNamespace(host=m[1], port=int(m[2]))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    assert "Traceback" not in (root / "server.log").read_text()


def _url(served: Any) -> str:
    return f"postgresql://postgres@{served.host}:{served.port}/materialize"


@pytest.fixture(scope="module")
def both(served: Any, postgres_url: str) -> Iterator[tuple[psycopg.Connection, ...]]:
    """A connection to the server and one to PostgreSQL, each having run ``SETUP`` (undone
    on PostgreSQL afterwards)."""
    ours = psycopg.connect(_url(served), autocommit=True)
    pg = psycopg.connect(postgres_url, autocommit=True)
    for sql in TEARDOWN:
        pg.execute(sql)
    try:
        for c in (ours, pg):
            for sql in SETUP:
                c.execute(sql)
        yield ours, pg
    finally:
        for sql in TEARDOWN:
            pg.execute(sql)
        ours.close()
        pg.close()


def _answer(conn: psycopg.Connection, sql: str) -> Any:
    try:
        return conn.execute(sql).fetchall()
    except psycopg.Error as e:
        return e.sqlstate, e.diag.message_primary


@pytest.mark.parametrize("sql", QUERIES)
def test_catalog_rows_as_postgres(both: tuple[psycopg.Connection, ...], sql: str) -> None:
    ours, pg = both
    assert _answer(ours, sql) == _answer(pg, sql)


def test_names_follow_the_search_path(both: tuple[psycopg.Connection, ...]) -> None:
    """A type of a schema on the search path is named alone; pg_type_is_visible says so."""
    sql = [
        "SELECT t.typname, pg_type_is_visible(t.oid), format_type(t.oid, NULL) FROM pg_type t "
        "WHERE t.typtype = 'e' AND t.typname ILIKE 'enc%' ORDER BY 1",
        "SELECT pg_typeof(c), 'enc_color'::regtype FROM enc_t WHERE id = 1",
    ]
    for c in both:
        c.execute("SET search_path = enc_s, public")
    try:
        for q in sql:
            assert _answer(both[0], q) == _answer(both[1], q), q
        assert _answer(both[0], sql[1]) == [("enc_color", "enc_color")]
    finally:
        for c in both:
            c.execute("SET search_path = public")


def test_labels_added_are_listed(both: tuple[psycopg.Connection, ...]) -> None:
    sql = (
        "SELECT e.enumlabel FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid "
        "WHERE t.typname = 'enc_s_more' ORDER BY e.enumsortorder"
    )
    for c in both:
        c.execute("CREATE TYPE enc_s_more AS ENUM ('b', 'd')")
    try:
        for c in both:
            c.execute("ALTER TYPE enc_s_more ADD VALUE 'a' BEFORE 'b'")
            c.execute("ALTER TYPE enc_s_more ADD VALUE 'c' AFTER 'b'")
        assert _answer(both[0], sql) == _answer(both[1], sql) == [("a",), ("b",), ("c",), ("d",)]
    finally:
        for c in both:
            c.execute("DROP TYPE enc_s_more")
    assert _answer(both[0], sql) == []


def test_wire_type_and_formats_as_postgres(both: tuple[psycopg.Connection, ...]) -> None:
    """A column of an enum is described by the enum's OID, its size an OID's; its values are
    the labels in text and in binary; a parameter of the enum's OID is read in either."""
    from psycopg.types.enum import EnumInfo, register_enum

    class Mood(enum.Enum):
        sad = "sad"
        ok = "ok"
        happy = "happy"

    seen = []
    for c in both:
        oid = c.execute("SELECT 'enc_mood'::regtype::oid").fetchone()[0]
        cur = c.execute("SELECT m, 'sad'::enc_mood AS k FROM enc_t ORDER BY id")
        described = [(d.name, d.type_code == oid, d.internal_size) for d in cur.description]
        text = cur.fetchall()
        binary = c.cursor(binary=True)
        binary.execute("SELECT m FROM enc_t ORDER BY id")
        raw = [binary.pgresult.get_value(i, 0) for i in range(binary.pgresult.ntuples)]
        info = EnumInfo.fetch(c, "enc_mood")
        assert info is not None and info.oid == oid
        register_enum(info, c, Mood)
        typed = c.execute("SELECT m FROM enc_t WHERE m = %b", [Mood.ok]).fetchall()
        typed += c.execute("SELECT m FROM enc_t WHERE m = %t", [Mood.happy]).fetchall()
        seen.append((described, text, raw, info.labels, typed))
    assert seen[0] == seen[1]
    assert seen[0][0] == [("m", True, 4), ("k", True, 4)]
    assert seen[0][2] == [b"ok", b"happy"]
    assert seen[0][4] == [(Mood.ok,), (Mood.happy,)]


def _psql_pg(postgres_url: str, command: str) -> str:
    cmd = [PSQL, "-X", "-w", "-A", "-F", "|", postgres_url, "-c", command]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
@pytest.mark.parametrize(
    "command",
    ["\\dT+ enc*", "\\dT *.enc*", "\\dT+ enc_s.*", '\\dT "enc odd"', "\\d enc_t", "\\d enc_v"],
)
def test_psql_describe_as_postgres(
    both: tuple[psycopg.Connection, ...], served: Any, postgres_url: str, command: str
) -> None:
    ours = psql(served, "-A", "-F", "|", "-c", command, user="postgres")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == _psql_pg(postgres_url, command)
    assert "enc_" in ours.stdout or "enc odd" in ours.stdout


@pytest.mark.skipif(PSQL is None, reason="psql is not installed")
def test_psql_lists_types_under_another_search_path(
    both: tuple[psycopg.Connection, ...], served: Any, postgres_url: str
) -> None:
    command = ["-c", "SET search_path = enc_s, public", "-c", "\\dT enc*", "-c", "\\d enc_t"]
    ours = psql(served, "-A", "-F", "|", *command, user="postgres")
    theirs = subprocess.run(
        [PSQL, "-X", "-w", "-A", "-F", "|", postgres_url, *command],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    assert "enc_s|enc_color|" in ours.stdout


class Feeling(enum.Enum):
    calm = 1
    angry = 2


def _sqlalchemy(url: str) -> list[Any]:
    """What SQLAlchemy's inspector says of the enums and of enc_t, then create_all twice and
    drop_all of a table with an Enum column (the type is made once, dropped with it)."""
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    metadata = sa.MetaData()
    sa.Table(
        "enc_sa",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("feeling", sa.Enum(Feeling, name="enc_feeling"), nullable=False),
    )
    out: list[Any] = []

    def enums() -> list[Any]:
        return [e for e in sa.inspect(engine).get_enums() if e["name"].lower().startswith("enc")]

    try:
        out.append(enums())
        out.append(sorted(e["name"] for e in sa.inspect(engine).get_enums(schema="enc_s")))
        out.append([(c["name"], repr(c["type"])) for c in sa.inspect(engine).get_columns("enc_t")])
        metadata.create_all(engine)
        metadata.create_all(engine)  # the type exists: not made again
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO enc_sa (feeling) VALUES ('angry')"))
            out.append(conn.execute(sa.text("SELECT feeling FROM enc_sa")).fetchall())
        out.append(enums())
        columns = sa.inspect(engine).get_columns("enc_sa")
        out.append([(c["name"], repr(c["type"]), c["nullable"]) for c in columns])
        metadata.drop_all(engine)
        out.append(enums())
        out.append(sa.inspect(engine).has_table("enc_sa"))
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE IF EXISTS enc_sa"))
            conn.execute(sa.text("DROP TYPE IF EXISTS enc_feeling"))
        engine.dispose()
    return out


def test_sqlalchemy_as_postgres(
    both: tuple[psycopg.Connection, ...], served: Any, postgres_url: str
) -> None:
    ours = _sqlalchemy(_url(served))
    assert ours == _sqlalchemy(postgres_url)
    mood = {"name": "enc_mood", "schema": "public", "visible": True}
    assert ours[0][1] == mood | {"labels": ["sad", "ok", "happy"]}
    assert ours[2][1] == ("m", "ENUM('sad', 'ok', 'happy', name='enc_mood')")
    assert {"name": "enc_feeling", "labels": ["calm", "angry"]}.items() <= ours[4][1].items()
    assert ours[-2] == ours[0] and ours[-1] is False
