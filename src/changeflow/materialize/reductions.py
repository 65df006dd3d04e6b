"""Reducing a transaction's changes of one key into the document to store.

lastWriteWins (the default): the document is the key's one row after the transaction; more
than one row per key is an error (but a transaction replayed through an at-least-once driver
may find its own effects stored already). ``sum`` columns add ``diff * value``; ``merge``
columns apply each inserted value as a JSON merge patch. Delta updates combine this
transaction's changes only.

What each reduction takes (:func:`check_types`, before anything is written): ``sum`` a number
column (integer, floating point or decimal); ``merge`` a column of JSON objects: a string
column holding JSON text, or a struct or map column.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from changeflow.errors import InvalidInput
from changeflow.materialize.protocol import Doc, Key, merge_patch

REDUCTIONS = ("sum", "merge")


def _number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _json_object(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_struct(t)
        or (pa.types.is_map(t))
    )


#: reduction -> (the column types it takes, in words, and the test)
TAKES = {"sum": ("a number", _number), "merge": ("JSON text, a struct or a map", _json_object)}


def check_types(schema: pa.Schema, reductions: dict[str, str]) -> None:
    """Refuse a reduction of a column whose type it cannot reduce (see the module docstring)."""
    for name, how in reductions.items():
        if name not in schema.names or how not in TAKES:
            continue  # the Reducer names these mistakes
        kind = schema.field(name).type
        words, takes = TAKES[how]
        if not takes(kind):
            raise InvalidInput(
                f"--reduce {name}={how}: column {name!r} is {kind}, and {how} takes {words}; "
                "reduce another column, or drop the --reduce"
            )


@dataclass(frozen=True)
class Reducer:
    columns: tuple[str, ...]
    key: tuple[str, ...]
    reductions: dict[str, str] = field(default_factory=dict)
    delta: bool = False
    #: The target may hold this transaction's effects already: an at-least-once driver replays
    #: a transaction that failed part-way. A key stored as the transaction leaves it is accepted.
    replays: bool = False

    def __post_init__(self) -> None:
        for name in (*self.key, *self.reductions):
            if name not in self.columns:
                raise InvalidInput(f"no column {name!r}; the columns are {list(self.columns)}")
        for name, how in self.reductions.items():
            if how not in REDUCTIONS:
                raise InvalidInput(f"column {name!r}: unknown reduction {how!r} (sum, merge)")
            if name in self.key:
                raise InvalidInput(f"column {name!r} is part of the key and cannot be reduced")

    def key_of(self, doc: Doc) -> Key:
        return tuple(doc[c] for c in self.key)

    def reduce(
        self, key: Key, changes: list[tuple[tuple, int]], loaded: Doc | None, where: str
    ) -> tuple[Doc | None, bool]:
        """The document to store for ``key`` and whether it is a delete.

        ``changes`` are ``(row, diff)`` in time order; ``loaded`` is the stored document (None
        if it does not exist or in delta mode). ``(None, False)`` means nothing to store.
        """
        if self.reductions:
            return self._fold(key, changes, loaded), False
        count = len(changes)
        if count <= 2 and not self.delta:
            # the common cases, without counting: an insert of a new key, or an upsert (the
            # loaded row retracted, the new one inserted); a row holds every column
            if count == 1:
                if loaded is None:
                    row, diff = changes[0]
                    if diff == 1:
                        return dict(zip(self.columns, row)), False  # noqa: B905
            elif count == 2 and loaded is not None:
                (first, d1), (second, d2) = changes
                if d1 == 1 and d2 == -1:
                    new, old = first, second
                elif d1 == -1 and d2 == 1:
                    new, old = second, first
                else:
                    new = old = None
                if old is not None and old == tuple(map(loaded.get, self.columns)):
                    return dict(zip(self.columns, new)), False  # noqa: B905
        rows: Counter[tuple] = Counter()
        if loaded is not None:
            rows[tuple(loaded.get(c) for c in self.columns)] = 1
        for row, diff in changes:
            rows[row] += diff
        present = {row: n for row, n in rows.items() if n}
        if self.delta:
            present = {row: n for row, n in present.items() if n > 0}
        if not present:
            deleted = loaded is not None or (self.delta and bool(changes))
            return None, deleted
        if len(present) > 1 or next(iter(present.values())) != 1:
            if self.replays and (applied := self._applied(changes, loaded)) is not None:
                return applied
            shown = ", ".join(f"{c}={v!r}" for c, v in zip(self.key, key, strict=True))
            raise InvalidInput(
                f"key ({shown}) has {sum(present.values())} rows {where}; a materialization "
                "keeps one row per key: choose a key that is unique, or reduce with --reduce"
            )
        return dict(zip(self.columns, next(iter(present)), strict=True)), False

    def _applied(
        self, changes: list[tuple[tuple, int]], loaded: Doc | None
    ) -> tuple[Doc | None, bool] | None:
        """What to store if ``loaded`` is the key as this transaction leaves it (a replay of
        a transaction that was applied already); None if it is not."""
        net: Counter[tuple] = Counter()
        for row, diff in changes:
            net[row] += diff
        added = [row for row, n in net.items() if n > 0]
        if not added:  # the transaction deleted the key
            return (None, False) if loaded is None and any(net.values()) else None
        row = added[0]
        if len(added) > 1 or net[row] != 1 or loaded is None:
            return None
        if tuple(loaded.get(c) for c in self.columns) != row:
            return None
        return dict(zip(self.columns, row, strict=True)), False

    def _fold(self, key: Key, changes: list[tuple[tuple, int]], loaded: Doc | None) -> Doc:
        doc: Doc = dict(loaded) if loaded is not None else dict(zip(self.key, key, strict=True))
        for name, how in self.reductions.items():
            if how == "sum":
                doc.setdefault(name, 0)
        for row, diff in changes:
            values = dict(zip(self.columns, row, strict=True))
            for name, value in values.items():
                how = self.reductions.get(name)
                if how == "sum":
                    doc[name] = (doc.get(name) or 0) + diff * (value or 0)
                elif diff > 0 and how == "merge":
                    doc[name] = merge_patch(_json(doc.get(name)), _json(value))
                elif diff > 0 and name not in self.key:
                    doc[name] = value
        return doc


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
