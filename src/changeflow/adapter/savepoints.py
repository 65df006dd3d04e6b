"""Savepoints of an explicit transaction, as PostgreSQL's: ``SAVEPOINT name`` marks what the
transaction has done so far, ``ROLLBACK TO [SAVEPOINT] name`` undoes what it did since (its
writes, DDL, deferred checks and SET CONSTRAINTS; a failed transaction goes on) and keeps the
savepoint, ``RELEASE [SAVEPOINT] name`` forgets it and every later one. A name may be used
again: the latest savepoint of that name is meant. Reads stay recorded (their conflicts are
checked at COMMIT as before), as rows read before a rollback may still have decided writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from changeflow.adapter import txn_ddl
from changeflow.adapter.result import Result
from changeflow.adapter.sql.statements import Statement
from changeflow.errors import PlanError

SAVEPOINT_KINDS = ("savepoint", "release", "rollback_to")
ENDS = ("rollback", "commit", "rollback_to")  # what a failed transaction still runs
_WORDS = {
    "savepoint": "SAVEPOINT",
    "release": "RELEASE SAVEPOINT",
    "rollback_to": "ROLLBACK TO SAVEPOINT",
}


@dataclass(frozen=True)
class Mark:
    """What a transaction had done when a savepoint was set."""

    name: str
    writes: dict[str, int]  # shard -> its update frames then
    created: int
    undo: int
    dropped: int
    deferred: int
    constraint_modes: dict[str, bool]


def run_savepoint(session: Any, stmt: Statement) -> Result:
    """Run a savepoint statement of ``session``."""
    txn, kind = session.txn, stmt.kind
    if txn is None or not txn.explicit:
        raise PlanError(f"{_WORDS[kind]} can only be used in transaction blocks", sqlstate="25P01")
    name = _name(stmt.args["name"])
    if kind == "savepoint":
        txn.savepoints.append(_mark(txn, name))
        return Result("SAVEPOINT")
    at = next(
        (i for i in reversed(range(len(txn.savepoints))) if txn.savepoints[i].name == name), None
    )
    if at is None:
        raise PlanError(f'savepoint "{name}" does not exist', sqlstate="3B001")
    if kind == "release":
        del txn.savepoints[at:]
        return Result("RELEASE")
    mark = txn.savepoints[at]
    del txn.savepoints[at + 1 :]
    _back_to(txn, mark, lambda s: _serialised(session, s))
    txn.failed = False
    return Result("ROLLBACK")


def _name(text: str) -> str:
    """A savepoint's name as PostgreSQL folds it (quoted: as written)."""
    if text.startswith('"'):
        return text[1:-1].replace('""', '"')
    return text.lower()


def _mark(txn: Any, name: str) -> Mark:
    return Mark(
        name,
        {shard: len(frames) for shard, frames in txn.writes.items()},
        len(txn.created),
        len(txn.undo),
        len(txn.dropped),
        len(txn.deferred),
        dict(txn.constraint_modes),
    )


def _back_to(txn: Any, mark: Mark, ddl_run: Callable[[Statement], Any]) -> None:
    """The transaction as it was at ``mark``: later writes dropped (the rows its later
    statements read counted again from those kept), later DDL undone."""
    for shard in list(txn.writes):
        kept = mark.writes.get(shard, 0)
        if kept:
            del txn.writes[shard][kept:]
        else:
            del txn.writes[shard]
    txn.written.clear()
    txn_ddl.undo_since(txn, mark.undo, mark.created, mark.dropped, ddl_run)
    del txn.deferred[mark.deferred :]
    txn.constraint_modes = dict(mark.constraint_modes)


def _serialised(session: Any, stmt: Statement) -> Any:
    """``stmt`` (a DROP undoing DDL) run now, as a ROLLBACK runs it, outside the transaction
    (in it, a DROP would wait for its COMMIT), one DDL statement at a time."""
    txn, session.txn = session.txn, None
    try:
        with session.env.lock:
            return session._run(stmt)
    finally:
        session.txn = txn
