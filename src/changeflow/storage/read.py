"""Read handles: a :class:`ReadCapability` owns its capability and reads the shard under it
(snapshots in Arrow or Spark, and :class:`Subscription`, which replays later updates)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from changeflow.errors import FrontierViolation, Timeout
from changeflow.storage.blob import Blob
from changeflow.storage.frames import consolidate, frame_schema
from changeflow.storage.machine import Machine, new_id
from changeflow.storage.state import Batch, ShardState
from changeflow.time import Antichain, check_int_time, to_bound, to_frontier
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class ReadCapability:
    """The right to read shard ``shard`` at times at or beyond ``frontier``.

    A lease unless ``holder`` is set: then it is a registered reader, which never expires and
    holds ``since`` durably until released (see :meth:`Storage.register_reader`). Only this
    handle moves its frontier.
    """

    def __init__(
        self,
        machine: Machine,
        shard: str,
        name: str,
        id: str,
        frontier: Antichain,
        holder: str | None = None,
    ) -> None:
        self._machine = machine
        self.shard, self.name, self.id, self.holder = shard, name, id, holder
        self._frontier = frontier

    @property
    def frontier(self) -> Antichain:
        return self._frontier

    def __repr__(self) -> str:
        who = f"holder={self.holder!r}" if self.holder else f"id={self.id!r}"
        return f"ReadCapability({self.name!r}, {who}, frontier={self._frontier})"

    # -- the capability ----------------------------------------------------------------------

    def downgrade(self, frontier: Antichain | int | None) -> None:
        """Move forward to ``frontier`` (never back); ``since`` may follow. Renews a lease."""
        frontier = to_frontier(frontier, "frontier")
        to_bound(frontier, "frontier")
        self._machine.downgrade_reader(self, frontier)
        self._frontier = frontier

    def heartbeat(self) -> None:
        """Renew the lease; an error if it has expired already (a registered reader has no
        lease: this only checks that it is still registered)."""
        self._machine.heartbeat(self)

    def drop(self) -> None:
        """Release the capability (a registered reader too): it no longer holds the shard."""
        if self.holder is not None:
            self._machine.release(self.shard, self.holder)
        else:
            self._machine.drop_reader(self)
        self._frontier = Antichain()

    def clone(self) -> ReadCapability:
        """An independent leased read capability at the same frontier."""
        new = new_id()
        frontier = self._machine.clone_reader(self, new)
        return ReadCapability(self._machine, self.shard, self.name, new, frontier)

    def state(self) -> ShardState:
        """The shard's current state; an error if this capability is no longer live."""
        state = self._machine.load(self.shard)
        self._machine.hold(state, self)
        return state

    # -- reads -------------------------------------------------------------------------------

    def snapshot_table(self, as_of: int) -> pa.Table:
        """The consolidated contents at ``as_of`` as an Arrow table (for small shards)."""
        return consolidate(self.updates_until(as_of), as_of)

    def snapshot_updates(self, as_of: int) -> pa.Table:
        """The contents at ``as_of`` as updates at ``as_of``, summed only where a diff is not
        positive: where none is, every row read is in the contents and the updates are their
        multiset as they are (a row may come more than once), with no group-by of the whole."""
        table = self.updates_until(as_of)
        diffs = table.column(DIFF)
        if table.num_rows and pc.min(diffs).as_py() <= 0:
            return consolidate(table, as_of)
        times = pa.repeat(pa.scalar(as_of, pa.int64()), table.num_rows)
        at = table.schema.get_field_index(TIME)
        return table.set_column(at, table.schema.field(at), times)

    def updates_until(
        self, as_of: int, after: int | None = None, state: ShardState | None = None
    ) -> pa.Table:
        """The updates at times up to ``as_of``, not consolidated: the contents at ``as_of``
        once summed (for a reader that sums them itself, as a count or a hash join does).
        With ``after``, only those at times after it (only the batches reaching past it
        are read). ``state``: the shard's state to read (one its caller read already, so
        its head is not read again); its blobs merged and collected meanwhile raise
        FileNotFoundError (without it, the new state is read)."""
        attempts = 0
        while True:
            given, state = state, self._readable(state or self._machine.load(self.shard), as_of)
            batches = [b for b in state.batches if _starts_by(b, as_of)]
            if after is not None:
                batches = [b for b in batches if not b.upper.less_equal(after + 1)]
            try:
                table = self._machine.read(state, batches)
                break
            except FileNotFoundError:  # merged and collected under us: read the new state
                attempts += 1
                if given is not None or attempts == 3:
                    raise
                state = None
        if not table.num_rows:
            return table
        times = table.column(TIME)
        keep = None if pc.max(times).as_py() <= as_of else pc.less_equal(times, as_of)
        if after is not None and pc.min(times).as_py() <= after:
            later = pc.greater(times, after)
            keep = later if keep is None else pc.and_(keep, later)
        return table if keep is None else table.filter(keep)

    def snapshot(
        self, as_of: int, spark: SparkSession | None = None, summed: bool = True
    ) -> DataFrame:
        """The consolidated contents at ``as_of`` (times advanced to it) as a Spark DataFrame;
        with ``summed`` False, the contents as updates at ``as_of``, summed unless the blobs'
        Parquet footers show every diff positive (then a row may come more than once, and no
        shuffle of the whole is needed to read it, as in :meth:`snapshot_updates`).

        The DataFrame reads its blobs lazily; a seqno hold keeps them from the garbage
        collector for the lease duration, even if the shard is compacted meanwhile.
        """
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        state = self._machine.hold_version(self, lambda s: self._readable(s, as_of))
        spark = spark or self._machine.spark()
        schema = from_arrow_schema(frame_schema(state.schema))
        keys = [k for b in state.batches if _starts_by(b, as_of) for k in b.keys]
        if not keys:
            return spark.createDataFrame([], schema)
        data = state.schema.names
        blob = self._machine.blob
        frame = spark.read.schema(schema).parquet(*(blob.uri(k) for k in keys))
        frame = frame.where(F.col(TIME) <= as_of)
        if summed or not all(_diffs_positive(blob, k) for k in keys):
            frame = frame.groupBy(*data).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) != 0)
        return frame.select(*data, F.lit(as_of).cast("long").alias(TIME), DIFF)

    def updates(self, state: ShardState, lower: int, upper: int | None) -> pa.Table:
        """The updates of ``state`` at times in ``[lower, upper)``, in time order."""
        batches = [b for b in state.batches if not b.upper.less_equal(lower)]
        table = self._machine.read(state, batches)
        times = table.column(TIME)
        keep = pc.greater_equal(times, lower)
        if upper is not None:
            keep = pc.and_(keep, pc.less(times, upper))
        return table.filter(keep).sort_by([(TIME, "ascending")])

    def subscribe(
        self,
        timeout: float | None = 60.0,
        poll: float = 0.05,
        snapshot: bool = True,
        summed: bool = True,
    ) -> Subscription:
        """The snapshot at this capability's frontier (unless ``snapshot`` is false: the caller
        read it in bulk), then every later update in order. The snapshot is consolidated unless
        ``summed`` is false: then it is :meth:`ReadCapability.snapshot_updates`."""
        to_bound(self._frontier, "the read capability's frontier")
        self.state()
        renew = self._machine.lease_ms / 3000
        return Subscription(self, timeout, poll, renew, snapshot, summed)

    def _readable(self, state: ShardState, as_of: int) -> ShardState:
        """``state``, if this capability is live and ``as_of`` is in ``[since, upper)``."""
        self._machine.hold(state, self)
        check_int_time(as_of, f"{self.name}: as_of")
        if not state.since.less_equal(as_of) or state.upper.less_equal(as_of):
            raise FrontierViolation(
                f"{self.name}: cannot read as of {as_of}: readable times are "
                f"[since {state.since.to_json()}, upper {state.upper.to_json()})"
            )
        return state


class Subscription:
    """An iterator of ``(updates, upper)``: the snapshot at the capability's frontier, then
    the updates of each later upper, in order. The lease is renewed while it runs."""

    def __init__(
        self,
        cap: ReadCapability,
        timeout: float | None,
        poll: float,
        renew_every: float,
        snapshot: bool = True,
        summed: bool = True,
    ) -> None:
        self.cap, self.timeout, self.poll, self.renew_every = cap, timeout, poll, renew_every
        self.summed = summed
        as_of = to_bound(cap.frontier, "the read capability's frontier")
        # updates before this time have been delivered (None: not even the snapshot)
        self.progress: int | None = None if snapshot or as_of is None else as_of + 1
        self.finished = False  # the upper reached [] and was delivered
        self._renewed = time.monotonic()

    def __iter__(self) -> Iterator[tuple[pa.Table, Antichain]]:
        while True:
            step = self.next(self.timeout)
            if step is None:
                raise Timeout(
                    f"{self.cap.name}: nothing new was appended within {self.timeout} s",
                    seconds=self.timeout,
                )
            yield step
            if not step[1]:
                return

    def next(self, timeout: float | None = None) -> tuple[pa.Table, Antichain] | None:
        """The next ``(updates, upper)``, waiting up to ``timeout`` seconds (None: no limit).

        None on timeout, and once the upper ``[]`` has been delivered.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.finished:
            state = self.cap.state()
            if time.monotonic() - self._renewed > self.renew_every:
                self.cap.heartbeat()
                self._renewed = time.monotonic()
            try:
                if self.progress is None:
                    as_of = to_bound(self.cap.frontier, "the read capability's frontier")
                    assert as_of is not None
                    if not state.upper.less_equal(as_of):
                        read = self.cap.snapshot_table if self.summed else self.cap.snapshot_updates
                        table = read(as_of)
                        self.progress = as_of + 1
                        return table, Antichain([as_of + 1])
                elif not state.upper.less_equal(self.progress):
                    return self._updates(state)
            except FileNotFoundError:
                continue  # merged and collected under us: read the new state
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(self.poll)
        return None

    def skip_to(self, upper: int) -> None:
        """Deliver from ``upper`` on: the caller holds every update before it (it wrote them
        itself, into a shard it read up to their lower)."""
        self.progress = upper

    def _updates(self, state: ShardState) -> tuple[pa.Table, Antichain]:
        low = self.progress
        assert low is not None
        # Compaction moves updates before since to since: with since at ``low`` or beyond,
        # delivered updates would come again, indistinguishable from new ones at ``low``.
        if not state.since.less_than(low):
            raise FrontierViolation(
                f"{self.cap.name}: the subscription has delivered times before {low} but since "
                f"moved on to {state.since.to_json()}; hold the read capability at "
                f"{low - 1} or earlier while subscribed"
            )
        high = to_bound(state.upper, "upper")
        table = self.cap.updates(state, low, high)
        self.progress = high
        self.finished = high is None
        return table, state.upper


def _starts_by(batch: Batch, as_of: int) -> bool:
    """Can ``batch`` hold updates at or before ``as_of``?"""
    return batch.lower.less_equal(as_of) or not batch.lower


def _diffs_positive(blob: Blob, key: str) -> bool:
    """Do the Parquet footer statistics of the blob at ``key`` show every diff positive?"""
    meta = pq.read_metadata(blob.path(key), filesystem=blob.fs)
    column = meta.schema.to_arrow_schema().get_field_index(DIFF)
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(column).statistics
        if stats is None or not stats.has_min_max or stats.min <= 0:
            return False
    return True
