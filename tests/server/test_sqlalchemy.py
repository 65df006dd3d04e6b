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


REFLECTED = [
    "CREATE TABLE {p}items (id int PRIMARY KEY, name text NOT NULL DEFAULT 'x', price "
    "numeric(12,2), at timestamptz, ok boolean, n bigint, f double precision, d date, "
    "UNIQUE (n, d))",
    "CREATE INDEX {p}items_name ON {p}items (name, id)",
    "INSERT INTO {p}items VALUES (1, 'a', 2.50, '2020-01-01 00:00:00+00', true, 5, 1.5, "
    "'2020-01-02'), (2, 'b', NULL, NULL, NULL, NULL, NULL, NULL), (3, 'b', 1, NULL, false, 7, "
    "-0.5, '1999-12-31')",
    "CREATE VIEW {p}named AS SELECT id, name FROM {p}items WHERE id > 1",
    "CREATE MATERIALIZED VIEW {p}counted AS SELECT name, count(*) AS c FROM {p}items GROUP BY name",
]


def _table(table: sa.Table) -> dict:
    """What reflection made of ``table``: its columns, constraints and indexes."""
    return {
        "columns": [
            (
                c.name,
                str(c.type),
                c.nullable,
                c.primary_key,
                str(getattr(c.server_default, "arg", "")),
            )
            for c in table.columns
        ],
        "constraints": sorted(
            (type(c).__name__, c.name or "", [col.name for col in c.columns])
            for c in table.constraints
        ),
        "indexes": sorted((i.name, i.unique, [c.name for c in i.columns]) for i in table.indexes),
    }


def _reflect(url: str, prefix: str) -> dict:
    import pandas as pd

    engine = sa.create_engine(url)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for sql in REFLECTED:
                conn.execute(sa.text(sql.format(p=prefix)))
        insp = sa.inspect(engine)
        md = sa.MetaData()
        md.reflect(engine, views=True, only=lambda name, _: name.startswith(prefix))
        view = insp.get_view_definition(f"{prefix}named").strip().rstrip(";")
        with engine.connect() as conn:
            viewed = sorted(conn.execute(sa.text(view)).all())
        read = pd.read_sql_table(f"{prefix}items", engine).sort_values("id")
        queried = pd.read_sql(f"SELECT * FROM {prefix}counted ORDER BY name", engine)
        out = {
            "reflected": {name: _table(t) for name, t in sorted(md.tables.items())},
            "loaded": _table(sa.Table(f"{prefix}items", sa.MetaData(), autoload_with=engine)),
            "loaded view": _table(
                sa.Table(f"{prefix}counted", sa.MetaData(), autoload_with=engine)
            ),
            "materialized": [v for v in insp.get_materialized_view_names() if v.startswith(prefix)],
            "checks": insp.get_check_constraints(f"{prefix}items"),
            "foreign keys": insp.get_foreign_keys(f"{prefix}items"),
            "view rows": viewed,
            "read_sql_table": (
                list(read.dtypes.astype(str)),
                read.astype(object).where(read.notna(), None).to_dict("records"),
            ),
            "read_sql": queried.to_dict("records"),
        }
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for kind, name in [("MATERIALIZED VIEW", "counted"), ("VIEW", "named")]:
                conn.execute(sa.text(f"DROP {kind} {prefix}{name}"))
            conn.execute(sa.text(f"DROP TABLE {prefix}items"))
        return out
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_whole_table_reflection_as_on_postgres(server, postgres_url: str, table_name: str) -> None:
    """MetaData.reflect, Table(autoload_with=…), the inspector's view definitions and pandas'
    read_sql_table give what they give against PostgreSQL."""
    pytest.importorskip("pandas")
    ours = _reflect(
        f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize", table_name
    )
    theirs = _reflect(postgres_url.replace("postgresql://", "postgresql+psycopg://"), table_name)
    assert ours == theirs
    assert sorted(ours["reflected"]) == [f"{table_name}{n}" for n in ("counted", "items", "named")]
    assert ours["materialized"] == [f"{table_name}counted"]


def _replaced(url: str, name: str) -> dict:
    """pandas' to_sql run three times, replacing the table (a DROP, CREATE TABLE and CREATE
    INDEX in one transaction), then appending; what read_sql and the inspector see."""
    import pandas as pd

    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None], "c": [1.5, None, 3.0]})
    engine = sa.create_engine(url)
    try:
        frame.to_sql(name, engine, if_exists="replace", index=False)
        frame.to_sql(name, engine, if_exists="replace", index=True)
        frame.to_sql(name, engine, if_exists="replace", index=True)
        frame.to_sql(name, engine, if_exists="append", index=True)
        read = pd.read_sql(f"SELECT * FROM {name} ORDER BY a, index", engine)
        out = {
            "rows": read.astype(object).where(read.notna(), None).to_dict("records"),
            "indexes": sa.inspect(engine).get_indexes(name),
        }
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text(f"DROP TABLE {name}"))
        return out
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_pandas_to_sql_replacing_a_table_as_on_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    pytest.importorskip("pandas")
    ours = _replaced(
        f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize", table_name
    )
    theirs = _replaced(postgres_url.replace("postgresql://", "postgresql+psycopg://"), table_name)
    assert ours == theirs
    assert len(ours["rows"]) == 6
