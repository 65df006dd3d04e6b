"""The Spark reader and writer of CDC v2 folders, against the single-threaded reader."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from changeflow.cdc.chaos import mangle
from changeflow.cdc.files import open_source, write_messages
from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.cdc.reader import CdcReader
from changeflow.cdc.spark import read_cdc, write_cdc
from changeflow.cdc.writer import write_history
from changeflow.collection import consolidate
from changeflow.errors import (
    CdcConflict,
    ChangeflowError,
    FrontierViolation,
    InvalidInput,
    ProtocolViolation,
)
from changeflow.time import Antichain
from changeflow.updates import canonical_json

pytestmark = pytest.mark.spark

COLUMNS = ["id", "name"]
FORMATS = ["jsonl", "parquet", "avro"]


def history(rng: random.Random, steps: int) -> list:
    """Random ``(updates, frontier)`` steps over int times, rows of ``COLUMNS``."""
    out, t = [], 0
    for _ in range(steps):
        updates = [
            (
                (rng.randrange(5), rng.choice(["a", "b", "é"])),
                t + rng.randrange(3),
                rng.choice([-1, 1, 2]),
            )
            for _ in range(rng.randrange(6))
        ]
        t += rng.randrange(1, 4)
        out.append((updates, Antichain([t])))
    return out


def as_json(messages: list[Message], rng: random.Random) -> list[Message]:
    """Rows re-held as canonical JSON of varied shapes (objects, lists, scalars)."""

    def value(row: tuple) -> str:
        shape = hash(row) % 3
        if shape == 0:
            return canonical_json(dict(zip(COLUMNS, row, strict=True)))
        return canonical_json(list(row) if shape == 1 else f"{row[0]}{row[1]}")

    return [
        Updates(tuple((value(d), t, r) for d, t, r in m.updates)) if isinstance(m, Updates) else m
        for m in messages
    ]


def history_messages(fmt: str, rng: random.Random) -> list[Message]:
    """The writer's messages for a random history (rows re-held as JSON for JSON lines)."""
    messages = write_history(history(rng, rng.randrange(1, 8)), batch_size=rng.randint(1, 4))
    if rng.random() < 0.3:
        messages = messages[:-1]  # not closed
    return as_json(messages, rng) if fmt == "jsonl" else messages


def write_chaos(
    folder: Path, messages: list[Message], fmt: str, rng: random.Random, drop: float = 0.0
) -> None:
    """Mangle messages (and drop some) into a few files of ``folder``."""
    messages = [m for m in mangle(messages, rng, duplication=0.5) if rng.random() >= drop]
    files = rng.randint(1, 4)
    assign = [rng.randrange(files) for _ in messages]
    write_messages(folder, messages, fmt, COLUMNS, files, assign)


def reference(paths: list[Path], fmt: str | None = None):
    """What the single-threaded reader recovers: sorted updates and the final frontier."""
    source = open_source(paths, fmt)
    reader = CdcReader(audit=True)
    out = [u for batch, _ in reader.read(source.messages()) for u in batch]
    return sorted(out, key=repr), reader.frontier


def collect_updates(frame) -> list:
    """The rows of an update frame as the reader holds them: (data, time, diff), sorted."""
    columns = [c for c in frame.columns if c not in ("_time", "_diff")]
    out = []
    for row in frame.collect():
        data = row[columns[0]] if columns == ["data"] else tuple(row[c] for c in columns)
        out.append((data, row["_time"], row["_diff"]))
    return sorted(out, key=repr)


def outcome(fn):
    try:
        return fn()
    except ChangeflowError as e:
        return type(e)


def spark_outcome(spark, paths, fmt=None):
    def run():
        frame, frontier = read_cdc(spark, paths, fmt)
        try:
            return collect_updates(frame), frontier
        finally:
            frame.unpersist()

    return outcome(run)


# -- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_read_matches_the_reader_on_chaos(spark, tmp_path: Path, fmt: str) -> None:
    for seed in range(25):
        rng, folder = random.Random(seed), tmp_path / f"case{seed}"
        write_chaos(folder, history_messages(fmt, rng), fmt, rng, 0.15 if seed % 3 == 0 else 0)
        expected = outcome(lambda folder=folder: reference([folder]))
        assert spark_outcome(spark, [folder]) == expected, f"seed {seed}"


def inject(messages: list[Message], kind: str, fmt: str, rng: random.Random) -> tuple[list, int]:
    """Messages with one contradiction of ``kind`` added; returns them and the time at issue.

    ``diff``: a second diff for an update; ``zero``: a zero diff; ``extra``: one more update
    than its time's count; ``count``: a progress statement with another count.
    """
    updates = [u for m in messages if isinstance(m, Updates) for u in m.updates]
    counted = [m for m in messages if isinstance(m, Progress) and m.counts]
    if kind in ("diff", "zero"):
        d, t, r = rng.choice(updates)
        return [*messages, Updates(((d, t, -r if kind == "diff" else 0),))], t
    statement = rng.choice(counted)
    t, c = rng.choice(statement.counts)
    if kind == "extra":
        d = canonical_json("extra") if fmt == "jsonl" else (99, "extra")
        return [*messages, Updates(((d, t, 1),))], t
    counts = tuple((u, k + 1 if u == t else k) for u, k in statement.counts)
    return [*messages, Progress(statement.lower, statement.upper, counts)], t


@pytest.mark.parametrize("fmt", FORMATS)
def test_conflicts_raise_as_in_the_reader(spark, tmp_path: Path, fmt: str) -> None:
    kinds = ["diff", "zero", "extra", "count"]
    cases, seed = 0, 0
    while cases < 12:
        rng, seed = random.Random(seed), seed + 1
        messages = history_messages(fmt, rng)
        if not any(isinstance(m, Progress) and m.counts for m in messages):
            continue
        kind = kinds[cases % len(kinds)]
        messages, t = inject(messages, kind, fmt, rng)
        folder = tmp_path / f"case{cases}"
        write_chaos(folder, messages, fmt, rng)
        expected = CdcConflict if kind != "zero" else ProtocolViolation
        assert outcome(lambda folder=folder: reference([folder])) is expected
        with pytest.raises(expected, match=rf"time {t}\b") as caught:
            read_cdc(spark, [folder])
        assert type(caught.value) is expected
        if kind in ("diff", "zero"):
            (d, _, _) = messages[-1].updates[0]
            assert repr(d) in str(caught.value)
        cases += 1


def long_history(rng: random.Random) -> list[Message]:
    """Many times with a few updates each: the Spark reader shuffles Parquet rows by time."""
    return write_history(history(rng, 300), batch_size=rng.randint(3, 9))


def test_rows_spread_over_many_times_shuffle_by_time_and_match_the_reader(spark, tmp_path):
    from changeflow.cdc.formats.parquet import FORMAT
    from changeflow.cdc.spark.read import _spread_over_times

    kinds = ["none", "diff", "zero", "extra", "count"]
    for seed, kind in enumerate(kinds):
        rng, folder = random.Random(seed), tmp_path / f"case{seed}"
        messages = long_history(rng)
        t = None
        if kind != "none":
            messages, t = inject(messages, kind, "parquet", rng)
        write_chaos(folder, messages, "parquet", rng)
        raw = FORMAT.spark_read(spark, open_source([folder]).files)
        assert raw.statements is not None and _spread_over_times(raw.statements, raw.rows)
        expected = outcome(lambda folder=folder: reference([folder]))
        if t is None:
            assert spark_outcome(spark, [folder]) == expected
        else:
            with pytest.raises(expected, match=rf"time {t}\b"):
                read_cdc(spark, [folder])


def parquet_folder(folder: Path, seed: int = 1) -> list[Message]:
    rng = random.Random(seed)
    messages = history_messages("parquet", rng)
    write_chaos(folder, messages, "parquet", rng)
    return messages


def test_parquet_time_and_diff_columns_may_be_named_without_underscore(spark, tmp_path):
    parquet_folder(tmp_path)
    for path in sorted(tmp_path.glob("*.parquet"))[::2]:
        table = pq.read_table(path)
        pq.write_table(table.rename_columns([*COLUMNS, "time", "diff"]), path)
    assert spark_outcome(spark, [tmp_path]) == reference([tmp_path])


def test_folders_with_glob_characters_and_hidden_files(spark, tmp_path):
    folder = tmp_path / "a[1]{x}*"
    parquet_folder(folder)
    (folder / "_SUCCESS").write_text("")
    (folder / ".hidden.parquet").write_text("not parquet")
    assert spark_outcome(spark, [folder]) == reference([folder])


@pytest.mark.parametrize(
    "damage, match",
    [
        ("garbage", r"not a readable Parquet file"),
        ("columns", r"needs columns '_time' and '_diff'"),
        ("other-columns", r"differ from the other files"),
        ("null-time", r"null time"),
        ("product", r"single-threaded reader"),
    ],
)
def test_bad_parquet_files_name_the_file(spark, tmp_path, damage, match):
    parquet_folder(tmp_path)
    path = sorted(tmp_path.glob("*.parquet"))[-1]  # the others come first
    table = pq.read_table(path)
    if damage == "garbage":
        path.write_bytes(b"PAR1 not really")
    elif damage == "columns":
        pq.write_table(table.drop_columns(["_diff"]), path)
    elif damage == "other-columns":
        pq.write_table(table.rename_columns(["key", *table.column_names[1:]]), path)
    elif damage == "null-time":
        times = pa.array([None] * table.num_rows, pa.int64())
        pq.write_table(table.set_column(2, "_time", times), path)
    else:
        times = pa.array([[t, 0] for t in table.column("_time").to_pylist()], pa.list_(pa.int64()))
        pq.write_table(table.set_column(2, "_time", times), path)
    with pytest.raises(InvalidInput, match=match) as caught:
        read_cdc(spark, [tmp_path])
    if damage != "product":
        assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "line, error, match",
    [
        ("{not json", InvalidInput, "not JSON"),
        ('{"updates": [{"data": 1, "time": 1}]}', InvalidInput, "an update is"),
        ('{"updates": [{"data": 1, "time": -1, "diff": 1}]}', InvalidInput, "outside"),
        ('{"updates": [{"data": 1, "time": [1, 2], "diff": 1}]}', InvalidInput, "single-threaded"),
        ('{"progress": {"lower": [[0, 0]], "upper": [], "counts": []}}', InvalidInput, "single"),
        ('{"progress": {"lower": [5], "upper": [2], "counts": []}}', ProtocolViolation, "beyond"),
    ],
)
def test_bad_json_lines_name_the_file(spark, tmp_path, line, error, match):
    rng = random.Random(3)
    write_chaos(tmp_path, history_messages("jsonl", rng), "jsonl", rng)
    path = sorted(tmp_path.glob("*.jsonl"))[0]
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(error, match=match) as caught:
        read_cdc(spark, [tmp_path])
    if "progress" not in line:
        assert str(path) in str(caught.value)


def test_mixed_formats_and_missing_folders(spark, tmp_path):
    parquet_folder(tmp_path / "p")
    rng = random.Random(2)
    write_chaos(tmp_path / "a", history_messages("avro", rng), "avro", rng)
    with pytest.raises(InvalidInput, match="mix formats"):
        read_cdc(spark, [tmp_path])
    with pytest.raises(InvalidInput, match="no such file"):
        read_cdc(spark, [tmp_path / "nothing"])
    (tmp_path / "a" / "part-00000.avro").write_bytes(b"Obj\x01 broken")
    with pytest.raises(InvalidInput, match="part-00000.avro"):
        read_cdc(spark, [tmp_path / "a"])


def test_the_frame_is_persisted_and_complete_only_up_to_the_frontier(spark, tmp_path):
    rng = random.Random(5)
    hist = history(rng, 6)
    messages = write_history(hist, batch_size=3)
    cut = next(i for i, m in enumerate(messages) if isinstance(m, Progress) and m.counts)
    kept = messages[:cut] + messages[cut + 1 :]  # the first counted statement is lost
    write_messages(tmp_path, kept, "parquet", COLUMNS)
    frame, frontier = read_cdc(spark, [tmp_path])
    assert frame.is_cached
    assert frontier == Antichain(messages[cut].lower)
    assert (collect_updates(frame), frontier) == reference([tmp_path])
    frame.unpersist()


# -- writing -----------------------------------------------------------------------------------


def random_updates(rng: random.Random, n: int, times: int) -> list:
    """Unconsolidated updates of ``COLUMNS`` rows (with cancelling pairs) at times < ``times``."""
    out = []
    for _ in range(n):
        d, t = (rng.randrange(8), rng.choice(["a", "b", "é"])), rng.randrange(times)
        out.append((d, t, rng.choice([-1, 1, 2])))
        if rng.random() < 0.2:
            out.append((d, t, -out[-1][2]))
    return out


def update_frame(spark, updates: list):
    rows = [(d[0], d[1], t, r) for d, t, r in updates]
    return spark.createDataFrame(rows, "id bigint, name string, _time bigint, _diff bigint")


def as_read(updates: list, fmt: str) -> list:
    """Updates as a reader of ``fmt`` holds them."""
    if fmt == "jsonl":
        updates = [
            (canonical_json(dict(zip(COLUMNS, d, strict=True))), t, r) for d, t, r in updates
        ]
    return sorted(updates, key=repr)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_write_in_intervals_by_two_writers_reads_back(spark, tmp_path, fmt):
    rng = random.Random(11)
    updates = random_updates(rng, 200, 30)
    frame = update_frame(spark, updates).repartition(3)
    expected = as_read(consolidate(updates), fmt)
    for batch_size in (7, 1000):  # two writers of the same history
        write_cdc(frame.filter("_time < 12"), tmp_path, 0, 12, fmt, batch_size)
        write_cdc(frame.filter("_time >= 12"), tmp_path, Antichain([12]), None, fmt, batch_size)
        assert reference([tmp_path]) == (expected, Antichain())
        assert spark_outcome(spark, [tmp_path]) == (expected, Antichain())
        if fmt == "jsonl" and batch_size == 7:
            files = list(tmp_path.rglob("*.txt"))
            sizes = {
                len(json.loads(x)["updates"]) for f in files for x in f.read_text().splitlines()
            }
            assert max(sizes) == 7


def test_write_an_open_interval_and_many_counts(spark, tmp_path, monkeypatch):
    import changeflow.cdc.spark.write as cdc_write

    monkeypatch.setattr(cdc_write, "MAX_COUNTS", 4)  # several statements tile the interval
    updates = random_updates(random.Random(12), 100, 20)
    folder = write_cdc(update_frame(spark, updates), tmp_path, 0, 25, "parquet")
    statements = [json.loads(x) for x in (folder / "progress.jsonl").read_text().splitlines()]
    assert len(statements) > 1
    assert statements[0]["progress"]["lower"] == [0]
    assert statements[-1]["progress"]["upper"] == [25]
    assert reference([tmp_path]) == (sorted(consolidate(updates), key=repr), Antichain([25]))
    assert spark_outcome(spark, [tmp_path]) == reference([tmp_path])


def test_jsonl_data_round_trips_through_spark(spark, tmp_path):
    rng = random.Random(13)
    write_chaos(tmp_path / "in", history_messages("jsonl", rng), "jsonl", rng)
    frame, frontier = read_cdc(spark, [tmp_path / "in"])
    write_cdc(frame, tmp_path / "out", 0, frontier, "jsonl", batch_size=3)
    assert spark_outcome(spark, [tmp_path / "out"]) == reference([tmp_path / "in"])
    frame.unpersist()


def test_write_errors(spark, tmp_path):
    frame = update_frame(spark, [((1, "a"), 5, 1), ((2, "b"), 10, 1)])
    with pytest.raises(FrontierViolation, match="time 10"):
        write_cdc(frame, tmp_path, 0, 10)
    with pytest.raises(FrontierViolation, match="time 5"):
        write_cdc(frame, tmp_path, 6, None)
    with pytest.raises(FrontierViolation, match="beyond"):
        write_cdc(frame, tmp_path, 6, 3)
    with pytest.raises(InvalidInput, match="'_time' and '_diff'"):
        write_cdc(frame.drop("_diff"), tmp_path, 0, None)
    with pytest.raises(InvalidInput, match="not JSON"):
        text = spark.createDataFrame([("{oops", 1, 1)], "data string, _time bigint, _diff bigint")
        write_cdc(text, tmp_path, 0, None, "jsonl")
    assert not list(tmp_path.rglob("*.parquet"))


def test_canonical_json_is_json_with_sorted_keys_and_no_spaces():
    rng = random.Random(0)

    def value(depth: int):
        kind = rng.randrange(7 if depth < 3 else 5)
        if kind == 0:
            return rng.randrange(-(2**70), 2**70)
        if kind == 1:
            return rng.random() * 10 ** rng.randrange(-5, 20)
        if kind == 2:
            return "".join(rng.choice('aé"\\\n\u2028😀/') for _ in range(rng.randrange(5)))
        if kind == 3:
            return rng.choice([None, True, False])
        if kind == 4:
            return rng.choice([0, -1, 1.5, ""])
        if kind == 5:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {str(value(depth + 1)): value(depth + 1) for _ in range(rng.randrange(4))}

    for _ in range(2000):
        v = value(0)
        expected = json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert canonical_json(v) == expected


def test_write_nothing_but_progress(spark, tmp_path):
    empty = update_frame(spark, [])
    folder = write_cdc(empty, tmp_path, 0, 5)
    write_cdc(empty, tmp_path, 5, None)
    assert (folder / "progress.jsonl").exists()
    assert reference([tmp_path], "parquet") == ([], Antichain())
    assert spark_outcome(spark, [tmp_path], "parquet") == ([], Antichain())


def test_non_utf8_json_lines_name_the_file(spark, tmp_path):
    rng = random.Random(3)
    write_chaos(tmp_path, history_messages("jsonl", rng), "jsonl", rng)
    path = sorted(tmp_path.glob("*.jsonl"))[0]
    path.write_bytes(path.read_bytes() + b'{"updates": [{"data": "\xff", "time": 1, "diff": 1}]}\n')
    with pytest.raises(InvalidInput, match="not UTF-8") as caught:
        read_cdc(spark, [tmp_path])
    assert str(path) in str(caught.value)


def test_errors_raised_in_executors_come_back_whole(spark):
    from changeflow.errors import UpperMismatch
    from changeflow.spark import on_executors, spark_errors

    def fail(batches):
        for _ in batches:
            raise UpperMismatch("shard x\nline two", Antichain([1]), Antichain([2]))
        yield from ()

    frame = spark.range(1).mapInArrow(on_executors(fail), "id long")
    with pytest.raises(UpperMismatch) as caught, spark_errors("test"):
        frame.collect()
    assert caught.value.fields == {
        "name": "shard x\nline two",
        "expected": Antichain([1]),
        "current": Antichain([2]),
    }


def test_json_lines_updates_beside_parquet_are_refused_as_by_the_reader(spark, tmp_path):
    parquet_folder(tmp_path)
    update = {"updates": [{"data": {"id": 1, "name": "a"}, "time": 0, "diff": 1}]}
    (tmp_path / "extra.jsonl").write_text(json.dumps(update) + "\n")
    match = r"extra\.jsonl:1: updates in a JSON-lines file beside Parquet files"
    with pytest.raises(InvalidInput, match=match):
        read_cdc(spark, [tmp_path])
    with pytest.raises(InvalidInput, match=match):
        reference([tmp_path])
