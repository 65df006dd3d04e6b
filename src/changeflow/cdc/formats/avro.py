"""Avro, CDC v2's binary format: object container files with Materialize's CDC v2 schema.

The schema is a union of an array of ``update`` records (``data``: the row record
``com.materialize.cdc.data``, ``time``: long, ``diff``: long) and a ``progress`` record
(``lower``, ``upper``: arrays of long; ``counts``: array of ``{time, count}``). Each container
record is one message. Rows are held as tuples of field values in the row schema's order. On
Spark the files are decoded with fastavro in the executors (primitive field types only).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastavro
import pyarrow as pa

from changeflow.cdc.formats.base import (
    FILE,
    INT64,
    ROW_TAIL,
    Format,
    SparkRows,
    check_diffs,
    record_batch,
)
from changeflow.cdc.messages import Message, Progress, Updates, freeze
from changeflow.errors import ChangeflowError, InvalidInput, InvalidTime
from changeflow.time import MAX_TIME, Antichain, Product, time_from_json
from changeflow.updates import canonical_json

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NAMESPACE = "com.materialize.cdc"
SPARK_TYPES = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}


def cdc_schema(row_fields: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Materialize's CDC v2 schema around a row record with ``row_fields``."""
    return [
        {
            "type": "array",
            "items": {
                "type": "record",
                "name": "update",
                "namespace": NAMESPACE,
                "fields": [
                    {
                        "name": "data",
                        "type": {"type": "record", "name": "data", "fields": row_fields},
                    },
                    {"name": "time", "type": "long"},
                    {"name": "diff", "type": "long"},
                ],
            },
        },
        {
            "type": "record",
            "name": "progress",
            "namespace": NAMESPACE,
            "fields": [
                {"name": "lower", "type": {"type": "array", "items": "long"}},
                {"name": "upper", "type": {"type": "array", "items": "long"}},
                {
                    "name": "counts",
                    "type": {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "counts",
                            "fields": [
                                {"name": "time", "type": "long"},
                                {"name": "count", "type": "long"},
                            ],
                        },
                    },
                },
            ],
        },
    ]


_AVRO_TYPES = (
    (bool, "boolean"),
    (int, "long"),
    (float, "double"),
    (str, "string"),
    (bytes, "bytes"),
)


def infer_row_fields(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Nullable Avro field types for ``columns`` from the Python values in ``rows``."""
    types: list[str | None] = [None] * len(columns)
    for row in rows:
        for i, value in enumerate(row):
            if value is None:
                continue
            kind = next((name for py, name in _AVRO_TYPES if isinstance(value, py)), None)
            if kind is None:
                raise InvalidInput(
                    f"column {columns[i]!r}: value {value!r} has no Avro type here "
                    "(use bool, int, float, str or bytes)"
                )
            if kind == "long" and value not in INT64:
                raise InvalidInput(
                    f"column {columns[i]!r}: value {value} is beyond 64 bits (Avro's long)"
                )
            if types[i] not in (None, kind):
                if {types[i], kind} == {"long", "double"}:
                    kind = "double"
                else:
                    raise InvalidInput(f"column {columns[i]!r} mixes {types[i]} and {kind} values")
            types[i] = kind
    return [
        {"name": name, "type": ["null", kind or "string"]}
        for name, kind in zip(columns, types, strict=True)
    ]


def _row_fields(writer_schema: Any, path: Path) -> list[str]:
    """The field names of the row record in a file's writer schema."""
    branches = writer_schema if isinstance(writer_schema, list) else [writer_schema]
    for branch in branches:
        if isinstance(branch, dict) and branch.get("type") == "array":
            update = branch["items"]
            for field in update.get("fields", []):
                if field["name"] == "data" and isinstance(field["type"], dict):
                    return [f["name"] for f in field["type"]["fields"]]
    raise InvalidInput(f"{path}: not a CDC v2 Avro file (no array of update records in its schema)")


def read_avro(path: Path) -> tuple[list[str], Iterator[Message]]:
    """The row field names of an Avro CDC v2 file, and its messages."""
    f = open(path, "rb")  # noqa: SIM115 - closed by the generator
    try:
        reader = fastavro.reader(f)
        columns = _row_fields(reader.writer_schema, path)
    except (ValueError, fastavro.read.SchemaResolutionError) as e:
        f.close()
        raise InvalidInput(f"{path}: not a readable Avro file: {e}") from None

    def messages() -> Iterator[Message]:
        with f:
            try:
                for record in reader:
                    yield _message(record, columns, path)
            except (ValueError, EOFError, KeyError) as e:
                raise InvalidInput(f"{path}: bad Avro record: {e}") from None

    return columns, messages()


def _message(record: Any, columns: list[str], path: Path) -> Message:
    if isinstance(record, list):
        return Updates(
            tuple(
                (
                    tuple(freeze(u["data"][c]) for c in columns),
                    time_from_json(u["time"]),
                    u["diff"],
                )
                for u in record
            )
        )
    if isinstance(record, dict) and {"lower", "upper", "counts"} <= record.keys():
        return Progress(
            Antichain.from_json(record["lower"]),
            Antichain.from_json(record["upper"]),
            tuple((time_from_json(c["time"]), c["count"]) for c in record["counts"]),
        ).validate()
    raise InvalidInput(f"{path}: record is neither updates nor progress")


def write_avro(
    path: Path, columns: Sequence[str], messages: Iterable[Message], fields: list | None = None
) -> None:
    """Write messages (rows as tuples in ``columns`` order) as one Avro container file; it
    is encoded whole in memory first, so a value Avro cannot hold leaves no file behind."""
    messages = list(messages)
    check_diffs(messages)
    if fields is None:
        rows = (d for m in messages if isinstance(m, Updates) for d, _, _ in m.updates)
        fields = infer_row_fields(columns, rows)
    schema = fastavro.parse_schema(cdc_schema(fields))
    out = io.BytesIO()
    try:
        fastavro.writer(out, schema, [_record(m, columns) for m in messages], codec="deflate")
    except (ValueError, TypeError, OverflowError) as e:
        raise InvalidInput(f"a value Avro cannot hold: {str(e)[:200]}") from None
    path.write_bytes(out.getvalue())


def _record(message: Message, columns: Sequence[str]) -> Any:
    if isinstance(message, Updates):
        out = []
        for d, t, r in message.updates:
            _check_int_time(t)
            out.append({"data": dict(zip(columns, d, strict=True)), "time": t, "diff": r})
        return out
    for t in (*message.lower, *message.upper):
        _check_int_time(t)
    return (
        f"{NAMESPACE}.progress",
        {
            "lower": list(message.lower),
            "upper": list(message.upper),
            "counts": [{"time": t, "count": c} for t, c in message.counts],
        },
    )


def _check_int_time(t: Any) -> None:
    if isinstance(t, Product):
        raise InvalidInput("Avro CDC v2 holds int times only; use JSON lines for product times")


class Avro(Format):
    name = "avro"
    extensions = (".avro",)

    def read(self, path: Path) -> tuple[list[str] | None, Iterator[Message]]:
        return read_avro(path)

    def write(
        self, stem: Path, messages: Sequence[Message], columns: Sequence[str] | None
    ) -> list[Path]:
        if columns is None:
            raise InvalidInput("avro needs the data column names")
        path = stem.with_suffix(self.extensions[0])
        write_avro(path, columns, messages)
        return [path]

    def spark_read(self, spark: SparkSession, files: list[Path]) -> SparkRows:
        """Update rows and progress notes, decoded with fastavro in the executors."""
        from pyspark.sql.pandas.types import from_arrow_schema

        from changeflow.spark import on_executors, spark_path

        fields = _spark_fields(files)
        schema = pa.schema([(n, SPARK_TYPES[t]) for n, t in fields] + ROW_TAIL)
        contents = spark.read.format("binaryFile").load([spark_path(f) for f in files])
        decoded = contents.select("path", "content").mapInArrow(
            on_executors(_decoder(schema)),
            from_arrow_schema(schema.append(pa.field(FILE, pa.string()))),
        )
        rows = sum(f.stat().st_size for f in files) // 15
        return SparkRows(decoded, [n for n, _ in fields], rows, None)


def _spark_fields(files: list[Path]) -> list[tuple[str, str]]:
    """The row fields common to the files' schemas (ints widen to long, numbers to double)."""
    schemas: dict[Path, list[tuple[str, str]]] = {}
    for path in files:
        try:
            with open(path, "rb") as f:
                schemas[path] = _avro_fields(fastavro.reader(f).writer_schema, path)
        except (ValueError, OSError, fastavro.read.SchemaResolutionError) as e:
            raise InvalidInput(f"{path}: not a readable Avro file: {e}") from None
        names, first = [n for n, _ in schemas[path]], [n for n, _ in schemas[files[0]]]
        if names != first:
            raise InvalidInput(
                f"{path}: its data columns {names} differ from the other files' {first}"
            )
    if len({tuple(f) for f in schemas.values()}) > 1:
        # A writer gives a column without values some type: files without updates don't count.
        schemas = {p: schemas[p] for p in [p for p in files if _has_updates(p)] or files[:1]}
    return reduce(lambda a, p: _widen(a, schemas[p], p), schemas, next(iter(schemas.values())))


def _has_updates(path: Path) -> bool:
    with open(path, "rb") as f:
        return any(isinstance(r, list) and r for r in fastavro.reader(f))


def _avro_fields(schema: Any, path: Path) -> list[tuple[str, str]]:
    """The row fields of a CDC v2 Avro schema, with their (primitive) Avro types."""
    for branch in schema if isinstance(schema, list) else [schema]:
        if isinstance(branch, dict) and branch.get("type") == "array":
            for field in branch["items"].get("fields", []):
                if field["name"] == "data" and isinstance(field["type"], dict):
                    return [
                        (f["name"], _avro_type(f["type"], path)) for f in field["type"]["fields"]
                    ]
    raise InvalidInput(f"{path}: not a CDC v2 Avro file (no array of update records in its schema)")


def _avro_type(kind: Any, path: Path) -> str:
    options = [k for k in (kind if isinstance(kind, list) else [kind]) if k != "null"]
    if len(options) == 1 and isinstance(options[0], dict) and "logicalType" not in options[0]:
        options = [options[0].get("type")]
    if len(options) != 1 or options[0] not in SPARK_TYPES:
        raise InvalidInput(
            f"{path}: Avro field type {kind!r} is not read on Spark (primitive types only); "
            "use the single-threaded reader"
        )
    return options[0]


def _widen(a: list[tuple[str, str]], b: list[tuple[str, str]], path: Path) -> list[tuple[str, str]]:
    """Field types common to two files: ints widen to long, numbers to double."""
    out = []
    for (name, s), (_, t) in zip(a, b, strict=True):
        if s != t and {s, t} <= {"int", "long"}:
            s = "long"
        elif s != t and {s, t} <= {"int", "long", "float", "double"}:
            s = "double"
        elif s != t:
            raise InvalidInput(f"{path}: column {name!r} is {t} here and {s} in other files")
        out.append((name, s))
    return out


# -- in the executors --------------------------------------------------------------------------


def _decoder(schema: pa.Schema) -> Any:
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from changeflow.spark import local_path

        for batch in batches:
            for uri, content in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                for rows in _decode_file(local_path(uri), content, schema):
                    yield rows.append_column(FILE, pa.array([uri] * rows.num_rows, pa.string()))

    return decode


def _decode_file(path: str, content: bytes, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one Avro file: its updates, and its progress records as notes."""
    columns = schema.names[:-3]
    values: list[list[Any]] = [[] for _ in columns]
    times: list[int | None] = []
    diffs: list[int | None] = []
    notes: list[str | None] = []
    try:
        for record in fastavro.reader(io.BytesIO(content)):
            if isinstance(record, list):
                for u in record:
                    row, t = u["data"], u["time"]
                    if not 0 <= t <= MAX_TIME:
                        raise InvalidTime(f"{path}: time {t} is outside 0 <= t < 2^63")
                    for column, name in zip(values, columns, strict=True):
                        column.append(row[name])
                    times.append(t)
                    diffs.append(u["diff"])
                    notes.append(None)
            elif isinstance(record, dict) and {"lower", "upper", "counts"} <= record.keys():
                for column in values:
                    column.append(None)
                times.append(None)
                diffs.append(None)
                notes.append(canonical_json({"progress": record}))
            else:
                raise InvalidInput(f"{path}: record is neither updates nor progress")
            if len(times) >= 65_536:
                yield record_batch(schema, [*values, times, diffs, notes])
                values, times, diffs, notes = [[] for _ in columns], [], [], []
    except ChangeflowError:
        raise
    except (ValueError, EOFError, KeyError, TypeError) as e:
        raise InvalidInput(f"{path}: bad Avro record: {e}") from None
    yield record_batch(schema, [*values, times, diffs, notes])


FORMAT = Avro()
