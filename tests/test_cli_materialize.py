"""`changeflow materialize`: shards made through the Python API, materialized from the CLI."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import closing
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from changeflow.cli import main
from changeflow.config import Config
from changeflow.materialize.drivers.files import FilesDriver
from changeflow.materialize.drivers.kv import KvDriver
from changeflow.storage import Storage
from changeflow.time import Antichain

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int64())])
PEOPLE = {(1, "A", 3), (2, "b", 2), (3, "b", 4)}  # the shard's contents at its upper


def storage(home: Path) -> Storage:
    return Storage.open(Config.load(home=str(home)))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with shard `people` (upper [4]; name 'b' is on two rows) and empty shard `empty`."""
    s = storage(tmp_path)
    read_cap, write_cap = s.create("people", SCHEMA, "counter")
    s.append(write_cap, [((1, "a", 1), 0, 1), ((2, "b", 2), 0, 1)], 1)
    s.append(write_cap, [((1, "a", 1), 1, -1), ((1, "A", 3), 1, 1), ((3, "b", 4), 2, 1)], 3)
    s.append(write_cap, [], 4)
    s.drop(read_cap)
    s.drop(write_cap)
    s.create("empty", SCHEMA)
    s.close()
    return tmp_path


def materialize(home: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["materialize", *args, "--home", str(home)])


def ok(home: Path, *args: str) -> str:
    result = materialize(home, *args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def rows(path: Path, query: str = "SELECT id, name, qty FROM people") -> set[tuple]:
    with closing(sqlite3.connect(path)) as db:
        return set(db.execute(query).fetchall())


def polled(path: Path, query: str = "SELECT id, name, qty FROM people") -> set[tuple]:
    """``rows``, or nothing while the file or its table is still being made."""
    try:
        return rows(path, query) if path.exists() else set()
    except sqlite3.OperationalError:
        return set()


def checkpoint(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT checkpoint FROM changeflow_checkpoints").fetchone()[0]


def test_into_sqlite_and_read_back(home: Path) -> None:
    target = home / "out.sqlite"
    out = ok(home, "people", "--to", f"sqlite:{target}", "--key", "id", "--max-rows", "1")
    assert out.startswith("done: 'people-to-sqlite' committed 3 transactions (5 rows read")
    assert out.rstrip().endswith(f"sqlite:{target} holds 'people' up to frontier [4]")
    assert rows(target) == PEOPLE
    assert json.loads(checkpoint(target))["frontier"] == [4]
    state = storage(home).state("people")
    assert (state.readers, state.writers) == ({}, {})  # the run dropped its leases
    assert set(state.registered) == {"materialization:people-to-sqlite"}  # a durable hold


def test_a_second_run_changes_nothing(home: Path) -> None:
    target = home / "out.sqlite"
    ok(home, "people", "--to", f"sqlite:{target}", "--key", "id")
    before = (rows(target), checkpoint(target))
    out = ok(home, "people", "--to", f"sqlite:{target}", "--key", "id")
    assert out.startswith("done: 'people-to-sqlite' is up to date")
    assert (rows(target), checkpoint(target)) == before


def test_a_closed_shard_is_materialized_to_the_end(home: Path) -> None:
    s = storage(home)
    read_cap, write_cap = s.acquire_capabilities("people")
    s.append(write_cap, [((3, "b", 4), 4, -1)], Antichain())
    s.drop(read_cap)
    target = f"kv:{home / 'kv'}"
    out = ok(home, "people", "--to", target, "--key", "id", "--follow")
    assert out.startswith("done: 'people-to-kv' committed") and "to the end (closed)" in out
    out = ok(home, "people", "--to", target, "--key", "id")
    assert out.startswith("done: 'people-to-kv' is up to date") and "to the end (closed)" in out
    assert KvDriver.read_docs(home / "kv", "people") == {
        (1,): {"id": 1, "name": "A", "qty": 3},
        (2,): {"id": 2, "name": "b", "qty": 2},
    }


def test_a_run_goes_on_from_the_last_one(home: Path) -> None:
    target = f"sqlite:{home / 'out.sqlite'}"
    ok(home, "people", "--to", target, "--key", "id", "--out-of-process")
    s = storage(home)
    read_cap, write_cap = s.acquire_capabilities("people")
    s.append(write_cap, [((2, "b", 2), 4, -1), ((4, "d", 5), 5, 1)], 6)
    s.drop(read_cap)
    s.drop(write_cap)
    out = ok(home, "people", "--to", target, "--key", "id", "--out-of-process")
    assert "committed 1 transaction (2 rows read, 2 stores)" in out and "frontier [6]" in out
    assert rows(home / "out.sqlite") == PEOPLE - {(2, "b", 2)} | {(4, "d", 5)}


def test_reduce_and_name(home: Path) -> None:
    target = home / "sums.sqlite"
    args = ["people", "--to", f"sqlite:{target}", "--key", "name", "--reduce", "qty=sum"]
    out = ok(home, *args, "--name", "sums")
    assert out.startswith("done: 'sums' committed")
    assert rows(target, "SELECT name, qty FROM people") == {("a", 0), ("A", 3), ("b", 6)}


def test_follow_until_idle(home: Path) -> None:
    """--follow picks up what is appended while it runs and stops once idle."""
    target = home / "out.sqlite"
    command = ["materialize", "people", "--to", f"sqlite:{target}", "--key", "id", "--follow"]
    process = cli(*command, "--idle-timeout", "3", "--home", str(home))
    wait_for(lambda: len(polled(target)) == 3, process)
    s = storage(home)
    read_cap, write_cap = s.acquire_capabilities("people")
    s.append(write_cap, [((5, "e", 1), 4, 1)], 5)
    s.drop(read_cap)
    s.drop(write_cap)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "frontier [5]" in out and rows(target) == PEOPLE | {(5, "e", 1)}


def test_follow_stops_cleanly_on_ctrl_c(home: Path) -> None:
    """Ctrl-C between transactions: a summary, exit status 130 (as shells expect), and the
    files target has applied the last transaction."""
    target = home / "files"
    command = ["materialize", "people", "--to", f"files:{target}", "--key", "id", "--follow"]
    process = cli(*command, "--home", str(home))
    log = home / "materialize" / "recovery.sqlite"
    query = "SELECT count(*) FROM recovery_log WHERE runtime_checkpoint LIKE '%4%'"
    wait_for(lambda: polled(log, query) == {(1,)}, process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert out.startswith("stopped (Ctrl-C): 'people-to-files' committed") and "[4]" in out
    table = FilesDriver.read_table(target, "people")
    assert set(map(tuple, (r.values() for r in table.to_pylist()))) == PEOPLE


def cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "changeflow.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"gave up waiting: {process.communicate()}")
        time.sleep(0.05)


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope", "--to", "sqlite:{home}/x.sqlite", "--key", "id"], "no shard named 'nope'"),
        (["people", "--to", "mysql://x", "--key", "id"], "'mysql://x' is not one of"),
        (["people", "--to", "files:", "--key", "id"], "'files:' is not files:PATH"),
        (["people", "--to", "sqlite:{home}/o.sqlite", "--key", "idx"], "no column 'idx'"),
        (["people", "--to", "sqlite:{home}/o.sqlite", "--key", " , "], "names no column"),
        (
            ["people", "--to", "sqlite:{home}/o.sqlite", "--key", "name"],
            "key (name='b') has 2 rows",
        ),
        (["people", "--to", "kv:{home}/kv", "--key", "id", "--reduce", "qty=sum"], "--force"),
        (["people", "--to", "kv:{home}/kv", "--key", "id", "--reduce", "qty"], "not COL=sum or"),
        (
            ["people", "--to", "kv:{home}/kv", "--key", "id", "--reduce", "qty=avg"],
            "unknown reduction",
        ),
        (
            ["people", "--to", "kv:{home}/kv", "--key", "id", "--idle-timeout", "1"],
            "goes with --follow",
        ),
        (
            ["people", "--to", "postgresql://postgres@127.0.0.1:1/x", "--key", "id"],
            "open: connection failed",
        ),
    ],
)
def test_user_mistakes_are_one_line(home: Path, args: list[str], message: str) -> None:
    result = materialize(home, *(a.format(home=home) for a in args))
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, result.exception
    assert result.stdout == "" and result.stderr.startswith("error: ")
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr
    state = storage(home).state("people")
    assert (state.readers, state.writers) == ({}, {})
    if "has 2 rows" not in message:  # (that one commits its first transaction, and holds it)
        assert state.registered == {}


def test_a_mistake_prints_no_traceback(home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "changeflow.cli", "materialize", "people", "--home", str(home)]
        + ["--to", f"sqlite:{home / 'o.sqlite'}", "--key", "name", "--out-of-process"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert "key (name='b') has 2 rows" in result.stderr


def test_a_new_target_needs_a_new_name(home: Path) -> None:
    """The recovery log holds the checkpoint of a files target: another target would be
    skipped up to it, so it is refused under the same name."""
    ok(home, "people", "--to", f"files:{home / 'a'}", "--key", "id")
    result = materialize(home, "people", "--to", f"files:{home / 'b'}", "--key", "id")
    assert result.exit_code == 1 and "pass another --name" in result.stderr
    ok(home, "people", "--to", f"files:{home / 'b'}", "--key", "id", "--name", "b")
    assert len(FilesDriver.read_table(home / "b", "people")) == 3


def test_sum_through_kv_with_force(home: Path) -> None:
    args = ["people", "--to", f"kv:{home / 'kv'}", "--key", "id", "--reduce", "qty=sum"]
    assert "committed" in ok(home, *args, "--force")


@pytest.mark.postgres
def test_into_postgres(home: Path, postgres_url: str) -> None:
    import psycopg
    from postgres_server import create_database

    url = create_database(postgres_url, f"cli_{uuid.uuid4().hex[:12]}")
    out = ok(home, "people", "--to", url, "--key", "id")
    assert out.startswith("done: 'people-to-postgresql' committed")
    with psycopg.connect(url) as conn:
        assert set(conn.execute("SELECT id, name, qty FROM people").fetchall()) == PEOPLE
    assert "is up to date" in ok(home, "people", "--to", url, "--key", "id")


@pytest.mark.parametrize(
    "reduce, message",
    [
        ("name=sum", "--reduce name=sum: column 'name' is string, and sum takes a number"),
        ("qty=merge", "--reduce qty=merge: column 'qty' is int64, and merge takes JSON text"),
    ],
)
def test_a_reduction_the_column_cannot_take_is_refused_before_writing(
    home: Path, reduce: str, message: str
) -> None:
    target = home / "o.sqlite"
    args = ["people", "--to", f"sqlite:{target}", "--key", "id", "--reduce", reduce]
    result = materialize(home, *args)
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1
    assert message in result.stderr
    assert not target.exists()


def test_a_table_another_materialization_owns_is_refused(home: Path) -> None:
    target = home / "x.sqlite"
    ok(home, "people", "--to", f"sqlite:{target}", "--key", "id", "--name", "a")
    result = materialize(home, "people", "--to", f"sqlite:{target}", "--key", "id", "--name", "b")
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1
    assert f"table 'people' in sqlite:{target} is owned by materialization 'a'" in result.stderr
    assert rows(target) == PEOPLE


@pytest.mark.parametrize("scheme", ["sqlite", "files", "kv", "jsonl"])
def test_every_target_prints_a_summary_when_not_on_a_terminal(home: Path, scheme: str) -> None:
    target = f"{scheme}:{home / 'out'}"
    result = subprocess.run(
        [sys.executable, "-m", "changeflow.cli", "materialize", "people", "--to", target]
        + ["--key", "id", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"done: 'people-to-{scheme}' committed") and "frontier [4]" in line


def test_help_shows_an_example() -> None:
    result = CliRunner().invoke(main, ["materialize", "--help"])
    assert result.exit_code == 0
    example = result.output.split("Example:\n", 1)[1]
    assert example.lstrip().startswith("changeflow materialize orders --to sqlite:orders.sqlite")


def test_a_materialization_holds_the_shard_until_dropped(home: Path) -> None:
    target = f"sqlite:{home / 'out.sqlite'}"
    ok(home, "people", "--to", target, "--key", "id")
    held = storage(home).registered_readers("people")
    assert held["materialization:people-to-sqlite"].frontier == Antichain([3])
    out = ok(home, "--drop", "people-to-sqlite")
    assert out.startswith("dropped materialization 'people-to-sqlite': released its hold on")
    assert storage(home).registered_readers("people") == {}
    result = materialize(home, "--drop", "people-to-sqlite")
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1
    assert "no materialization named 'people-to-sqlite'" in result.stderr
    assert materialize(home, "--drop", "x", "people").exit_code == 2  # --drop goes alone
    assert materialize(home, "people", "--key", "id").exit_code == 2  # no --to
