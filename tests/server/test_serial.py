"""serial columns through ``changeflow serve``: psycopg's INSERT … RETURNING, two clients
inserting at once, and SQLAlchemy's ORM adding rows whose Integer primary key it leaves to
the server."""

from __future__ import annotations

import threading

import psycopg
import pytest


def test_insert_returning_serial_through_psycopg(server, table_name: str) -> None:
    with server.connect() as conn:
        conn.execute(f"CREATE TABLE {table_name} (id serial PRIMARY KEY, v text)")
        first = conn.execute(f"INSERT INTO {table_name} (v) VALUES ('a') RETURNING id")
        assert first.fetchall() == [(1,)]
        for v in ("b", "c", "d", "e", "f", "g"):  # prepared by psycopg after five runs
            conn.execute(f"INSERT INTO {table_name} (v) VALUES (%s)", (v,))
        seq = conn.execute("SELECT pg_get_serial_sequence(%s, 'id')", (table_name,)).fetchone()
        assert seq == (f"public.{table_name}_id_seq",)
        assert conn.execute(f"SELECT currval('{table_name}_id_seq')").fetchone() == (7,)
        rows = conn.execute(f"SELECT id, v FROM {table_name} ORDER BY id").fetchall()
        assert rows == list(enumerate("abcdefg", start=1))
        conn.execute(f"DROP TABLE {table_name}")


def test_two_clients_inserting_at_once_get_distinct_ids(server, table_name: str) -> None:
    with server.connect() as conn:
        conn.execute(f"CREATE TABLE {table_name} (id bigserial, who text)")
    start = threading.Barrier(2)
    got: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def insert(who: str) -> None:
        try:
            with server.connect() as c:
                start.wait()
                sql = f"INSERT INTO {table_name} (who) VALUES (%s) RETURNING id"
                got[who] = [c.execute(sql, (who,)).fetchone()[0] for _ in range(30)]
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=insert, args=(w,)) for w in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ids = got["a"] + got["b"]
    assert len(set(ids)) == 60
    with server.connect() as conn:
        stored = conn.execute(f"SELECT id FROM {table_name}").fetchall()
        assert sorted(r[0] for r in stored) == sorted(ids)
        conn.execute(f"DROP TABLE {table_name}")


def test_sqlalchemy_orm_leaves_the_key_to_the_server(server, table_name: str) -> None:
    sa = pytest.importorskip("sqlalchemy")
    from sqlalchemy import orm

    class Base(orm.DeclarativeBase):
        pass

    class Item(Base):
        __tablename__ = table_name
        id = orm.mapped_column(sa.Integer, primary_key=True)
        name = orm.mapped_column(sa.Text)

    engine = sa.create_engine(
        f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize"
    )
    try:
        Base.metadata.create_all(engine)  # CREATE TABLE … (id SERIAL NOT NULL, …)
        with orm.Session(engine) as session:
            items = [Item(name=n) for n in ("a", "b", "c")]
            session.add_all(items)
            session.commit()
            assert sorted(i.id for i in items) == [1, 2, 3]
        with engine.connect() as conn:
            conn.execute(sa.insert(Item.__table__).values(name="core"))
            conn.commit()
            rows = conn.execute(sa.select(Item.id, Item.name).order_by(Item.id)).all()
            assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c"), (4, "core")]
        Base.metadata.drop_all(engine)
    finally:
        engine.dispose()


def test_a_view_with_nextval_is_refused_over_the_wire(server, table_name: str) -> None:
    with server.connect() as conn:
        conn.execute(f"CREATE TABLE {table_name} (id serial, v text)")
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute(
                f"CREATE MATERIALIZED VIEW {table_name}_m AS "
                f"SELECT nextval('{table_name}_id_seq') AS n FROM {table_name}"
            )
        conn.execute(f"DROP TABLE {table_name}")


@pytest.mark.postgres
def test_inspector_sees_serial_columns_as_on_postgres(
    server, postgres_url: str, table_name: str
) -> None:
    sa = pytest.importorskip("sqlalchemy")

    def inspect(url: str) -> tuple:
        engine = sa.create_engine(url)
        try:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(
                    sa.text(
                        f"CREATE TABLE {table_name} (id serial PRIMARY KEY, b bigserial, v text)"
                    )
                )
            insp = sa.inspect(engine)
            columns = [{**c, "type": str(c["type"])} for c in insp.get_columns(table_name)]
            key = insp.get_pk_constraint(table_name)
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(sa.text(f"DROP TABLE {table_name}"))
            return columns, key
        finally:
            engine.dispose()

    ours = inspect(f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize")
    theirs = inspect(postgres_url.replace("postgresql://", "postgresql+psycopg://"))
    assert ours == theirs
    assert ours[0][0]["default"] == f"nextval('{table_name}_id_seq'::regclass)"
    assert ours[0][0]["autoincrement"] is True


def test_copy_leaves_serial_columns_to_their_sequence(server, table_name: str) -> None:
    with server.connect() as conn:
        conn.execute(f"CREATE TABLE {table_name} (id serial PRIMARY KEY, v text)")
        with conn.cursor().copy(f"COPY {table_name} (v) FROM STDIN") as copy:
            for v in ("a", "b", "c"):
                copy.write_row((v,))
        rows = conn.execute(f"SELECT id, v FROM {table_name} ORDER BY id").fetchall()
        assert rows == [(1, "a"), (2, "b"), (3, "c")]
        conn.execute(f"DROP TABLE {table_name}")
