"""Data-modifying statements in WITH, as PostgreSQL runs them: ``WITH moved AS (DELETE FROM
a WHERE … RETURNING *) INSERT INTO b SELECT * FROM moved``. Each INSERT, UPDATE, DELETE or
MERGE in WITH runs once, in order, before the main statement (a SELECT or another write),
and every part reads the tables as the statement found them: no part sees another's writes,
only the rows each one's RETURNING gave, read by its WITH name. All the parts' writes commit
together, or none; keys stay unique across them. Two parts that update or delete from one
table are refused with 0A000 (PostgreSQL leaves which change wins undefined, and applies only
one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
from sqlglot import exp

from changeflow.adapter import settings as parameters
from changeflow.adapter.catalog import qualified
from changeflow.adapter.keyed import constrain
from changeflow.adapter.result import Result
from changeflow.adapter.rows import counted
from changeflow.adapter.sql.dialect import sql_text
from changeflow.adapter.sql.dml_with import DML
from changeflow.adapter.sql.query import WRITTEN
from changeflow.adapter.sql.rows import Output
from changeflow.adapter.sql.scope import ident, table_name, unsupported
from changeflow.adapter.sql.statements import Statement
from changeflow.adapter.writes import returned_columns, write
from changeflow.compute import plan as P
from changeflow.compute.pads import held_rows
from changeflow.compute.types import Schema
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.session import Session, Transaction

T = TypeVar("T")


def run_with_writes(session: Session, stmt: Statement) -> Result:
    """Run a statement whose WITH has data-modifying statements (see the module docstring)."""
    parts, main = _parts(stmt)
    targets = _targets([p for _, p in parts] + [main])
    txn = session._transaction()
    implicit, txn.explicit = not txn.explicit, True  # one transaction for every part
    start = {shard: len(frames) for shard, frames in txn.writes.items()}
    returned: dict[str, Output] = {}
    try:
        for name, part in parts:
            parameters.check_writable(session, part.kind, part.text)
            got = _alone(txn, start, lambda p=part: _with(returned, lambda: write(session, p)))
            if got.columns:  # (char(n) values held unpadded, as a table's are)
                rows = tuple((row, 1) for row in held_rows(got.rows, got.columns))
                returned[name] = Output(
                    P.Constant(rows, got.columns), [c.name for c in got.columns]
                )
        parameters.check_writable(session, main.kind, main.text)
        result = _alone(txn, start, lambda: _with(returned, lambda: _main(session, main)))
        for name in {n for n in targets if targets.count(n) > 1}:
            _unique_together(session, txn, start, name)
    finally:
        txn.explicit = not implicit
    session._end(txn)
    return result


def columns(session: Session, stmt: Statement) -> Schema | None:
    """The columns the statement returns, planned, not run."""
    parts, main = _parts(stmt)
    returned: dict[str, Output] = {}
    for name, part in parts:
        shown = returned_columns(session, part) if part.returns else None
        if shown:
            returned[name] = Output(P.Constant((), shown), [c.name for c in shown])
    if main.kind != "select":
        return _with(returned, lambda: returned_columns(session, main))
    return _with(returned, lambda: session.describe(main))


def _parts(stmt: Statement) -> tuple[list[tuple[str, Statement]], Statement]:
    """The data-modifying WITH queries (by name) and the main statement with the others."""
    tree = stmt.ast.copy()  # type: ignore[union-attr]
    clause = tree.args["with_"]
    parts, kept = [], []
    for cte in clause.expressions:
        if isinstance(cte.this, DML):
            if cte.args.get("alias") is not None and cte.args["alias"].columns:
                raise unsupported("a column list on a data-modifying WITH query", cte)
            body = cte.this
            parts.append((ident(cte.alias), _statement(body)))
        else:
            kept.append(cte)
    if kept:
        clause.set("expressions", kept)
    else:
        tree.set("with_", None)
    return parts, _statement(tree)


def _statement(tree: exp.Expression) -> Statement:
    kind = "select" if isinstance(tree, exp.Query) else type(tree).__name__.lower()
    return Statement(kind, sql_text(tree), tree)


def _targets(statements: list[Statement]) -> list[str]:
    """The tables the parts write, one a part; 0A000 where two parts update or delete from
    one table."""
    targets, changed = [], set()
    for s in statements:
        target = s.tree.this if s.kind != "select" else None  # type: ignore[union-attr]
        target = target.this if isinstance(target, exp.Schema) else target
        if not isinstance(target, exp.Table):
            continue
        name = qualified(table_name(target))
        if s.kind != "insert" and name in changed:
            raise PlanError(
                f'table "{target.name}" is updated or deleted from by more than one part of the '
                "statement: which change wins is not defined",
                sqlstate="0A000",
                hint="Change the table in one part, or in separate statements.",
            )
        changed |= {name} if s.kind != "insert" else set()
        targets.append(name)
    return targets


def _unique_together(session: Session, txn: Transaction, start: dict[str, int], name: str) -> None:
    """PRIMARY KEY and UNIQUE (23505) over what every part wrote into table ``name`` (each
    part checked its own rows against the table as the statement found it)."""
    table = session.env.plans.relation(session.env.catalog.load(), name)
    shard = table.plan.name  # type: ignore[attr-defined]
    mine = txn.writes.get(shard, [])[start.get(shard, 0) :]
    if not table.unique or not mine:
        return
    rows = list(counted(pa.concat_tables(mine)).items())
    _alone(txn, start, lambda: constrain(session, txn, table, None, rows, ()))


def _main(session: Session, main: Statement) -> Result:
    """The main statement (planned afresh: its plan holds the rows the parts returned)."""
    if main.kind != "select":
        return write(session, main)
    return session._query(main)


def _with(returned: dict[str, Output], run: Callable[[], T]) -> T:
    token = WRITTEN.set(returned)
    try:
        return run()
    finally:
        WRITTEN.reset(token)


def _alone(txn: Transaction, start: dict[str, int], run: Callable[[], T]) -> T:
    """``run()`` reading the transaction's writes as they were at ``start`` (the statement's
    other parts' are set aside meanwhile); what it writes is kept with theirs."""
    aside = {shard: frames[start.get(shard, 0) :] for shard, frames in txn.writes.items()}
    for shard in aside:
        del txn.writes[shard][start.get(shard, 0) :]
    txn.written.clear()
    try:
        return run()
    finally:
        for shard, frames in aside.items():
            txn.writes.setdefault(shard, []).extend(frames)
        txn.written.clear()
