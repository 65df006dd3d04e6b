"""Ingesting CDC v2 folders into shards: resuming at the upper, exact under chaos, all or none."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

from changeflow.cdc.chaos import chaos_copy
from changeflow.cdc.files import write_messages
from changeflow.cdc.messages import Updates
from changeflow.cdc.writer import CdcWriter, write_history
from changeflow.collection import consolidate, read
from changeflow.config import Config
from changeflow.errors import InvalidInput
from changeflow.storage import Storage
from changeflow.storage.ingest import IngestStats, ingest
from changeflow.time import Antichain
from changeflow.updates import canonical_json

COLUMNS = ["id", "name"]
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
TICKS = 40


@pytest.fixture
def storage(tmp_path: Path):
    storage = Storage.open(Config.load(home=str(tmp_path / "home")))
    yield storage
    storage.close()


def history(seed: int = 1, ticks: int = TICKS) -> list:
    """``(updates, frontier)`` steps over rows ``(id, name)``, one time a step."""
    rng = random.Random(seed)
    return [
        (
            [((rng.randrange(8), rng.choice("abc")), t, rng.choice([-1, 1, 2])) for _ in range(5)],
            Antichain([t + 1]),
        )
        for t in range(ticks)
    ]


def as_json(data: tuple | dict) -> str:
    """A row as the canonical JSON object JSON lines hold (a dict as it is)."""
    return canonical_json(data if isinstance(data, dict) else dict(zip(COLUMNS, data, strict=True)))


def original(steps: list) -> list:
    return [u for updates, _ in steps for u in updates]


def encode(folder: Path, steps: list, fmt: str = "parquet", close: bool = True) -> Path:
    """The steps as CDC v2 files (rows as JSON objects for JSON lines)."""
    if close:
        messages = write_history(steps, batch_size=7)
    else:
        writer = CdcWriter(7)
        messages = [m for updates, frontier in steps for m in writer.write(updates, frontier)]
    if fmt == "jsonl":
        messages = [
            Updates(tuple((as_json(d), t, r) for d, t, r in m.updates))
            if isinstance(m, Updates)
            else m
            for m in messages
        ]
    write_messages(folder, messages, fmt, COLUMNS, files=3)
    return folder


def contents(storage: Storage, shard: str, as_of: int) -> dict:
    read_cap, write_cap = storage.acquire_capabilities(shard)
    try:
        table = storage.snapshot_table(read_cap, as_of)
    finally:
        storage.drop(read_cap)
        storage.drop(write_cap)
    rows = zip(*(table.column(c).to_pylist() for c in COLUMNS), strict=True)
    return dict(zip(rows, table.column("_diff").to_pylist(), strict=True))


def assert_holds(storage: Storage, shard: str, updates: list, until: int) -> None:
    for t in range(until):
        assert contents(storage, shard, t) == read(updates, t), f"as of {t}"


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "avro"])
def test_ingest_twice_appends_once(storage: Storage, tmp_path: Path, fmt: str) -> None:
    steps = history()
    folder = encode(tmp_path / "cdc", steps, fmt)
    storage.create("s", SCHEMA, "counter")
    seen: list[IngestStats] = []
    first = ingest(storage, "s", [folder], on_progress=lambda s: seen.append(s))
    assert first.appends >= 1 and first.upper == Antichain()
    assert first.updates == len(consolidate(original(steps)))
    assert seen and seen[-1].upper == Antichain()
    state = storage.state("s")
    assert state.upper == Antichain()
    again = ingest(storage, "s", [folder])
    assert (again.appends, again.updates, again.skipped) == (0, 0, first.advances)
    assert storage.state("s").batches == state.batches
    assert_holds(storage, "s", original(steps), TICKS)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_ingest_of_a_chaos_copy_equals_the_original(storage, tmp_path: Path, fmt: str) -> None:
    steps = history(seed=2)
    encode(tmp_path / "cdc", steps, fmt)
    chaos_copy([tmp_path / "cdc"], tmp_path / "chaos", seed=5, files=6, duplication=0.7)
    storage.create("s", SCHEMA, "counter")
    stats = ingest(storage, "s", [tmp_path / "chaos"], fmt)
    assert stats.upper == Antichain()
    assert_holds(storage, "s", original(steps), TICKS)


def test_ingest_resumes_at_the_shards_upper(storage: Storage, tmp_path: Path) -> None:
    steps = history(seed=3)
    encode(tmp_path / "part", steps[:15], close=False)
    encode(tmp_path / "all", steps)
    storage.create("s", SCHEMA, "counter")
    assert ingest(storage, "s", [tmp_path / "part"]).upper == Antichain([15])
    rest = ingest(storage, "s", [tmp_path / "all"])
    assert (rest.start, rest.upper) == (Antichain([15]), Antichain())
    assert rest.updates == len(consolidate(original(steps[15:])))
    assert_holds(storage, "s", original(steps), TICKS)


def test_columns_are_matched_by_name(storage: Storage, tmp_path: Path) -> None:
    steps = history(seed=4)
    encode(tmp_path / "cdc", steps)
    storage.create("s", pa.schema([("name", pa.string()), ("id", pa.int64())]), "counter")
    ingest(storage, "s", [tmp_path / "cdc"])
    flipped = [((name, i), t, r) for (i, name), t, r in original(steps)]
    table = contents(storage, "s", TICKS - 1)
    assert {(n, i): c for (i, n), c in table.items()} == read(flipped, TICKS - 1)


@pytest.mark.parametrize(
    "schema, match",
    [
        (pa.schema([("id", pa.int64()), ("title", pa.string())]), "not shard 's'"),
        (pa.schema([("id", pa.string()), ("name", pa.string())]), "column id is int64"),
    ],
)
def test_a_schema_mismatch_appends_nothing(storage, tmp_path: Path, schema, match) -> None:
    encode(tmp_path / "cdc", history(seed=5))
    storage.create("s", schema, "counter")
    with pytest.raises(InvalidInput, match=match):
        ingest(storage, "s", [tmp_path / "cdc"])
    state = storage.state("s")
    assert state.upper == Antichain([0]) and not state.batches


def test_json_data_that_does_not_fit_late_in_the_history_appends_nothing(storage, tmp_path):
    steps = history(seed=6)
    steps[-1] = ([({"id": 1, "title": "x"}, TICKS - 1, 1)], steps[-1][1])
    messages = write_history(
        [
            (
                [
                    (
                        canonical_json(
                            d if isinstance(d, dict) else dict(zip(COLUMNS, d, strict=True))
                        ),
                        t,
                        r,
                    )
                    for d, t, r in updates
                ],
                f,
            )
            for updates, f in steps
        ]
    )
    write_messages(tmp_path / "cdc", messages, "jsonl")
    storage.create("s", SCHEMA, "counter")
    with pytest.raises(InvalidInput, match=r'"title"') as caught:
        ingest(storage, "s", [tmp_path / "cdc"])
    assert "nothing was appended" in str(caught.value)
    assert storage.state("s").upper == Antichain([0]) and not storage.state("s").batches
    assert json.loads(json.dumps(caught.value.to_wire()))["kind"] == "InvalidInput"


def test_product_times_append_nothing(storage: Storage, tmp_path: Path) -> None:
    from changeflow.time import Product

    steps = [([(as_json((1, "a")), Product((0, 1)), 1)], Antichain([Product((1, 0))]))]
    write_messages(tmp_path / "cdc", write_history(steps), "jsonl")
    storage.create("s", SCHEMA, "counter")
    with pytest.raises(InvalidInput, match="product times"):
        ingest(storage, "s", [tmp_path / "cdc"])
    assert not storage.state("s").batches


@pytest.mark.parametrize("value", [2.5, True, None])
def test_a_value_the_column_cannot_hold_exactly_appends_nothing(storage, tmp_path, value) -> None:
    """JSON data goes through storage's one validation rule: 2.5 is not an int64, True is not an
    int, NULL is not allowed in a NOT NULL column."""
    steps = [
        ([(as_json((1, "a")), 0, 1)], Antichain([1])),
        ([(as_json((value, "b")), 1, 1)], Antichain([2])),
    ]
    write_messages(tmp_path / "cdc", write_history(steps), "jsonl")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    storage.create("s", schema, "counter")
    with pytest.raises(InvalidInput, match="column id") as caught:
        ingest(storage, "s", [tmp_path / "cdc"])
    assert "nothing was appended" in str(caught.value)
    assert storage.state("s").upper == Antichain([0]) and not storage.state("s").batches
