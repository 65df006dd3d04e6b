"""COPY's row formats: text and CSV lines and the binary format out; in, text and CSV read into
columns of text by Arrow's CSV reader, the binary format decoded by the columns' types (the
session inserts either without SQL text), or, for a table whose left-out columns have
DEFAULTs, text and CSV lines turned into INSERT statements of quoted literals."""

from __future__ import annotations

import csv
import io
import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from changeflow.compute.scalars import from_text, to_text
from changeflow.compute.types import JSONB, Schema, SqlType
from changeflow.compute.values import arrow_values
from changeflow.errors import ChangeflowError, PlanError
from changeflow.server.commands import Copy
from changeflow.server.values import Typed, encoder, from_binary, oid_of, text

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
    shown = [
        None if v is None else to_text(v, c.type) if c.type.floating else text(v)
        for c, v in zip(columns, row, strict=True)
    ]
    return _line(copy, shown).encode("utf-8")


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
    for _, _, values in records(copy, data):
        yield values


def records(copy: Copy, data: bytes) -> Iterator[tuple[int, str, list[str | None]]]:
    """COPY FROM input's rows with the line each starts on (counted from 1, as PostgreSQL's
    error context counts them) and that line's text."""
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError("COPY data is not valid UTF-8", sqlstate="22021") from None
    lines = content.split("\n")
    if copy.format == "csv":
        reader = csv.reader(io.StringIO(content), delimiter=copy.delimiter)
        start = 1
        for i, fields in enumerate(reader):
            if not (i == 0 and copy.header):
                text = lines[start - 1] if start <= len(lines) else ""
                yield start, text.rstrip("\r"), [None if f == copy.null else f for f in fields]
            start = reader.line_num + 1
        return
    if lines and lines[-1] == "":  # the last line's end
        lines.pop()
    for i, line in enumerate(lines):
        if line == "\\." or (i == 0 and copy.header):
            continue
        values = [None if f == copy.null else _unescape(f) for f in line.split(copy.delimiter)]
        yield i + 1, line, values


def with_line(e: ChangeflowError, copy: Copy, data: bytes, row: int) -> ChangeflowError:
    """``e`` (raised for the ``row``th row of the input, from 0) with PostgreSQL's context:
    ``COPY t, line 2: "…"``, or ``…, column a: "zz"`` for a value of a column it names."""
    for i, (number, line, _) in enumerate(records(copy, data)):
        if i == row:
            column, value = e.fields.get("column"), e.fields.get("value")
            where = f"COPY {copy.table}, line {number}"
            if value is not None and column is not None:
                where += f", column {column}: {_shown(value)}"
            else:
                where += f": {_shown(line)}"
            e.fields["where"] = e.where = where  # type: ignore[attr-defined]
            break
    return e


def _shown(line: str) -> str:
    return '"' + (line if len(line) <= 100 else line[:100] + "...") + '"'


def field_count_error(copy: Copy, data: bytes, width: int, names: list[str]) -> PlanError:
    """PostgreSQL's error for the first row with too few or too many values."""
    for number, line, values in records(copy, data):
        if len(values) != width:
            if len(values) < width:
                message = f'missing data for column "{names[len(values)]}"'
            else:
                message = "extra data after last expected column"
            error = PlanError(message, sqlstate="22P04")
            error.fields["where"] = error.where = (  # type: ignore[attr-defined]
                f"COPY {copy.table}, line {number}: {_shown(line)}"
            )
            return error
    return PlanError("COPY data does not fit the columns", sqlstate="22P04")


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


def text_columns(copy: Copy, data: bytes, columns: list[str]) -> list[pa.Array]:
    """COPY FROM's text or CSV input as columns of text values (None for NULL), one for each
    of the ``columns`` named."""
    width = len(columns)
    names = [f"c{i}" for i in range(width)]
    if copy.format != "csv":
        data = b"\n".join(line for line in data.split(b"\n") if line != b"\\.")
    if not data.strip():
        return [pa.array([], pa.string()) for _ in names]
    csv_format = copy.format == "csv"
    parse = pacsv.ParseOptions(
        delimiter=copy.delimiter,
        quote_char='"' if csv_format else False,
        double_quote=csv_format,
        newlines_in_values=csv_format,
        escape_char=False,
        ignore_empty_lines=False,  # an empty line is a row, as PostgreSQL reads it
    )
    convert = pacsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.string()),
        null_values=[copy.null],
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    read = pacsv.ReadOptions(
        column_names=names, skip_rows=1 if copy.header else 0, block_size=1 << 24
    )
    try:
        table = pacsv.read_csv(
            io.BytesIO(data), read_options=read, parse_options=parse, convert_options=convert
        )
    except pa.ArrowInvalid as e:
        message = str(e)
        if "UTF8" in message:
            raise PlanError("COPY data is not valid UTF-8", sqlstate="22021") from None
        raise field_count_error(copy, data, width, columns) from None
    columns = [table.column(i).combine_chunks() for i in range(width)]
    if not csv_format:
        columns = [_unescaped(c) for c in columns]
    return columns


def _unescaped(column: pa.Array) -> pa.Array:
    """A text-format column with its backslash escapes read (only values that have one)."""
    if not pc.any(pc.match_substring(column, "\\")).as_py():
        return column
    return pa.array([None if v is None else _unescape(v) for v in column.to_pylist()], pa.string())


def binary_columns(data: bytes, names: list[str], columns: Schema) -> list[pa.Array]:
    """COPY FROM's binary input as columns of values, decoded by ``columns``' types."""
    if not data.startswith(SIGNATURE[:11]):
        raise PlanError("COPY file signature not recognized", sqlstate="22P04")
    oids = [oid_of(c.type)[0] for c in columns]
    values: list[list[Any]] = [[] for _ in columns]
    try:
        (extension,) = struct.unpack_from("!i", data, 15)
        pos = 19 + extension
        while True:
            (count,) = struct.unpack_from("!h", data, pos)
            pos += 2
            if count == -1:
                break
            if count != len(columns):
                raise PlanError(
                    f"row field count is {count}, expected {len(columns)}", sqlstate="22P04"
                )
            for i, oid in enumerate(oids):
                (size,) = struct.unpack_from("!i", data, pos)
                pos += 4
                if size == -1:
                    values[i].append(None)
                    continue
                if pos + size > len(data):
                    raise struct.error("short field")
                values[i].append(_decoded(data[pos : pos + size], oid, names[i]))
                pos += size
    except struct.error:
        raise PlanError("unexpected EOF in COPY data", sqlstate="22P04") from None
    return [_array(v, c.type) for v, c in zip(values, columns, strict=True)]


def _array(values: list[Any], kind: SqlType) -> pa.Array:
    """Decoded values as a column of ``kind``: a value decoded as typed text (a uuid, an
    array, an interval), or a string for a jsonb column (jsonb's binary form is its text), is
    read as ``kind``, then built as storage holds it."""
    values = [
        from_text(v, kind) if isinstance(v, Typed) or (isinstance(v, str) and kind is JSONB) else v
        for v in values
    ]
    return pa.array(arrow_values(values, kind.arrow), kind.arrow)


def _decoded(raw: bytes, oid: int, name: str) -> Any:
    try:
        return from_binary(raw, oid, 0)
    except PlanError as e:
        message = e.message.replace("parameter $0", f'COPY column "{name}"')
        raise PlanError(message, sqlstate=e.fields.get("sqlstate", "22P03")) from None
