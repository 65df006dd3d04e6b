"""Columnar documents: a binding's Arrow schema, and the tables that carry a transaction.

A Load carries a table of keys (the binding's key columns); a Loaded the stored rows (every
column of the binding). A Store carries the rows to write: the binding's columns, then
``_exists`` (the key was loaded: True or False; null when the runtime did not load, so the
target upserts) and ``_deleted`` (a delete: only the key columns count).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from changeflow.compute.pads import padded_table
from changeflow.errors import InvalidInput
from changeflow.materialize.protocol import Binding, Doc, Key
from changeflow.storage.frames import consolidate
from changeflow.updates import DIFF, TIME

EXISTS, DELETED = "_exists", "_deleted"
KEY_META = b"changeflow.key"  # a Store table names its key columns in its schema's metadata


def parse_type(name: str) -> pa.DataType:
    """An Arrow type from its name (``str(type)``): int64, string, timestamp[us, tz=UTC],
    time64[us], decimal128(10, 2), list<item: string>, struct<x: int64>, map<string, int64>…"""
    kind, rest = _parse(name.strip())
    if rest.strip():
        raise InvalidInput(f"{name!r} is not an Arrow type a materialization can carry")
    return kind


def _parse(text: str) -> tuple[pa.DataType, str]:
    """The type at the start of ``text``, and what follows it."""
    m = re.match(r"[a-z_0-9]+", text)
    if m is None:
        raise InvalidInput(f"{text!r} is not an Arrow type a materialization can carry")
    word, rest = m[0], text[m.end() :]
    if word in ("list", "large_list") and rest.startswith("<"):
        item, rest = _field(rest[1:])
        return (pa.list_ if word == "list" else pa.large_list)(item), _close(rest, ">")
    if word == "struct" and rest.startswith("<"):
        fields, rest = [], rest[1:]
        while not rest.startswith(">"):
            item, rest = _field(rest)
            fields.append(item)
            rest = rest.removeprefix(", ")
        return pa.struct(fields), rest[1:]
    if word == "map" and rest.startswith("<"):
        key, rest = _parse(rest[1:])
        item, rest = _parse(rest.removeprefix(", "))
        return pa.map_(key, item), _close(rest, ">")
    if word in ("time32", "time64") and (m := re.match(r"\[(s|ms|us|ns)\]", rest)):
        return getattr(pa, word)(m[1]), rest[m.end() :]
    if m := re.match(r"\[(s|ms|us|ns)(?:, tz=([^\]]+))?\]", rest):
        return pa.timestamp(m[1], tz=m[2]), rest[m.end() :]
    if m := re.match(r"\((\d+), (-?\d+)\)", rest):
        return getattr(pa, word)(int(m[1]), int(m[2])), rest[m.end() :]
    if word in ("date32", "date64"):
        return getattr(pa, word)(), rest.removeprefix("[day]").removeprefix("[ms]")
    try:
        return pa.type_for_alias(word), rest
    except (ValueError, KeyError):
        raise InvalidInput(f"{word!r} is not an Arrow type a materialization can carry") from None


def _field(text: str) -> tuple[pa.Field, str]:
    name, _, rest = text.partition(": ")
    kind, rest = _parse(rest)
    nullable = not rest.startswith(" not null")
    return pa.field(name, kind, nullable), rest.removeprefix(" not null")


def _close(text: str, bracket: str) -> str:
    if not text.startswith(bracket):
        raise InvalidInput(f"{text!r}: {bracket!r} expected in an Arrow type")
    return text[1:]


def arrow_schema(binding: Binding) -> pa.Schema:
    """The binding's columns with their Arrow types."""
    if len(binding.types) != len(binding.columns):
        raise InvalidInput(
            f"{binding.resource}: {len(binding.columns)} columns but {len(binding.types)} types"
        )
    return pa.schema(
        [(c, parse_type(t)) for c, t in zip(binding.columns, binding.types, strict=True)]
    )


def key_schema(binding: Binding) -> pa.Schema:
    """The schema of a Load's table: the key columns."""
    schema = arrow_schema(binding)
    return pa.schema([schema.field(k) for k in binding.key])


def store_schema(binding: Binding) -> pa.Schema:
    """The schema of a Store's table: the columns, ``_exists`` and ``_deleted``, and the key
    columns' names in the metadata."""
    schema = arrow_schema(binding).append(pa.field(EXISTS, pa.bool_()))
    schema = schema.append(pa.field(DELETED, pa.bool_(), nullable=False))
    return schema.with_metadata({KEY_META: json.dumps(list(binding.key)).encode()})


def from_rows(rows: Iterable[dict[str, Any]], schema: pa.Schema, where: str) -> pa.Table:
    """Python documents as a table of ``schema``; a value that does not fit is one clear error."""
    try:
        return pa.Table.from_pylist(list(rows), schema=schema)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise InvalidInput(
            f"{where}: a document does not fit {schema.names} of types "
            f"{[str(t) for t in schema.types]}: {e}"
        ) from None


def conform(rows: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """Loaded rows as a table of ``schema`` (a driver that loads a row at a time returns the
    types Arrow guessed)."""
    if not rows.num_rows:
        return schema.empty_table()
    try:
        return rows.select(schema.names).cast(schema)
    except (pa.ArrowException, KeyError, ValueError):
        return from_rows(rows.to_pylist(), schema, where)


def keys_table(binding: Binding, keys: Iterable[Key]) -> pa.Table:
    """The keys of per-key Loads as a table."""
    names = binding.key
    return from_rows(
        (dict(zip(names, k, strict=True)) for k in keys), key_schema(binding), binding.resource
    )


def stores_table(
    binding: Binding, stores: Iterable[tuple[Key, Doc | None, bool, bool]]
) -> pa.Table:
    """Per-key stores ``(key, doc, exists, delete)`` as a Store table; the key wins over the
    document's key fields."""
    columns = binding.columns

    def row(key: Key, doc: Doc | None, exists: bool, delete: bool) -> dict[str, Any]:
        values = (
            {c: None for c in columns} if delete or not doc else {c: doc.get(c) for c in columns}
        )
        values.update(zip(binding.key, key, strict=True))
        values[EXISTS], values[DELETED] = exists, delete
        return values

    return from_rows((row(*s) for s in stores), store_schema(binding), binding.resource)


def documents(binding: Binding, rows: pa.Table) -> list[tuple[Key, Doc]]:
    """The rows of a Loaded table as ``(key, document)``."""
    out = []
    for doc in rows.select(list(binding.columns)).to_pylist():
        out.append((tuple(doc[k] for k in binding.key), doc))
    return out


def as_written(
    updates: pa.Table,
    columns: tuple[tuple[str, str], ...] | None,
    pads: tuple[tuple[str, int], ...],
) -> pa.Table:
    """A shard's updates as the target gets them: only ``columns`` (each a stored name and
    its target name; a change to the others is none to these), char(n) values padded."""
    if columns is not None:
        stored, names = zip(*columns, strict=True)
        updates = updates.select([*stored, TIME, DIFF])
        updates = consolidate(updates.rename_columns([*names, TIME, DIFF]))
    return padded_table(updates, pads)
