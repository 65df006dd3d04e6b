"""`changeflow shard`: list, show, read and compact shards made through the Python API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from changeflow.cli import main
from changeflow.config import Config
from changeflow.storage import Storage
from changeflow.time import Antichain

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def storage(home: Path, **kwargs: float) -> Storage:
    return Storage.open(Config.load(home=str(home)), **kwargs)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with shard `people` (three appends, upper [4]) and an empty shard `empty`."""
    s = storage(tmp_path)
    read_cap, write_cap = s.create("people", SCHEMA, "counter")
    s.append(write_cap, [((1, "a"), 0, 1), ((2, "b"), 0, 1)], 1)
    s.append(write_cap, [((1, "a"), 1, -1), ((1, "A"), 1, 1), ((3, "c"), 2, 2)], 3)
    s.append(write_cap, [], 4)
    s.drop(read_cap)
    s.drop(write_cap)
    s.create("empty", pa.schema([("x", pa.int64())]))
    s.close()
    return tmp_path


def shard(home: Path, *args: str, columns: int = 80) -> str:
    result = CliRunner().invoke(
        main, ["shard", *args, "--home", str(home)], env={"COLUMNS": str(columns)}
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def cells(out: str) -> list[list[str]]:
    """The body rows of the rich tables in ``out``, as lists of cell texts."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if "│" in line]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "changeflow.cli", *args], capture_output=True, text=True
    )


def test_list(home: Path) -> None:
    s = storage(home)
    ids = {name: s.state(name).id for name in ("empty", "people")}
    assert cells(shard(home, "list", columns=160)) == [
        ["empty", ids["empty"], "[0]", "[0]", "0", "0"],
        ["people", ids["people"], "[0]", "[4]", "2", "5"],
    ]


def test_list_without_shards(tmp_path: Path) -> None:
    storage(tmp_path).close()  # a store with no shard yet
    result = CliRunner().invoke(main, ["shard", "list", "--home", str(tmp_path)])
    assert result.exit_code == 0 and "no shards yet" in result.stderr


@pytest.mark.parametrize("command", [["list"], ["show", "t"], ["read", "t"]])
def test_reading_a_missing_home_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "typo"
    result = run("shard", *command, "--home", str(typo))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"error: no changeflow data at {typo}: the folder does not exist; run a command that "
        "writes, or check --home\n"
    )
    assert list(tmp_path.iterdir()) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("shard", *command, "--home", str(empty))
    assert f"no changeflow data at {empty}: no consensus file" in result.stderr
    assert list(empty.iterdir()) == []


def test_a_consensus_in_a_missing_folder_creates_no_folder(tmp_path: Path) -> None:
    folder = Path(f"/changeflow-test-{tmp_path.name}")
    consensus = f"sqlite:{folder}/x.sqlite"
    for command in (["list"], ["compact", "t"]):
        result = run("shard", *command, "--consensus", consensus, "--home", str(tmp_path))
        assert result.returncode == 1 and len(result.stderr.splitlines()) == 1, result.stderr
        assert str(folder) in result.stderr
        assert not folder.exists()


def test_consensus_and_blob_root_options(tmp_path: Path) -> None:
    consensus, blobs = f"sqlite:{tmp_path / 'elsewhere.sqlite'}", str(tmp_path / "blobs")
    s = Storage.open(Config.load(home=str(tmp_path / "h"), consensus=consensus, blob_root=blobs))
    _, write_cap = s.create("t", SCHEMA)
    s.append(write_cap, [((7, "x"), 0, 1)], 1)
    s.close()
    args = ["--consensus", consensus, "--blob-root", blobs]
    result = CliRunner().invoke(main, ["shard", "read", "t", "--format", "jsonl", *args])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"data": {"id": 7, "name": "x"}, "count": 1}
    result = CliRunner().invoke(main, ["shard", "list", "--home", str(tmp_path / "h")])
    assert "no changeflow data at" in result.stderr  # the home holds no store of its own


def test_show(home: Path) -> None:
    s = storage(home, lease_seconds=0.001)
    read_cap, write_cap = s.acquire_capabilities("people")  # its lease has expired on return
    out = shard(home, "show", "people", columns=160)
    s.close()
    assert "since [0], upper [4], 5 rows in 2 batches" in out and "counter" in out
    rows = cells(out)
    assert rows[:2] == [["id", "int64", "yes"], ["name", "string", "yes"]]
    assert rows[2:4] == [["0", "[0, 1)", "[0]", "2", "1"], ["1", "[1, 3)", "[0]", "3", "1"]]
    (kind, _, frontier, expires, live), write = rows[4:]
    assert (kind, frontier, live) == ("read", "[0]", "expired") and expires.endswith(" UTC")
    assert write == ["write", write_cap.id, "[4]", "-", "live"] and read_cap.id in out
    assert "batches: none" in shard(home, "show", "empty")


def test_read(home: Path) -> None:
    before = storage(home).state("people")
    out = shard(home, "read", "people")
    assert "people as of 3: 3 rows" in out
    assert cells(out) == [["1", "A", "1"], ["2", "b", "1"], ["3", "c", "2"]]
    jsonl = shard(home, "read", "people", "--as-of", "0", "--format", "jsonl")
    assert [json.loads(line) for line in jsonl.splitlines()] == [
        {"data": {"id": 1, "name": "a"}, "count": 1},
        {"data": {"id": 2, "name": "b"}, "count": 1},
    ]
    assert len(shard(home, "read", "people", "--format", "jsonl", "--limit", "1").splitlines()) == 1
    assert "first 2 of 3 rows" in shard(home, "read", "people", "--limit", "2")
    after = storage(home).state("people")  # the reads left no capability behind
    assert (after.readers, after.writers, after.since) == ({}, {}, before.since)
    assert "capabilities: none" in shard(home, "show", "people")


def test_read_a_closed_shard_shows_its_final_contents(home: Path) -> None:
    s = storage(home)
    read_cap, write_cap = s.acquire_capabilities("people")
    s.append(write_cap, [((2, "b"), 9, -1)], Antichain())
    s.drop(read_cap)
    out = shard(home, "read", "people", "--format", "jsonl")
    assert [json.loads(line)["data"]["id"] for line in out.splitlines()] == [1, 3]
    assert "as of the end (closed): 2 rows" in shard(home, "read", "people")


def test_compact(home: Path) -> None:
    before = shard(home, "read", "people", "--as-of", "2")
    out = shard(home, "compact", "people")
    assert out.startswith("people: 5 rows in 2 batches -> 5 rows in 1 batch")
    assert "deleted 0 unreferenced blobs older than 300 s" in out  # the old ones are new
    out = shard(home, "compact", "people", "--grace", "0")
    assert "1 batch -> 5 rows in 1 batch" in out and "deleted 2 unreferenced blobs" in out
    assert shard(home, "read", "people", "--as-of", "2") == before
    blobs = list((home / "blob").rglob("*.parquet"))
    assert len(blobs) == 1 and storage(home).state("people").referenced() == {
        str(blobs[0].relative_to(home / "blob"))
    }


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "nope"], "no shard named 'nope'"),
        (["read", "nope"], "no shard named 'nope'"),
        (["compact", "nope"], "no shard named 'nope'"),
        (["read", "people", "--as-of", "4"], "cannot read as of 4: readable times are"),
        (["read", "people", "--as-of", "-1"], "--as-of -1 is outside 0 <= t < 2^63"),
        (["read", "people", "--as-of", "99999999999999999999"], "is outside 0 <= t < 2^63"),
        (["read", "empty"], "nothing was appended yet"),
        (["list", "--consensus", "mysql://x"], "neither sqlite:PATH nor postgresql"),
    ],
)
def test_user_mistakes_are_one_line(home: Path, args: list[str], message: str) -> None:
    result = run("shard", *args, "--home", str(home))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert message in result.stderr
    state = storage(home).state("people")
    assert (state.readers, state.writers) == ({}, {})  # a failed read drops what it acquired


def test_show_lists_registered_readers_with_their_reason(home: Path) -> None:
    s = storage(home)
    cap = s.register_reader("people", "materialization:people-to-sqlite", "keeps out.sqlite")
    s.downgrade(cap, 2)
    s.close()
    rows = cells(shard(home, "show", "people", columns=160))
    assert [
        "registered",
        "materialization:people-to-sqlite",
        "[2]",
        "never expires",
        "keeps out.sqlite",
    ] in rows


def test_create_a_shard_from_a_schema(tmp_path: Path) -> None:
    spec = "order_id:int64 not null, customer:string, amount:float64, day:date32"
    out = shard(tmp_path, "create", "orders", "--schema", spec, "--timeline", "counter")
    assert out.startswith("created shard 'orders' (s") and out.rstrip().endswith(spec)
    state = storage(tmp_path).state("orders")
    assert state.schema == pa.schema(
        [
            pa.field("order_id", pa.int64(), nullable=False),
            ("customer", pa.string()),
            ("amount", pa.float64()),
            ("day", pa.date32()),
        ]
    )
    assert (state.timeline, state.readers, state.writers) == ("counter", {}, {})


@pytest.mark.parametrize(
    "spec, message",
    [
        ("id:int65", "unknown type 'int65'; the types are bool, int8"),
        ("id int64", "column 1 is 'id int64'; write NAME:TYPE"),
        ("id:int64,", "column 2 is ''"),
        (":int64", "write NAME:TYPE"),
        ("id:int64 nullable", "only 'not null' may follow"),
        ("id:int64, id:string", "repeat a name"),
        ("_id:int64", "starts with '_'"),
    ],
)
def test_create_refuses_a_bad_schema_in_one_line(tmp_path: Path, spec: str, message: str) -> None:
    storage(tmp_path).close()
    result = run("shard", "create", "t", "--schema", spec, "--home", str(tmp_path))
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert message in result.stderr, result.stderr
    assert storage(tmp_path).shards() == []


def test_drop_is_refused_while_registered_readers_hold_the_shard(home: Path) -> None:
    s = storage(home)
    s.register_reader("people", "materialization:people-to-sqlite", "keeps out.sqlite")
    s.close()
    result = run("shard", "drop", "people", "--home", str(home))
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert "materialization:people-to-sqlite (keeps out.sqlite)" in result.stderr
    assert "--force" in result.stderr
    assert "people" in storage(home).shards()
    out = shard(home, "drop", "people", "--force")
    assert "dropped shard 'people'" in out and "materialization:people-to-sqlite" in out
    assert shard(home, "drop", "empty") == "dropped shard 'empty'\n"
    assert storage(home).shards() == []
    assert not [p for p in (home / "blob").iterdir() if p.is_dir()]  # the data is gone


def test_list_and_read_as_json_and_csv(home: Path) -> None:
    lines = shard(home, "list", "--format", "json").splitlines()
    people = json.loads(lines[1])
    assert (people["name"], people["upper"], people["batches"], people["rows"]) == (
        "people",
        [4],
        2,
        5,
    )
    assert shard(home, "list", "--format", "csv").splitlines()[0] == (
        "name,id,since,upper,batches,rows"
    )
    json_lines = shard(home, "read", "people", "--format", "json")
    assert json_lines == shard(home, "read", "people", "--format", "jsonl")
    assert json.loads(json_lines.splitlines()[0]) == {"data": {"id": 1, "name": "A"}, "count": 1}
    assert shard(home, "read", "people", "--format", "csv").splitlines() == [
        "id,name,count",
        "1,A,1",
        "2,b,1",
        "3,c,2",
    ]


def test_every_shard_command_has_an_example() -> None:
    for command in ("create", "drop", "list", "show", "read", "compact"):
        result = CliRunner().invoke(main, ["shard", command, "--help"])
        assert result.exit_code == 0 and "Example:" in result.output, command
        assert f"changeflow shard {command}" in result.output
