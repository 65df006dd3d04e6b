"""The runtime's recovery log: the runtime checkpoint and the driver checkpoint, committed
together in one SQLite transaction, per materialization; a fence per materialization, so
that a session that a newer one has taken over (a zombie) can no longer commit; and the
target and shard of each materialization, so that a name is not pointed at another target
(which would be skipped up to the old one's checkpoint) and a table has one owner."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from changeflow.errors import FencedOff
from changeflow.materialize.protocol import DriverState, apply_state


def fenced_off(name: str, newest: int | None, mine: int) -> FencedOff:
    """The error of a session that a newer one of the same materialization took over."""
    return FencedOff(
        f"materialization {name!r}: a newer instance took it over (fence {newest}); this one "
        f"(fence {mine}) stops",
        fence=newest,
    )


class RecoveryLog:
    """``load`` what was last committed; ``commit`` both checkpoints atomically."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=60, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS recovery_log (materialization TEXT PRIMARY KEY, "
            "runtime_checkpoint TEXT, driver_checkpoint TEXT NOT NULL)"
        )
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS recovery_fences (materialization TEXT PRIMARY KEY, "
            "fence INTEGER NOT NULL)"
        )
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS recovery_targets (materialization TEXT PRIMARY KEY, "
            "target TEXT NOT NULL, shard TEXT NOT NULL)"
        )

    def load(self, name: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        row = self.db.execute(
            "SELECT runtime_checkpoint, driver_checkpoint FROM recovery_log "
            "WHERE materialization = ?",
            (name,),
        ).fetchone()
        if row is None:
            return None, {}
        return (json.loads(row[0]) if row[0] else None), json.loads(row[1])

    def fence(self, name: str) -> int:
        """Take ``name`` over: a new fence, which every older session's commit now fails."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            ((fence,),) = self.db.execute(
                "INSERT INTO recovery_fences VALUES (?, 1) ON CONFLICT (materialization) "
                "DO UPDATE SET fence = fence + 1 RETURNING fence",
                (name,),
            ).fetchall()
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return fence

    def current_fence(self, name: str) -> int | None:
        """The fence of the newest session of ``name`` (None: none ever opened)."""
        row = self.db.execute(
            "SELECT fence FROM recovery_fences WHERE materialization = ?", (name,)
        ).fetchone()
        return None if row is None else row[0]

    def commit(
        self,
        name: str,
        runtime_checkpoint: dict[str, Any],
        driver: DriverState | None,
        fence: int | None = None,
        durable: bool = True,
    ) -> dict[str, Any]:
        """Commit both checkpoints (a driver merge patch is applied to the stored one); with
        ``fence``, only if no newer session has taken ``name`` over (else FencedOff). Not
        ``durable``: without a sync (a crash of the machine may lose it, never tear it), for
        a materialization whose target keeps the checkpoint that counts."""
        if not durable:
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if fence is not None:
                row = self.db.execute(
                    "SELECT fence FROM recovery_fences WHERE materialization = ?", (name,)
                ).fetchone()
                if row is None or row[0] != fence:
                    raise fenced_off(name, row[0] if row else None, fence)
            _, current = self.load(name)
            state = apply_state(current, driver)
            self.db.execute(
                "INSERT INTO recovery_log VALUES (?, ?, ?) ON CONFLICT (materialization) "
                "DO UPDATE SET runtime_checkpoint = excluded.runtime_checkpoint, "
                "driver_checkpoint = excluded.driver_checkpoint",
                (name, json.dumps(runtime_checkpoint), json.dumps(state)),
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        finally:
            if not durable:  # every other write of the log syncs
                self.db.execute("PRAGMA synchronous=FULL")
        return state

    def target(self, name: str) -> tuple[str, str] | None:
        """The target URL and shard recorded for ``name``; None if there is none."""
        row = self.db.execute(
            "SELECT target, shard FROM recovery_targets WHERE materialization = ?", (name,)
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def owner(self, target: str, shard: str, other_than: str) -> str | None:
        """Another materialization that has committed ``shard`` into ``target``, if any (one
        that never committed, such as a run that could not connect, owns nothing)."""
        row = self.db.execute(
            "SELECT t.materialization FROM recovery_targets AS t JOIN recovery_log AS l "
            "ON l.materialization = t.materialization WHERE t.target = ? AND t.shard = ? "
            "AND t.materialization != ? ORDER BY t.materialization",
            (target, shard, other_than),
        ).fetchone()
        return None if row is None else row[0]

    def record_target(self, name: str, target: str, shard: str) -> None:
        """Record that ``name`` writes ``shard`` into ``target``."""
        self.db.execute(
            "INSERT INTO recovery_targets VALUES (?, ?, ?) ON CONFLICT (materialization) "
            "DO UPDATE SET target = excluded.target, shard = excluded.shard",
            (name, target, shard),
        )

    def forget(self, name: str) -> bool:
        """Forget the checkpoints and target of ``name``, and move its fence on, so that a
        session still running can never commit again; False if there was nothing to forget."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(
                "UPDATE recovery_fences SET fence = fence + 1 WHERE materialization = ?", (name,)
            )
            gone = sum(
                self.db.execute(f"DELETE FROM {table} WHERE materialization = ?", (name,)).rowcount
                for table in ("recovery_log", "recovery_targets")
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return gone > 0

    def checkpointed(self, prefix: str) -> list[str]:
        """The materializations with a checkpoint whose names begin with ``prefix``."""
        rows = self.db.execute(
            "SELECT materialization FROM recovery_log WHERE runtime_checkpoint IS NOT NULL "
            "AND substr(materialization, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return [name for (name,) in rows]

    def close(self) -> None:
        self.db.close()
