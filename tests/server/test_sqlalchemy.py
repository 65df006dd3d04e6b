"""SQLAlchemy's inspector against ``changeflow serve``, compared with the same calls against
PostgreSQL 15 holding the same tables."""

from __future__ import annotations

import pytest

sa = pytest.importorskip("sqlalchemy")

DDL = [
    "CREATE TABLE {p}items (id int PRIMARY KEY, name text DEFAULT 'x', price numeric(12,2), "
    "at timestamptz, ok boolean, n bigint, f double precision, d date, UNIQUE (n, d))",
    "CREATE VIEW {p}named AS SELECT id, name FROM {p}items",
    "CREATE INDEX {p}items_name ON {p}items (name, id)",
    "CREATE UNIQUE INDEX {p}items_f ON {p}items (f)",
    "COMMENT ON TABLE {p}items IS 'what is sold'",
    "COMMENT ON COLUMN {p}items.price IS 'in euros'",
]


def _inspect(url: str, prefix: str) -> dict:
    engine = sa.create_engine(url)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for sql in DDL:
                conn.execute(sa.text(sql.format(p=prefix)))
        insp = sa.inspect(engine)
        columns = [{**c, "type": str(c["type"])} for c in insp.get_columns(f"{prefix}items")]
        out = {
            "tables": [t for t in insp.get_table_names() if t.startswith(prefix)],
            "views": [v for v in insp.get_view_names() if v.startswith(prefix)],
            "columns": columns,
            "has": (insp.has_table(f"{prefix}items"), insp.has_table(f"{prefix}nope")),
            "pk": insp.get_pk_constraint(f"{prefix}items"),
            "unique": insp.get_unique_constraints(f"{prefix}items"),
            "indexes": insp.get_indexes(f"{prefix}items"),
            "foreign keys": insp.get_foreign_keys(f"{prefix}items"),
            "comment": insp.get_table_comment(f"{prefix}items"),
        }
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text(f"DROP VIEW {prefix}named"))
            conn.execute(sa.text(f"DROP TABLE {prefix}items"))
        return out
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_inspector_as_on_postgres(server, postgres_url: str, table_name: str) -> None:
    ours = _inspect(
        f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize", table_name
    )
    theirs = _inspect(postgres_url.replace("postgresql://", "postgresql+psycopg://"), table_name)
    assert ours == theirs
    assert ours["tables"] == [f"{table_name}items"] and ours["views"] == [f"{table_name}named"]


def _inspect_schema(url: str, schema: str) -> dict:
    engine = sa.create_engine(url)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
            conn.execute(sa.text(f"CREATE TABLE {schema}.items (id int NOT NULL, name text)"))
            conn.execute(sa.text(f"CREATE VIEW {schema}.named AS SELECT name FROM {schema}.items"))
        insp = sa.inspect(engine)
        columns = [{**c, "type": str(c["type"])} for c in insp.get_columns("items", schema=schema)]
        out = {
            "schemas": [s for s in insp.get_schema_names() if s == schema],
            "tables": insp.get_table_names(schema=schema),
            "views": insp.get_view_names(schema=schema),
            "columns": columns,
            "has": (insp.has_table("items", schema=schema), insp.has_table("items")),
        }
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        return out
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_inspector_sees_schemas_as_on_postgres(server, postgres_url: str, table_name: str) -> None:
    schema = f"s_{table_name}"
    ours = _inspect_schema(
        f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize", schema
    )
    theirs = _inspect_schema(postgres_url.replace("postgresql://", "postgresql+psycopg://"), schema)
    assert ours == theirs
    assert ours["tables"] == ["items"] and ours["views"] == ["named"]
