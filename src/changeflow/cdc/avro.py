"""The Avro codec of CDC v2: object container files with Materialize's CDC v2 schema.

The schema is a union of an array of ``update`` records (``data``: the row record
``com.materialize.cdc.data``, ``time``: long, ``diff``: long) and a ``progress`` record
(``lower``, ``upper``: arrays of long; ``counts``: array of ``{time, count}``). Each container
record is one message. Rows are held as tuples of field values in the row schema's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import fastavro

from changeflow.cdc.messages import Message, Progress, Updates, freeze
from changeflow.errors import InvalidInput
from changeflow.time import Antichain, Product, time_from_json

NAMESPACE = "com.materialize.cdc"


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
    """Write messages (rows as tuples in ``columns`` order) as one Avro container file."""
    messages = list(messages)
    if fields is None:
        rows = (d for m in messages if isinstance(m, Updates) for d, _, _ in m.updates)
        fields = infer_row_fields(columns, rows)
    schema = fastavro.parse_schema(cdc_schema(fields))
    with open(path, "wb") as f:
        fastavro.writer(f, schema, (_record(m, columns) for m in messages), codec="deflate")


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
