"""Queries in a transaction block that also writes: PostgreSQL's reads of the transaction's
own writes, and writes after reads, kept serializable.

A query in a transaction block reads at the transaction's read timestamp with the
transaction's own writes to the tables it reads added (:func:`~changeflow.adapter.written.
with_own_writes`), so ``BEGIN; INSERT …; SELECT …`` sees the row. The query is remembered for
the commit by its plan, not its rows: if the transaction writes, the commit checks (as for an
UPDATE's reads, :mod:`~changeflow.adapter.conflicts`) that the plan still gives at the
commit's timestamp what it gave at the read timestamp, else 40001 and nothing is written. A
query of a materialized view is remembered by the tables under it, any change of
which since the read is a conflict. A view over a table the transaction has written does not
hold the uncommitted rows: reading it then is refused (0A000) rather than answered without
them. DDL that reads a table's rows (ALTER TABLE's checks of a new constraint) reads them
with the writes of the transaction it runs in (:func:`table_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from changeflow.adapter.written import with_own_writes
from changeflow.compute import plan as P
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.catalog import CatalogState, Item
    from changeflow.adapter.environment import Environment
    from changeflow.adapter.relations import Finishing
    from changeflow.adapter.session import Transaction

Counted = dict[tuple[Any, ...], int]
Evaluate = Callable[[P.Plan, int, "Finishing | None"], Counted]
# the transaction a DDL statement runs in, whose writes its reads of tables see
RUNNING: ContextVar[Transaction | None] = ContextVar("running_transaction", default=None)


def transaction_read(
    env: Environment,
    state: CatalogState,
    txn: Transaction,
    plan: P.Plan,
    ts: int,
    shown: Finishing | None,
    evaluate: Evaluate,
) -> Counted:
    """``plan``'s rows at ``ts`` as the transaction block ``txn`` sees them (``evaluate``
    reads the committed rows, with ``shown`` the query's ORDER BY and LIMIT when it may stop
    early); the read is remembered for the commit's check."""
    shards = plan.collections()
    by_shard = {i.shard: i for i in state.items.values() if i.shard in shards}
    derived = {s: i for s, i in by_shard.items() if i.kind != "table"}
    under = {s: _tables_under(state, i) for s, i in derived.items()}
    for shard, tables in under.items():
        touched = sorted(t.name for t in tables if txn.writes.get(t.shard or ""))
        if touched:
            raise PlanError(
                f'cannot read {derived[shard].kind} "{derived[shard].name}" in a transaction '
                f'that has written "{touched[0]}", which it reads: COMMIT first, or read the '
                "table itself",
                sqlstate="0A000",
            )
    own = any(txn.writes.get(s) for s in shards)
    rows = evaluate(plan, ts, None if own else shown)
    if own:
        rows = with_own_writes(env, plan, ts, rows, txn.written, txn.writes)
    if not derived:
        _remember(txn, plan, None)  # its rows found again at the commit if needed
        txn.reads |= shards
    else:  # a view's tables: any change since the read is a conflict
        tables = {t.shard: t for ts_ in under.values() for t in ts_}
        tables.update({s: i for s, i in by_shard.items() if i.kind == "table"})
        for shard, table in tables.items():
            assert shard is not None
            _remember(txn, env.plans.relation(state, table.name).plan, {})
            txn.reads.add(shard)
    return rows


def _remember(txn: Transaction, plan: P.Plan, before: Counted | None) -> None:
    """Keep ``plan`` for the commit's check, once however often the transaction runs it."""
    if id(plan) not in txn.queried:
        txn.queried.add(id(plan))
        txn.read_rows.append((plan, before))


def _tables_under(state: CatalogState, item: Item) -> list[Item]:
    """The tables ``item`` reads, directly or through other items."""
    found: dict[str, Item] = {}
    pending = list(item.depends_on)
    while pending:
        dep = state.items.get(pending.pop())
        if dep is None or dep.id in found:
            continue
        found[dep.id] = dep
        pending += dep.depends_on
    return [i for i in found.values() if i.kind == "table" and i.shard]


@contextmanager
def running_in(txn: Transaction) -> Iterator[None]:
    """DDL run within ``txn``: its reads of tables (:func:`table_rows`) see ``txn``'s writes."""
    token = RUNNING.set(txn)
    try:
        yield
    finally:
        RUNNING.reset(token)


def table_rows(env: Environment, item: Item, ts: int | None = None) -> Counted:
    """Table ``item``'s rows at ``ts`` (default: now), with the writes of the transaction
    the statement runs in (:func:`running_in`)."""
    from changeflow.adapter.resolver import CatalogResolver

    plan = CatalogResolver(env.catalog.load()).plan(item)
    if ts is None:
        ts = env.read_ts(item.timeline, {item.id})
    rows = env.evaluate(plan, ts)
    txn = RUNNING.get()
    if txn is not None and txn.writes.get(item.id):
        rows = with_own_writes(env, plan, ts, rows, txn.written, txn.writes)
    return rows
