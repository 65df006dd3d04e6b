"""Group commit across the processes of one home: one compare-and-set of the write log carries
the blind writes (INSERTs, writes that read nothing) of every process waiting to commit.

The processes that commit to a home's SQLite consensus take turns through a lock file beside
it (``txns.lock``, an exclusive ``flock``: the kernel wakes the next waiter at once, where
SQLite's busy handler would sleep and poll), once they have seen each other's commits in the
log lately (a process alone commits without a turn, at no cost). A process whose turn is not
free first leaves its blind writes in the spool (``txns-spool/``, one file each, written whole
then renamed into place), then waits. Whoever has the turn takes every spooled write of the
others, commits them with its own in one entry, names them in the log
(:attr:`LogState.carried`, with the entry's timestamp) in that same compare-and-set, and
removes their files. A process that gets its
turn finds its own write either named in the log or gone from the spool (committed by
another: it is done), or still in the spool and not named (it takes it back and commits it
itself). A process killed while carrying others' writes leaves them in the log (committed) or
in the spool (their owners commit them): the log names each one it took in the commit, and
the files go only after it. A file left by a carrier killed between the two is named in the
log: the next holder of the turn skips it and removes it, and the log forgets a name only
once a holder of the turn finds its file gone (:meth:`TxnLog.commit`'s ``spooled``), so
neither its owner nor another holder commits it again, however many commits come between.

Writes that read (UPDATE, DELETE) are checked against what they read by their own process,
so they are never spooled; their process commits them in its turn, with the spooled writes of
the others beside them.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

SPOOL = "txns-spool"
LOCK = "txns.lock"


class Spool:
    """The spool and turn of the home whose consensus file is in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder, self._lock_path = folder / SPOOL, folder / LOCK
        self._fd: int | None = None  # the lock file, opened at the first turn
        self._threads = threading.Lock()  # flock is per process: its threads queue here

    @contextlib.contextmanager
    def turn(self, waiting: dict[str, pa.Table] | None = None) -> Iterator[str | None]:
        """Hold the home's commit turn. ``waiting``: this process's blind writes, spooled if
        the turn is not free at once, so that its holder may commit them; their spool id is
        given then (None if they were not spooled)."""
        with self._threads:
            if self._fd is None:
                self.folder.mkdir(exist_ok=True)
                self._fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            fd, spooled = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting:
                    spooled = self.put(waiting)
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield spooled
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def put(self, frames: dict[str, pa.Table]) -> str:
        """Leave ``frames`` (shard -> update frame) in the spool; their id."""
        from changeflow.storage.txns import _ipc

        name = uuid.uuid4().hex
        data = {shard: base64.b64encode(_ipc(f)).decode() for shard, f in frames.items()}
        part = self.folder / f".{name}.part"
        part.write_text(json.dumps(data))
        os.replace(part, self.folder / f"{name}.json")
        return name

    def take(self) -> dict[str, dict[str, pa.Table]]:
        """Every spooled write (id -> its frames); call with the turn held."""
        out = {}
        with os.scandir(self.folder) as entries:
            names = [e.name for e in entries if e.name.endswith(".json")]
        for name in names:
            try:
                data = json.loads((self.folder / name).read_text())
            except (OSError, ValueError):
                continue  # gone, or not whole: its owner commits it
            out[name.removesuffix(".json")] = {
                shard: pa.ipc.open_stream(base64.b64decode(b)).read_all()
                for shard, b in data.items()
            }
        return out

    def names(self) -> frozenset[str]:
        """The ids of the writes in the spool (whole or not); call with the turn held."""
        with os.scandir(self.folder) as entries:
            return frozenset(
                e.name.removesuffix(".json") for e in entries if e.name.endswith(".json")
            )

    def holds(self, name: str) -> bool:
        """Whether the write ``name`` is still in the spool (a holder of the turn removes the
        writes it carried only once its commit has won)."""
        return (self.folder / f"{name}.json").exists()

    def remove(self, ids: list[str] | set[str] | tuple[str, ...]) -> None:
        for name in ids:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.folder / f"{name}.json")

    def close(self) -> None:
        with self._threads:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
