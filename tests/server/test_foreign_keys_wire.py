"""FOREIGN KEY constraints through the server, compared with PostgreSQL 15: psql's ``\\d``
of the referencing table ("Foreign-key constraints:") and of the referenced one
("Referenced by:"), SQLAlchemy's inspector and MetaData.reflect, COPY and prepared INSERTs
refused alike, and the schema, table, column and constraint fields of the errors of
constraint violations (23502, 23503, 23505, 23514) as psycopg's ``diag`` reads them."""

from __future__ import annotations

import psycopg
import pytest
from test_psql import _same_psql_output

pytestmark = pytest.mark.postgres


def _tables(t: str) -> list[str]:
    return [
        f"CREATE TABLE {t}_p (id int PRIMARY KEY, code text UNIQUE, n int NOT NULL DEFAULT 0 "
        "CHECK (n >= 0))",
        f"CREATE TABLE {t}_c (id int PRIMARY KEY, p_id int REFERENCES {t}_p ON DELETE CASCADE, "
        f"code text, CONSTRAINT {t}_c_code FOREIGN KEY (code) REFERENCES {t}_p (code) "
        "ON UPDATE SET NULL)",
        f"CREATE TABLE {t}_d (p_id int REFERENCES {t}_p (id))",
    ]


def _drop(t: str) -> list[str]:
    return [f"DROP TABLE IF EXISTS {t}_{k}" for k in "dcp"]


def test_describe_lists_foreign_keys_as_postgres(start_server, postgres_url: str) -> None:
    setup = [*_tables("pgfk"), "CREATE TABLE pgfk_s (a int REFERENCES pgfk_s (a), PRIMARY KEY (a))"]
    commands = ["\\d pgfk_c", "\\d pgfk_p", "\\d pgfk_s", "\\d+ pgfk_c"]
    teardown = [*_drop("pgfk"), "DROP TABLE IF EXISTS pgfk_s"]
    _same_psql_output(start_server(), postgres_url, setup, commands, teardown)


def _diag(conn: psycopg.Connection, sql: str, args: tuple | None = None) -> tuple:
    try:
        conn.execute(sql, args)
    except psycopg.Error as e:
        d = e.diag
        return (e.sqlstate, d.message_primary, d.message_detail, d.schema_name) + (
            d.table_name,
            d.column_name,
            d.constraint_name,
        )
    return ("ok",)


def test_errors_name_their_objects_as_postgres(server, postgres_url: str, table_name: str) -> None:
    t = table_name
    statements = [
        f"INSERT INTO {t}_p VALUES (1, 'a', 0), (2, 'b', 0)",
        f"INSERT INTO {t}_c VALUES (1, 1, 'a')",
        f"INSERT INTO {t}_c VALUES (2, 7, NULL)",
        f"INSERT INTO {t}_c VALUES (2, NULL, 'zz')",
        f"DELETE FROM {t}_c WHERE id = 1",
        f"INSERT INTO {t}_c VALUES (1, 1, 'a')",
        f"UPDATE {t}_p SET code = 'aa' WHERE id = 1",
        f"SELECT * FROM {t}_c",
        f"INSERT INTO {t}_p VALUES (1, 'x', 0)",
        f"INSERT INTO {t}_p VALUES (3, 'x', -1)",
        f"INSERT INTO {t}_p VALUES (3, 'x', NULL)",
        f"UPDATE {t}_p SET n = NULL WHERE id = 2",
    ]
    with server.connect() as ours, psycopg.connect(postgres_url, autocommit=True) as pg:
        ours.autocommit = True
        for conn in (ours, pg):
            for sql in _tables(t):
                conn.execute(sql)
        try:
            for sql in statements:
                assert _diag(ours, sql) == _diag(pg, sql), sql
            for rows in ([(5, 9, None)], [(5, 1, None), (6, None, "q")]):
                for conn in (ours, pg):  # COPY: the first row of the input that fails
                    copy = f"COPY {t}_c FROM STDIN"
                    with (
                        pytest.raises(psycopg.Error) as caught,
                        conn.cursor() as cur,
                        cur.copy(copy) as c,
                    ):
                        for row in rows:
                            c.write_row(row)
                    conn.execute("SELECT 1")
                    assert caught.value.sqlstate == "23503"
            sql = f"INSERT INTO {t}_c VALUES (%s, %s, %s)"
            for conn in (ours, pg):
                with pytest.raises(psycopg.errors.ForeignKeyViolation):
                    conn.cursor().executemany(sql, [(7, 1, None), (8, 9, None)])
            query = f"SELECT * FROM {t}_c ORDER BY id"
            assert ours.execute(query).fetchall() == pg.execute(query).fetchall()
            for conn in (ours, pg):  # a table whose one constraint is its foreign key
                with pytest.raises(psycopg.errors.ForeignKeyViolation):
                    conn.cursor().executemany(f"INSERT INTO {t}_d VALUES (%s)", [(1,), (9,)])
            query = f"SELECT * FROM {t}_d"
            assert ours.execute(query).fetchall() == pg.execute(query).fetchall()
        finally:
            for conn in (ours, pg):
                for sql in _drop(t):
                    conn.execute(sql)


def test_inspector_foreign_keys_as_postgres(server, postgres_url: str, table_name: str) -> None:
    sa = pytest.importorskip("sqlalchemy")
    t = table_name

    def inspect(url: str) -> tuple:
        engine = sa.create_engine(url)
        try:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                for sql in _tables(t):
                    conn.execute(sa.text(sql))
            found = sa.inspect(engine).get_foreign_keys(f"{t}_c")
            meta = sa.MetaData()
            meta.reflect(engine, only=[f"{t}_c"])
            reflected = sorted(
                (fk.name, fk.parent.name, fk.column.table.name, fk.column.name, fk.ondelete)
                for fk in meta.tables[f"{t}_c"].foreign_keys
            )
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                for sql in _drop(t):
                    conn.execute(sa.text(sql))
            return sorted(found, key=lambda c: c["name"]), reflected, sorted(meta.tables)
        finally:
            engine.dispose()

    ours = inspect(f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize")
    theirs = inspect(postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    assert ours == theirs
    assert len(ours[0]) == 2


def test_deferred_foreign_keys_through_the_server(start_server, postgres_url: str) -> None:
    """A DEFERRABLE INITIALLY DEFERRED foreign key (as Django declares them) through psycopg
    in a transaction: checked at commit, whose failure (23503, as PostgreSQL's) rolls it back
    and leaves the connection usable; psql's ``\\d`` lists it as PostgreSQL's does."""
    served = start_server()
    setup = [
        "CREATE TABLE dfk_p (id int PRIMARY KEY)",
        "CREATE TABLE dfk_c (id int PRIMARY KEY, p_id int)",
        "ALTER TABLE dfk_c ADD CONSTRAINT dfk_c_p_id_fk FOREIGN KEY (p_id) REFERENCES dfk_p (id) "
        "DEFERRABLE INITIALLY DEFERRED",
    ]
    seen = []
    for c in (served.connect(), psycopg.connect(postgres_url)):
        with c:
            c.autocommit = True
            for sql in ["DROP TABLE IF EXISTS dfk_c, dfk_p", *setup]:
                c.execute(sql)
            c.autocommit = False
            c.execute("INSERT INTO dfk_c VALUES (1, 10)")
            c.execute("INSERT INTO dfk_p VALUES (10)")
            c.commit()
            c.execute("INSERT INTO dfk_c VALUES (2, 20)")
            with pytest.raises(psycopg.errors.ForeignKeyViolation) as failed:
                c.commit()
            d = failed.value.diag
            seen.append((d.message_primary, d.message_detail, d.constraint_name))
            seen.append(c.execute("SELECT * FROM dfk_c ORDER BY id").fetchall())
            c.rollback()
            c.autocommit = True
            c.execute("DROP TABLE dfk_c, dfk_p")
    assert seen[:2] == seen[2:]
    assert seen[1] == [(1, 10)]
    teardown = ["DROP TABLE IF EXISTS dfk_c, dfk_p"]
    _same_psql_output(served, postgres_url, setup, ["\\d dfk_c"], teardown)


def test_sqlalchemy_migration_shapes_as_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    """What a migration tool built on SQLAlchemy does, in one transaction: create_all, then
    AddConstraint of a deferrable foreign key, a unique constraint and a primary key on tables
    that exist; rows written child first; the inspector's view of it, as PostgreSQL's."""
    sa = pytest.importorskip("sqlalchemy")
    t = table_name

    def migrate(url: str) -> tuple:
        meta = sa.MetaData()
        parent = sa.Table(f"{t}_mp", meta, sa.Column("id", sa.Integer, nullable=False))
        child = sa.Table(
            f"{t}_mc",
            meta,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("p_id", sa.Integer),
            sa.Column("code", sa.String(20)),
        )
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                meta.create_all(conn)
                conn.execute(sa.schema.AddConstraint(sa.PrimaryKeyConstraint(parent.c.id)))
                fk = sa.ForeignKeyConstraint(
                    [child.c.p_id],
                    [parent.c.id],
                    name=f"{t}_mc_p_fk",
                    deferrable=True,
                    initially="DEFERRED",
                )
                conn.execute(sa.schema.AddConstraint(fk))
                conn.execute(sa.schema.AddConstraint(sa.UniqueConstraint(child.c.code)))
            with engine.begin() as conn:
                conn.execute(child.insert().values(id=1, p_id=7, code="a"))
                conn.execute(parent.insert().values(id=7))
            failed = None
            try:
                with engine.begin() as conn:
                    conn.execute(child.insert().values(id=2, p_id=8, code="b"))
            except sa.exc.IntegrityError as e:
                failed = e.orig.sqlstate
            inspector = sa.inspect(engine)
            seen = (
                inspector.get_pk_constraint(f"{t}_mp"),
                inspector.get_foreign_keys(f"{t}_mc"),
                inspector.get_unique_constraints(f"{t}_mc"),
                failed,
            )
            with engine.begin() as conn:
                meta.drop_all(conn)
            return seen
        finally:
            engine.dispose()

    ours = migrate(f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize")
    theirs = migrate(postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    assert ours == theirs
    assert ours[1][0]["options"] == {"deferrable": True, "initially": "DEFERRED"}
