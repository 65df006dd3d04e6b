"""PRIMARY KEY and UNIQUE checks of a write, reading only the rows that could conflict.

A write's added rows are checked against the table's rows with the same key, as this
transaction leaves the table. Those rows are read by key (a filter fixing every key column,
which the key's arrangement serves: :mod:`~changeflow.adapter.arrangements`) rather than by
reading the table, and each read joins the transaction's reads: a concurrent write of the
same key makes the commit fail (40001), one of another key does not. A write of more than
:data:`KEYS_READ` keys reads the whole table once instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from changeflow.adapter.assign import assign
from changeflow.adapter.constraints import Unique, check_unique, resolve
from changeflow.adapter.rows import counted
from changeflow.compute import expr as X
from changeflow.compute import plan as P

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
        plans = [_by_key(table.plan, u, k) for u, k in wanted]
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
        for frame in txn.writes.get(shard, []):
            for row, c in counted(frame).items():
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


def _by_key(get: P.Plan, u: Unique, key: Row) -> P.Plan:
    """The rows of ``get`` whose columns of ``u`` are ``key``."""
    predicates = []
    for i, value in zip(u.columns, key, strict=True):
        c = get.schema[i]
        predicates.append(X.Cmp("=", X.Col(i, c.type, c.nullable, c.name), X.Lit(value, c.type)))
    return P.Filter(get, tuple(predicates))
