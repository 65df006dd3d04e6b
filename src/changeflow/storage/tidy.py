"""Truncation off the write path: the versions of a consensus key below its head are garbage
(no read of a head needs them), so a writer that wants them gone hands the truncation to a
thread of the consensus's own and returns at once. A commit that deleted the log's old
versions itself waited for that delete (and for the SQLite checkpoint it often set off), tens
of milliseconds once every 64 commits: the slowest commits of all."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from changeflow.storage.consensus import Consensus

log = logging.getLogger("changeflow.storage")


class Tidier:
    """Truncates ``consensus``'s keys, the latest wish for each key, on a thread of its own:
    started by a wish, it ends once no wish is left (so an idle consensus holds no thread,
    and no connection of one, and is freed with its last reference)."""

    def __init__(self, consensus: Consensus) -> None:
        self.consensus = consensus
        self._cond = threading.Condition()
        self._wanted: dict[str, int] = {}  # key -> truncate below this seqno
        self._thread: threading.Thread | None = None
        self._closed = False

    def truncate(self, key: str, seqno: int) -> None:
        """Have the versions of ``key`` below ``seqno`` deleted soon (never the head)."""
        with self._cond:
            if self._closed:
                return  # a closed consensus keeps them: the next writer asks again
            self._wanted[key] = max(seqno, self._wanted.get(key, seqno))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="changeflow-tidy", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    wanted, self._wanted = self._wanted, {}
                    if not wanted:
                        self._thread = None
                        return
                for key, seqno in wanted.items():
                    try:
                        self.consensus.truncate(key, seqno)
                    except Exception:  # noqa: BLE001 — garbage left: the next wish deletes it
                        log.warning("truncating %r below %d failed", key, seqno, exc_info=True)
        finally:
            self.consensus.release_thread()

    def close(self) -> None:
        """Let the truncations asked for finish; ask for none after."""
        with self._cond:
            self._closed = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)
