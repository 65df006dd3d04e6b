"""Group commit: the transactions of concurrent sessions in one process commit together, at
one timestamp, in one entry of the write log (one compare-and-set of the log; the shards are
appended to later, many entries at once).

A session hands its checked frames to :meth:`GroupCommit.commit` and waits. The first waiting
session becomes the leader: it waits for company (until as many transactions wait as its last
group took, at most :data:`COMPANY_WAIT`; a lone session's group is one, so it never waits),
then takes every transaction queued so far and commits them as groups, each at one write
timestamp; the others wake with their result. A group is serial in
this order: the read-then-write transactions (UPDATE, DELETE), each unaffected by the writes
of those before it in the group (:attr:`Reads.unaffected`; one that is affected waits for the
next group), then the blind writes. The log refuses the group if a table a transaction read
was written since what was checked; the leader then asks each such transaction whether what
it read is unchanged: first whether it is unaffected by the writes since, if every one of
them is a recent commit of this process (kept in memory with the commit it followed on each
table, so the chain of a table's commits is known to be complete), else through storage
(:attr:`Reads.unchanged`). If so it stays, else it alone fails (40001).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from changeflow.adapter.oracle import TimestampOracle
from changeflow.errors import ChangeflowError
from changeflow.storage.txns import Moved, TxnLog, conflict

TRIES = 100
APPLY_AT = 64  # the log is applied to the shards once this many entries wait (or each second)
RECENT = 64  # commits of this process kept in memory for rechecks
COMPANY_WAIT = 0.002  # seconds a leader waits for as many transactions as its last group had
SHARED_SECONDS = 10.0  # processes take turns this long after another's commit was seen


@dataclass(frozen=True)
class Reads:
    """What a read-then-write transaction read at ``ts`` (``shards``), and its checks: is it
    the same just below ``upper`` given the ``moved`` tables' changes (readable up to there),
    and is it the same after these frames (shard -> update frame) are added?"""

    ts: int
    shards: frozenset[str]
    unchanged: Callable[[int, set[str]], bool]
    unaffected: Callable[[dict[str, pa.Table]], bool]


@dataclass
class _Pending:
    frames: dict[str, pa.Table]
    reads: Reads | None
    checked: int = -1  # writes to the reads up to this time are known not to matter
    ts: int | None = None
    error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.ts is not None or self.error is not None


class GroupCommit:
    """See the module docstring."""

    def __init__(self, log: TxnLog, oracle: TimestampOracle) -> None:
        self.log, self.oracle = log, oracle
        self.cond = threading.Condition()
        self.queue: list[_Pending] = []
        self.leading = False
        self.entries = 0  # log entries written (a measure of grouping)
        self._company = 1  # transactions the last group took: the next waits for as many
        self.apply_error: BaseException | None = None  # the applier's last (it tries again)
        self._wanted = threading.Event()
        self._closed = False
        self._applier: threading.Thread | None = None
        # recent commits: timestamp -> (frames, each table's commit before it)
        self._recent: dict[int, tuple[dict[str, pa.Table], dict[str, int]]] = {}
        self._shared_until = 0.0  # another process committed lately: take turns until then

    def commit(self, frames: dict[str, pa.Table], reads: Reads | None = None) -> int:
        """Commit ``frames`` and return their timestamp once durable (see the module doc)."""
        mine = _Pending(frames, reads, reads.ts if reads is not None else -1)
        with self.cond:
            self.queue.append(mine)
            if len(self.queue) >= self._company:
                self.cond.notify_all()  # a leader waiting for company has it
            while self.leading and not mine.done:
                self.cond.wait()
            lead = not mine.done
            if lead:
                self.leading = True
                deadline = time.monotonic() + COMPANY_WAIT
                while len(self.queue) < self._company:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(left)
                batch, self.queue = self.queue, []
                self._company = len(batch)
        if lead:
            self._lead(batch)
        if mine.error is not None:
            raise mine.error
        assert mine.ts is not None
        return mine.ts

    def _lead(self, batch: list[_Pending]) -> None:
        try:
            while batch:
                group, batch = _compatible(batch)
                try:
                    self._commit(group)
                except BaseException as e:
                    for p in group:
                        if not p.done:
                            p.error = e
                with self.cond:
                    self.cond.notify_all()
        finally:
            for p in batch:
                if not p.done:
                    p.error = ChangeflowError("the group commit stopped; try again")
            with self.cond:
                self.leading = False
                self.cond.notify_all()

    def _commit(self, group: list[_Pending]) -> None:
        spool = self.log.spool
        if spool is None or not self._shared():
            self._commit_group(group, {})
            return
        blind = [p for p in group if p.reads is None]
        with spool.turn(_merged(blind) if blind else None) as mine:
            if mine is not None:  # spooled while another process had the turn
                state = self.log.state()
                at = state.carried.get(mine)
                if at is None and not spool.holds(mine):  # taken, so committed (at or before
                    at = state.upper - 1  # the log's upper); its name forgotten since
                if at is not None:  # which committed them
                    for p in blind:
                        p.ts = at
                    group = [p for p in group if p.reads is not None]
                spool.remove([mine])  # (left by a carrier killed after its commit: not twice)
            if group:
                self._commit_spooled(group)

    def _commit_spooled(self, group: list[_Pending]) -> None:
        """Commit ``group`` with the writes waiting in the spool (the turn held). A spooled
        write the log names was committed by a carrier killed before it removed the file:
        it is removed, not committed again."""
        spool = self.log.spool
        assert spool is not None
        others = spool.take()
        done = [name for name in others if name in self.log.state().carried]
        spool.remove(done)
        others = {name: frames for name, frames in others.items() if name not in done}
        self._commit_group(group, others, spool.names())

    def _shared(self) -> bool:
        """Does another process commit to this home (its commit the log's latest within the
        last :data:`SHARED_SECONDS`)? Alone, a commit takes no turn and reads no spool."""
        latest = max(self.log.state().last_write.values(), default=-1)
        if latest >= 0 and latest not in self._recent:
            self._shared_until = time.monotonic() + SHARED_SECONDS
        return time.monotonic() < self._shared_until

    def _commit_group(
        self,
        group: list[_Pending],
        others: dict[str, dict[str, pa.Table]],
        spooled: frozenset[str] | None = None,
    ) -> None:
        """Commit ``group`` with the ``others``' spooled writes (id -> frames) that have the
        same frame schemas; ``spooled``: the ids in the spool, with the turn held."""
        carried = tuple(others)
        for _ in range(TRIES):
            guard: dict[str, int] = {}
            for p in group:
                for shard in p.reads.shards if p.reads else ():
                    guard[shard] = min(guard.get(shard, p.checked), p.checked)
            try:  # the log takes the timestamp: at least the clock, past every reader's
                refused = self.log.moved(guard)  # known already: no blob written for nothing
                if refused is not None:
                    raise refused
                merged, prior = _merged(group), {}
                carried = _carry(merged, others)
                ts = self.log.commit(
                    merged,
                    guard=guard,
                    floor=self.oracle.now(),
                    prior=prior,
                    carried=carried,
                    spooled=spooled,
                )
            except Moved as m:
                group = self._recheck(group, m)
                if not group:
                    return
                continue
            self._recent[ts] = ({s: f for s, f in merged.items() if s in prior}, prior)
            if len(self._recent) > RECENT:
                del self._recent[min(self._recent)]
            self.entries += 1  # a read's timestamp is at least the log's last commit
            for p in group:
                p.ts = ts
            if carried and self.log.spool is not None:
                self.log.spool.remove(carried)
            if self.log.pending >= APPLY_AT:  # else the host does, within a second
                self._wake_applier()
            return
        raise ChangeflowError(f"no write timestamp held after {TRIES} tries; try again")

    def _wake_applier(self) -> None:
        """Have the log applied to the shards by a thread of its own, so no commit waits for
        it (reads of tables add the pending writes themselves)."""
        with self.cond:
            if self._applier is None and not self._closed:
                self._applier = threading.Thread(
                    target=self._apply_loop, name="changeflow-apply", daemon=True
                )
                self._applier.start()
        self._wanted.set()

    def _apply_loop(self) -> None:
        while True:
            self._wanted.wait()
            if self._closed:
                return
            self._wanted.clear()
            try:
                self.log.apply()
            except Exception as e:  # noqa: BLE001 — applied again next time (or by the host)
                self.apply_error = e

    def close(self) -> None:
        """Stop the applier (after the apply in progress)."""
        with self.cond:
            self._closed = True
        self._wanted.set()
        if self._applier is not None:
            self._applier.join(timeout=30)
        self.log.close()

    def _recheck(self, group: list[_Pending], m: Moved) -> list[_Pending]:
        """The transactions of ``group`` that still hold after the writes ``m`` reports; the
        others fail with 40001."""
        state = self.log.state()  # at least as new as ``m``
        kept = []
        for p in group:
            hit = set(p.reads.shards & m.moved) if p.reads else set()
            if hit:
                assert p.reads is not None
                known = self._written(state.last_write, p.reads.shards, p.checked)
                if known is not None and p.reads.unaffected(known):
                    p.checked = max(p.checked, state.upper - 1)
                elif p.reads.unchanged(m.upper, hit):
                    p.checked = m.upper - 1
                else:
                    p.error = conflict(hit)
                    continue
            kept.append(p)
        return kept

    def _written(
        self, last_write: dict[str, int], shards: frozenset[str], after: int
    ) -> dict[str, pa.Table] | None:
        """What was written to ``shards`` after ``after`` up to their ``last_write``, if
        every one of those commits is a recent one of this process (else None)."""
        out = {}
        for shard in shards:
            at, parts = last_write.get(shard, -1), []
            while at > after:
                frames, prior = self._recent.get(at, ({}, {}))
                if shard not in frames:
                    return None  # another process's commit, or one forgotten
                parts.append(frames[shard])
                at = prior[shard]
            if parts:
                if any(f.schema != parts[0].schema for f in parts):
                    return None  # framed across a schema change
                out[shard] = pa.concat_tables(parts)
        return out


def _compatible(batch: list[_Pending]) -> tuple[list[_Pending], list[_Pending]]:
    """A group of ``batch`` that commits at one timestamp (see the module docstring), and the
    rest."""
    group: list[_Pending] = []
    rest: list[_Pending] = []
    written: dict[str, list[pa.Table]] = {}
    for p in sorted(batch, key=lambda p: p.reads is None):  # read-then-write ones first
        if p.reads is not None and p.reads.shards & written.keys():
            before = {s: pa.concat_tables(written[s]) for s in p.reads.shards & written.keys()}
            if not p.reads.unaffected(before):
                rest.append(p)
                continue
        group.append(p)
        for shard, frame in p.frames.items():
            written.setdefault(shard, []).append(frame)
    return group, rest


def _carry(merged: dict[str, pa.Table], others: dict[str, dict[str, pa.Table]]) -> tuple[str, ...]:
    """Add to ``merged`` the spooled writes of ``others`` whose frames have its schemas (a
    write framed across a schema change is left to its own process); their ids."""
    carried = []
    for name, frames in others.items():
        if all(s not in merged or merged[s].schema == f.schema for s, f in frames.items()):
            for shard, frame in frames.items():
                merged[shard] = (
                    pa.concat_tables([merged[shard], frame]) if shard in merged else frame
                )
            carried.append(name)
    return tuple(carried)


def _merged(group: list[_Pending]) -> dict[str, pa.Table]:
    merged: dict[str, list[pa.Table]] = {}
    for p in group:
        for shard, frame in p.frames.items():
            merged.setdefault(shard, []).append(frame)
    return {s: pa.concat_tables(f) for s, f in merged.items()}
