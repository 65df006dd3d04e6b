"""ALTER SEQUENCE and ALTER TABLE inside a transaction, and LOCK TABLE, hold the sequence or
table until the transaction ends, as PostgreSQL's lock does: another session's ``nextval``
or ``setval`` of the sequence, or write to the table, waits (and gives up after :data:`WAIT`
seconds, 55P03), so that nothing it would do meanwhile is lost or handed out again when a
ROLLBACK puts the item back. The transaction's own session goes on. A hold lives in the
process (sessions of one process: the embedded connection, the server); it is released when
the ROLLBACK has put the item back, at the COMMIT, or (should neither come) when the
transaction object is gone."""

from __future__ import annotations

import threading
import time
import weakref
from contextvars import ContextVar
from typing import Any

from changeflow.errors import PlanError

WAIT = 60.0  # seconds a nextval waits for an altering transaction to end
# the session whose statement runs (set with its sequences' context)
SESSION: ContextVar[Any] = ContextVar("sequence_session", default=None)

_cond = threading.Condition()
_waiting = 0  # sessions waiting now
_held: dict[tuple[int, str], tuple[weakref.ref, weakref.ref]] = {}  # (home, id) -> holder


def hold(home: object, seq_id: str) -> None:
    """The running session's transaction holds the sequence ``seq_id`` of ``home`` (its
    catalog) until :func:`release`, or until the transaction object is gone (committed)."""
    session = SESSION.get()
    txn = getattr(session, "txn", None)
    if session is None or txn is None:
        return
    key = (id(home), seq_id)
    with _cond:
        _held[key] = (weakref.ref(session), weakref.ref(txn))
    weakref.finalize(txn, release, home, seq_id, weakref.ref(txn))


def release(home: object, seq_id: str, txn: weakref.ref | None = None) -> None:
    """The hold of ``seq_id`` ends (only ``txn``'s, if given); waiting sessions go on."""
    key = (id(home), seq_id)
    with _cond:
        found = _held.get(key)
        if found is not None and (txn is None or found[1] is txn or found[1]() is None):
            del _held[key]
            _cond.notify_all()


def release_all(txn: object) -> None:
    """Every hold of the transaction ``txn`` ends (at its COMMIT)."""
    with _cond:
        for key in [k for k, (_, held) in _held.items() if held() is txn]:
            del _held[key]
        _cond.notify_all()


def waiting() -> int:
    """How many sessions wait for an altering transaction now."""
    with _cond:
        return _waiting


class Held(Exception):
    """A statement met an item another session's open transaction holds: it waits (outside
    its catalog version) and runs again."""

    def __init__(self, home: object, item_id: str, name: str, kind: str) -> None:
        super().__init__(name)
        self.home, self.item_id, self.name, self.kind = home, item_id, name, kind

    def wait(self) -> None:
        wait(self.home, self.item_id, self.name, self.kind)


def held_elsewhere(home: object, item_id: str) -> bool:
    """Whether another session's open transaction holds ``item_id`` of ``home``."""
    with _cond:
        found = _held.get((id(home), item_id))
    return found is not None and found[1]() is not None and found[0]() is not SESSION.get()


def wait(home: object, seq_id: str, name: str, kind: str = "sequence") -> None:
    """Return once no other session's open transaction holds the item (a sequence, or a
    ``kind``); 55P03 after :data:`WAIT` seconds."""
    with _cond:
        _free((id(home), seq_id), SESSION.get(), name, kind)


def take(home: object, item_id: str, name: str, nowait: bool = False) -> None:
    """Hold the table ``item_id`` for the running session's transaction (LOCK TABLE) once no
    other session's holds it: waiting as :func:`wait` does, or with ``nowait`` 55P03 at once."""
    session = SESSION.get()
    txn = getattr(session, "txn", None)
    if session is None or txn is None:
        return
    with _cond:
        _free((id(home), item_id), session, name, "table", nowait)
        _held[(id(home), item_id)] = (weakref.ref(session), weakref.ref(txn))
    weakref.finalize(txn, release, home, item_id, weakref.ref(txn))


def _free(key: tuple[int, str], me: Any, name: str, kind: str, nowait: bool = False) -> None:
    """Return (holding ``_cond``) once no other session's open transaction holds ``key``."""
    global _waiting
    deadline = time.monotonic() + WAIT
    while True:
        found = _held.get(key)
        if found is None:
            return
        if found[1]() is None:  # the transaction is gone (no reference kept here)
            del _held[key]
            return
        if found[0]() is me:
            return
        if nowait:
            raise PlanError(f'could not obtain lock on relation "{name}"', sqlstate="55P03")
        left = deadline - time.monotonic()
        if left <= 0:
            raise PlanError(
                f'canceling statement due to lock timeout: {kind} "{name}" is altered'
                " or locked by an open transaction",
                sqlstate="55P03",
            )
        _waiting += 1
        try:
            _cond.wait(min(left, 1.0))
        finally:
            _waiting -= 1
