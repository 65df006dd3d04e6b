"""COPY's row formats: text and CSV lines and the binary format out, text and CSV lines in
(turned into INSERT statements of quoted literals, which the planner casts to the columns)."""

from __future__ import annotations

import csv
import io
import struct
from collections.abc import Iterator
from typing import Any

from changeflow.compute.types import Schema
from changeflow.errors import PlanError
from changeflow.server.commands import Copy
from changeflow.server.values import encoder, text

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
BATCH = 500
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def copy_header(copy: Copy, columns: Schema) -> bytes:
    if copy.format == "binary":
        return SIGNATURE
    if copy.header:
        return _line(copy, [c.name for c in columns]).encode("utf-8")
    return b""


def copy_trailer(copy: Copy) -> bytes:
    return struct.pack("!h", -1) if copy.format == "binary" else b""


def copy_line(copy: Copy, columns: Schema, row: tuple[Any, ...]) -> bytes:
    """One row of COPY output."""
    if copy.format == "binary":
        parts = [struct.pack("!h", len(row))]
        for column, value in zip(columns, row, strict=True):
            data = encoder(column.type, 1)(value)
            parts.append(struct.pack("!i", -1) if data is None else struct.pack("!i", len(data)))
            if data is not None:
                parts.append(data)
        return b"".join(parts)
    return _line(copy, [None if v is None else text(v) for v in row]).encode("utf-8")


def _line(copy: Copy, values: list[str | None]) -> str:
    if copy.format == "csv":
        return copy.delimiter.join(_csv_field(copy, v) for v in values) + "\n"
    escapes = {copy.delimiter: "\\" + copy.delimiter, **_ESCAPES}
    return (
        copy.delimiter.join(
            copy.null if v is None else "".join(escapes.get(ch, ch) for ch in v) for v in values
        )
        + "\n"
    )


def _csv_field(copy: Copy, value: str | None) -> str:
    if value is None:
        return copy.null
    if value == copy.null or any(ch in value for ch in (copy.delimiter, '"', "\n", "\r")):
        return '"' + value.replace('"', '""') + '"'
    return value


def parse_rows(copy: Copy, data: bytes) -> Iterator[list[str | None]]:
    """The rows of COPY FROM input, each a list of values (None for NULL)."""
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError("COPY data is not valid UTF-8", sqlstate="22021") from None
    if copy.format == "csv":
        reader = csv.reader(io.StringIO(content), delimiter=copy.delimiter)
        for i, fields in enumerate(reader):
            if i == 0 and copy.header:
                continue
            yield [None if f == copy.null else f for f in fields]
        return
    for i, line in enumerate(content.split("\n")):
        if line in ("", "\\.") or (i == 0 and copy.header):
            continue
        yield [None if f == copy.null else _unescape(f) for f in line.split(copy.delimiter)]


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    out, i = [], 0
    mapping = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "\\": "\\"}
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append(mapping.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def insert_statements(copy: Copy, data: bytes) -> Iterator[tuple[str, int]]:
    """INSERT statements (with their row counts) that load COPY FROM input."""
    columns = f" ({', '.join(_quote(c) for c in copy.columns)})" if copy.columns else ""
    head = f"INSERT INTO {_quote(copy.table or '')}{columns} VALUES "
    batch: list[str] = []
    for row in parse_rows(copy, data):
        batch.append("(" + ", ".join(_literal(v) for v in row) + ")")
        if len(batch) >= BATCH:
            yield head + ", ".join(batch), len(batch)
            batch = []
    if batch:
        yield head + ", ".join(batch), len(batch)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str | None) -> str:
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"
