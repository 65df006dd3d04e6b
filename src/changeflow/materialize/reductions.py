"""Reducing a transaction's changes into the rows to store, with Arrow over the whole
transaction (no Python per row, but for ``merge``).

lastWriteWins (the default): a key's row is its one row after the transaction: the changes
consolidated by (key, row) and, where the runtime loaded them, added to the stored rows; more
than one row per key is an error (but a transaction replayed through an at-least-once driver
may find its own effects stored already). Without a load (a target that upserts by key, or
delta updates) the transaction's own changes decide: a key's one remaining row is upserted, a
key left with retractions only is deleted. ``sum`` columns add ``diff * value`` to the stored
value; other columns take the value of the key's last insert; ``merge`` columns apply each
inserted value as a JSON merge patch (in Python: a merge is per value). Delta updates combine
this transaction's changes only.

What each reduction takes (:func:`check_types`, before anything is written): ``sum`` a number
column (integer, floating point or decimal); ``merge`` a column of JSON objects: a string
column holding JSON text, or a struct or map column.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.errors import InvalidInput
from changeflow.materialize.columns import DELETED, EXISTS, KEY_META
from changeflow.materialize.protocol import merge_patch
from changeflow.updates import DIFF, canonical_json

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


ROW = "_row"  # an update's position in the transaction (its order)
_LOADED = "_loaded"  # a stored row's position in the loaded table
_LAST = "_last"  # the position of a key's last insert


@dataclass(frozen=True)
class Changes:
    """A transaction's updates, ready to reduce: ``table`` holds the data columns, ``_diff``
    and ``_row`` (consolidated by row for lastWriteWins, as they came for the folds);
    ``updates`` as they came. The key sets are worked out when asked for: a transaction that
    loads nothing needs neither."""

    table: pa.Table
    updates: pa.Table
    key: tuple[str, ...]

    @cached_property
    def keys(self) -> pa.Table:
        """The distinct keys to load."""
        return _distinct(self.table, list(self.key))

    @cached_property
    def touched(self) -> pa.Table:
        """Every key the updates name, consolidated away or not."""
        return _distinct(self.updates, list(self.key))


@dataclass(frozen=True)
class Reducer:
    """The reduction of one binding: ``schema`` its columns, ``key`` its key columns."""

    schema: pa.Schema
    key: tuple[str, ...]
    reductions: dict[str, str] = field(default_factory=dict)
    delta: bool = False
    #: The target may hold this transaction's effects already: an at-least-once driver replays
    #: a transaction that failed part-way. A key stored as the transaction leaves it is accepted.
    replays: bool = False

    def __post_init__(self) -> None:
        columns = self.schema.names
        for name in (*self.key, *self.reductions):
            if name not in columns:
                raise InvalidInput(f"no column {name!r}; the columns are {list(columns)}")
        for name, how in self.reductions.items():
            if how not in REDUCTIONS:
                raise InvalidInput(f"column {name!r}: unknown reduction {how!r} (sum, merge)")
            if name in self.key:
                raise InvalidInput(f"column {name!r} is part of the key and cannot be reduced")

    @property
    def columns(self) -> list[str]:
        return self.schema.names

    def changes(self, updates: pa.Table) -> Changes:
        """The transaction's ``updates`` (an update frame) prepared for :meth:`reduce`."""
        table = updates.select([*self.columns, DIFF]).cast(self.schema.append(_diff_field()))
        table = table.append_column(ROW, pa.array(np.arange(table.num_rows, dtype=np.int64)))
        net = table if self.reductions else _consolidate(table, self.columns)
        check_null_keys(net, self.key)
        return Changes(net, table, self.key)

    def reduce(self, changes: Changes, loaded: pa.Table | None, where: str) -> pa.Table:
        """The rows to store (columns, ``_exists``, ``_deleted``). ``loaded`` holds the stored
        rows of ``changes.keys`` (None: not loaded, the store upserts by key or takes deltas)."""
        if self.reductions:
            return self._fold(changes.table, loaded)
        if loaded is None:
            return self._unloaded(changes, where)
        return self._loaded(changes.table, loaded, where)

    # -- lastWriteWins ---------------------------------------------------------------------------

    def _unloaded(self, changes: Changes, where: str) -> pa.Table:
        """A key's one remaining row is upserted; a key left with retractions only is deleted
        (in delta mode also a key whose changes cancel out). A key the transaction inserts
        without retracting a row of it must be new to the target (``_exists`` False): the
        store refuses it if it holds a row of that key already (a second row)."""
        net = changes.table
        present = net.filter(pc.greater(net[DIFF], 0))
        self._one_row_per_key(present, None, where)
        key = list(self.key)
        retractions = net.filter(pc.less(net[DIFF], 0))
        if self.delta:
            gone = _anti(changes.touched, present.select(key), key)
        else:  # the keys of the net retractions that keep no row
            gone = _distinct(_anti(retractions.select(key), present.select(key), key), key)
        exists = pa.nulls(present.num_rows, pa.bool_())
        if not self.delta:
            retracted = _key_text(retractions, key)
            upserted = pc.is_in(_key_text(present, key), value_set=retracted)
            exists = pc.if_else(upserted, pa.scalar(None, pa.bool_()), False)
        return self._rows(present, exists, gone, None)

    def _loaded(self, net: pa.Table, loaded: pa.Table, where: str) -> pa.Table:
        """The stored rows plus the changes: a key's one row is stored, a stored key without
        one deleted."""
        n = net.num_rows
        stored = loaded.select(self.columns).cast(self.schema)
        stored = stored.append_column(DIFF, pa.array(np.ones(stored.num_rows, np.int64)))
        stored = stored.append_column(
            ROW, pa.array(np.arange(n, n + stored.num_rows, dtype=np.int64))
        )
        state = _consolidate(pa.concat_tables([net, stored]), self.columns)
        present = state.filter(pc.greater(state[DIFF], 0))
        key = list(self.key)
        wrong = _distinct(state.filter(pc.less(state[DIFF], 0)), key)
        replayed = self._one_row_per_key(present, wrong, where, net, stored)
        if replayed is not None:
            present = replayed
        exists = pc.is_in(_key_text(present, key), value_set=_key_text(stored, key))
        gone = _anti(_distinct(stored, key), present.select(key), key)
        return self._rows(present, exists, gone, True)

    def _one_row_per_key(
        self,
        present: pa.Table,
        wrong: pa.Table | None,
        where: str,
        net: pa.Table | None = None,
        stored: pa.Table | None = None,
    ) -> pa.Table | None:
        """Refuse a key with more than one row (or a row retracted that the target does not
        hold); through an at-least-once driver, a key the target holds as the transaction
        leaves it is a replay: then the rows to store instead of ``present``."""
        key = list(self.key)
        keys = _key_text(present, key)
        counts = pc.value_counts(keys)
        repeated = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
        many = pc.or_(pc.is_in(keys, value_set=repeated), pc.greater(present[DIFF], 1))
        if not pc.any(many).as_py() and (wrong is None or not wrong.num_rows):
            return None
        if self.replays and net is not None and stored is not None:
            return self._replayed(net, stored, where)
        if pc.any(many).as_py():
            first = present.filter(many).slice(0, 1)
            same = present.filter(pc.equal(keys, _key_text(first, key)[0]))
            rows = pc.sum(same[DIFF]).as_py()
            self._refuse(first, f"has {rows} rows {where}")
        assert wrong is not None
        self._refuse(wrong, f"{where}: the transaction retracts a row the target does not hold")
        return None

    def _replayed(self, net: pa.Table, stored: pa.Table, where: str) -> pa.Table:
        """A replay's rows, key by key (a rare path, in Python): the stored row where it is the
        one row the transaction leaves, else the error."""
        columns, key = self.columns, list(self.key)
        held = {tuple(r[k] for k in key): tuple(r[c] for c in columns) for r in stored.to_pylist()}
        changes: dict[tuple, Counter[tuple]] = {}
        for r in net.to_pylist():
            changes.setdefault(tuple(r[k] for k in key), Counter())[
                tuple(r[c] for c in columns)
            ] += r[DIFF]
        keep: list[dict[str, Any]] = []
        for k, net_rows in changes.items():
            state = Counter({held[k]: 1}) if k in held else Counter()
            state.update(net_rows)
            rows = {row: n for row, n in state.items() if n}
            if not rows or (len(rows) == 1 and next(iter(rows.values())) == 1):
                keep += [dict(zip(columns, row, strict=True)) for row in rows]
                continue
            added = [row for row, n in net_rows.items() if n > 0]
            if len(added) == 1 and net_rows[added[0]] == 1 and held.get(k) == added[0]:
                keep.append(dict(zip(columns, added[0], strict=True)))
            elif not added and k not in held:
                continue
            else:
                shown = ", ".join(f"{c}={v!r}" for c, v in zip(key, k, strict=True))
                raise InvalidInput(
                    f"key ({shown}) has {sum(rows.values())} rows {where}; a materialization "
                    "keeps one row per key: choose a key that is unique, or reduce with --reduce"
                )
        table = pa.Table.from_pylist(keep, schema=self.schema)
        return table.append_column(DIFF, pa.array(np.ones(table.num_rows, np.int64)))

    def _refuse(self, rows: pa.Table, what: str) -> None:
        (row,) = rows.slice(0, 1).select(list(self.key)).to_pylist()
        shown = ", ".join(f"{c}={v!r}" for c, v in row.items())
        raise InvalidInput(
            f"key ({shown}) {what}; a materialization keeps one row per key: choose a key "
            "that is unique, or reduce with --reduce"
        )

    def _rows(
        self, present: pa.Table, exists: pa.Array, gone: pa.Table, gone_exists: bool | None
    ) -> pa.Table:
        """Store rows: ``present`` upserted, the keys ``gone`` deleted."""
        upserts = present.select(self.columns)
        upserts = upserts.append_column(EXISTS, exists)
        upserts = upserts.append_column(DELETED, pa.array(np.zeros(len(upserts), bool)))
        n = gone.num_rows
        if not n:
            return upserts.cast(self._store_schema())
        deletes = {
            c: gone[c] if c in self.key else pa.nulls(n, self.schema.field(c).type)
            for c in self.columns
        }
        deletes[EXISTS] = pa.array(np.full(n, bool(gone_exists))) if gone_exists else pa.nulls(n)
        deletes[DELETED] = pa.array(np.ones(n, bool))
        return pa.concat_tables(
            [upserts.cast(self._store_schema()), pa.table(deletes).cast(self._store_schema())]
        )

    def _store_schema(self) -> pa.Schema:
        schema = self.schema.append(pa.field(EXISTS, pa.bool_()))
        schema = schema.append(pa.field(DELETED, pa.bool_(), nullable=False))
        return schema.with_metadata({KEY_META: json.dumps(list(self.key)).encode()})

    # -- sum and merge ---------------------------------------------------------------------------

    def _fold(self, changes: pa.Table, loaded: pa.Table | None) -> pa.Table:
        """One row per key: sums of ``diff * value`` added to the stored value, merges patched
        into it, other columns from the key's last insert (else as stored)."""
        key = list(self.key)
        sums = [c for c, how in self.reductions.items() if how == "sum"]
        products = {f"_p{i}": _times(changes[c], changes[DIFF]) for i, c in enumerate(sums)}
        table = changes
        for name, values in products.items():
            table = table.append_column(name, values)
        surrogate, names = _group_names(table, key)
        per_key = surrogate.group_by(names, use_threads=False).aggregate(
            [(ROW, "min"), *((p, "sum") for p in products)]
        )
        per_key = per_key.sort_by(f"{ROW}_min")
        first = changes.take(per_key[f"{ROW}_min"]).select(key)
        inserts = table.filter(pc.greater(table[DIFF], 0))
        positive, pnames = _group_names(inserts, key)
        last = positive.group_by(pnames, use_threads=False).aggregate([(ROW, "max")])
        last = changes.take(last[f"{ROW}_max"]).select(key).append_column(_LAST, last[f"{ROW}_max"])
        index = first.append_column("_i", pa.array(np.arange(first.num_rows, dtype=np.int64)))
        stored = _empty_or(loaded, self.schema)
        held = stored.select(key).append_column(
            _LOADED, pa.array(np.arange(stored.num_rows, dtype=np.int64))
        )
        joined = index.join(held, keys=key, join_type="left outer")
        joined = joined.join(last, keys=key, join_type="left outer").sort_by("_i")
        at_loaded, at_last = joined[_LOADED], joined[_LAST]
        out: dict[str, Any] = {}
        for c in self.columns:
            kind = self.schema.field(c).type
            before = stored[c].take(at_loaded)
            if c in self.key:
                out[c] = joined[c]
            elif self.reductions.get(c) == "sum":
                added = per_key[f"_p{sums.index(c)}_sum"].take(joined["_i"])
                out[c] = _sum(before, added, kind, c)
            elif self.reductions.get(c) == "merge":
                out[c] = self._merges(c, joined, before, inserts)
            else:
                out[c] = pc.if_else(pc.is_valid(at_last), changes[c].take(at_last), before)
        out[EXISTS] = pc.is_valid(at_loaded)
        out[DELETED] = pa.array(np.zeros(joined.num_rows, bool))
        return pa.table(out).cast(self._store_schema())

    def _merges(
        self, column: str, joined: pa.Table, before: pa.ChunkedArray, inserts: pa.Table
    ) -> pa.Array:
        """Each key's stored value with its inserted values applied as merge patches, in order."""
        key = list(self.key)
        patches: dict[tuple, list[Any]] = {}
        for k, value in zip(
            zip(*(inserts[c].to_pylist() for c in key), strict=True),
            inserts[column].to_pylist(),
            strict=True,
        ):
            patches.setdefault(k, []).append(value)
        kind = self.schema.field(column).type
        out = []
        keys = zip(*(joined[c].to_pylist() for c in key), strict=True)
        for k, doc in zip(keys, before.to_pylist(), strict=True):
            for value in patches.get(k, ()):
                doc = merge_patch(_json(doc), _json(value))
            if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                doc = doc if doc is None or isinstance(doc, str) else canonical_json(doc)
            out.append(doc)
        return pa.array(out, kind)


def check_null_keys(updates: pa.Table, key: tuple[str, ...] | list[str], where: str = "") -> None:
    """Refuse rows (of a nonzero diff) with a NULL key column: a key column must be NOT NULL
    (a NULL matches no row, so the target could not keep one row per key). The error names
    the column, how many rows and the first of them."""
    for name in key:
        column = updates[name]
        if not column.null_count:
            continue
        nulls = pc.is_null(column)
        if DIFF in updates.column_names:
            nulls = pc.and_(nulls, pc.not_equal(updates[DIFF], 0))
        bad = updates.filter(nulls)
        if not bad.num_rows:
            continue
        data = [c for c in bad.column_names if not c.startswith("_")]
        (first,) = bad.slice(0, 1).select(data).to_pylist()
        shown = ", ".join(f"{c}={'NULL' if v is None else repr(v)}" for c, v in first.items())
        raise InvalidInput(
            f"{where}key column {name!r} is NULL in {bad.num_rows} "
            f"row{'s' if bad.num_rows != 1 else ''} (the first: {shown}); a materialization's "
            f"key must be NOT NULL: filter them out (WHERE {name} IS NOT NULL) or choose "
            "another key",
            sqlstate="23502",  # not_null_violation
            column=name,
            rows=bad.num_rows,
        )


def _diff_field() -> pa.Field:
    return pa.field(DIFF, pa.int64())


def _nested(kind: pa.DataType) -> bool:
    return pa.types.is_nested(kind) or pa.types.is_dictionary(kind)


def _group_names(table: pa.Table, names: list[str]) -> tuple[pa.Table, list[str]]:
    """``table`` with a JSON text column in place of each column Arrow cannot group by (lists,
    structs, maps), and the names to group by."""
    out, by = table, []
    for i, name in enumerate(names):
        if _nested(table.schema.field(name).type):
            text = [None if v is None else canonical_json(v) for v in table[name].to_pylist()]
            out = out.append_column(f"_g{i}", pa.array(text, pa.string()))
            by.append(f"_g{i}")
        else:
            by.append(name)
    return out, by


def _consolidate(table: pa.Table, columns: list[str]) -> pa.Table:
    """The rows of ``table`` (ordered by ``_row``) consolidated: diffs summed per row, zeros
    dropped, each row where it first occurs."""
    at = pa.array(np.arange(table.num_rows, dtype=np.int64))
    surrogate, names = _group_names(table.append_column("_at", at), columns)
    sums = surrogate.group_by(names, use_threads=False).aggregate([(DIFF, "sum"), ("_at", "min")])
    sums = sums.filter(pc.not_equal(sums[f"{DIFF}_sum"], 0)).sort_by("_at_min")
    rows = table.take(sums["_at_min"])
    return rows.set_column(rows.schema.get_field_index(DIFF), DIFF, sums[f"{DIFF}_sum"])


def _distinct(table: pa.Table, key: list[str]) -> pa.Table:
    """The distinct keys of ``table``, in order of first appearance."""
    at = pa.array(np.arange(table.num_rows, dtype=np.int64))
    surrogate, names = _group_names(table.select(key).append_column("_at", at), key)
    first = surrogate.group_by(names, use_threads=False).aggregate([("_at", "min")])
    return table.select(key).take(np.sort(first["_at_min"].to_numpy()))


def _key_text(table: pa.Table, key: list[str]) -> pa.Array:
    """One comparable value per row for the key columns (the column itself for one plain key)."""
    if len(key) == 1 and not _nested(table.schema.field(key[0]).type):
        return table[key[0]].combine_chunks()
    values = zip(*(table[c].to_pylist() for c in key), strict=True)
    return pa.array([canonical_json(list(v)) for v in values], pa.string())


def _anti(keys: pa.Table, present: pa.Table, key: list[str]) -> pa.Table:
    """The rows of ``keys`` whose key is not in ``present``."""
    if not present.num_rows or not keys.num_rows:
        return keys
    found = pc.is_in(_key_text(keys, key), value_set=_key_text(present, key))
    return keys.filter(pc.invert(found))


def _times(values: pa.ChunkedArray, diffs: pa.ChunkedArray) -> pa.ChunkedArray:
    """``diff * value`` (a null value counts as 0)."""
    kind = values.type
    if pa.types.is_decimal(kind):
        zero = _zero(kind)
        return pc.multiply(pc.fill_null(values, zero), diffs.cast(pa.decimal128(19, 0)))
    if pa.types.is_floating(kind):
        return pc.multiply(pc.fill_null(values, 0).cast(pa.float64()), diffs.cast(pa.float64()))
    return pc.multiply_checked(pc.fill_null(values, 0).cast(pa.int64()), diffs)


def _zero(kind: pa.DataType) -> pa.Scalar:
    return pa.scalar(Decimal(0) if pa.types.is_decimal(kind) else 0, kind)


def _sum(before: Any, added: Any, kind: pa.DataType, column: str) -> Any:
    """The stored values (null: 0) plus ``added``, as ``kind``; a sum that does not fit is one
    clear error."""
    try:
        if pa.types.is_decimal(kind):
            added = added.cast(kind)
        start = pc.fill_null(before.cast(added.type), _zero(added.type))
        return pc.add_checked(start, added).cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidInput(f"the sum of column {column!r} does not fit {kind}: {e}") from None


def _empty_or(loaded: pa.Table | None, schema: pa.Schema) -> pa.Table:
    if loaded is None or not loaded.num_rows:
        return schema.empty_table()
    return loaded.select(schema.names).cast(schema)


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
