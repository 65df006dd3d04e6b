"""PRIMARY KEY and UNIQUE checks of a write, reading only the rows that could conflict.

A write's added rows are checked against the table's rows with the same key, as this
transaction leaves the table. Those rows are read by key (a filter fixing every key column,
which the key's arrangement serves: :mod:`~changeflow.adapter.arrangements`) rather than by
reading the table, and each read joins the transaction's reads: a concurrent write of the
same key makes the commit fail (40001), one of another key does not. A write of more than
:data:`KEYS_READ` keys reads the whole table once instead; rows added as Arrow columns (COPY,
collected prepared INSERTs) are then checked on columns (:func:`constrain_frame`): the added
keys grouped for duplicates among themselves, then joined with the live keys of the table.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.adapter.assign import assign
from changeflow.adapter.constraints import Unique, check_unique, duplicate, resolve
from changeflow.adapter.rows import counted
from changeflow.adapter.written import written
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.updates import DIFF

if TYPE_CHECKING:
    from changeflow.adapter.session import Session, Transaction

KEYS_READ = 64
Row = tuple[Any, ...]


def constrain(
    session: Session, txn: Transaction, table: Any, planned: Any, rows: list, fit: tuple
) -> list[tuple[Row, int]]:
    """PRIMARY KEY and UNIQUE: ON CONFLICT resolved, then every key checked (23505),
    against the table as this transaction leaves it (see the module docstring)."""
    shard = table.plan.name
    timeline = session._timeline(frozenset({table.timeline}), txn)
    if txn.read_ts is None:
        txn.read_ts = session.env.read_ts(timeline, {shard})
    txn.reads.add(shard)
    unique = list(table.unique)
    seen: dict[Row, int] = {}
    done: set[tuple[Unique, Row] | None] = set()

    def read(changes: list[tuple[Row, int]]) -> dict[Row, int]:
        """The table's rows (at the read timestamp, then with this transaction's writes)
        whose keys are those of ``changes``' added rows."""
        wanted = {(u, k) for u in unique for r, d in changes if d > 0 and (k := u.key(r))}
        wanted -= done
        plans = [rows_with_key(table.plan, u, k) for u, k in wanted]
        if None in done or not wanted:
            plans = []
        elif len(wanted | done) > KEYS_READ:
            plans, wanted = [table.plan], {None}  # type: ignore[assignment]
        for plan in plans:
            got = session.env.evaluate(plan, txn.read_ts, session.timeout)  # type: ignore[arg-type]
            txn.read_rows.append((plan, got))  # so a write of these keys since is a conflict
            seen.update(got)
        done.update(wanted)
        before = dict(seen)
        mine = written(txn.written, txn.writes, shard, tuple(unique))
        for row, c in (mine.rows if None in done else mine.with_keys(done)).items():  # type: ignore[arg-type]
            before[row] = before.get(row, 0) + c
        return before

    before = read(rows)
    conflict = getattr(planned, "conflict", None)
    if conflict is not None:
        rows = assign(resolve(conflict, unique, before, rows), *fit, table.name)
        before = read(rows)  # the keys DO UPDATE gave rows too
    names = [c.name for c in table.plan.schema]
    check_unique(unique, before, rows, table.name, names)
    return rows


def rows_with_key(get: P.Plan, u: Unique, key: Row) -> P.Plan:
    """The rows of ``get`` whose columns of ``u`` are ``key``."""
    predicates = []
    for i, value in zip(u.columns, key, strict=True):
        c = get.schema[i]
        predicates.append(X.Cmp("=", X.Col(i, c.type, c.nullable, c.name), X.Lit(value, c.type)))
    return P.Filter(get, tuple(predicates))


def constrain_frame(session: Session, txn: Transaction, table: Any, frame: pa.Table) -> bool:
    """PRIMARY KEY and UNIQUE of an update frame of added rows, checked on its columns
    (23505) against the table as this transaction leaves it; False (nothing checked) for a
    frame of at most :data:`KEYS_READ` rows, or keys Arrow cannot compare as the rows do
    (floats: -0.0 and NaN; nested values): :func:`constrain` then."""
    keys = [[frame.column_names[i] for i in u.columns] for u in table.unique]
    if frame.num_rows <= KEYS_READ or not all(_comparable(frame, k) for k in keys):
        return False
    if any(u.where is not None for u in table.unique):  # a partial index's rows: by rows
        return False
    env, shard = session.env, table.plan.name
    if txn.read_ts is None:
        timeline = session._timeline(frozenset({table.timeline}), txn)
        txn.read_ts = env.read_ts(timeline, {shard})
    views = env.log.view({shard}, txn.read_ts)
    if views is None:
        env.make_readable({shard}, txn.read_ts, time.monotonic() + session.timeout)
    parts = [env.updates_until(shard, txn.read_ts, views), *txn.writes.get(shard, [])]
    txn.reads.add(shard)
    txn.read_rows.append((table.plan, {}))  # a Get is linear: its check reads changes only
    names = [c.name for c in table.plan.schema]
    for u, key in zip(table.unique, keys, strict=True):
        try:
            found = _duplicated(frame, parts, key)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # types it cannot group, join
            return False
        if found is not None:
            raise duplicate(u, found, table.name, names)
    return True


def _duplicated(frame: pa.Table, parts: list[pa.Table], key: list[str]) -> Row | None:
    """A ``key`` of ``frame``'s rows that is there twice or among the live rows of the update
    frames ``parts`` (the one first in ``frame``); None if there is none. A key with a NULL
    is never a duplicate."""
    at = "__row"
    added = frame.select(key).append_column(at, pa.array(range(frame.num_rows), pa.int64()))
    added = added.drop_null()
    counts = added.group_by(key).aggregate([([], "count_all"), (at, "min")])
    live = pa.concat_tables([p.select([*key, DIFF]) for p in parts])
    live = live.group_by(key).aggregate([(DIFF, "sum")]).drop_null()
    live = live.filter(pc.greater(live.column(f"{DIFF}_sum"), 0))
    hits = counts.join(live, key, join_type="left outer")
    hits = hits.filter(
        pc.or_(pc.greater(hits.column("count_all"), 1), pc.is_valid(hits.column(f"{DIFF}_sum")))
    )
    if not hits.num_rows:
        return None
    first = pc.index(hits.column(f"{at}_min"), pc.min(hits.column(f"{at}_min"))).as_py()
    one = hits.select(key).slice(first, 1)
    return next(iter(counted(one.append_column(DIFF, pa.array([1], pa.int64())))))


def _comparable(frame: pa.Table, key: list[str]) -> bool:
    """Whether Arrow's hash grouping tells ``key``'s values apart as the rows do."""
    types = [frame.schema.field(n).type for n in key]
    return not any(pa.types.is_floating(t) or pa.types.is_nested(t) for t in types)
