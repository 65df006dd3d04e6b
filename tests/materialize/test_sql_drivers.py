"""The SQL drivers (SQLite and PostgreSQL), driven by hand-written protocol messages.

Every test runs on both: a SQLite file in tmp_path, and a fresh database on the session's
PostgreSQL server. Data and checkpoint commit together; a second Open fences off the first
instance, whose commits then fail and change nothing.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from postgres_server import database_for_test

from changeflow.errors import FencedOff, InvalidInput, ProtocolViolation
from changeflow.materialize.drivers import open_driver
from changeflow.materialize.protocol import (
    Acknowledge,
    Acknowledged,
    Binding,
    Flush,
    Flushed,
    Load,
    Loaded,
    Open,
    Opened,
    StartCommit,
    StartedCommit,
    Store,
)
from changeflow.materialize.runtime import Materialization, materialize
from changeflow.materialize.transport import InProcess, Subprocess, Transport
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import SqliteConsensus

ITEMS = Binding(
    "items",
    ("id", "name", "price", "active", "tags"),
    ("int64", "string", "double", "bool", "list<item: string>"),
    ("id",),
)
PAIRS = Binding(
    "pairs",
    ("a", "b", "n", "w", "meta"),
    ("string", "int32", "int64", "float", "struct<x: int64>"),
    ("a", "b"),
)
EVENTS = Binding("events", ("id", "v"), ("int64", "int64"), ("id",), delta_updates=True)
BINDINGS = (ITEMS, PAIRS, EVENTS)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh target: a SQLite file, or a new database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'target.sqlite'}"
    server = request.getfixturevalue("postgres_url")
    return database_for_test(server, request.node.name)


def query(url: str, statement: str) -> list[tuple]:
    """Rows of a statement run directly on the target, sorted."""
    if url.startswith("sqlite:"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:"))) as db:
            return sorted(db.execute(statement).fetchall())
    with psycopg.connect(url) as conn:
        return sorted(conn.execute(statement).fetchall())


def checkpoint(url: str, name: str = "m") -> tuple[int, str | None]:
    ((fence, value),) = query(
        url,
        f"SELECT fence, checkpoint FROM changeflow_checkpoints WHERE materialization = '{name}'",
    )
    return fence, value


class Session:
    """The runtime's side, message by message."""

    def __init__(self, transport: Transport) -> None:
        self.t = transport

    def expect(self, kind: type) -> Any:
        response = self.t.receive(timeout=60)
        assert isinstance(response, kind), response
        return response

    def open(self, bindings: tuple[Binding, ...] = BINDINGS, name: str = "m") -> Any:
        self.t.send(Open(name, bindings, {}))
        return self.expect(Opened).runtime_checkpoint

    def transaction(
        self,
        stores: Iterable[Store] = (),
        frontier: int = 1,
        loads: Iterable[tuple[int, tuple]] = (),
    ) -> dict[tuple[int, tuple], dict]:
        """One transaction; the documents loaded, by (binding, key)."""
        self.t.send(Acknowledge())
        self.expect(Acknowledged)
        for binding, key in loads:
            self.t.send(Load(binding, key))
        self.t.send(Flush())
        loaded = {}
        while not isinstance(response := self.t.receive(timeout=60), Flushed):
            assert isinstance(response, Loaded), response
            loaded[response.binding, response.key] = response.doc
        for store in stores:
            self.t.send(store)
        self.t.send(StartCommit({"frontier": [frontier]}))
        self.expect(StartedCommit)
        return loaded

    def close(self) -> None:
        self.t.close()


@pytest.fixture
def connect(url: str) -> Iterator[Callable[[], Session]]:
    """New sessions with in-process drivers on the target; all are closed at the end."""
    opened: list[Session] = []

    def connect() -> Session:
        opened.append(Session(InProcess(open_driver(url))))
        return opened[-1]

    yield connect
    for s in opened:
        s.close()


def item(id: int, name: str, price: float = 1.5, active: bool = True, tags: Any = None) -> dict:
    return {"id": id, "name": name, "price": price, "active": active, "tags": tags}


def insert(binding: int, key: tuple, doc: dict) -> Store:
    return Store(binding, key, doc, exists=False)


def test_open_on_a_fresh_target_returns_none(url: str, connect: Callable[[], Session]) -> None:
    assert connect().open() is None
    assert checkpoint(url) == (1, None)
    assert query(url, 'SELECT * FROM "items"') == []


def test_a_transaction_commits_data_and_checkpoint_together(
    url: str, connect: Callable[[], Session]
) -> None:
    s = connect()
    s.open()
    s.transaction([insert(0, (i,), item(i, f"n{i}")) for i in (1, 2, 3)], frontier=5)
    assert checkpoint(url) == (1, '{"frontier":[5]}')
    loaded = s.transaction(
        [
            Store(0, (1,), item(1, "one", 2.25, False, ["x"]), exists=True),
            Store(0, (2,), None, exists=True, delete=True),
            insert(0, (4,), item(4, "four")),
        ],
        frontier=9,
        loads=[(0, (1,)), (0, (2,)), (0, (99,))],
    )
    assert set(loaded) == {(0, (1,)), (0, (2,))}
    rows = query(url, 'SELECT "id", "name", "price", "active", "tags" FROM "items"')
    assert [r[:3] for r in rows] == [(1, "one", 2.25), (3, "n3", 1.5), (4, "four", 1.5)]
    assert [bool(r[3]) for r in rows] == [False, True, True]
    assert rows[0][4] == '["x"]' and rows[1][4] is None
    assert checkpoint(url) == (1, '{"frontier":[9]}')


def test_a_second_open_returns_the_checkpoint_and_bumps_the_fence(
    url: str, connect: Callable[[], Session]
) -> None:
    first = connect()
    first.open()
    first.transaction([insert(0, (1,), item(1, "a"))], frontier=7)
    first.close()
    assert connect().open() == {"frontier": [7]}
    assert checkpoint(url) == (2, '{"frontier":[7]}')
    assert connect().open(name="other") is None  # each materialization has its own


def test_a_zombie_is_fenced_off_and_changes_nothing(
    url: str, connect: Callable[[], Session]
) -> None:
    a, b = connect(), connect()
    a.open()
    a.transaction([insert(0, (1,), item(1, "from a"))], frontier=3)
    assert b.open() == {"frontier": [3]}
    with pytest.raises(FencedOff, match=r"newer instance of materialization 'm'.*fence 2"):
        a.transaction([insert(0, (2,), item(2, "zombie")), insert(2, (1,), {"id": 1, "v": 1})])
    assert query(url, 'SELECT "id", "name" FROM "items"') == [(1, "from a")]
    assert query(url, 'SELECT * FROM "events"') == []
    assert checkpoint(url) == (2, '{"frontier":[3]}')
    b.transaction([Store(0, (1,), item(1, "from b"), exists=True)], frontier=4)
    assert query(url, 'SELECT "id", "name" FROM "items"') == [(1, "from b")]
    assert checkpoint(url) == (2, '{"frontier":[4]}')


def test_each_key_range_has_its_own_checkpoint_and_fence(
    url: str, connect: Callable[[], Session]
) -> None:
    """A newer instance of one range fences off that range's older one, not the others."""

    def open_range(begin: int, end: int) -> Session:
        s = connect()
        s.t.send(Open("m", BINDINGS, {}, key_begin=begin, key_end=end))
        s.expect(Opened)
        return s

    low, high = open_range(0, 99), open_range(100, 2**32 - 1)
    low.transaction([insert(0, (1,), item(1, "low"))], frontier=2)
    newer_low = open_range(0, 99)
    with pytest.raises(FencedOff, match=r"keys 0\.\.99\) opened it \(fence 2\)"):
        low.transaction([insert(0, (3,), item(3, "zombie"))], frontier=3)
    high.transaction([insert(0, (2,), item(2, "high"))], frontier=3)
    newer_low.transaction([], frontier=4)
    statement = "SELECT key_begin, key_end, fence, checkpoint FROM changeflow_checkpoints"
    assert query(url, statement) == [
        (0, 99, 2, '{"frontier":[4]}'),
        (100, 2**32 - 1, 1, '{"frontier":[3]}'),
    ]
    assert query(url, 'SELECT "id", "name" FROM "items"') == [(1, "low"), (2, "high")]
    with pytest.raises(InvalidInput, match="overlaps keys"):
        open_range(50, 150)  # another layout, while these ranges hold checkpoints


def test_loads_return_existing_keys_with_their_values(
    url: str, connect: Callable[[], Session]
) -> None:
    s = connect()
    s.open()
    one = item(1, "one", 0.1, False, ["a", "b"])
    two = item(2, "two", -3.0, True, None)
    w = pa.array([0.3], pa.float32()).to_pylist()[0]  # a float32, as the runtime has it
    pair = {"a": "x", "b": 7, "n": 2**40, "w": w, "meta": {"x": 5}}  # values of their types
    s.transaction(
        [insert(0, (1,), one), insert(0, (2,), two), insert(1, ("x", 7), pair)],
        frontier=2,
    )
    loaded = s.transaction(
        loads=[(0, (1,)), (0, (2,)), (0, (3,)), (1, ("x", 7)), (1, ("x", 8)), (1, ("y", 7))]
    )
    assert loaded == {(0, (1,)): one, (0, (2,)): two, (1, ("x", 7)): pair}
    assert isinstance(loaded[0, (1,)]["active"], bool)


def test_delta_updates_append_rows(url: str, connect: Callable[[], Session]) -> None:
    s = connect()
    s.open()
    s.transaction([insert(2, (1,), {"id": 1, "v": 5}), insert(2, (2,), {"id": 2, "v": 1})])
    s.transaction(
        [insert(2, (1,), {"id": 1, "v": -2}), Store(2, (2,), None, exists=False, delete=True)],
        loads=[(2, (1,))],  # a delta-updates binding loads nothing
    )
    assert query(url, 'SELECT "id", "v" FROM "events"') == [(1, -2), (1, 5), (2, 1)]


@pytest.mark.postgres
def test_postgres_keyed_tables_leave_room_for_updates_in_place(
    postgres_url: str, request: pytest.FixtureRequest
) -> None:
    """A keyed table is created with room on its pages (HOT updates); a change table not."""
    url = database_for_test(postgres_url, request.node.name)
    session = Session(InProcess(open_driver(url)))
    try:
        session.open()
    finally:
        session.close()
    options = "SELECT relname, reloptions FROM pg_class WHERE relname IN ('items', 'events')"
    assert query(url, options) == [("events", None), ("items", ["fillfactor=70"])]


def test_a_failed_commit_rolls_back_data_and_checkpoint(
    url: str, connect: Callable[[], Session]
) -> None:
    s = connect()
    s.open()
    s.transaction([insert(0, (1,), item(1, "a"))], frontier=1)
    with pytest.raises(InvalidInput, match="materialization 'm': commit"):
        s.transaction([insert(0, (2,), item(2, "b")), insert(0, (1,), item(1, "again"))])
    assert query(url, 'SELECT "id", "name" FROM "items"') == [(1, "a")]
    assert checkpoint(url) == (1, '{"frontier":[1]}')


def test_a_table_with_another_schema_is_refused(url: str, connect: Callable[[], Session]) -> None:
    statement = 'CREATE TABLE "items" ("id" BIGINT PRIMARY KEY, "name" TEXT, "cost" REAL)'
    if url.startswith("sqlite:"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:"))) as db:
            db.execute(statement)
    else:
        with psycopg.connect(url) as conn:
            conn.execute(statement)
    with pytest.raises(InvalidInput, match=r"'items' exists with other columns: no column 'price'"):
        connect().open()
    with pytest.raises(InvalidInput, match=r"the primary key is \(id\), not none"):
        connect().open(
            (Binding("items", ("id", "name", "cost"), ("int64", "string", "float"), ("id",), True),)
        )


def test_messages_out_of_order_are_refused(url: str, connect: Callable[[], Session]) -> None:
    s = connect()
    with pytest.raises(ProtocolViolation, match="load arrived in the open phase"):
        s.t.send(Load(0, (1,)))
    s = connect()
    s.open()
    with pytest.raises(ProtocolViolation, match="store arrived in the acknowledge phase"):
        s.t.send(insert(0, (1,), item(1, "a")))
    with pytest.raises(ProtocolViolation, match="binding 5 does not exist"):
        s.transaction(loads=[(5, (1,))])


def test_a_driver_process_commits_the_same_way(url: str) -> None:
    command = [sys.executable, "-m", "changeflow.materialize.drivers", url]
    s = Session(Subprocess(command))
    try:
        assert s.open() is None
        s.transaction([insert(0, (i,), item(i, f"n{i}", tags=[f"k{i}"])) for i in (1, 2)], 4)
        loaded = s.transaction(loads=[(0, (1,)), (0, (3,))], frontier=5)
        assert loaded == {(0, (1,)): item(1, "n1", tags=["k1"])}
    finally:
        s.close()
    assert query(url, 'SELECT "id", "name" FROM "items"') == [(1, "n1"), (2, "n2")]
    s = Session(Subprocess(command))
    try:
        assert s.open() == {"frontier": [5]}
        s.t.send(Acknowledge())
        with pytest.raises(ProtocolViolation, match="start_commit arrived in the load phase"):
            s.t.send(StartCommit({}))
            s.expect(Acknowledged)
            s.expect(StartedCommit)
    finally:
        s.close()


def test_measure_a_transaction_of_10k_upserts(
    url: str, connect: Callable[[], Session], capsys: pytest.CaptureFixture
) -> None:
    n = 10_000
    s = connect()
    s.open()
    started = time.perf_counter()
    s.transaction([insert(0, (i,), item(i, f"n{i}", tags=[str(i)])) for i in range(n)])
    inserted = time.perf_counter() - started
    # half of the keys exist (updates), half are new (inserts)
    keys = [(0, (i,)) for i in range(n // 2, n + n // 2)]
    started = time.perf_counter()
    loaded = s.transaction(loads=keys, frontier=2)
    loading = time.perf_counter() - started
    assert len(loaded) == n // 2
    stores = [Store(0, k, item(k[0], "u", 2.0), exists=(0, k) in loaded) for _, k in keys]
    started = time.perf_counter()
    s.transaction(stores, frontier=3)
    upserted = time.perf_counter() - started
    assert query(url, 'SELECT count(*) FROM "items"') == [(n + n // 2,)]
    assert query(url, """SELECT count(*) FROM "items" WHERE "name" = 'u'""") == [(n,)]
    with capsys.disabled():
        print(
            f"\n{url.split(':')[0]}: one transaction of {n} inserts {inserted * 1000:.0f} ms; "
            f"a Flush of {n} loads {loading * 1000:.0f} ms; one transaction of {n} upserts "
            f"(half updates) {upserted * 1000:.0f} ms"
        )


def test_the_runtime_resumes_from_the_target_checkpoint(url: str, tmp_path: Path) -> None:
    storage = Storage(SqliteConsensus(tmp_path / "c.sqlite"), Blob(str(tmp_path / "blob")))
    try:
        schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("w", pa.float32())])
        _, write = storage.create("t", schema)
        storage.append(write, [((1, "a", 0.1), 0, 1), ((2, "b", 0.2), 0, 1)], 1)
        storage.append(write, [((1, "a", 0.1), 1, -1), ((1, "z", 0.3), 1, 1)], 2)
        spec = Materialization("m", "t", url, ("k",))
        materialize(storage, spec, tmp_path / "log.sqlite")
        assert query(url, 'SELECT "k", "v" FROM "t"') == [(1, "z"), (2, "b")]
        storage.append(write, [((1, "z", 0.3), 2, -1), ((3, "c", 1.5), 2, 1)], 3)
        # a new recovery log knows nothing: the target's checkpoint says where to go on
        materialize(storage, spec, tmp_path / "new-log.sqlite", out_of_process=True)
        rows = query(url, 'SELECT "k", "v", "w" FROM "t"')
        assert [(k, v, round(w, 6)) for k, v, w in rows] == [(2, "b", 0.2), (3, "c", 1.5)]
        assert checkpoint(url) == (2, '{"frontier":[3],"lower":[2]}')
    finally:
        storage.close()


def test_delta_updates_write_a_change_table(url: str, tmp_path: Path) -> None:
    """Every change a row with its time and diff: deletes and old versions are rows too, a
    key may have many rows, and a later run adds only what is new."""
    storage = Storage(SqliteConsensus(tmp_path / "c.sqlite"), Blob(str(tmp_path / "blob")))
    try:
        _, write = storage.create("t", pa.schema([("k", pa.int64()), ("v", pa.string())]))
        storage.append(write, [((1, "a"), 0, 1), ((2, "b"), 0, 1)], 1)
        storage.append(write, [((1, "a"), 1, -1), ((1, "z"), 1, 1), ((2, "b"), 2, -1)], 3)
        spec = Materialization("m", "t", url, ("k",), delta_updates=True, max_rows=1)
        materialize(storage, spec, tmp_path / "log.sqlite")
        statement = 'SELECT "k", "v", "_time", "_diff" FROM "t"'
        first = [(1, "a", 0, 1), (1, "a", 1, -1), (1, "z", 1, 1), (2, "b", 0, 1), (2, "b", 2, -1)]
        assert query(url, statement) == first
        storage.append(write, [((1, "z"), 3, -1), ((3, "c"), 3, 1)], 4)
        materialize(storage, spec, tmp_path / "log.sqlite", out_of_process=True)
        assert query(url, statement) == sorted([*first, (1, "z", 3, -1), (3, "c", 3, 1)])
        with pytest.raises(InvalidInput, match="change table .* is not reduced"):
            materialize(
                storage,
                Materialization("r", "t", url, ("k",), {"v": "merge"}, delta_updates=True),
                tmp_path / "log.sqlite",
            )
    finally:
        storage.close()


TYPED = pa.schema(
    [
        ("k", pa.int64()),
        ("flag", pa.bool_()),
        ("small", pa.int16()),
        ("mid", pa.int32()),
        ("x", pa.float64()),
        ("amount", pa.decimal128(12, 3)),
        ("name", pa.string()),
        ("day", pa.date32()),
        ("at", pa.timestamp("us")),
        ("at_utc", pa.timestamp("us", tz="UTC")),
        ("clock", pa.time64("us")),
    ]
)


def typed_rows() -> list[dict]:
    import datetime as dt
    from decimal import Decimal

    utc = dt.UTC
    return [
        {
            "k": 1,
            "flag": True,
            "small": -7,
            "mid": 2**31 - 1,
            "x": 0.1,
            "amount": Decimal("1234.567"),
            "name": "é ü 😀",
            "day": dt.date(1999, 12, 31),
            "at": dt.datetime(2024, 2, 29, 23, 59, 59, 999999),
            "at_utc": dt.datetime(1970, 1, 1, tzinfo=utc),
            "clock": dt.time(23, 59, 59, 999999),
        },
        {
            "k": 2,
            "flag": False,
            "small": 0,
            "mid": -(2**31),
            "x": -1e300,
            "amount": Decimal("-0.001"),
            "name": "",
            "day": dt.date(2000, 1, 1),
            "at": dt.datetime(1900, 1, 1),
            "at_utc": dt.datetime(2038, 1, 19, 3, 14, 8, 5, tzinfo=utc),
            "clock": dt.time(0, 0, 0, 5),
        },
        {"k": 3, **{c: None for c in TYPED.names if c != "k"}},
    ]


def test_every_type_round_trips_as_a_typed_value(url: str, tmp_path: Path) -> None:
    """Booleans, integers, doubles, decimals, text, dates, timestamps with and without a
    time zone, times of day (and NULL of each) are written as the target's types and load back
    equal: an upsert of a stored row retracts it exactly, and a sum over a decimal adds
    exactly."""
    storage = Storage(SqliteConsensus(tmp_path / "c.sqlite"), Blob(str(tmp_path / "blob")))
    try:
        rows = typed_rows()
        _, write = storage.create("t", TYPED)
        storage.append(write, [(tuple(r.values()), 0, 1) for r in rows], 1)
        spec = Materialization("m", "t", url, ("k",))
        materialize(storage, spec, tmp_path / "log.sqlite")
        changed = {**rows[0], "name": "changed"}
        storage.append(
            write, [(tuple(rows[0].values()), 1, -1), (tuple(changed.values()), 1, 1)], 2
        )
        materialize(storage, spec, tmp_path / "log.sqlite")
        driver = open_driver(url)
        try:
            binding = Binding("t", tuple(TYPED.names), tuple(str(t) for t in TYPED.types), ("k",))
            driver.open(Open("check", (binding,), {}))
            loaded = driver.load_batch(0, pa.table({"k": [1, 2, 3, 4]}))
        finally:
            driver.close()
        assert loaded.schema == TYPED
        assert sorted(loaded.to_pylist(), key=lambda r: r["k"]) == [changed, *rows[1:]]
        # dates, timestamps and times of day are the target's own types
        if url.startswith("sqlite:"):
            declared = query(url, "SELECT name, type FROM pragma_table_info('t')")
            kinds = {"day": "DATE", "at": "TIMESTAMP", "clock": "TIME"}
        else:
            declared = query(
                url,
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_name = 't' AND table_schema = current_schema()",
            )
            kinds = {"day": "date", "at": "timestamp without time zone"}
            kinds |= {"at_utc": "timestamp with time zone", "clock": "time without time zone"}
        assert {n: t for n, t in declared if n in kinds} == kinds
        # a sum loads the stored decimal, adds, and stores it again: exactly
        sums = Materialization("s", "t", url.replace("target", "sums"), ("k",), {"amount": "sum"})
        if not url.startswith("sqlite:"):
            sums = Materialization("s", "t", url, ("k",), {"amount": "sum"})
            with psycopg.connect(url) as conn:
                conn.execute('ALTER TABLE "t" RENAME TO "t_lww"')
        materialize(storage, sums, tmp_path / "sums-log.sqlite")
        storage.append(write, [(tuple(rows[1].values()), 2, 1)], 3)
        materialize(storage, sums, tmp_path / "sums-log.sqlite")
        ((amount,),) = query(sums.target, 'SELECT "amount" FROM "t" WHERE "k" = 2')
        assert str(amount) in ("-0.002", "-0.002000")
    finally:
        storage.close()


def test_a_second_row_of_a_key_in_a_later_transaction_is_refused(url: str, tmp_path: Path) -> None:
    """Without a load, a key inserted without retracting its stored row is a second row of
    it: the commit is refused by name and nothing of that transaction is written."""
    storage = Storage(SqliteConsensus(tmp_path / "c.sqlite"), Blob(str(tmp_path / "blob")))
    try:
        _, write = storage.create("t", pa.schema([("k", pa.int64()), ("v", pa.string())]))
        storage.append(write, [((1, "a"), 0, 1)], 1)
        storage.append(write, [((2, "b"), 1, 1), ((1, "again"), 1, 1)], 2)
        spec = Materialization("m", "t", url, ("k",), max_rows=1)
        with pytest.raises(InvalidInput, match=r"key \(k.*1.*\) has 2 rows"):
            materialize(storage, spec, tmp_path / "log.sqlite")
        assert query(url, 'SELECT "k", "v" FROM "t"') == [(1, "a")]
    finally:
        storage.close()
