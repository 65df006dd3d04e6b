"""PostgreSQL's advisory locks: ``pg_advisory_lock(key)``, ``pg_try_advisory_xact_lock_shared(k1,
k2)`` and the rest. A lock is on a number (a bigint, or a pair of integers: a space of its own),
shared or exclusive, taken by a session until it unlocks it or ends, or by its transaction
until that ends (a failed one included); taken twice, it is unlocked twice.

The locks hold across the sessions and processes of one home: each is one byte of an open file
description lock (Linux's ``F_OFD_SETLK``) on a file under the home, which the kernel lets go
when the session closes the file or its process dies. A session waiting for one polls, so that
a cancel request (57014) or ``lock_timeout`` (55P03) ends the wait, and it finds a deadlock
among the sessions of its process after ``deadlock_timeout`` (40P01), as PostgreSQL does."""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
import weakref
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from changeflow.adapter import sequence_holds as holds
from changeflow.adapter.result import Result
from changeflow.compute import expr as X
from changeflow.compute.expr import _typed
from changeflow.compute.types import BOOL, INT2, INT4, INT8, NULLTYPE, VOID
from changeflow.compute.volatile import Volatile
from changeflow.errors import PlanError

# the cancel request of the connection whose statement runs (a server's client sets it)
CANCEL: ContextVar[threading.Event | None] = ContextVar("advisory_cancel", default=None)

T = TypeVar("T")
Key = tuple[int, int]  # (space: 1 a bigint's, 2 a pair's; the number as an unsigned 64 bits)
_LOW = 2**63 - 1  # a file's byte offsets: the number's low 63 bits (its top bit picks the file)
_FLOCK = "hhqqi4x"  # struct flock: type, whence, start, length, pid (0 for an OFD lock)

# name -> (what it does, shared, for the transaction); "try" answers whether it took the lock
FUNCTIONS = {
    f"pg_{attempt}advisory_{xact}lock{shared}": (
        "try" if attempt else "lock",
        bool(shared),
        bool(xact),
    )
    for attempt in ("", "try_")
    for xact in ("", "xact_")
    for shared in ("", "_shared")
} | {
    "pg_advisory_unlock": ("unlock", False, False),
    "pg_advisory_unlock_shared": ("unlock", True, False),
    "pg_advisory_unlock_all": ("unlock_all", False, False),
}

_registry_lock = threading.Lock()  # the waits-for graph below, read and changed under it
_waiting: dict[int, tuple[AdvisoryLocks, Key, bool]] = {}  # id -> (locks, key, shared) waited
_all: weakref.WeakSet[AdvisoryLocks] = weakref.WeakSet()


class AdvisoryLocks:
    """The advisory locks of one session: how often each is taken, and the file locks."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: dict[str, int] = {}  # file name -> the session's descriptor of it
        self.counts: Counter[tuple[Key, bool, bool]] = Counter()  # (key, shared, xact) -> n
        self.held: dict[Key, int] = {}  # key -> F_RDLCK or F_WRLCK, as the file lock is
        self.warnings: list[tuple[str, str, str]] = []  # for the statement's result
        with _registry_lock:
            _all.add(self)
        weakref.finalize(self, _close_all, self.files)  # a session dropped unclosed lets go too

    def take(self, key: Key, shared: bool, xact: bool, wait: bool, settings: dict) -> bool:
        """Take the lock (waiting for it with ``wait``); whether it was taken."""
        self.counts[(key, shared, xact)] += 1
        if self._set(key):
            return True
        if wait:
            try:
                self._wait(key, shared, settings)
                return True
            except BaseException:
                self._drop(key, shared, xact)
                raise
        self._drop(key, shared, xact)
        return False

    def unlock(self, key: Key, shared: bool) -> bool:
        """Let go of one session-level taking of the lock; False (and a warning) if none."""
        if self.counts[(key, shared, False)] <= 0:
            kind = "ShareLock" if shared else "ExclusiveLock"
            self.warnings.append(("01000", f"you don't own a lock of type {kind}", ""))
            return False
        self._drop(key, shared, False)
        return True

    def unlock_all(self) -> None:
        """Let go of every session-level lock (``pg_advisory_unlock_all``, ``DISCARD ALL``)."""
        self._release([k for k in self.counts if not k[2]])

    def end_transaction(self) -> None:
        """The transaction ended (committed, rolled back or failed): its locks are let go."""
        self._release([k for k in self.counts if k[2]])

    def close(self) -> None:
        """The session ended: every lock is let go with its files."""
        _close_all(self.files)
        self.counts.clear()
        self.held.clear()

    def _release(self, taken: list[tuple[Key, bool, bool]]) -> None:
        for entry in taken:
            del self.counts[entry]
        for key in {entry[0] for entry in taken}:
            self._set(key)  # an unlock or a downgrade: never waits

    def _drop(self, key: Key, shared: bool, xact: bool) -> None:
        self.counts[(key, shared, xact)] -= 1
        if self.counts[(key, shared, xact)] <= 0:
            del self.counts[(key, shared, xact)]
        self._set(key)

    def _wanted(self, key: Key) -> int:
        modes = [shared for (k, shared, _), n in self.counts.items() if k == key and n > 0]
        if not modes:
            return fcntl.F_UNLCK
        return fcntl.F_RDLCK if all(modes) else fcntl.F_WRLCK

    def _set(self, key: Key) -> bool:
        """Make the file lock of ``key`` what its counts want, without waiting; whether it
        is (False: another session holds it in a mode that conflicts)."""
        want = self._wanted(key)
        if self.held.get(key, fcntl.F_UNLCK) == want:
            return True
        space, number = key
        name = f"{space}-{number >> 63}"
        fd = self.files.get(name)
        if fd is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self.files[name] = fd
        try:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, want, 0, number & _LOW, 1, 0))
        except (BlockingIOError, PermissionError):  # EAGAIN, EACCES: held elsewhere
            return False
        if want == fcntl.F_UNLCK:
            self.held.pop(key, None)
        else:
            self.held[key] = want
        return True

    def _wait(self, key: Key, shared: bool, settings: dict) -> None:
        timeout = float(settings.get("lock_timeout", "0")) / 1000
        deadlock_after = float(settings.get("deadlock_timeout", "1000")) / 1000
        started = time.monotonic()
        cancel, pause, checked = CANCEL.get(), 0.001, False
        with _registry_lock:
            _waiting[id(self)] = (self, key, shared)
        try:
            while not self._set(key):
                waited = time.monotonic() - started
                if cancel is not None and cancel.is_set():
                    raise PlanError("canceling statement due to user request", sqlstate="57014")
                if timeout and waited >= timeout:
                    raise PlanError("canceling statement due to lock timeout", sqlstate="55P03")
                if not checked and waited >= deadlock_after:
                    checked = True
                    _check_deadlock(self)
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
        finally:
            with _registry_lock:
                _waiting.pop(id(self), None)


def _close_all(files: dict[str, int]) -> None:
    for fd in files.values():
        os.close(fd)
    files.clear()


def _blocks(holder: AdvisoryLocks, key: Key, shared: bool) -> bool:
    """Does ``holder`` hold ``key`` in a mode that a taking of it (``shared`` or not) waits
    for?"""
    mode = holder.held.get(key)
    return mode is not None and (mode == fcntl.F_WRLCK or not shared)


def _check_deadlock(me: AdvisoryLocks) -> None:
    """40P01 if ``me`` waits, through the sessions of this process, for itself (a session's
    own lock never blocks it: a shared lock it upgrades)."""
    with _registry_lock:
        todo, seen = [_waiting[id(me)]], set()
        while todo:
            waiter, key, shared = todo.pop()
            for holder in list(_all):
                if holder is waiter or not _blocks(holder, key, shared):
                    continue
                if holder is me:
                    del _waiting[id(me)]
                    raise PlanError(
                        "deadlock detected",
                        sqlstate="40P01",
                        detail="Each waits for an advisory lock another of them holds.",
                    )
                if id(holder) not in seen and id(holder) in _waiting:
                    seen.add(id(holder))
                    todo.append(_waiting[id(holder)])


def session_locks(session: Any) -> AdvisoryLocks:
    """The advisory locks of ``session`` (made on first use)."""
    found = session.__dict__.get("advisory_locks")
    if found is None:
        found = AdvisoryLocks(session.env.config.home / "advisory_locks")
        session.__dict__["advisory_locks"] = found
    return found


def statement_ended(session: Any, result: T) -> T:
    """After each statement: a transaction's locks go when no transaction is open any more (or
    it failed); ``result`` (a Result) with the warnings the statement's unlocks gave."""
    locks: AdvisoryLocks | None = session.__dict__.get("advisory_locks")
    if locks is None:
        return result
    if session.txn is None or session.txn.failed:
        locks.end_transaction()
    heard, locks.warnings = locks.warnings, []
    if heard and isinstance(result, Result):
        return replace(result, notices=[*result.notices, *heard])  # type: ignore[return-value]
    return result


def session_closed(session: Any) -> None:
    locks: AdvisoryLocks | None = session.__dict__.pop("advisory_locks", None)
    if locks is not None:
        locks.close()


@dataclass(frozen=True)
class AdvisoryCall(Volatile):
    """A call of one of :data:`FUNCTIONS`, run on the session's locks at each evaluation."""

    name: str = ""
    args: tuple[X.Expr, ...] = ()

    def __post_init__(self) -> None:
        what = FUNCTIONS[self.name][0]
        _typed(self, BOOL if what in ("try", "unlock") else VOID, True)

    def children(self) -> tuple[X.Expr, ...]:
        return self.args

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        from changeflow.adapter.catalog import SESSION_SETTINGS

        values = [a.eval(row, now) for a in self.args]
        if None in values:
            return None  # strict, as PostgreSQL's
        session = holds.SESSION.get()
        if session is None:
            raise PlanError("advisory locks are taken through a session", sqlstate="0A000")
        locks, (what, shared, xact) = session_locks(session), FUNCTIONS[self.name]
        if what == "unlock_all":
            locks.unlock_all()
            return ""
        if len(values) == 1:
            key = (1, values[0] % 2**64)
        else:
            key = (2, (values[0] % 2**32) << 32 | values[1] % 2**32)
        if what == "unlock":
            return locks.unlock(key, shared)
        settings = SESSION_SETTINGS.get() or {}
        taken = locks.take(key, shared, xact, wait=what == "lock", settings=settings)
        return taken if what == "try" else ""

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(a) for a in self.args)})"


def advisory_call(name: str, args: list[X.Expr]) -> X.Expr:
    """The planned call ``name(args)``: a bigint, or two integers (42883 otherwise)."""
    kinds = [a.type for a in args]
    one = len(args) == 1 and kinds[0] in (INT2, INT4, INT8, NULLTYPE)
    two = len(args) == 2 and all(k in (INT2, INT4, NULLTYPE) for k in kinds)
    if FUNCTIONS[name][0] == "unlock_all" and not args:
        return AdvisoryCall(name, ())
    if FUNCTIONS[name][0] == "unlock_all" or not (one or two):
        shown = ", ".join(str(k) for k in kinds)
        raise PlanError(
            f"function {name}({shown}) does not exist",
            sqlstate="42883",
            hint="No function matches the given name and argument types. "
            "You might need to add explicit type casts.",
        )
    return AdvisoryCall(name, tuple(args))
