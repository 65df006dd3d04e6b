"""``LOCK [TABLE] [ONLY] name, … [IN mode MODE] [NOWAIT]``, in a transaction block (25P01
outside one, as PostgreSQL). A mode that conflicts with writes (SHARE and stronger; ACCESS
EXCLUSIVE without IN … MODE) holds each table until the transaction ends, as an ALTER TABLE
in a transaction does (:mod:`~changeflow.adapter.sequence_holds`): other sessions' writes to
it, and their LOCK of it, wait for that end (55P03 after a minute), or with NOWAIT fail at
once (55P03). The weaker modes conflict with no write and hold nothing. Reads never wait:
each reads a snapshot, so what ACCESS EXCLUSIVE keeps from a reader here is only the
transaction's own uncommitted writes, which no other session sees anyway. Holds are of this
process's sessions (an embedded connection's, or one server's)."""

from __future__ import annotations

from typing import Any

from changeflow.adapter import sequence_holds as holds
from changeflow.adapter.result import Result
from changeflow.adapter.sql.statements import Statement, names
from changeflow.errors import PlanError

WRITES_WAIT = {"SHARE", "SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE"}
MODES = WRITES_WAIT | {"ACCESS SHARE", "ROW SHARE", "ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE"}


def lock_tables(session: Any, stmt: Statement) -> Result:
    """LOCK TABLE in the session's transaction (see the module docstring)."""
    txn = session.txn
    if txn is None or not txn.explicit:
        raise PlanError("LOCK TABLE can only be used in transaction blocks", sqlstate="25P01")
    mode = " ".join((stmt.args.get("mode") or "ACCESS EXCLUSIVE").upper().split())
    if mode not in MODES:
        raise PlanError(f'syntax error at or near "{mode.split()[0]}"', sqlstate="42601")
    state = session.env.catalog.load()
    tables = []
    for name in names(stmt.args["names"]):
        item = state.find(name)
        if item is None:
            raise PlanError(f'relation "{name}" does not exist', sqlstate="42P01")
        if item.kind != "table":
            raise PlanError(f'"{name}" is not a table', sqlstate="42809")
        tables.append(item)
    if mode in WRITES_WAIT:
        for item in tables:
            holds.take(session.env.catalog, item.id, item.name, bool(stmt.args.get("nowait")))
    return Result("LOCK TABLE")
