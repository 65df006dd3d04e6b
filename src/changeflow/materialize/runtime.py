"""The runtime: a shard, read through a subscription, turned into transactions with a driver.

Each transaction covers an interval of the shard's frontiers and closes at a frontier advance
(or at a time boundary once it holds ``max_rows`` updates). Per transaction, exactly as the
protocol says: Acknowledge (the previous transaction committed to the recovery log), then one
LoadBatch of this transaction's keys without waiting, Flush only after Acknowledged, one
StoreBatch of the reduced rows (Arrow tables; reduced with Arrow over the whole transaction),
and StartCommit with the runtime checkpoint (the frontier consumed). A driver that
``upserts`` by key gets no load at all for lastWriteWins: the transaction's own changes say
what to upsert and delete. On
StartedCommit both checkpoints commit to the recovery log together (unless a newer session has
fenced this one off), and the next transaction's loads overlap the driver's commit and
acknowledgement. Each transaction is reduced in a worker thread, the next one's while this one
waits for the driver (Arrow and the database drivers release the GIL while they work).

A materialization holds its shard's since at its checkpoint, durably and between runs (a
registered reader, ``materialization:NAME``), so no other reader's compaction can take away
what it needs to go on; :func:`drop` lets go. In delta-updates mode a driver with
``delta_changes`` (SQL) gets every change as a row with ``_time`` and ``_diff``.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from changeflow.errors import (
    ChangeflowError,
    FencedOff,
    FrontierViolation,
    InvalidInput,
    ProtocolViolation,
)
from changeflow.failpoints import failpoint
from changeflow.materialize.columns import (
    DELETED,
    EXISTS,
    arrow_schema,
    as_written,
    conform,
    from_rows,
    store_schema,
)
from changeflow.materialize.driver import Driver
from changeflow.materialize.drivers import DRIVERS, open_driver
from changeflow.materialize.keyrange import KeyRange, check_layout, parse
from changeflow.materialize.protocol import (
    Acknowledge,
    Acknowledged,
    Binding,
    Doc,
    Flush,
    Flushed,
    LoadBatch,
    Loaded,
    LoadedBatch,
    Message,
    Open,
    Opened,
    StartCommit,
    StartedCommit,
    StoreBatch,
    name_of,
)
from changeflow.materialize.recovery import RecoveryLog, fenced_off
from changeflow.materialize.reductions import Changes, Reducer, check_types
from changeflow.materialize.stop import Stoppable, sigint_stops
from changeflow.materialize.targets import claim
from changeflow.materialize.transport import InProcess, Subprocess, Transport
from changeflow.storage import ReadCapability, Storage
from changeflow.time import Antichain
from changeflow.updates import DIFF, TIME

#: seconds between moves of the hold on the shard's since (each is a durable write); between
#: them it stays at an earlier checkpoint, which holds more of the shard, never less
HOLD_EVERY = 0.5


@dataclass(frozen=True)
class Materialization:
    """What to materialize where: a shard into a target URL, by a key."""

    name: str
    shard: str
    target: str
    key: tuple[str, ...]
    reductions: dict[str, str] = field(default_factory=dict)
    delta_updates: bool = False
    force: bool = False  # allow a sum through an at-least-once driver
    max_rows: int = 10_000  # a transaction closes at the next time boundary beyond this
    resource: str | None = None  # the target's table or file name (default: the shard's)
    #: the shard's columns to write, each with its name in the target (default: all, as named)
    columns: tuple[tuple[str, str], ...] | None = None
    pads: tuple[tuple[str, int], ...] = ()  # char(n) columns (target names): shown padded to n


@dataclass
class Progress:
    """What a run has done so far; handed to the progress callback after each transaction."""

    transactions: int = 0
    updates: int = 0
    stores: int = 0
    frontier: Antichain = field(default_factory=Antichain)
    shard_upper: Antichain = field(default_factory=Antichain)
    started: float = field(default_factory=time.monotonic)
    stopped: bool = False  # by Ctrl-C (see ``materialize(stop_on_interrupt=True)``)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    @property
    def lag(self) -> int | None:
        """How many times the target is behind the shard's upper (None when unknown)."""
        if not self.frontier or not self.shard_upper:
            return 0 if not self.shard_upper else None
        return self.shard_upper.elements[0] - self.frontier.elements[0]


def holder(name: str) -> str:
    """The holder of the shard's since for materialization ``name`` (a registered reader)."""
    return f"materialization:{name}"


def drop(storage: Storage, name: str, recovery_log: Path) -> str | None:
    """Drop materialization ``name``: release its hold on its shard's since and forget its
    checkpoints and target, so the shard can be compacted past it and the name reused. The
    target keeps what was written (and a SQL target its checkpoint row). Returns the shard
    it held (None if it held none); an error if there is no such materialization. A split
    one lets go of every key range's hold and checkpoints."""
    log = RecoveryLog(recovery_log)
    try:
        recorded = log.target(name)
        shard = None if recorded is None else recorded[1]
        held = storage.registered_readers(shard) if shard in storage.shards() else {}
        mine = [h for h in held if parse(name, h.removeprefix(holder(""))) is not None]
        released = any([storage.release_reader(str(shard), h) for h in mine])
        ranges = {name, *(q for q in log.checkpointed(name) if parse(name, q) is not None)}
        if not any([log.forget(q) for q in sorted(ranges)]) and not released:
            raise InvalidInput(f"no materialization named {name!r} in {recovery_log}")
    finally:
        log.close()
    return shard if released else None


def driver_class(url: str) -> type[Driver]:
    """The driver class for ``url``, to read its traits without opening it."""
    from importlib import import_module

    module, name = DRIVERS.get(url.split(":", 1)[0], (None, None))
    if module is None:
        open_driver(url)  # raises the clear error
    return getattr(import_module(module), name)


def materialize(
    storage: Storage,
    spec: Materialization,
    recovery_log: Path,
    transport: Transport | None = None,
    out_of_process: bool = False,
    follow: bool = False,
    idle_timeout: float | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    stop_on_interrupt: bool = False,
) -> Progress:
    """Run ``spec`` until the target has caught up with the shard (or, with ``follow``, until
    nothing new arrives for ``idle_timeout`` seconds or the shard is closed).

    Everything is checked before anything is written: the target, the key, the reductions
    against the shard's schema, and that no other materialization owns the table. With
    ``stop_on_interrupt``, Ctrl-C stops after the open transaction commits (see
    :mod:`~changeflow.materialize.stop`) and the returned progress says ``stopped``.
    """
    if transport is None:
        transport = open_transport(spec.target, out_of_process)
    stop = Stoppable(transport) if stop_on_interrupt else None
    log = RecoveryLog(recovery_log)
    try:
        runtime = Runtime(storage, spec, stop or transport, log, on_progress)
        claim(log, spec.name, spec.shard, spec.target, runtime.authoritative)
        check_layout(log, spec.name, [KeyRange()])
        if stop is None:
            return runtime.run(follow, idle_timeout)
        runtime.after_commit = stop.committed
        try:
            with sigint_stops(stop):
                return runtime.run(follow, idle_timeout)
        except KeyboardInterrupt:
            runtime.progress.stopped = True
            return runtime.progress
    finally:
        (stop or transport).close()
        log.close()


def open_transport(target: str, out_of_process: bool = False) -> Transport:
    """The transport to the driver of ``target``: in this process, or its own."""
    if out_of_process:
        return Subprocess([sys.executable, "-m", "changeflow.materialize.drivers", target])
    return InProcess(open_driver(target))


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: a transaction allocates a few objects per key, all
    freed by reference counting, and the collections they would trigger cost more than the
    transaction's own work."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _run_end(times: np.ndarray, end: int) -> int:
    """The first position from ``end`` on whose time differs from ``times[end - 1]`` (the
    length if none): searched in doubling windows, so a cut reads about as far as it moves."""
    last, step = times[end - 1], 1024
    while end < len(times):
        window = times[end : end + step]
        other = np.flatnonzero(window != last)
        if other.size:
            return end + int(other[0])
        end, step = end + len(window), step * 2
    return len(times)


@dataclass(frozen=True)
class _Step:
    """A transaction's updates up to ``upper``, and its reduction under way: the changes
    (None for a change table) and, when it loads nothing, the rows to store."""

    updates: pa.Table
    upper: Antichain
    changes: Future[Changes] | None
    rows: Future[pa.Table] | None


class Runtime:
    """One session of a materialization; see the module docstring."""

    def __init__(
        self,
        storage: Storage,
        spec: Materialization,
        transport: Transport,
        log: RecoveryLog,
        on_progress: Callable[[Progress], None] | None = None,
        kind: type[Driver] | None = None,
        keys: KeyRange | None = None,
    ) -> None:
        """``kind`` is the driver's class, for its traits (default: from the target URL);
        ``keys`` the key range of this task split (default: every key)."""
        self.storage, self.spec, self.transport, self.log = storage, spec, transport, log
        self.keys = keys or KeyRange()
        self.name = self.keys.qualify(spec.name)  # in the recovery log and the shard's holds
        self.on_progress = on_progress or (lambda _: None)
        self.watched = on_progress is not None  # the shard's upper, for its lag, each time
        self.after_commit: Callable[[], None] = lambda: None  # after each log commit's progress
        kind = kind or driver_class(spec.target)
        schema = storage.state(spec.shard).schema
        if spec.columns is not None:  # the target keeps its columns as the shard gains some
            schema = pa.schema([schema.field(s).with_name(n) for s, n in spec.columns])
        delta = spec.delta_updates or kind.delta_only
        #: every change a row with its time and diff (a change table), not a row per key
        self.change_table = delta and kind.delta_changes
        if self.change_table and spec.reductions:
            raise InvalidInput(
                f"{spec.target}: delta updates go into a change table (a row per change, with "
                f"{TIME} and {DIFF}), which is not reduced; drop --reduce or --delta-updates"
            )
        extra = (TIME, DIFF) if self.change_table else ()
        self.binding = Binding(
            resource=spec.resource or spec.shard,
            columns=(*schema.names, *extra),
            types=(*(str(f.type) for f in schema), *("int64" for _ in extra)),
            key=tuple(spec.key),
            delta_updates=delta,
        )
        check_types(schema, spec.reductions)
        self.schema = arrow_schema(self.binding)
        self.reducer = Reducer(
            self.schema, self.binding.key, spec.reductions, delta, kind.at_least_once
        )
        #: the runtime loads the stored rows of a transaction's keys (not for delta updates,
        #: nor for lastWriteWins into a store that upserts by key)
        self.loads = not delta and (bool(spec.reductions) or not kind.upserts)
        if kind.at_least_once and "sum" in spec.reductions.values() and not spec.force:
            raise InvalidInput(
                f"{spec.target}: this driver is at-least-once, so a retried transaction could "
                "add a sum twice; use a transactional target, or pass --force to accept it"
            )
        self.authoritative = kind.authoritative
        self.phase = "open"
        self.fence = 0  # this session's fence in the recovery log, taken at open
        self.lower = Antichain([0])  # where the next transaction begins
        self.progress = Progress()
        self._stored = 0

    # -- the session -------------------------------------------------------------------------

    def run(self, follow: bool, idle_timeout: float | None) -> Progress:
        resume = self._open()
        self.lower = resume if resume is not None else Antichain([0])
        progress = self.progress = Progress(frontier=self.lower)
        if resume is not None and not resume:  # the shard was closed and everything is
            self._acknowledge_last()  # materialized: the driver may still have to apply it
            return progress
        read = self.storage.register_reader(
            self.spec.shard,
            holder(self.name),
            f"materialization {self.name} into {self.spec.target} holds since at its checkpoint",
        )
        try:
            self._follow(read, resume, follow, idle_timeout)
        except BaseException as e:
            newest = self.log.current_fence(self.name)
            if newest != self.fence:  # a newer instance took over: the hold is its now
                if isinstance(e, ChangeflowError) and not isinstance(e, FencedOff):
                    raise fenced_off(self.name, newest, self.fence) from None
                raise
            if resume is None and not progress.transactions:  # no checkpoint to hold for
                self.storage.release_reader(self.spec.shard, holder(self.name))
            raise
        self._acknowledge_last()
        return progress

    def _follow(
        self, read: ReadCapability, resume: Antichain | None, follow: bool, idle: float | None
    ) -> None:
        """Commit transactions up to the goal (the shard's upper now, or none with ``follow``),
        moving the hold ``read`` to a durable checkpoint at most every ``HOLD_EVERY`` seconds
        and to the last one at the end."""
        progress = self.progress
        goal = None if follow else self.storage.state(self.spec.shard).upper
        held, moved = Antichain([0]), 0.0  # where the hold was last moved to, and when
        pool = ThreadPoolExecutor(1, thread_name_prefix=f"reduce-{self.name}")
        try:
            for step in self._steps(read, resume, goal, idle, pool):
                upper = step.upper
                with _cyclic_gc_paused():
                    self._transaction(step)
                progress.transactions += 1
                progress.updates += step.updates.num_rows
                progress.stores += self._stored
                progress.frontier = upper
                if self.watched:
                    progress.shard_upper = self.storage.state(self.spec.shard).upper
                if upper.elements and time.monotonic() - moved >= HOLD_EVERY:
                    held, moved = self._hold(read, upper), time.monotonic()
                self.on_progress(progress)
                self.after_commit()
                if not upper or (goal is not None and goal <= upper):
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        progress.shard_upper = self.storage.state(self.spec.shard).upper
        # after a failure the hold stays where it was: behind the checkpoint, which is safe
        if progress.transactions and progress.frontier.elements and progress.frontier != held:
            self._hold(read, progress.frontier)

    def _hold(self, read: ReadCapability, checkpoint: Antichain) -> Antichain:
        """Move the hold to a durable checkpoint: a resume reads from its time - 1."""
        self.storage.downgrade(read, checkpoint.elements[0] - 1)
        return checkpoint

    def _open(self) -> Antichain | None:
        """Open the driver; the checkpoint to go on from (None: a fresh start)."""
        self.fence = self.log.fence(self.name)  # older sessions can no longer commit
        runtime_checkpoint, driver_state = self.log.load(self.name)
        self.transport.send(
            Open(
                self.spec.name,
                (self.binding,),
                {"url": self.spec.target},
                key_begin=self.keys.begin,
                key_end=self.keys.end,
                state=driver_state,
            )
        )
        opened = self._expect(Opened)
        failpoint("runtime.after_open")
        if self.authoritative or opened.runtime_checkpoint is not None:
            runtime_checkpoint = opened.runtime_checkpoint
        self.phase = "acknowledge"
        if runtime_checkpoint is None:
            return None
        return Antichain.from_json(runtime_checkpoint["frontier"])

    def _steps(
        self,
        read: ReadCapability,
        resume: Antichain | None,
        goal: Antichain | None,
        idle: float | None,
        pool: Executor,
    ) -> Iterator[_Step]:
        """The shard's updates beyond the checkpoint, cut into transactions, each reduced
        in ``pool`` (see :meth:`_ahead`).

        A fresh start begins with the snapshot where the hold ``read`` is (the shard's since,
        for a new materialization); a resumed one subscribes as of the last time the target
        holds and skips that snapshot.
        """
        since = self.storage.state(self.spec.shard).since
        if resume is None:
            if not read.frontier:
                raise FrontierViolation(f"{self.spec.shard}: the shard is no longer readable")
            as_of = read.frontier.elements[0]
        else:
            as_of = resume.elements[0] - 1
            if not since.less_equal(as_of):
                raise FrontierViolation(
                    f"{self.name}: the target holds the shard up to {resume.to_json()}, "
                    f"but the shard was compacted to {since.to_json()} meanwhile; "
                    "materialize into a new target"
                )
            if not read.frontier.less_equal(as_of):
                raise FrontierViolation(
                    f"{self.name}: the target holds the shard up to {resume.to_json()}, "
                    f"behind this materialization's checkpoint (it holds the shard at "
                    f"{read.frontier.to_json()}): the target is older than its checkpoint; "
                    f"materialize into a new target, or drop {self.spec.name!r} first"
                )
            self.storage.downgrade(read, as_of)
        done = resume if resume is not None else Antichain([as_of])
        if goal is not None and goal <= done:
            return  # nothing new to read: the target holds everything up to the goal
        subscription = self.storage.subscribe_at(read, timeout=None)
        skip_snapshot = resume is not None
        while (step := subscription.next(timeout=idle if goal is None else None)) is not None:
            updates, upper = step
            updates = as_written(updates, self.spec.columns, self.spec.pads)
            updates = self.keys.select(updates, self.binding.key)
            if skip_snapshot:  # the target holds it already
                skip_snapshot = False
                continue
            yield from self._ahead(self._cut(updates, upper), pool)
            if not upper:
                return

    def _ahead(self, cuts: Iterator[tuple[pa.Table, Antichain]], pool: Executor) -> Iterator[_Step]:
        """The transactions of one read, each reduced in ``pool``, the next one's reduction
        begun before this one is handed out: it runs while this one's loads and commit wait
        for the driver. The cuts of one read are in memory, so looking ahead never waits."""
        ahead = None
        for updates, upper in cuts:
            step = self._start(updates, upper, pool)
            if ahead is not None:
                yield ahead
            ahead = step
        if ahead is not None:
            yield ahead

    def _start(self, updates: pa.Table, upper: Antichain, pool: Executor) -> _Step:
        """Begin a transaction's reduction in ``pool``: its changes (and the keys to load),
        and without a load the rows to store too."""
        if self.change_table:
            return _Step(updates, upper, None, None)
        changes = pool.submit(self._changes, updates)
        rows = None if self.loads else pool.submit(self._unloaded, changes, upper)
        return _Step(updates, upper, changes, rows)

    def _changes(self, updates: pa.Table) -> Changes:
        changes = self.reducer.changes(updates)
        if self.loads:
            changes.keys  # noqa: B018 - work out the keys to load here, off the runtime's thread
        return changes

    def _unloaded(self, changes: Future[Changes], upper: Antichain) -> pa.Table:
        """The rows to store of a transaction that loads nothing (the pool has one worker:
        its changes are ready)."""
        return self.reducer.reduce(changes.result(), None, f"at frontier {upper.to_json()}")

    def _cut(self, updates: pa.Table, upper: Antichain) -> Iterator[tuple[pa.Table, Antichain]]:
        """Split a step at time boundaries once a transaction holds ``max_rows`` updates."""
        limit = self.spec.max_rows
        if updates.num_rows <= limit:
            yield updates, upper
            return
        times = updates.column(TIME).to_numpy()
        begin = 0
        while begin < len(times):
            end = min(begin + limit, len(times))
            if end < len(times):  # on to the end of the last time's run of updates
                end = _run_end(times, end)
            cut = Antichain([int(times[end])]) if end < len(times) else upper
            yield updates.slice(begin, end - begin), cut
            begin = end

    # -- one transaction -----------------------------------------------------------------------

    def _transaction(self, step: _Step) -> None:
        updates, upper = step.updates, step.upper
        changes = None if step.changes is None else step.changes.result()
        send = self.transport.send
        send(Acknowledge())
        if changes is not None and self.loads and changes.keys.num_rows:
            send(LoadBatch(0, changes.keys))
        failpoint("runtime.during_loads")
        self._expect(Acknowledged, "acknowledge")
        send(Flush())
        loaded = self._flushed()
        if changes is None:
            rows = self._change_rows(updates)
        elif step.rows is not None:
            rows = step.rows.result()
        else:
            rows = self.reducer.reduce(changes, loaded, f"at frontier {upper.to_json()}")
        if rows.num_rows:
            send(StoreBatch(0, rows))
        self._stored = rows.num_rows
        # The lower frontier names the attempt: a replay starts from the same checkpoint.
        checkpoint = {"frontier": upper.to_json(), "lower": self.lower.to_json()}
        failpoint("runtime.before_start_commit")
        self._send(StartCommit(checkpoint))
        failpoint("runtime.after_start_commit")
        started = self._expect(StartedCommit, "commit")
        failpoint("runtime.before_log_commit")
        durable = not self.authoritative  # else the target's checkpoint is the one that counts
        self.log.commit(self.name, checkpoint, started.state, self.fence, durable)
        self.lower = upper
        failpoint("runtime.after_log_commit")

    def _flushed(self) -> pa.Table:
        """The rows loaded (LoadedBatch, or Loaded per key) up to Flushed, as one table."""
        tables: list[pa.Table] = []
        docs: list[Doc] = []
        self.phase = "load"
        receive = self.transport.receive
        while True:
            response = receive(timeout=600)
            if isinstance(response, Flushed):
                break
            if isinstance(response, LoadedBatch):
                tables.append(conform(response.rows, self.schema, self.spec.target))
            elif isinstance(response, Loaded):
                docs.append(response.doc)
            else:
                self._out_of_order(response)
        if docs:
            tables.append(from_rows(docs, self.schema, self.spec.target))
        if not tables:
            return self.schema.empty_table()
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def _change_rows(self, updates: pa.Table) -> pa.Table:
        """Every update as a row of the change table (data, time, diff), none a delete."""
        n = updates.num_rows
        rows = updates.select(list(self.binding.columns)).cast(self.schema)
        rows = rows.append_column(EXISTS, pa.nulls(n, pa.bool_()))
        return rows.append_column(DELETED, pa.array(np.zeros(n, bool))).cast(
            store_schema(self.binding)
        )

    def _acknowledge_last(self) -> None:
        """Tell the driver the last transaction committed, and wait for it to finish."""
        self._send(Acknowledge())
        failpoint("runtime.during_acknowledge")
        self._expect(Acknowledged, "acknowledge")

    # -- messages ------------------------------------------------------------------------------

    def _send(self, message: Message) -> None:
        self.transport.send(message)

    def _receive(self, phase: str) -> Message:
        self.phase = phase
        return self.transport.receive(timeout=600)

    def _expect(self, kind: type, phase: str = "open") -> Any:
        response = self._receive(phase)
        if not isinstance(response, kind):
            self._out_of_order(response)
        return response

    def _out_of_order(self, response: Message) -> None:
        raise ProtocolViolation(
            f"runtime: {name_of(response)} arrived in the {self.phase} phase of "
            f"materialization {self.name!r}"
        )
