"""Multi-shard transactions: atomic commits to several shards at one timestamp, through a write
log applied to the shards after (the adapter's tables are written this way).

A shard's compare-and-append is atomic for that shard only. A commit that writes several shards
(or several sessions' writes grouped into one timestamp) is made atomic by this log, kept under
one consensus key of the home (``adapter/txns``, its name from when the adapter kept it):

- ``commit`` puts each table's updates in the entry itself (up to :data:`INLINE_BYTES`, so a
  small write costs no blob) or in a blob, then, in one compare-and-set, adds an entry
  ``{ts, writes}`` iff ``ts`` is at or beyond the log's ``upper``, and moves ``upper`` past
  ``ts``. Then the commit is durable and acknowledged. A guarded commit names shards and times
  (what a read-then-write transaction read, and up to when that is known to hold): if one of
  them was written since, nothing is written and :class:`Moved` says which
  (the adapter's group commit then checks whether what was read really changed).
- ``ready(shards, ts)`` makes the shards readable at ``ts``: the log's upper is moved past ``ts``
  (so no later commit can land at or before it), every pending entry is applied to its shards
  (one compare-and-append per shard for all its pending entries, in timestamp order, with a
  token, so any process may apply them and each lands once), and each shard's upper is moved
  past ``ts``. Entries wait for a reader, the host or a long enough log to be applied.

A process killed anywhere leaves the log before the commit (nothing written but a stray blob)
or after it (the next ``ready`` applies it): never in between.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.errors import ChangeflowError, InvalidInput, UpperMismatch
from changeflow.failpoints import failpoint
from changeflow.storage.consensus import Decoded, SqliteConsensus, VersionedData
from changeflow.storage.frames import empty_frame, frame_schema, to_frame
from changeflow.storage.read import ReadCapability
from changeflow.storage.shard import Storage
from changeflow.storage.spool import Spool
from changeflow.storage.state import ShardState
from changeflow.storage.write import WriteCapability
from changeflow.time import Antichain, to_bound
from changeflow.updates import TIME

KEY = "adapter/txns"
BLOBS = "adapter-txns"
INLINE = "inline:"  # a write kept in its entry: this prefix, then its Arrow IPC stream in base64
INLINE_BYTES = 4096  # writes up to this size ride in the entry; larger ones go to a blob
INLINE_KEPT = 4096  # decoded inline writes kept (all forgotten at once past this many)
FORGET_AT = 32  # applied inline entries are forgotten by a compare-and-set of their own from here
WRITER = "adapter"  # the id of each table's write capability, and the holder of its reads


class SerializationFailure(ChangeflowError):
    """A read-then-write commit whose inputs changed after its read (SQLSTATE 40001)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, sqlstate="40001")


class StaleTimestamp(ChangeflowError):
    """The commit's timestamp is behind the log's upper: take a new one and try again."""


class Moved(ChangeflowError):
    """A guarded commit's shards were written after its guard's times (nothing was written):
    ``upper`` is the log's upper then, ``moved`` those shards."""

    def __init__(self, upper: int, moved: set[str]) -> None:
        super().__init__(f"{', '.join(sorted(moved))} written before {upper}")
        self.upper, self.moved = upper, moved


def conflict(moved: set[str]) -> SerializationFailure:
    return SerializationFailure(
        "could not serialize access due to concurrent update: "
        f"{', '.join(sorted(moved))} changed what this transaction read"
    )


_ENTRY_TEXTS: dict[int, tuple[dict[str, Any], str]] = {}  # id(entry) -> (entry, its JSON)


@dataclass
class LogState:
    upper: int = 0
    pending: list[dict[str, Any]] = field(default_factory=list)  # {ts, writes: {shard: key}}
    last_write: dict[str, int] = field(default_factory=dict)  # shard -> ts of its last commit
    carried: dict[str, int] = field(default_factory=dict)  # spooled write -> its commit's ts

    def to_bytes(self) -> bytes:
        """The state as JSON; each pending entry encoded once (an entry, inline writes and
        all, is most of the state and rides in many commits unchanged)."""
        global _ENTRY_TEXTS
        known, texts = _ENTRY_TEXTS, {}
        for entry in self.pending:
            seen = known.get(id(entry))
            fresh = seen is None or seen[0] is not entry
            texts[id(entry)] = (entry, json.dumps(entry)) if fresh else seen
        _ENTRY_TEXTS = texts  # the entries of the latest state (held, so their ids stay theirs)
        rest = {"upper": self.upper, "last_write": self.last_write, "carried": self.carried}
        pending = ", ".join(text for _, text in texts.values())
        return f'{json.dumps(rest)[:-1]}, "pending": [{pending}]}}'.encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LogState:
        return cls(**json.loads(data))


@dataclass(frozen=True)
class View:
    """A table as :meth:`TxnLog.view` reads it: its shard at ``at`` (nothing if negative)
    plus the log's writes not applied yet, ``pending`` (an update frame, or None); ``state``
    the shard's state it was read from (readable at ``at``: a read of the shard there needs
    no other)."""

    at: int
    pending: pa.Table | None
    state: ShardState | None = None


class TxnLog:
    """The write log of one home (see the module docstring)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.consensus = storage.consensus
        # processes sharing a consensus file take turns to commit, and carry each other's
        # blind writes (a PostgreSQL consensus may be shared across machines: no spool)
        self.spool = None
        if isinstance(self.consensus, SqliteConsensus):
            self.spool = Spool(self.consensus.path.parent)
        self._applying = threading.Lock()
        self._lock = threading.Lock()
        self._applied: set[int] = set()  # entries applied by this process, not forgotten yet
        self.pending = 0  # entries waiting to be applied after this process's last commit
        self.decoded = Decoded(self.consensus, lambda head: LogState.from_bytes(head.data))
        self._inline: dict[tuple[int, str], pa.Table] = {}  # decoded inline writes
        # a table's pending writes as a view last added them: their times, its schema, them
        self._pending: dict[str, tuple[tuple[int, ...], pa.Schema | None, pa.Table | None]] = {}

    def _change(self, fn: Any) -> Any:
        while True:
            head, state = self.decoded.head(KEY)
            state = state or LogState()
            new, result = fn(state)
            if new is None:
                return result
            seqno = head.seqno if head else None
            data = VersionedData((seqno or 0) + 1, new.to_bytes())
            if self.consensus.compare_and_set(KEY, seqno, data):
                self.decoded.wrote(KEY, data, new)
                if seqno and seqno % 64 == 0:
                    self.consensus.truncate_later(KEY, seqno)
                return result

    def state(self) -> LogState:
        return self.decoded.head(KEY)[1] or LogState()

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()

    def last_commit(self) -> int:
        """The timestamp of the latest commit (-1 if none): a read at or after it sees every
        acknowledged commit."""
        return max(self.state().last_write.values(), default=-1)

    # -- writing -----------------------------------------------------------------------------

    def frame(
        self,
        shard: str,
        rows: list[tuple[tuple[Any, ...], int]],
        name: str | None = None,
        schema: pa.Schema | None = None,
    ) -> pa.Table:
        """``rows`` (row, diff) as an update frame of the shard (its time set at commit),
        checked against its schema (types, NOT NULL; ``schema`` if the caller read it) before
        anything is written; errors name the table ``name``."""
        schema = schema or self.storage.state(shard).schema
        return to_frame([(row, 0, diff) for row, diff in rows], schema, name or shard)

    def commit(
        self,
        frames: dict[str, pa.Table],
        ts: int | None = None,
        read_ts: int | None = None,
        read_shards: frozenset[str] = frozenset(),
        guard: dict[str, int] | None = None,
        floor: int = 0,
        prior: dict[str, int] | None = None,
        carried: tuple[str, ...] = (),
        spooled: frozenset[str] | None = None,
    ) -> int:
        """Commit ``frames`` (shard -> update frame from :meth:`frame`) atomically and return
        their timestamp; see the module docstring. At ``ts`` (:class:`StaleTimestamp` if it
        is behind the log), or, without one, at the log's upper or ``floor`` if later: the
        timestamp is taken in the compare-and-set itself, so no oracle round trip is needed
        (a reader moves the log's upper past its timestamp before it reads).
        ``guard`` (shard -> time): raise :class:`Moved` if one of those shards was written
        after its time, and write nothing. ``read_ts`` and ``read_shards`` say the same for
        a read-then-write commit that cannot check its reads: a serialization failure.
        :attr:`pending` is then how many entries wait to be applied; ``prior`` (if given) is
        filled with each written shard's commit before this one (-1: none). ``carried``: the
        ids of other processes' spooled writes among ``frames`` (:mod:`~.spool`), kept in the
        log with this commit's timestamp so their owners find them committed; ``spooled``:
        the ids in the spool as the holder of the turn sees it (none is added or removed by
        others meanwhile): the log forgets a carried write only once its file is gone, so no
        later turn can take it for uncommitted however many commits come between."""
        guard = dict(guard or {})
        for shard in read_shards:
            guard[shard] = min(guard.get(shard, read_ts), read_ts)  # type: ignore[type-var]
        keys = {}
        for shard, frame in frames.items():
            if frame.num_rows:
                data = _ipc(frame)  # its time is the entry's (set when applied)
                if len(data) <= INLINE_BYTES:  # a small write rides in the entry itself
                    keys[shard] = INLINE + base64.b64encode(data).decode()
                else:
                    keys[shard] = f"{BLOBS}/{uuid.uuid4().hex}.arrow"
                    self.storage.blob.set(keys[shard], data)
        blobs = [k for k in keys.values() if not k.startswith(INLINE)]
        with self._lock:
            applied = frozenset(self._applied)
        waiting = [0]  # entries not applied after the commit (of the try that won)

        def add(state: LogState) -> tuple[LogState | None, int]:
            at = max(state.upper, floor) if ts is None else ts
            if at < state.upper:
                raise StaleTimestamp(f"timestamp {at} is behind the write log at {state.upper}")
            refused = _moved(state, guard)
            if refused:
                raise refused
            kept = [e for e in state.pending if e["ts"] not in applied]  # forgotten now
            waiting[0] = len(kept) + bool(keys)
            if prior is not None:
                prior.clear()
                prior.update({s: state.last_write.get(s, -1) for s in keys})
            held = state.carried
            if spooled is not None:  # a name whose file is gone cannot be taken again
                held = {name: t for name, t in held.items() if name in spooled}
            if carried:
                held = held | dict.fromkeys(carried, at)
            if not keys:
                return replace(state, upper=at + 1, pending=kept, carried=held), at
            last = {**state.last_write, **dict.fromkeys(keys, at)}
            entries = [*kept, {"ts": at, "writes": keys}]
            return LogState(at + 1, entries, last, held), at

        failpoint("txns.before_commit")
        try:
            at = self._change(add)
        except Moved as m:
            for key in blobs:
                self.storage.blob.delete(key)
            if read_shards:
                raise conflict(m.moved & read_shards or m.moved) from None
            raise
        except BaseException:
            for key in blobs:
                self.storage.blob.delete(key)
            raise
        with self._lock:
            self._applied -= applied
        self.pending = waiting[0]
        return at

    def moved(self, guard: dict[str, int]) -> Moved | None:
        """What a commit with ``guard`` (see :meth:`commit`) would be refused for now, as
        this process last saw the log (None: nothing known), so it can be checked first."""
        return _moved(self.state(), guard)

    # -- reading -----------------------------------------------------------------------------

    def view(self, shards: set[str] | frozenset[str], ts: int) -> dict[str, View] | None:
        """Every shard of ``shards`` (tables) readable at ``ts`` without applying the log:
        the log's upper is moved past ``ts`` (no later commit lands at or before it), then each
        shard is read below its upper and the log's pending writes to it up to ``ts`` are
        added (those below the shard's upper are in the shard already: a write is applied
        before it is forgotten). None where that cannot be read so (a shard gone or compacted
        past its upper, a blob forgotten meanwhile): :meth:`ready` then."""

        def advance(state: LogState) -> tuple[LogState | None, LogState]:
            if state.upper > ts:
                return None, state
            new = replace(state, upper=ts + 1)
            return new, new

        pending = self._change(advance).pending  # read before the shards (see above)
        out = {}
        for shard in shards:
            try:
                state = self.storage.state(shard)
            except InvalidInput:  # no such shard (dropped)
                return None
            upper, since = to_bound(state.upper), to_bound(state.since)
            if upper is None or upper > ts:
                out[shard] = View(ts, None, state)
                continue
            if since is None or (upper > 0 and since > upper - 1):
                return None
            writes = [
                (e["ts"], e["writes"][shard])
                for e in pending
                if shard in e["writes"] and upper <= e["ts"] <= ts
            ]
            extra = self._pending_writes(shard, writes, state.schema) if writes else None
            if writes and extra is None:
                return None
            out[shard] = View(upper - 1, extra, state)
        return out

    def _pending_writes(
        self, shard: str, writes: list[tuple[int, str]], schema: pa.Schema
    ) -> pa.Table | None:
        """The log's ``writes`` ``(ts, key)`` to ``shard`` as one update frame of its
        ``schema``: the last one made for it plus the writes committed since, if it holds
        the same first ones, so each write is decoded and conformed once (None: a blob
        forgotten)."""
        times = tuple(at for at, _ in writes)
        old_times, old_schema, table = self._pending.get(shard, ((), None, None))
        kept = len(old_times)
        parts = []
        if table is not None and old_schema == schema and times[:kept] == old_times:
            parts.append(table)
        else:
            kept = 0
        target = frame_schema(schema)
        for at, key in writes[kept:]:
            frame = self._load(key, at)
            if frame is None:
                return None
            frame = _conform(frame, schema)
            parts.append(frame if frame.schema == target else frame.cast(target))
        extra = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        self._pending[shard] = (times, schema, extra)
        return extra

    def updates_until(
        self,
        shard: str,
        ts: int,
        view: View | None = None,
        stored: Callable[..., pa.Table] | None = None,
    ) -> pa.Table:
        """``shard``'s updates up to ``ts``, not consolidated: from the shard (readable at
        ``ts``), or as ``view`` (from :meth:`view`) has them. ``stored``: what reads the
        shard's updates up to a time, given the shard's state if known (as its read
        capability's :meth:`~ReadCapability.updates_until`, used unless given)."""
        if stored is None:
            stored = reader(self.storage, shard).updates_until
        if view is None:
            return stored(ts)
        parts = []
        if view.at >= 0:
            try:
                parts.append(stored(view.at, state=view.state))
            except FileNotFoundError:  # merged and collected since the view: as it is now
                parts.append(stored(view.at))
        if view.pending is not None:
            parts.append(view.pending)
        if not parts:
            return empty_frame(self.storage.state(shard).schema)
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def updates_after(self, shard: str, after: int, view: View) -> pa.Table:
        """``shard``'s updates after ``after`` as ``view`` (from :meth:`view`) has them: only
        its batches that reach past ``after`` are read, and the log's pending writes."""
        parts = []
        if view.at > after:
            state = self.storage.state(shard)
            try:
                parts.append(reader(self.storage, shard).updates(state, after + 1, view.at + 1))
            except FileNotFoundError:  # compacted under us: read what is there now
                table = self.updates_until(shard, view.at)
                parts.append(table.filter(pc.greater(table.column(TIME), after)))
        if view.pending is not None:
            parts.append(view.pending.filter(pc.greater(view.pending.column(TIME), after)))
        if not parts:
            return empty_frame(self.storage.state(shard).schema)
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def ready(self, shards: set[str] | frozenset[str], ts: int, tidy: bool = False) -> None:
        """Make every shard of ``shards`` (tables) readable at ``ts`` (``tidy``: and leave no
        applied entry in the log)."""

        def advance(state: LogState) -> tuple[LogState | None, None]:
            if state.upper > ts:
                return None, None
            return replace(state, upper=ts + 1), None

        self._change(advance)
        self.apply(tidy)
        for shard in shards:
            self._advance_shard(shard, ts + 1)

    def apply(self, tidy: bool = False) -> None:
        """Apply every pending entry to its shards (one append per shard for all its entries,
        in timestamp order), then forget them: at once if they have blobs, if :data:`FORGET_AT`
        wait, or if ``tidy``; else this process's next commit forgets them in its own
        compare-and-set. One thread of this process applies at a time; other processes may
        apply the same entries (each lands once)."""
        with self._applying:
            pending = sorted(self.state().pending, key=lambda e: e["ts"])
            if not pending:
                return
            by_shard: dict[str, list[tuple[int, str]]] = {}
            for entry in pending:
                for shard, key in entry["writes"].items():
                    by_shard.setdefault(shard, []).append((entry["ts"], key))
            for shard, writes in by_shard.items():
                self._apply(shard, writes)
                failpoint("txns.partly_applied")
            done = {e["ts"] for e in pending}
            inline = all(k.startswith(INLINE) for e in pending for k in e["writes"].values())
            if inline and not tidy and len(pending) < FORGET_AT:
                with self._lock:  # the next commit forgets them in its own compare-and-set
                    self._applied |= done
                return

            def forget(state: LogState) -> tuple[LogState | None, None]:
                left = [e for e in state.pending if e["ts"] not in done]
                return replace(state, pending=left), None

            self._change(forget)
            for entry in pending:
                for key in entry["writes"].values():
                    if not key.startswith(INLINE):
                        self.storage.blob.delete(key)

    def _apply(self, shard: str, writes: list[tuple[int, str]]) -> None:
        """Append the writes ``(ts, key)`` (in timestamp order) the shard does not have yet."""
        while True:
            upper = self._upper(shard)
            todo = [(ts, key) for ts, key in writes if upper is not None and ts >= upper]
            if not todo:
                return  # applied already (by this process or another), or the shard is gone
            tables = [self._load(key, ts) for ts, key in todo]
            if any(t is None for t in tables):
                continue  # applied and forgotten by another process meanwhile: look again
            schema = self.storage.state(shard).schema
            table = pa.concat_tables([_conform(t, schema) for t in tables])  # type: ignore[arg-type]
            last = todo[-1][0]
            token = f"txn-{todo[0][0]}-{last}-{shard}"
            if self._append(shard, table, upper, last + 1, token=token):  # type: ignore[arg-type]
                return

    def _load(self, key: str, ts: int) -> pa.Table | None:
        """A write's update frame at ``ts``: inline in the entry (decoded once while it
        waits: every read of its table adds it), or in its blob (None if deleted)."""
        if key.startswith(INLINE):
            frame = self._inline.get((ts, key))
            if frame is None:
                data = base64.b64decode(key[len(INLINE) :])
                frame = _at(pa.ipc.open_stream(data).read_all(), ts)
                if len(self._inline) >= INLINE_KEPT:
                    self._inline.clear()
                self._inline[(ts, key)] = frame
            return frame
        data = self.storage.blob.get(key)
        return None if data is None else _at(pa.ipc.open_stream(data).read_all(), ts)

    def _advance_shard(self, shard: str, to: int) -> None:
        while True:
            upper = self._upper(shard)
            if upper is None or upper >= to or self._append(shard, [], upper, to):
                return

    def _upper(self, shard: str) -> int | None:
        if shard not in self.storage.catalog().entries:
            return None
        return to_bound(self.storage.state(shard).upper)

    def _append(
        self, shard: str, updates: Any, upper: int, new_upper: int, token: str | None = None
    ) -> bool:
        """Compare-and-append at ``upper``; False if another process moved it first."""
        cap = writer(self.storage, shard, upper)
        try:
            self.storage.append(cap, updates, new_upper, token)
        except UpperMismatch:
            return False
        return True


def writer(storage: Storage, shard: str, upper: int) -> WriteCapability:
    """The table's shared write capability (created with the table), at ``upper``."""
    gid = storage.state(shard).id
    return WriteCapability(storage.machine, gid, shard, WRITER, Antichain([upper]))


def reader(storage: Storage, shard: str, state: ShardState | None = None) -> ReadCapability:
    """The adapter's registered read capability of ``shard``, at its since (as of ``state``,
    its state if the caller read it already)."""
    state = state or storage.state(shard)
    return ReadCapability(storage.machine, state.id, shard, WRITER, state.since, WRITER)


def _moved(state: LogState, guard: dict[str, int]) -> Moved | None:
    moved = {s for s, t in guard.items() if state.last_write.get(s, -1) > t}
    return Moved(state.upper, moved) if moved else None


def _at(frame: pa.Table, ts: int) -> pa.Table:
    """``frame`` with every update at ``ts``."""
    at = frame.schema.get_field_index(TIME)  # its field kept (not null): the frame conforms
    return frame.set_column(at, frame.field(at), pa.array([ts] * frame.num_rows, pa.int64()))


def _conform(frame: pa.Table, schema: pa.Schema) -> pa.Table:
    """A write framed before the shard's schema changed, in its current columns: dropped
    columns left out, added ones NULL."""
    target = frame_schema(schema)
    if frame.schema == target:
        return frame
    names = frame.schema.names
    columns = [
        frame.column(f.name) if f.name in names else pa.nulls(len(frame), f.type) for f in target
    ]
    return pa.Table.from_arrays(columns, schema=target)


def _ipc(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream of one record batch (a group's many small frames
    would each carry their own batch header: several times the size)."""
    table = table.combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as out:
        out.write_table(table)
    return sink.getvalue().to_pybytes()
