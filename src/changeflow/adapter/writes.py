"""INSERT, UPDATE, DELETE and MERGE in a session: the statement's plans evaluated at the
transaction's read timestamp (with its own earlier writes), their rows assigned to the table's
columns and checked (NOT NULL, CHECK, PRIMARY KEY and UNIQUE, foreign keys), then buffered as
one update frame for the commit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from changeflow.adapter import sequence_holds as holds
from changeflow.adapter.assign import assign
from changeflow.adapter.catalog import qualified
from changeflow.adapter.checks import enforce_checks
from changeflow.adapter.fk_enforce import enforce_foreign_keys
from changeflow.adapter.keyed import constrain
from changeflow.adapter.privilege_checks import require_write
from changeflow.adapter.resolver import CatalogResolver
from changeflow.adapter.result import Result
from changeflow.adapter.sql.dml import (
    check_not_null,
    plan_delete,
    plan_insert,
    plan_update,
    whole_rows,
)
from changeflow.adapter.sql.merge import plan_merge
from changeflow.adapter.sql.returning import plan_returning
from changeflow.adapter.sql.statements import Statement
from changeflow.adapter.written import with_own_writes
from changeflow.compute import plan as P
from changeflow.compute.types import Schema
from changeflow.errors import EvalError

if TYPE_CHECKING:
    from changeflow.adapter.session import Session, Transaction

Row = tuple[Any, ...]
TAGS = {"insert": "INSERT 0", "update": "UPDATE", "delete": "DELETE", "merge": "MERGE"}


def write(session: Session, stmt: Statement) -> Result:
    """Run one INSERT, UPDATE, DELETE or MERGE in the session's transaction."""
    env, txn = session.env, session._transaction()
    resolver = CatalogResolver(env.catalog.load())
    planned, changes = _planned(session, stmt, resolver)
    read_items = getattr(planned, "reads", frozenset())
    require_write(resolver.state, stmt.kind, stmt.tree, planned.table, read_items)
    table = env.plans.relation(resolver.state, qualified(planned.table))
    shard = table.plan.name
    if holds.held_elsewhere(env.catalog, shard):
        raise holds.Held(env.catalog, shard, table.name, "table")
    reads = set().union(*(p.collections() for p, _ in changes))
    if reads:
        timeline = session._timeline(frozenset({table.timeline, *planned.timelines}), txn)
        ts = txn.read_ts if txn.read_ts is not None else env.read_ts(timeline, reads)
        txn.read_ts = ts
        txn.reads |= reads
    else:
        ts = 0
    read: dict = {}  # the tables' rows, read once for every plan
    counts: list[dict[Row, int]] = []
    for p, _ in changes:
        counted = env.evaluate(p, ts, session.timeout, read) if reads else _constant(p)
        if reads:
            txn.read_rows.append((p, counted))  # what the commit checks is unchanged
            counted = with_own_writes(env, p, ts, counted, txn.written, txn.writes, session.timeout)
        counts.append(counted)
    rows = [
        (row, sign * c)
        for (_, sign), got in zip(changes, counts, strict=True)
        for row, c in got.items()
    ]
    sources = getattr(planned, "sources", None)  # UPDATE … FROM, DELETE … USING
    extras: list[Row] | None = None
    if sources is not None:
        whole = _table_rows(session, txn, table.plan, ts)
        rows, extras = whole_rows(rows, whole, len(table.plan.schema))
    if stmt.kind == "merge" and any(c > 1 for c in counts[0].values()):  # (else once each)
        _once_each(counts[0], _table_rows(session, txn, table.plan, ts))
    item = resolver.state.by_name(table.name)
    shape = env.storage.state(shard).schema
    lengths = item.options.get("lengths") if item else None
    rows = assign(rows, shape, lengths, table.name)
    if table.unique:
        rows = constrain(session, txn, table, planned, rows, (shape, lengths))
    for row, diff in rows:
        if diff > 0:
            check_not_null(row, table.plan.schema, table.name)
    enforce_checks(table, rows)
    if rows:
        frame = env.log.frame(shard, rows, table.name, shape)
        txn.writes.setdefault(shard, []).append(frame)
        enforce_foreign_keys(session, txn, resolver.state, item, rows)  # type: ignore[arg-type]
    count = _count(stmt.kind, rows, counts)
    returning = stmt.returns and plan_returning(stmt.ast, table.name, table.plan.schema, sources)
    session._end(txn)
    tag = f"{TAGS[stmt.kind]} {count}"
    if not returning:
        return Result(tag)
    if extras is not None:  # (rows and extras are in step: fitting and checks keep the order)
        rows = [(row + extra, c) for (row, c), extra in zip(rows, extras, strict=True)]
    written = [(r, c) for r, c in rows if (c < 0) == (stmt.kind == "delete")]
    return Result(tag, returning.columns, returning.rows(written))


def returned_columns(session: Session, stmt: Statement) -> Schema | None:
    """The columns of a write's RETURNING clause (None without one), planned, not run."""
    if not stmt.returns:
        return None
    resolver = CatalogResolver(session.env.catalog.load())
    planned, _ = _planned(session, stmt, resolver)
    relation = resolver.relation(qualified(planned.table))
    sources = getattr(planned, "sources", None)
    returning = plan_returning(stmt.ast, relation.name, relation.plan.schema, sources)
    return returning.columns if returning is not None else None


def _planned(session: Session, stmt: Statement, resolver: CatalogResolver) -> tuple[Any, list]:
    """The statement's plan and its changes: (plan, 1) for rows it adds, (plan, -1) for rows
    it retracts. UPDATE and DELETE are planned once per text and catalog."""
    if stmt.kind == "insert":
        planned = plan_insert(stmt.ast, resolver)  # type: ignore[arg-type]
        return planned, [(planned.rows, 1)]
    if stmt.kind == "merge":
        planned = plan_merge(stmt.ast, resolver)  # type: ignore[arg-type]
        return planned, [(planned.old, -1), (planned.updated, 1), (planned.inserted, 1)]
    make = plan_delete if stmt.kind == "delete" else plan_update
    planned = session.env.plans.plan(stmt, resolver.state, lambda s: make(s.ast, resolver))
    if stmt.kind == "delete":
        return planned, [(planned.rows, -1)]
    return planned, [(planned.old, -1), (planned.new, 1)]


def _count(kind: str, rows: list[tuple[Row, int]], counts: list[dict[Row, int]]) -> int:
    """The rows the statement's tag counts."""
    if kind == "insert":  # ON CONFLICT DO UPDATE retracts what it updates
        return sum(c for _, c in rows if c > 0)
    if kind == "merge":  # updated or deleted, and inserted
        return sum(counts[0].values()) + sum(counts[2].values())
    return sum(abs(c) for _, c in rows) // (2 if kind == "update" else 1)


def _table_rows(session: Session, txn: Transaction, table: P.Plan, ts: int) -> dict[Row, int]:
    """The table's rows as the transaction sees them."""
    rows = session.env.evaluate(table, ts, session.timeout)
    return with_own_writes(session.env, table, ts, rows, txn.written, txn.writes)


def _once_each(changed: dict[Row, int], table: dict[Row, int]) -> None:
    """21000 if MERGE changes a target row more than once (more copies of it retracted than
    the table holds: more than one source row matched it)."""
    if any(c > table.get(row, 0) for row, c in changed.items()):
        raise EvalError(
            "MERGE command cannot affect row a second time",
            sqlstate="21000",
            hint="Ensure that not more than one source row matches any one target row.",
        )


def _constant(plan: P.Plan) -> dict[Row, int]:
    from changeflow.compute.evaluate import evaluate

    return evaluate(plan, {}, 0)
