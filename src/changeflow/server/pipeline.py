"""The implicit transaction of the extended protocol: as in PostgreSQL, the writes a client
sends up to Sync outside a transaction block (a pipeline; psycopg's ``executemany``) are one
transaction, committed once at Sync; an error rolls back every one of them.

The first write's Execute opens it; Sync commits it (or rolls it back after an error). A read
or any other statement before Sync commits the writes so far first and runs on its own
(changeflow's transactions either read or write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from changeflow.adapter.session import Transaction
from changeflow.adapter.sql.statements import WRITE_KINDS, parse
from changeflow.errors import ChangeflowError
from changeflow.server import commands as C

if TYPE_CHECKING:
    from changeflow.adapter.session import Session

WRITES = WRITE_KINDS
_COMMIT, _ROLLBACK = parse("COMMIT"), parse("ROLLBACK")


def is_write(text: str) -> bool:
    """Whether ``text`` is an INSERT, UPDATE, DELETE or MERGE (False for what does not parse: its
    run gives the error)."""
    text = C.strip(text)
    if text.split(None, 1)[0].upper() not in ("INSERT", "UPDATE", "DELETE", "MERGE", "WITH"):
        return False
    try:
        return parse(text).kind in WRITES
    except ChangeflowError:
        return False


class Pipeline:
    """The implicit transaction of one connection's messages up to Sync (see the module
    docstring)."""

    session: Session | None
    implicit: Transaction | None = None

    def begin_writes(self) -> None:
        """Open the implicit transaction for a write, unless one (or a block) is open."""
        session = self.session
        if session is not None and session.txn is None:
            session.txn = self.implicit = Transaction(explicit=True)

    def end_writes(self) -> None:
        """Commit the implicit transaction, or roll it back if a statement of it failed; a
        failed commit raises its error (nothing of it is written)."""
        txn, self.implicit = self.implicit, None
        session = self.session
        if txn is None or session is None or session.txn is not txn:
            return
        session.run(_ROLLBACK if txn.failed else _COMMIT)
