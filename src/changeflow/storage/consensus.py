"""Consensus: a linearizable map from keys to versioned values, changed by compare-and-set.

Every change of a shard is one :meth:`Consensus.compare_and_set` of its next version; it is
durable when the call returns. Two implementations with one contract: SQLite (the embedded
default, several processes on one machine) and PostgreSQL (several processes or machines).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from changeflow.errors import ConsensusUnavailable, InvalidInput


@dataclass(frozen=True)
class VersionedData:
    """One version of a key's value: sequence numbers start at 1 and grow by one."""

    seqno: int
    data: bytes


class Consensus(ABC):
    """``head``, ``compare_and_set``, ``scan`` and ``truncate`` over versioned keys."""

    @abstractmethod
    def head(self, key: str) -> VersionedData | None:
        """The latest version of ``key``, or None if it was never written."""

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

    @staticmethod
    def _check_next(expected: int | None, new: VersionedData) -> None:
        if new.seqno != (expected or 0) + 1:
            raise ValueError(
                f"the next seqno after {expected} is {(expected or 0) + 1}, not {new.seqno}"
            )


def open_consensus(location: str) -> Consensus:
    """``sqlite:PATH`` or ``postgresql://…`` (``postgres://`` too)."""
    if location.startswith("sqlite:"):
        return SqliteConsensus(Path(location.removeprefix("sqlite:")))
    if location.startswith(("postgresql://", "postgres://")):
        return PostgresConsensus(location)
    raise InvalidInput(
        f"consensus location {location!r} is neither sqlite:PATH nor postgresql://…; "
        "set --consensus or CHANGEFLOW_CONSENSUS"
    )


class SqliteConsensus(Consensus):
    """Consensus in a SQLite file in WAL mode; safe for several processes on one machine."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS consensus (key TEXT NOT NULL, seqno INTEGER NOT NULL, "
                "data BLOB NOT NULL, PRIMARY KEY (key, seqno)) WITHOUT ROWID"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            for attempt in range(100):
                try:
                    conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
                    # Switching a new file to WAL does not wait for other openers: retry.
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("PRAGMA synchronous=FULL")
                    break
                except sqlite3.Error as e:
                    if "locked" not in str(e) or attempt == 99:
                        raise ConsensusUnavailable(
                            f"cannot open consensus {self.path}: {e}"
                        ) from None
                    time.sleep(0.05)
            self._local.conn = conn
        return conn

    def head(self, key: str) -> VersionedData | None:
        row = (
            self._conn()
            .execute(
                "SELECT seqno, data FROM consensus WHERE key = ? ORDER BY seqno DESC LIMIT 1",
                (key,),
            )
            .fetchone()
        )
        return VersionedData(row[0], bytes(row[1])) if row else None

    def compare_and_set(self, key: str, expected: int | None, new: VersionedData) -> bool:
        self._check_next(expected, new)
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            (current,) = conn.execute(
                "SELECT max(seqno) FROM consensus WHERE key = ?", (key,)
            ).fetchone()
            if current != expected:
                conn.execute("ROLLBACK")
                return False
            conn.execute("INSERT INTO consensus VALUES (?, ?, ?)", (key, new.seqno, new.data))
            conn.execute("COMMIT")
            return True
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

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

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class PostgresConsensus(Consensus):
    """Consensus in a PostgreSQL table keyed by ``(shard, sequence_number)``.

    The insert of version ``n + 1`` succeeds only if ``n`` is the head; the primary key makes two
    racing inserts of the same next version resolve to exactly one winner.
    """

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self._lock = threading.Lock()
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise ConsensusUnavailable(f"cannot connect to consensus {_redact(url)}: {e}") from None
        # Another process may create the table at the same moment; then it exists all the same.
        with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
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

    def head(self, key: str) -> VersionedData | None:
        rows = self._run(
            "SELECT sequence_number, data FROM consensus WHERE shard = %s "
            "ORDER BY sequence_number DESC LIMIT 1",
            (key,),
        )
        return VersionedData(rows[0][0], bytes(rows[0][1])) if rows else None

    def compare_and_set(self, key: str, expected: int | None, new: VersionedData) -> bool:
        self._check_next(expected, new)
        ((written,),) = self._run(
            "INSERT INTO consensus (shard, sequence_number, data) "
            "SELECT %s, %s, %s WHERE (SELECT max(sequence_number) FROM consensus "
            "WHERE shard = %s) IS NOT DISTINCT FROM %s "
            "ON CONFLICT DO NOTHING",
            (key, new.seqno, new.data, key, expected),
        )
        return written == 1

    def scan(self, key: str, from_seqno: int = 0, limit: int = 1000) -> list[VersionedData]:
        rows = self._run(
            "SELECT sequence_number, data FROM consensus WHERE shard = %s "
            "AND sequence_number >= %s ORDER BY sequence_number LIMIT %s",
            (key, from_seqno, limit),
        )
        return [VersionedData(s, bytes(d)) for s, d in rows]

    def truncate(self, key: str, seqno: int) -> int:
        ((deleted,),) = self._run(
            "DELETE FROM consensus WHERE shard = %s AND sequence_number < %s AND "
            "sequence_number < (SELECT max(sequence_number) FROM consensus WHERE shard = %s)",
            (key, seqno, key),
        )
        return deleted

    def close(self) -> None:
        self._db.close()


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep or "://" not in head:
        return url
    scheme, _, userinfo = head.partition("://")
    return f"{scheme}://{userinfo.split(':')[0]}@{tail}"
