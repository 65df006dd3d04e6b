"""The file codecs (JSON lines, Avro, Parquet), CDC folders and seeded chaos."""

from __future__ import annotations

import json
import random
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from changeflow.cdc.chaos import chaos_copy, mangle
from changeflow.cdc.files import open_source, write_messages
from changeflow.cdc.formats.avro import cdc_schema
from changeflow.cdc.messages import Progress, Updates
from changeflow.cdc.reader import CdcReader
from changeflow.cdc.writer import write_history
from changeflow.collection import consolidate
from changeflow.errors import CdcConflict, InvalidInput, InvalidTime
from changeflow.time import Antichain, Product
from changeflow.updates import canonical_json

COLUMNS = ["id", "name"]


def history(seed: int, steps: int = 30, product: bool = False):
    rng = random.Random(seed)
    out = []
    for step in range(steps):
        t = Product((step, rng.randrange(2))) if product else step
        updates = [
            ((rng.randrange(6), rng.choice("abc")), t, rng.choice([-1, 1, 2]))
            for _ in range(rng.randrange(5))
        ]
        frontier = Antichain([Product((step + 1, 0))]) if product else Antichain([step + 1])
        out.append((updates, frontier))
    return out


def as_json_data(messages):
    """Messages with row tuples re-held as canonical JSON objects (for the JSON-lines codec)."""
    return [
        Updates(
            tuple(
                (canonical_json(dict(zip(COLUMNS, d, strict=True))), t, r) for d, t, r in m.updates
            )
        )
        if isinstance(m, Updates)
        else m
        for m in messages
    ]


def decoded(folder: Path, fmt: str | None = None):
    """Everything the reader recovers from a folder, as (canonical row, time, diff), and the
    final frontier."""
    source = open_source([folder], fmt)
    reader = CdcReader(audit=True)
    out = []
    for batch, _ in reader.read(source.messages()):
        out += [(canonical_json(source.data_to_json(d)), t, r) for d, t, r in batch]
    return sorted(out, key=repr), reader.frontier


def expected(hist):
    updates = consolidate(u for ups, _ in hist for u in ups)
    return sorted(
        ((canonical_json(dict(zip(COLUMNS, d, strict=True))), t, r) for d, t, r in updates),
        key=repr,
    )


@pytest.mark.parametrize("fmt", ["jsonl", "avro", "parquet"])
@pytest.mark.parametrize("seed", range(5))
def test_chaos_copy_keeps_the_history(tmp_path: Path, fmt: str, seed: int) -> None:
    hist = history(seed)
    messages = write_history(hist, batch_size=random.Random(seed).randint(1, 4))
    if fmt == "jsonl":
        messages = as_json_data(messages)
    write_messages(tmp_path / "src", messages, fmt, COLUMNS, files=3)
    chaos_copy([tmp_path / "src"], tmp_path / "dst", seed=seed, files=5, duplication=0.7)
    got, frontier = decoded(tmp_path / "dst")
    assert frontier == Antichain()
    assert got == expected(hist)


def test_product_times_through_json_lines_and_parquet(tmp_path: Path) -> None:
    hist = history(1, product=True)
    messages = write_history(hist, batch_size=2)
    write_messages(tmp_path / "j", as_json_data(messages), "jsonl", files=2)
    write_messages(tmp_path / "p", messages, "parquet", COLUMNS, files=2)
    for folder in ("j", "p"):
        got, frontier = decoded(tmp_path / folder)
        assert frontier == Antichain()
        assert got == expected(hist)


def test_json_data_deduplicates_whatever_the_key_order(tmp_path: Path) -> None:
    lines = [
        {"updates": [{"data": {"a": 1, "b": [1, 2]}, "time": 0, "diff": 1}]},
        {"updates": [{"data": {"b": [1, 2], "a": 1}, "time": 0, "diff": 1}]},
        {"progress": {"lower": [0], "upper": [], "counts": [{"time": 0, "count": 1}]}},
    ]
    (tmp_path / "m.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    got, frontier = decoded(tmp_path)
    assert frontier == Antichain()
    assert got == [('{"a":1,"b":[1,2]}', 0, 1)]


def test_avro_from_another_writer_reads(tmp_path: Path) -> None:
    """A file written with fastavro directly, with non-nullable and union row fields."""
    fields = [{"name": "id", "type": "long"}, {"name": "price", "type": ["null", "int"]}]
    schema = fastavro.parse_schema(cdc_schema(fields))
    records = [
        [{"data": {"id": 5, "price": 10}, "time": 111, "diff": 1}],
        [{"data": {"id": 5, "price": 12}, "time": 112, "diff": 1}],
        [{"data": {"id": 5, "price": 10}, "time": 112, "diff": -1}],
        [{"data": {"id": 5, "price": 10}, "time": 111, "diff": 1}],  # a duplicate
        {
            "lower": [0],
            "upper": [113],
            "counts": [{"time": 112, "count": 2}, {"time": 111, "count": 1}],
        },
    ]
    with open(tmp_path / "x.avro", "wb") as f:
        fastavro.writer(f, schema, records)
    source = open_source([tmp_path])
    batches = list(CdcReader().read(source.messages()))
    assert batches[-1][1] == Antichain([113])
    got = sorted((source.data_to_json(d)["price"], t, r) for b, _ in batches for d, t, r in b)
    assert got == [(10, 111, 1), (10, 112, -1), (12, 112, 1)]


def test_parquet_from_another_writer_with_time_and_diff_columns(tmp_path: Path) -> None:
    pq.write_table(
        pa.table({"k": ["x", "y", "x"], "time": [0, 0, 0], "diff": [1, 1, 1]}),
        tmp_path / "u.parquet",
    )
    (tmp_path / "p.json").write_text(
        json.dumps({"progress": {"lower": [0], "upper": [1], "counts": [{"time": 0, "count": 2}]}})
    )
    got, frontier = decoded(tmp_path)
    assert frontier == Antichain([1])
    assert got == [('{"k":"x"}', 0, 1), ('{"k":"y"}', 0, 1)]


def test_parquet_without_time_column_is_a_clear_error(tmp_path: Path) -> None:
    pq.write_table(pa.table({"k": [1], "diff": [1]}), tmp_path / "u.parquet")
    with pytest.raises(InvalidInput, match="_time"):
        list(open_source([tmp_path]).messages())


def test_folders_skip_hidden_and_spark_files(tmp_path: Path) -> None:
    messages = write_history([([(("1", "a"), 0, 1)], Antichain([1]))])
    write_messages(tmp_path, as_json_data(messages), "jsonl")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-0.jsonl.crc").write_text("garbage")
    (tmp_path / "_temporary").mkdir()
    (tmp_path / "_temporary" / "x.jsonl").write_text("garbage")
    got, frontier = decoded(tmp_path)
    assert frontier == Antichain() and len(got) == 1


def test_errors_name_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "m.jsonl").write_text(
        '{"updates": []}\n{"updates": [{"data": 1, "time": -1, "diff": 1}]}\n'
    )
    with pytest.raises(InvalidTime, match=r"m\.jsonl:2"):
        list(open_source([tmp_path]).messages())
    (tmp_path / "m.jsonl").write_text("{not json\n")
    with pytest.raises(InvalidInput, match=r"m\.jsonl:1: not JSON"):
        list(open_source([tmp_path]).messages())
    with pytest.raises(InvalidInput, match="no such file"):
        open_source([tmp_path / "missing"])


def test_mixed_formats_need_a_choice(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("")
    write_messages(tmp_path, [Progress(Antichain([0]), Antichain([1]), ())], "avro", COLUMNS)
    with pytest.raises(InvalidInput, match="mix formats"):
        open_source([tmp_path])
    assert open_source([tmp_path], "avro").format == "avro"


def test_avro_refuses_product_times(tmp_path: Path) -> None:
    messages = write_history([([((1, "a"), Product((0, 0)), 1)], Antichain([Product((1, 0))]))])
    with pytest.raises(InvalidInput, match="int times only"):
        write_messages(tmp_path, messages, "avro", COLUMNS)


def test_conflicting_files_are_an_error(tmp_path: Path) -> None:
    messages = [
        Updates(((("1", "a"), 0, 1),)),
        Updates(((("1", "a"), 0, 2),)),
        Progress(Antichain([0]), Antichain([1]), ((0, 1),)),
    ]
    write_messages(tmp_path, messages, "parquet", COLUMNS, files=2)
    with pytest.raises(CdcConflict, match="time 0"):
        decoded(tmp_path)


def test_mangle_is_seeded() -> None:
    messages = write_history(history(3), batch_size=2)
    assert mangle(messages, random.Random(5)) == mangle(messages, random.Random(5))


@pytest.mark.parametrize("fmt", ["parquet", "avro"])
def test_a_value_the_format_cannot_hold_leaves_no_file(tmp_path: Path, fmt: str) -> None:
    messages = [
        Updates(((("1", "a"), 0, 1),)),
        Progress(Antichain([0]), Antichain([1]), ((0, 2),)),
        Updates((((2**70, "b"), 0, 1),)),
    ]
    with pytest.raises(InvalidInput, match="column 'id'.*(cannot hold|beyond 64 bits)"):
        write_messages(tmp_path / "out", messages, fmt, COLUMNS, files=3)
    assert not (tmp_path / "out").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(InvalidInput):
        write_messages(tmp_path / "kept", messages, fmt, COLUMNS, files=3)
    assert list((tmp_path / "kept").iterdir()) == []


def test_bad_parquet_time_and_diff_types_name_the_file(tmp_path: Path) -> None:
    pq.write_table(pa.table({"k": [1], "_time": ["0"], "_diff": [1]}), tmp_path / "u.parquet")
    with pytest.raises(InvalidInput, match=r"u\.parquet: column '_time' holds string"):
        list(open_source([tmp_path]).messages())
    pq.write_table(pa.table({"k": [1], "_time": [0], "_diff": [0.5]}), tmp_path / "u.parquet")
    with pytest.raises(InvalidInput, match=r"u\.parquet: column '_diff' holds double"):
        list(open_source([tmp_path]).messages())
