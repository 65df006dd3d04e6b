"""JSON lines, CDC v2's text format: one message a line, UTF-8.

``{"updates": [{"data": …, "time": …, "diff": …}, …]}`` or
``{"progress": {"lower": […], "upper": […], "counts": [{"time": …, "count": …}, …]}}``.
``data`` is any JSON value; in memory it is held as its canonical JSON text (sorted keys, no
spaces), so equal values from different writers deduplicate. On Spark the lines are parsed in
the executors, into one ``data`` column of that text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pyarrow as pa

from changeflow.cdc.formats.base import (
    FILE,
    INT64,
    NOTE,
    PRODUCT_TIMES,
    Format,
    SparkRows,
    check_diffs,
    has_product,
)
from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.errors import ChangeflowError, InvalidInput, with_context
from changeflow.time import MAX_TIME, Antichain, Product, Time, time_from_json, time_to_json
from changeflow.updates import DIFF, TIME, canonical_json

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def message_to_json(message: Message, data_to_json: Any = json.loads) -> dict[str, Any]:
    """The JSON form of a message; ``data_to_json`` turns held data back into a JSON value."""
    if isinstance(message, Updates):
        return {
            "updates": [
                {"data": data_to_json(d), "time": time_to_json(t), "diff": r}
                for d, t, r in message.updates
            ]
        }
    return {
        "progress": {
            "lower": message.lower.to_json(),
            "upper": message.upper.to_json(),
            "counts": [{"time": time_to_json(t), "count": c} for t, c in message.counts],
        }
    }


def message_from_json(obj: Any) -> Message:
    """Parse the JSON form of one message (data becomes canonical JSON text)."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise InvalidInput('a message is {"updates": [...]} or {"progress": {...}}')
    if "updates" in obj:
        updates = obj["updates"]
        if not isinstance(updates, list):
            raise InvalidInput('"updates" must be a list')
        return Updates(tuple(_update_from_json(u) for u in updates))
    if "progress" in obj:
        p = obj["progress"]
        if not isinstance(p, dict) or not {"lower", "upper"} <= p.keys():
            raise InvalidInput('"progress" needs "lower", "upper" and "counts"')
        counts = _int_counts(p.get("counts", []))
        if counts is None:
            counts = [_count_from_json(c) for c in p.get("counts", [])]
        return Progress(
            Antichain.from_json(p["lower"]), Antichain.from_json(p["upper"]), tuple(counts)
        ).validate()
    raise InvalidInput('a message is {"updates": [...]} or {"progress": {...}}')


def _int_counts(raw: Any) -> list[tuple[Time, int]] | None:
    """Counts at int times, checked a list at a time (one statement may count 100,000 times);
    None where any entry is not an int time with an int count: the entries are then parsed
    one by one, which names the first bad one."""
    try:
        times = [c["time"] for c in raw]
        counts = [c["count"] for c in raw]
    except (TypeError, KeyError, IndexError):
        return None
    if not all(type(t) is int for t in times) or not all(type(c) is int for c in counts):
        return None
    if times and not (min(times) >= 0 and max(times) <= MAX_TIME):
        return None
    return list(zip(times, counts, strict=True))


def _count_from_json(c: Any) -> tuple[Time, int]:
    if not isinstance(c, dict) or not {"time", "count"} <= c.keys():
        raise InvalidInput(f'a progress count is {{"time": …, "count": …}}, not {c!r}')
    count = c["count"]
    if isinstance(count, bool) or not isinstance(count, int):
        raise InvalidInput(f"a progress count is an int, not {count!r}")
    return time_from_json(c["time"]), count


def _update_from_json(u: Any) -> tuple[str, Any, int]:
    if not isinstance(u, dict) or not {"data", "time", "diff"} <= u.keys():
        raise InvalidInput(f'an update is {{"data": …, "time": …, "diff": …}}, not {u!r}')
    diff = u["diff"]
    if isinstance(diff, bool) or not isinstance(diff, int):
        raise InvalidInput(f"an update's diff is an int, not {diff!r}")
    return canonical_json(u["data"]), time_from_json(u["time"]), diff


def parse_line(line: bytes) -> Any:
    """The JSON value of one line of bytes; bad UTF-8 or bad JSON is an :class:`InvalidInput`."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(
            f"not UTF-8 text (byte 0x{line[e.start]:02x} at column {e.start + 1}); "
            "CDC v2 JSON lines are UTF-8"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"not JSON: {e.msg}") from None


def lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of a file with their numbers (``\\n``, ``\\r\\n`` or ``\\r`` end
    a line, as Spark's text reader has it; JSON text holds no raw ``\\r``)."""
    number = 0
    with open(path, "rb") as f:
        for raw in f:
            for line in raw.rstrip(b"\r\n").split(b"\r") if b"\r" in raw else [raw]:
                number += 1
                if line.strip():
                    yield number, line


def read_jsonl(path: Path) -> Iterator[Message]:
    """The messages of one JSON-lines file; errors name the file and line."""
    for _, message in _numbered(path):
        yield message


def read_progress(path: Path, beside: str, seen: set[bytes] | None = None) -> Iterator[Progress]:
    """The progress statements of a JSON-lines file that sits beside ``beside`` files (which
    hold the updates); an Updates message with updates there is an error naming both kinds.
    Lines in ``seen`` are skipped (copies are parsed once) and added to it."""
    for number, message in _numbered(path, seen):
        if isinstance(message, Progress):
            yield message
        elif message.updates:
            raise InvalidInput(
                f"{path}:{number}: updates in a JSON-lines file beside {beside} files; in a "
                f"{beside} CDC folder the updates live in {beside} files and JSON-lines files "
                "hold progress statements only (keep the two kinds in separate folders)"
            )


def _numbered(path: Path, seen: set[bytes] | None = None) -> Iterator[tuple[int, Message]]:
    for number, line in lines(path):
        if seen is not None:
            if line in seen:
                continue
            seen.add(line)
        try:
            yield number, message_from_json(parse_line(line))
        except ChangeflowError as e:
            raise with_context(e, f"{path}:{number}") from None


def write_jsonl(out: TextIO, messages: Iterable[Message], data_to_json: Any = json.loads) -> None:
    for message in messages:
        out.write(json.dumps(message_to_json(message, data_to_json), ensure_ascii=False))
        out.write("\n")


class JsonLines(Format):
    name = "jsonl"
    extensions = (".jsonl", ".ndjson", ".json", ".txt")
    json_data = True
    spark_writes = True

    def read(self, path: Path) -> tuple[list[str] | None, Iterator[Message]]:
        return None, read_jsonl(path)

    def write(
        self, stem: Path, messages: Sequence[Message], columns: Sequence[str] | None
    ) -> list[Path]:
        check_diffs(messages)
        path = stem.with_suffix(self.extensions[0])
        with open(path, "w", encoding="utf-8") as f:
            write_jsonl(f, messages)
        return [path]

    def spark_read(self, spark: SparkSession, files: list[Path]) -> SparkRows:
        """Update rows (canonical JSON ``data``) and progress notes, parsed in the executors."""
        from pyspark.sql import functions as F

        from changeflow.spark import on_executors, spark_path

        lines = spark.read.text([spark_path(f) for f in files]).select(
            F.col("value").cast("binary").alias("value"), F.col("_metadata.file_path")
        )
        schema = f"data string, {TIME} bigint, {DIFF} bigint, {NOTE} string, {FILE} string"
        rows = sum(f.stat().st_size for f in files) // 60
        return SparkRows(lines.mapInArrow(on_executors(_decode), schema), ["data"], rows, None)

    def spark_write(
        self, updates: DataFrame, folder: Path, columns: list[str], batch_size: int
    ) -> None:
        from changeflow.spark import on_executors

        json_text = columns == ["data"] and dict(updates.dtypes)["data"] == "string"
        encode = on_executors(_encoder(columns, batch_size, json_text))
        updates.mapInArrow(encode, "value string").write.text(str(folder))


# -- in the executors --------------------------------------------------------------------------


def _decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Parse lines as :func:`read_jsonl` does."""
    from changeflow.spark import local_path

    for batch in batches:
        data: list[str | None] = []
        times: list[int | None] = []
        diffs: list[int | None] = []
        notes: list[str | None] = []
        files: list[str] = []  # each row's file, added once the next line starts
        uri = ""
        for line, next_uri in zip(*(c.to_pylist() for c in batch.columns), strict=True):
            files.extend([uri] * (len(times) - len(files)))
            uri = next_uri
            if not line.strip():
                continue
            try:
                obj = parse_line(line)
                updates = obj.get("updates") if type(obj) is dict and len(obj) == 1 else None
                if type(updates) is list and _fast_updates(updates, data, times, diffs):
                    notes.extend([None] * len(updates))
                    continue
                message = message_from_json(obj)  # checks everything and raises if it must
                if isinstance(message, Updates):
                    _check_updates(message)
                elif has_product(message):
                    raise InvalidInput(PRODUCT_TIMES)
            except ChangeflowError as e:
                raise with_context(e, local_path(uri)) from None
            for column in (data, times, diffs):
                column.append(None)
            notes.append(canonical_json(message_to_json(message)))
        files.extend([uri] * (len(times) - len(files)))
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(data, pa.string()),
                pa.array(times, pa.int64()),
                pa.array(diffs, pa.int64()),
                pa.array(notes, pa.string()),
                pa.array(files, pa.string()),
            ],
            names=["data", TIME, DIFF, NOTE, FILE],
        )


def _fast_updates(updates: list, data: list, times: list, diffs: list) -> bool:
    """Append plain int-time updates; False (appending nothing) if any needs the full check."""
    start = len(data)
    add_data, add_time, add_diff = data.append, times.append, diffs.append
    try:
        for u in updates:
            t, r = u["time"], u["diff"]
            if type(t) is not int or type(r) is not int or not 0 <= t <= MAX_TIME:
                raise ValueError
            if not -(2**63) <= r < 2**63:
                raise ValueError
            add_data(canonical_json(u["data"]))
            add_time(t)
            add_diff(r)
    except (KeyError, TypeError, ValueError):
        del data[start:], times[start:], diffs[start:]
        return False
    return True


def _check_updates(message: Updates) -> None:
    """Raise for what the fast path refused in valid JSON-lines updates."""
    for data, t, r in message.updates:
        if isinstance(t, Product):
            raise InvalidInput(PRODUCT_TIMES)
        if r not in INT64:
            raise InvalidInput(f"update {data} at time {t} has diff {r}, beyond 64 bits")
    raise InvalidInput("unexpected updates message")  # pragma: no cover - the fast path took it


def _encoder(columns: list[str], batch_size: int, json_text: bool) -> Any:
    """Rows to JSON lines of Updates messages, ``batch_size`` updates a message; a lone
    string column ``data`` holds JSON text (as the Spark reader gives it)."""

    def encode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[tuple[Any, int, int]] = []
        lines: list[str] = []
        for batch in batches:
            times, diffs = batch.column(TIME).to_pylist(), batch.column(DIFF).to_pylist()
            if json_text:
                try:
                    data = [json.loads(d) for d in batch.column(columns[0]).to_pylist()]
                except json.JSONDecodeError as e:
                    raise InvalidInput(
                        f"write_cdc: column 'data' holds text that is not JSON: {e.msg}"
                    ) from None
            else:
                data = batch.select(columns).to_pylist()
            pending.extend(zip(data, times, diffs, strict=True))
            while len(pending) >= batch_size:
                lines.append(_updates_line(pending[:batch_size]))
                del pending[:batch_size]
            if lines:
                yield pa.RecordBatch.from_pydict({"value": lines})
                lines = []
        if pending:
            yield pa.RecordBatch.from_pydict({"value": [_updates_line(pending)]})

    return encode


def _updates_line(updates: list[tuple[Any, int, int]]) -> str:
    body = [{"data": d, "time": t, "diff": r} for d, t, r in updates]
    try:
        return json.dumps({"updates": body}, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"write_cdc: data that JSON cannot hold: {e}") from None


FORMAT = JsonLines()
