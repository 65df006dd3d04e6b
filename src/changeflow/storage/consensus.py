"""Consensus: a linearizable map from keys to versioned values, changed by compare-and-set.

Every change of a shard is one :meth:`Consensus.compare_and_set` of its next version; it is
durable when the call returns. Two implementations with one contract: SQLite (the embedded
default, several processes on one machine) and PostgreSQL (several processes or machines).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from changeflow.errors import ConsensusUnavailable, InvalidInput, StoreMismatch

SQLITE_TABLE = (
    "CREATE TABLE consensus (key TEXT NOT NULL, seqno INTEGER NOT NULL, "
    "data BLOB NOT NULL, PRIMARY KEY (key, seqno)) WITHOUT ROWID"
)
SQLITE_COLUMNS = ["key", "seqno", "data"]
WAL_INDEX_HEADER = 96  # the two copies of the WAL-index header that open the -shm file
SYNC_ENV = "CHANGEFLOW_SQLITE_SYNC"
SYNC_LEVELS = ("full", "normal")
"""How a SQLite consensus's commits reach the disk (``PRAGMA synchronous``): ``full``, the
default, syncs the write-ahead log at every commit (durable against a power loss when the
call returns); ``normal`` syncs it only at checkpoints: a commit survives the process's
death (SIGKILL) at once, an operating system crash or power loss only once checkpointed, as
PostgreSQL with ``synchronous_commit = off`` (several milliseconds a commit on a disk whose
sync is that slow, to a few microseconds)."""
T = TypeVar("T")


@dataclass(frozen=True)
class VersionedData:
    """One version of a key's value: sequence numbers start at 1 and grow by one."""

    seqno: int
    data: bytes


class Consensus(ABC):
    """``head``, ``compare_and_set``, ``scan`` and ``truncate`` over versioned keys."""

    location: str  # where it is, for messages (no password)

    @abstractmethod
    def head(self, key: str, known: int | None = None) -> VersionedData | None:
        """The latest version of ``key``, or None if it was never written; if its seqno is
        ``known``, its data is left out (empty): the caller has it."""

    @abstractmethod
    def compare_and_set(self, key: str, expected: int | None, new: VersionedData) -> bool:
        """Write ``new`` iff the head's seqno is ``expected`` (None: no version yet).

        ``new.seqno`` must be ``expected + 1`` (1 for a new key). Returns whether it was written.
        """

    @abstractmethod
    def scan(self, key: str, from_seqno: int = 0, limit: int = 1000) -> list[VersionedData]:
        """The retained versions of ``key`` with seqno >= ``from_seqno``, oldest first."""

    @abstractmethod
    def truncate(self, key: str, seqno: int) -> int:
        """Delete the versions of ``key`` below ``seqno`` (never the head); return how many."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""

    def truncate_later(self, key: str, seqno: int) -> None:
        """:meth:`truncate`, by a thread of its own (:mod:`~changeflow.storage.tidy`)."""
        from changeflow.storage.tidy import Tidier

        with _TIDIERS_LOCK:
            tidier = self.__dict__.get("_tidier")
            if tidier is None:
                tidier = self.__dict__["_tidier"] = Tidier(self)
        tidier.truncate(key, seqno)

    def _stop_tidier(self) -> None:
        """Finish the truncations asked for (on :meth:`close`)."""
        with _TIDIERS_LOCK:
            tidier = self.__dict__.pop("_tidier", None)
        if tidier is not None:
            tidier.close()

    def release_thread(self) -> None:  # noqa: B027 — nothing to release by default
        """Release the calling thread's connection, if it has one of its own."""

    def present(self) -> bool:
        """Is the store this handle opened still there (a file not deleted underneath)?"""
        return True

    @staticmethod
    def _check_next(expected: int | None, new: VersionedData) -> None:
        if new.seqno != (expected or 0) + 1:
            raise InvalidInput(
                f"the next seqno after {expected} is {(expected or 0) + 1}, not {new.seqno}"
            )


_TIDIERS_LOCK = threading.Lock()


def sync_level() -> str:
    """The SQLite consensus's :data:`SYNC_LEVELS` level, from :data:`SYNC_ENV`."""
    level = os.environ.get(SYNC_ENV, "full").strip().lower() or "full"
    if level not in SYNC_LEVELS:
        raise InvalidInput(f"{SYNC_ENV} must be one of {', '.join(SYNC_LEVELS)}, not {level!r}")
    return level


def read_json(consensus: Consensus, key: str) -> Any:
    """The JSON value at ``key`` (None when there is none)."""
    head = consensus.head(key)
    return json.loads(head.data) if head else None


def update_json(consensus: Consensus, key: str, change: Callable[[Any], Any]) -> None:
    """Replace the JSON value at ``key`` by ``change(value)`` (``value`` None when there is
    none), retrying on a concurrent change; only the latest version is kept, and an
    unchanged value is not written."""
    while True:
        head = consensus.head(key)
        old = json.loads(head.data) if head else None
        new = change(old)
        if new == old:
            return
        seqno = head.seqno if head else None
        data = json.dumps(new, sort_keys=True).encode()
        if consensus.compare_and_set(key, seqno, VersionedData((seqno or 0) + 1, data)):
            if seqno and seqno > 1:
                consensus.truncate(key, seqno)
            return


class Decoded(Generic[T]):
    """Keys' latest values, each version decoded once: a seqno always names the same bytes, so
    the value decoded from it (immutable) is kept until the key moves on. Every read still
    asks consensus for the head; only the decoding is saved."""

    def __init__(self, consensus: Consensus, decode: Callable[[VersionedData], T]) -> None:
        self.consensus, self.decode = consensus, decode
        self._last: dict[str, tuple[VersionedData, T]] = {}

    def head(self, key: str) -> tuple[VersionedData | None, T | None]:
        """The head of ``key`` and its decoded value (None, None if it was never written)."""
        last = self._last.get(key)
        head = self.consensus.head(key, None if last is None else last[0].seqno)
        if head is None:
            return None, None
        if last is not None and last[0].seqno == head.seqno:
            return last
        value = self.decode(head)
        self._last[key] = (head, value)
        return head, value

    def wrote(self, key: str, head: VersionedData, value: T) -> None:
        """``value`` is what this process just stored at ``key`` as ``head``: no decoding of
        it when it is read next."""
        self._last[key] = (head, value)


def open_consensus(location: str, create: bool = True) -> Consensus:
    """``sqlite:PATH`` or ``postgresql://…`` (``postgres://`` too).

    With ``create`` false nothing is created: a missing SQLite file or PostgreSQL table is an
    error.
    """
    if location.startswith("sqlite:"):
        return SqliteConsensus(Path(location.removeprefix("sqlite:")), create)
    if location.startswith(("postgresql://", "postgres://")):
        return PostgresConsensus(location, create)
    raise InvalidInput(
        f"consensus location {location!r} is neither sqlite:PATH nor postgresql://…; "
        "set --consensus or CHANGEFLOW_CONSENSUS"
    )


@dataclass(frozen=True)
class _Seen:
    """A head a connection read: its seqno, and its data unless the reader had it."""

    seqno: int
    data: bytes | None


class _WalIndex:
    """The WAL-index header of a SQLite file in WAL mode, read in SQLite's own mapping of its
    shared memory (the ``-shm`` file; https://www.sqlite.org/walformat.html, "the WAL-index
    header"). Every commit, by any connection of any process, changes it (the last frame and
    its checksums; the salts when the log restarts) before the commit returns, so an equal
    header means no commit in between. Reading it is a memory read: no system call, no lock.

    ``keeper``, a connection held open, keeps SQLite's mapping in place. The file is not opened
    here: closing a descriptor of it would drop the process's locks on it (POSIX), and another
    process would then rebuild the shared memory under this one."""

    def __init__(self, keeper: sqlite3.Connection, path: Path) -> None:
        keeper.execute("SELECT 1 FROM consensus LIMIT 1").fetchall()  # maps the shared memory
        name = str(path.resolve())
        with open("/proc/self/maps") as maps:
            starts = [
                int(f[0].split("-")[0], 16)
                for f in (line.split(maxsplit=5) for line in maps)
                if len(f) == 6 and f[5].rstrip("\n") == name and int(f[2], 16) == 0
            ]
        if not starts:
            raise ValueError(f"{path} is not mapped")
        self.address, self.keeper = starts[0], keeper

    def stamp(self) -> bytes:
        return ctypes.string_at(self.address, WAL_INDEX_HEADER)

    def close(self) -> None:
        self.keeper.close()


class SqliteConsensus(Consensus):
    """Consensus in a SQLite file in WAL mode; safe for several processes on one machine.

    A new file is made complete under a temporary name and then linked into place, so a file
    at ``path`` is always a changeflow consensus: an empty or foreign one is an error
    (:class:`StoreMismatch`), never re-initialised.
    """

    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = path
        self.location = f"sqlite:{path}"
        self._local = threading.local()
        self._wal: _WalIndex | None = None
        self._wal_lock = threading.Lock()
        self._wal_tried = False
        self._heads: dict[str, tuple[bytes, _Seen]] = {}  # key -> (WAL-index stamp, head)
        if not path.exists():
            if not create:
                raise InvalidInput(missing_store(str(path), "the consensus file does not exist"))
            self._create()
        self._check()
        self._identity = _identity(path)

    def present(self) -> bool:
        """Is the file this handle opened still at ``path`` (not deleted, not replaced)?
        Open connections go on reading and writing a deleted file, lost to every other
        process and to the next start."""
        return _identity(self.path) == self._identity

    def _create(self) -> None:
        """Make the file whole under a temporary name, then link it into place (atomic; if
        another process got there first, its file stays)."""
        folder = self.path.parent
        if not folder.is_dir():
            raise InvalidInput(
                f"cannot create consensus {self.path}: folder {folder} does not exist; "
                "create it first or check --consensus"
            )
        temporary = folder / f".{self.path.name}.{uuid.uuid4().hex}.tmp"
        try:
            with contextlib.closing(sqlite3.connect(temporary, isolation_level=None)) as conn:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(SQLITE_TABLE)
            with contextlib.suppress(FileExistsError):
                os.link(temporary, self.path)
        finally:
            temporary.unlink(missing_ok=True)

    def _check(self) -> None:
        """Refuse a file that is empty or not a changeflow consensus."""
        if self.path.is_file() and self.path.stat().st_size == 0:
            raise StoreMismatch(
                f"consensus file {self.path} is empty (0 bytes): it is not a changeflow store "
                "any more (emptied?); restore it from a backup or point --consensus elsewhere",
                consensus=self.location,
            )
        uri = f"{self.path.resolve().as_uri()}?mode=ro"  # looking changes nothing
        try:
            with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=60)) as conn:
                columns = [r[1] for r in conn.execute("PRAGMA table_info(consensus)")]
        except sqlite3.OperationalError as e:
            raise ConsensusUnavailable(f"cannot open consensus {self.path}: {e}") from None
        except sqlite3.DatabaseError as e:
            raise StoreMismatch(
                f"consensus file {self.path} is not a changeflow consensus ({e}); "
                "point --consensus at a changeflow store",
                consensus=self.location,
            ) from None
        if columns != SQLITE_COLUMNS:
            raise StoreMismatch(
                f"consensus file {self.path} is a SQLite database but not a changeflow "
                f"consensus (its table 'consensus' has columns {columns or 'none'}, expected "
                f"{SQLITE_COLUMNS}); point --consensus at a changeflow store",
                consensus=self.location,
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn, self._local.version, self._local.heads = conn, None, {}
        return conn

    def _connect(self) -> sqlite3.Connection:
        uri = f"{self.path.resolve().as_uri()}?mode=rw"  # never creates a file
        for attempt in range(100):
            try:
                conn = sqlite3.connect(
                    uri, uri=True, timeout=60, isolation_level=None, check_same_thread=False
                )
                # Switching a new file to WAL does not wait for other openers: retry.
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA synchronous={sync_level().upper()}")
                return conn
            except sqlite3.OperationalError as e:  # others (not a database): _check's
                if "locked" not in str(e) or attempt == 99:
                    raise ConsensusUnavailable(f"cannot open consensus {self.path}: {e}") from None
                time.sleep(0.05)
        raise AssertionError("unreachable")

    def _wal_index(self) -> _WalIndex | None:
        """The file's WAL index, mapped once (None where it cannot be: heads are then checked
        by ``data_version``)."""
        if not self._wal_tried:
            with self._wal_lock:
                if not self._wal_tried:
                    keeper = self._connect()
                    try:
                        self._wal = _WalIndex(keeper, self.path.with_name(f"{self.path.name}-shm"))
                    except (OSError, ValueError, sqlite3.Error):
                        keeper.close()
                    self._wal_tried = True
        return self._wal

    def head(self, key: str, known: int | None = None) -> VersionedData | None:
        """See :meth:`Consensus.head`. A head read by any thread stands while the WAL index is
        unchanged (no commit since, of any connection or process): then no query is needed.
        Without a mapped WAL index, a head this thread's connection read stands while the
        file's ``data_version`` (moved by every other connection's commit, of any process)
        stays and this connection has not written the key."""
        wal = self._wal_index()
        if wal is None:
            return self._head_by_version(key, known)
        stamp = wal.stamp()  # before the query: the head read is at least this new
        shared = self._heads.get(key)
        if shared is not None and shared[0] == stamp:
            seen = shared[1]
            if seen.seqno == known or seen.data is not None:
                return VersionedData(seen.seqno, b"" if seen.seqno == known else seen.data)
        row = (
            self._conn()
            .execute(
                "SELECT seqno, CASE WHEN seqno IS ? THEN NULL ELSE data END FROM consensus "
                "WHERE key = ? ORDER BY seqno DESC LIMIT 1",
                (known, key),
            )
            .fetchone()
        )
        if row is None:
            return None
        data = None if row[1] is None else bytes(row[1])
        self._heads[key] = (stamp, _Seen(row[0], data))
        return VersionedData(row[0], b"" if data is None else data)

    def _head_by_version(self, key: str, known: int | None) -> VersionedData | None:
        conn, local = self._conn(), self._local
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        if version != local.version:
            local.version, local.heads = version, {}
        seen = local.heads.get(key)
        if seen is not None and (seen.seqno == known or seen.data is not None):
            return VersionedData(seen.seqno, b"" if seen.seqno == known else seen.data)
        row = conn.execute(
            "SELECT seqno, CASE WHEN seqno IS ? THEN NULL ELSE data END FROM consensus "
            "WHERE key = ? ORDER BY seqno DESC LIMIT 1",
            (known, key),
        ).fetchone()
        if row is None:
            return None
        data = None if row[1] is None else bytes(row[1])
        local.heads[key] = _Seen(row[0], data)
        return VersionedData(row[0], b"" if data is None else data)

    def compare_and_set(self, key: str, expected: int | None, new: VersionedData) -> bool:
        self._check_next(expected, new)
        conn = self._conn()
        self._local.heads.pop(key, None)  # this connection's commits leave data_version
        wal = self._wal_index()
        conn.execute("BEGIN IMMEDIATE")
        try:
            before = None if wal is None else wal.stamp()  # no other commit until ours ends
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            (current,) = conn.execute(
                "SELECT max(seqno) FROM consensus WHERE key = ?", (key,)
            ).fetchone()
            if current != expected:
                conn.execute("ROLLBACK")
                return False
            conn.execute("INSERT INTO consensus VALUES (?, ?, ?)", (key, new.seqno, new.data))
            conn.execute("COMMIT")
            if wal is not None and before is not None:
                after = wal.stamp()
                # moved only by other connections' commits: none came since the lock, so
                # ``after`` is this commit's own stamp
                if conn.execute("PRAGMA data_version").fetchone()[0] == version:
                    self._carry_heads(before, after, key, new)
            return True
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _carry_heads(self, before: bytes, after: bytes, key: str, new: VersionedData) -> None:
        """After this connection's commit of ``new`` to ``key``: the heads read at ``before``
        (the stamp once it held the write lock) stand at ``after`` (the stamp of this commit,
        no other one between), and ``key``'s is ``new``. Saves the next reads of every key a
        query. ``after`` must be read before any other commit: a later stamp would make the
        heads carried to it stale, and every compare-and-set on them fail for good."""
        for other, (stamp, seen) in list(self._heads.items()):
            if stamp == before and other != key:
                self._heads[other] = (after, seen)
        self._heads[key] = (after, _Seen(new.seqno, new.data))

    def scan(self, key: str, from_seqno: int = 0, limit: int = 1000) -> list[VersionedData]:
        rows = self._conn().execute(
            "SELECT seqno, data FROM consensus WHERE key = ? AND seqno >= ? ORDER BY seqno LIMIT ?",
            (key, from_seqno, limit),
        )
        return [VersionedData(s, bytes(d)) for s, d in rows]

    def truncate(self, key: str, seqno: int) -> int:
        cur = self._conn().execute(
            "DELETE FROM consensus WHERE key = ? AND seqno < ? AND seqno < "
            "(SELECT max(seqno) FROM consensus WHERE key = ?)",
            (key, seqno, key),
        )
        return cur.rowcount

    def release_thread(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def close(self) -> None:
        self._stop_tidier()
        self.release_thread()
        with self._wal_lock:
            if self._wal is not None:
                self._wal.close()
            self._wal, self._wal_tried = None, False
            self._heads.clear()


CREATE_LOCK = "SELECT pg_advisory_xact_lock(hashtext('changeflow: create'))"
"""Taken first in a transaction that creates a table if it does not exist. PostgreSQL's
``IF NOT EXISTS`` does not hold against a concurrent create (the second can fail on the table's row
type), so processes creating at the same moment wait for one another."""


KEY_LOCK = "SELECT pg_advisory_xact_lock(hashtext('changeflow consensus: ' || %s))"
"""Taken first by a compare-and-set or a truncation of a key (see ``PostgresConsensus._locked``)."""


class PostgresConsensus(Consensus):
    """Consensus in a PostgreSQL table keyed by ``(shard, sequence_number)``.

    The insert of version ``n + 1`` succeeds only if ``n`` is the head; the primary key makes two
    racing inserts of the same next version resolve to exactly one winner.
    """

    def __init__(self, url: str, create: bool = True) -> None:
        import psycopg

        self.url = url
        self.location = _redact(url)
        self._lock = threading.Lock()
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise ConsensusUnavailable(f"cannot connect to consensus {_redact(url)}: {e}") from None
        if not create:
            (((found,),)) = self._run("SELECT to_regclass('consensus') IS NOT NULL", ())
            if not found:
                self._db.close()
                raise InvalidInput(missing_store(self.location, "it has no table 'consensus'"))
            return
        with self._db.transaction():
            self._db.execute(CREATE_LOCK)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS consensus (shard text NOT NULL, "
                "sequence_number bigint NOT NULL, data bytea NOT NULL, "
                "PRIMARY KEY (shard, sequence_number))"
            )

    def _run(self, sql: str, params: tuple) -> list[tuple]:
        import psycopg

        with self._lock:
            try:
                cur = self._db.execute(sql, params)
                return cur.fetchall() if cur.description else [(cur.rowcount,)]
            except psycopg.OperationalError as e:
                raise ConsensusUnavailable(f"consensus {_redact(self.url)}: {e}") from None

    def head(self, key: str, known: int | None = None) -> VersionedData | None:
        rows = self._run(
            "SELECT sequence_number, CASE WHEN sequence_number IS NOT DISTINCT FROM %s "
            "THEN ''::bytea ELSE data END FROM consensus WHERE shard = %s "
            "ORDER BY sequence_number DESC LIMIT 1",
            (known, key),
        )
        return VersionedData(rows[0][0], bytes(rows[0][1])) if rows else None

    def compare_and_set(self, key: str, expected: int | None, new: VersionedData) -> bool:
        self._check_next(expected, new)
        ((written,),) = self._locked(
            key,
            "INSERT INTO consensus (shard, sequence_number, data) "
            "SELECT %s, %s, %s WHERE (SELECT max(sequence_number) FROM consensus "
            "WHERE shard = %s) IS NOT DISTINCT FROM %s "
            "ON CONFLICT DO NOTHING",
            (key, new.seqno, new.data, key, expected),
        )
        return written == 1

    def _locked(self, key: str, sql: str, params: tuple) -> list[tuple]:
        """``sql`` in a transaction holding ``key``'s lock, so that it reads the key as the
        last such statement left it. Without it, an insert whose snapshot was taken before a
        newer version and a truncation committed could write again a version the truncation
        had deleted, and win a compare-and-set that another had won."""
        import psycopg

        with self._lock:
            try:
                with self._db.transaction():
                    self._db.execute(KEY_LOCK, (key,))
                    cur = self._db.execute(sql, params)
                    return [(cur.rowcount,)]
            except psycopg.OperationalError as e:
                raise ConsensusUnavailable(f"consensus {_redact(self.url)}: {e}") from None

    def scan(self, key: str, from_seqno: int = 0, limit: int = 1000) -> list[VersionedData]:
        rows = self._run(
            "SELECT sequence_number, data FROM consensus WHERE shard = %s "
            "AND sequence_number >= %s ORDER BY sequence_number LIMIT %s",
            (key, from_seqno, limit),
        )
        return [VersionedData(s, bytes(d)) for s, d in rows]

    def truncate(self, key: str, seqno: int) -> int:
        ((deleted,),) = self._locked(
            key,
            "DELETE FROM consensus WHERE shard = %s AND sequence_number < %s AND "
            "sequence_number < (SELECT max(sequence_number) FROM consensus WHERE shard = %s)",
            (key, seqno, key),
        )
        return deleted

    def close(self) -> None:
        self._stop_tidier()
        self._db.close()


def _identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of the file at ``path``; None if there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def missing_store(where: str, why: str) -> str:
    """The one message for a read that finds no store."""
    return f"no changeflow data at {where}: {why}; run a command that writes, or check --home"


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep or "://" not in head:
        return url
    scheme, _, userinfo = head.partition("://")
    return f"{scheme}://{userinfo.split(':')[0]}@{tail}"
