"""Indexes that serve: an index's arrangement, its input's rows by the index's key in this
process's memory, read by queries that fix the key with equalities.

``CREATE INDEX … (k)`` on a table (or a view, whose index shard is what its queries read)
makes the host keep an :class:`Arrangement` of that shard by ``k``: its updates up to a time
as Arrow columns sorted by the key's first column (built once, by one sort, so a lookup is a
binary search and only the rows it finds become Python rows), and the changes since in
Python, by key (a few new rows a step). A query whose only input is that shard, read through
a filter with ``k = literal`` for every key column (a point SELECT, UPDATE or DELETE), is
evaluated over the rows of that key alone, so the filter and the rest of the plan run on a
handful of rows instead of the table. The recent updates are kept for :data:`RECENT_MS`, so a
read a little behind the arrangement (a transaction's earlier timestamp) subtracts them;
older reads, and reads of compacted history, take the usual path.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import TEXT
from changeflow.time import to_bound
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from changeflow.adapter.catalog import CatalogState
    from changeflow.adapter.environment import Environment
    from changeflow.storage.txns import View

Counted = dict[tuple[Any, ...], int]
RECENT_MS = 60_000  # how far behind the arrangement a read may be and still use it
REBUILD_ROWS = 100_000  # changes kept in Python past which the host sorts the columns again


class Arrangement:
    """``shard``'s rows by the values of ``key`` (column indexes), at times below ``at``."""

    def __init__(self, env: Environment, shard: str, key: tuple[int, ...]) -> None:
        self.env, self.shard, self.key = env, shard, key
        self.lock = threading.Lock()
        self.base: pa.Table | None = None  # updates up to a time, sorted by key[0]
        self.base_keys: np.ndarray | None = None  # key[0]'s non-null values in ``base``
        self.rows: dict[tuple[Any, ...], Counted] = defaultdict(dict)  # changes since base
        self.at: int | None = None  # every update below this is in ``base`` and ``rows``
        self.floor = 0  # the earliest time a read may ask for
        self.recent: list[tuple[int, tuple[Any, ...], tuple[Any, ...], int]] = []
        self.changed = 0  # updates added to ``rows`` since the base was sorted
        self.served = 0  # reads answered (a measure for tests and the status page)
        self.sorted: list[Any] | None = None  # ``rows``' keys in order, once a range asks

    def read(self, values: tuple[Any, ...], ts: int, view: View | None = None) -> Counted | None:
        """The rows whose key is ``values`` at ``ts`` (the shard is complete there, or
        ``view``, the write log's view of it at ``ts``, has the rest); None if this
        arrangement cannot tell (``ts`` too far behind it)."""

        def base() -> Counted:
            found = self._base(values[0], values[0])
            rest = list(zip(self.key[1:], values[1:], strict=True))
            if not rest:
                return found
            return {r: c for r, c in found.items() if all(r[i] == v for i, v in rest)}

        return self._read(ts, base, lambda: [values], lambda key: key == values, view)

    def read_range(
        self, low: int | None, high: int | None, ts: int, view: View | None = None
    ) -> Counted | None:
        """The rows whose (one-column, integer) key is in ``[low, high]`` at ``ts``."""

        def keys() -> list[tuple[Any, ...]]:
            if self.sorted is None:
                self.sorted = sorted(k[0] for k in self.rows if k[0] is not None)
            start = 0 if low is None else bisect.bisect_left(self.sorted, low)
            end = len(self.sorted) if high is None else bisect.bisect_right(self.sorted, high)
            return [(k,) for k in self.sorted[start:end]]

        def within(key: tuple[Any, ...]) -> bool:
            k = key[0]
            return k is not None and (low is None or k >= low) and (high is None or k <= high)

        return self._read(ts, lambda: self._base(low, high), keys, within, view)

    def _base(self, low: Any, high: Any) -> Counted:
        """The sorted columns' rows whose first key column is in ``[low, high]`` (None:
        open), summed."""
        if self.base is None or not self.base.num_rows:
            return {}
        from changeflow.adapter.rows import counted

        if self.base_keys is None:
            column = self.base.column(self.base.column_names[self.key[0]]).combine_chunks()
            column = column.slice(0, len(column) - column.null_count)  # nulls sort last
            if pa.types.is_integer(column.type):
                column = column.cast(pa.int64())
            self.base_keys = column.to_numpy(zero_copy_only=False)
        keys = self.base_keys
        try:
            start = 0 if low is None else int(np.searchsorted(keys, low, "left"))
            end = len(keys) if high is None else int(np.searchsorted(keys, high, "right"))
        except (OverflowError, TypeError):
            return {}  # a literal no stored value can equal
        return counted(self.base.slice(start, end - start)) if end > start else {}

    def _read(
        self,
        ts: int,
        base: Callable[[], Counted],
        keys: Callable[[], list[tuple[Any, ...]]],
        wanted: Callable[[Any], bool],
        view: View | None,
    ) -> Counted | None:
        with self.lock:
            if self.at is None or not self._advance(ts + 1, view):
                self._build(ts, view)
            if ts < self.floor:
                return None
            self.served += 1
            out = base()
            for key in keys():
                for row, count in self.rows.get(key, {}).items():
                    out[row] = out.get(row, 0) + count
            for time, key, row, diff in reversed(self.recent):
                if time <= ts:
                    break
                if wanted(key):
                    out[row] = out.get(row, 0) - diff
            return {r: c for r, c in out.items() if c}

    def catch_up(self) -> None:
        """Build, or move forward to the shard's upper (the host does this every tick); the
        columns are sorted again once many changes wait in Python."""
        upper = to_bound(self.env.storage.state(self.shard).upper)
        if upper is None or upper == 0:
            return
        with self.lock:
            if self.at is None or not self._advance(upper) or self.changed > REBUILD_ROWS:
                self._build(upper - 1)

    def _build(self, ts: int, view: View | None = None) -> None:
        """The shard's updates up to ``ts`` as columns sorted by the key's first column (its
        history summed as :meth:`Environment.updates_until` keeps it, the rest not: a read
        sums the few rows it finds)."""
        views = None if view is None else {self.shard: view}
        updates = self.env.updates_until(self.shard, ts, views)
        name = updates.column_names[self.key[0]]
        order = pc.sort_indices(updates, sort_keys=[(name, "ascending", "at_end")])
        self.base, self.base_keys = updates.take(order), None
        self.rows, self.changed = defaultdict(dict), 0
        self.at, self.floor, self.recent, self.sorted = ts + 1, ts, [], None

    def _advance(self, to: int, view: View | None = None) -> bool:
        """Apply the updates in ``[at, to)``: from the shard, or, with ``view`` (the write
        log's view of it at ``to - 1``), from the shard below ``view.at`` and the log's
        writes not applied yet after it (the same updates, the log's applied later at those
        times, so the host's next catch-up finds nothing new below ``at``). False if the
        shard was compacted past ``at``."""
        from changeflow.adapter.rows import triples
        from changeflow.storage.txns import reader

        assert self.at is not None
        if to <= self.at:
            return True
        state = self.env.storage.state(self.shard)
        since = to_bound(state.since)
        if since is None or since > self.at:
            return False  # updates below ``at`` may have been moved into the range
        stored = to if view is None else min(to, view.at + 1)
        parts = []
        if stored > self.at:
            parts.append(reader(self.env.storage, self.shard).updates(state, self.at, stored))
        if view is not None and view.pending is not None:
            pending = view.pending
            parts.append(pending.filter(pc.greater_equal(pending.column(TIME), self.at)))
        for row, time, diff in (u for part in parts for u in triples(part)):
            key = tuple(row[i] for i in self.key)
            new_key = key not in self.rows
            group = self.rows[key]
            count = group.get(row, 0) + diff
            if count:
                group[row] = count
            else:
                group.pop(row, None)
                if not group:
                    del self.rows[key]
            if self.sorted is not None and key[0] is not None:
                if new_key and key in self.rows:
                    bisect.insort(self.sorted, key[0])
                elif not new_key and key not in self.rows:
                    del self.sorted[bisect.bisect_left(self.sorted, key[0])]
            self.recent.append((time, key, row, diff))
            self.changed += 1
        self.at = to
        horizon = to - 1 - RECENT_MS
        if self.recent and self.recent[0][0] <= horizon:
            self.recent = [u for u in self.recent if u[0] > horizon]
            self.floor = max(self.floor, horizon)
        return True


@dataclass
class Fixed:
    """What a filter right above a plan's only input says of its columns: the literal each
    column equals, and the integer range ``[low, high]`` (None: open) some are bound to."""

    shard: str
    equal: dict[int, Any] = field(default_factory=dict)
    ranges: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)


FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


def point(plan: P.Plan) -> Fixed | None:
    """What a filter right above ``plan``'s only input fixes of it; None if the plan reads
    that input otherwise, or nothing is fixed."""
    gets: list[tuple[P.Get, P.Plan | None]] = []

    def walk(node: P.Plan, parent: P.Plan | None) -> None:
        if isinstance(node, P.Get):
            gets.append((node, parent))
        for child in node.inputs():
            walk(child, node)

    walk(plan, None)
    if len(gets) != 1 or not isinstance(gets[0][1], P.Filter):
        return None
    fixed = Fixed(gets[0][0].name)
    for predicate in gets[0][1].predicates:
        if not isinstance(predicate, X.Cmp) or predicate.op not in FLIP:
            continue
        for col, lit, op in (
            (predicate.a, predicate.b, predicate.op),
            (predicate.b, predicate.a, FLIP[predicate.op]),
        ):
            if not (isinstance(col, X.Col) and isinstance(lit, X.Lit) and _same(col, lit)):
                continue
            if op == "=":
                fixed.equal[col.index] = lit.value
            elif type(lit.value) is int:
                low, high = fixed.ranges.get(col.index, (None, None))
                v = lit.value
                if op in (">", ">="):
                    bound = v + 1 if op == ">" else v
                    low = bound if low is None else max(low, bound)
                else:
                    bound = v - 1 if op == "<" else v
                    high = bound if high is None else min(high, bound)
                fixed.ranges[col.index] = (low, high)
    return fixed if fixed.equal or fixed.ranges else None


def narrowed(updates: pa.Table, fixed: Fixed) -> pa.Table:
    """The updates of an update frame (of ``fixed``'s shard) whose rows the filter can pass,
    picked by Arrow kernels, so a scan without an index turns into rows only those it finds
    (the filter itself still runs on them); all of them where a kernel cannot tell (the
    same table, ``updates``). Updates in many chunks (one per write since the shard was last
    summed) are put in one first: Arrow filters a table chunk by chunk, column by column."""
    data = [n for n in updates.column_names if n not in (TIME, DIFF)]
    whole = updates.combine_chunks() if updates.num_columns and _chunks(updates) > 1 else updates
    try:
        keep = None
        for i, value in fixed.equal.items():
            mask = pc.equal(whole.column(data[i]), value)
            keep = mask if keep is None else pc.and_(keep, mask)
        for i, (low, high) in fixed.ranges.items():
            column = whole.column(data[i])
            for bound, compare in ((low, pc.greater_equal), (high, pc.less_equal)):
                if bound is not None:
                    mask = compare(column, bound)
                    keep = mask if keep is None else pc.and_(keep, mask)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return updates  # a literal the column's type cannot hold: the rows decide
    return updates if keep is None else whole.filter(keep)


def _chunks(table: pa.Table) -> int:
    return table.column(0).num_chunks


def any_passes(updates: pa.Table, fixed: Fixed) -> bool:
    """Might an update of ``updates`` pass the filter that fixes ``fixed``'s columns? Told
    on its values in Python (a few rows: cheaper than :func:`narrowed`'s kernels); the
    values are those :func:`_same` lets a dict find, so Python's equality is SQL's."""
    data = [n for n in updates.column_names if n not in (TIME, DIFF)]
    columns = {i: updates.column(data[i]).to_pylist() for i in {*fixed.equal, *fixed.ranges}}
    equal = [(columns[i], v) for i, v in fixed.equal.items()]
    ranges = [(columns[i], low, high) for i, (low, high) in fixed.ranges.items()]
    if equal and not ranges and all(v is not None for _, v in equal):  # compared in C
        return tuple(v for _, v in equal) in zip(*(c for c, _ in equal), strict=True)
    for r in range(updates.num_rows):
        if all(c[r] is not None and c[r] == v for c, v in equal) and all(
            c[r] is not None and (low is None or c[r] >= low) and (high is None or c[r] <= high)
            for c, low, high in ranges
        ):
            return True
    return False


def _same(col: X.Col, lit: X.Lit) -> bool:
    """Is SQL's ``col = lit`` Python's equality of their values (so a dict finds the rows)?"""
    if type(lit.value) is int:
        return col.type.integer and lit.type.integer
    return type(lit.value) is str and col.type == TEXT and lit.type == TEXT


def index_keys(state: CatalogState, shard: str) -> list[tuple[int, ...]]:
    """The keys (column indexes of ``shard``) of the indexes that arrange it: a table's
    indexes and its PRIMARY KEY and UNIQUE constraints (arranged without an index, once a
    read asks), or the index whose own shard it is."""
    item = state.items.get(shard)
    if item is None:
        return []
    names = [c[0] for c in item.columns]
    keys = []
    for index in state.items.values():
        if index.kind == "index" and shard in (index.id, index.options.get("on")):
            key = index.options.get("key") or []
            if key and all(k in names for k in key):
                keys.append(tuple(names.index(k) for k in key))
    return keys + [k for k in constraint_keys(item) if k not in keys]


def constraint_keys(item: Any) -> list[tuple[int, ...]]:
    """The column positions of a table's PRIMARY KEY and UNIQUE constraints."""
    if item.kind != "table":
        return []
    return [tuple(u[1]) for u in item.options.get("unique") or []]
