"""The storage layer's API: durable shards (pTVCs) changed only through capabilities.

Every command is one compare-and-set of a shard's next state (or of the catalog), so it is
durable and linearizable when it returns. Data lives in Parquet blobs that are written in full
before any state refers to them; a garbage pass deletes blobs no state refers to.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_dataset
import pyarrow.parquet as pq

from changeflow.config import Config
from changeflow.errors import (
    CapabilityError,
    ChangeflowError,
    FrontierViolation,
    InvalidInput,
    UpperMismatch,
)
from changeflow.failpoints import failpoint
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import (
    Consensus,
    ConsensusUnavailable,
    VersionedData,
    open_consensus,
)
from changeflow.storage.frames import (
    DIFF,
    TIME,
    bound,
    check_data_schema,
    check_spark_frame,
    check_times,
    consolidate,
    empty_frame,
    frame_schema,
    to_frame,
)
from changeflow.storage.state import (
    CATALOG_KEY,
    MAX_TOKENS,
    Batch,
    Catalog,
    CatalogEntry,
    ReadHold,
    ShardState,
    referenced_keys,
)
from changeflow.time import Antichain, check_time

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

T = TypeVar("T")
MINIMUM = 0  # every timeline's times are ints from 0
SPARK_ROWS = 1_000_000  # compaction above this many rows runs on Spark
KEEP_VERSIONS = 16  # consensus versions kept behind the head (and any a hold keeps)
MAX_BATCHES = 16  # beyond this many batches, appends merge a run of small ones
MERGE_RUN = 8  # how many adjacent batches such a merge takes
SMALL_ROWS = 50_000  # ... when they hold at most this many rows together


@dataclass
class ReadCapability:
    """The right to read shard ``shard`` at times at or beyond ``frontier``; a lease."""

    shard: str
    name: str
    id: str
    frontier: Antichain


@dataclass
class WriteCapability:
    """The right to append to shard ``shard`` from ``frontier`` on (compare-and-append)."""

    shard: str
    name: str
    id: str
    frontier: Antichain


Capability = ReadCapability | WriteCapability


class Storage:
    """Shards under one consensus and one blob root; see the module docstring."""

    def __init__(
        self,
        consensus: Consensus,
        blob: Blob,
        lease_seconds: float = 300.0,
        spark_master: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.consensus = consensus
        self.blob = blob
        self.lease_ms = int(lease_seconds * 1000)
        self.spark_master = spark_master
        self.clock = clock

    @classmethod
    def open(cls, config: Config, lease_seconds: float = 300.0) -> Storage:
        return cls(
            open_consensus(config.consensus),
            Blob(config.blob_root),
            lease_seconds,
            config.spark_master,
        )

    def close(self) -> None:
        self.consensus.close()

    # -- the catalog ---------------------------------------------------------------------------

    def create(
        self, name: str, schema: pa.Schema, timeline: str = "epoch_ms"
    ) -> tuple[ReadCapability, WriteCapability]:
        """Bind ``name`` to a new GlobalId and an empty shard ``[since = upper = [0]]``."""
        if not name or not isinstance(name, str) or "/" in name:
            raise InvalidInput(f"a shard name is a non-empty string without '/', not {name!r}")
        check_data_schema(schema)

        def allocate(catalog: Catalog) -> tuple[Catalog, str]:
            if name in catalog.entries:
                raise InvalidInput(f"shard {name!r} exists already; pick another name")
            gid = f"s{catalog.next_id}"
            entries = {**catalog.entries, name: CatalogEntry(gid, schema, timeline)}
            return replace(catalog, next_id=catalog.next_id + 1, entries=entries), gid

        gid = self._change_catalog(allocate)
        read_id, write_id = _new_id(), _new_id()
        minimum = Antichain([MINIMUM])

        def initial(state: ShardState) -> tuple[ShardState, None]:
            hold = ReadHold(minimum, self._now_ms() + self.lease_ms)
            readers = {**state.readers, read_id: hold}
            return replace(
                state, readers=readers, writers={**state.writers, write_id: minimum}
            ), None

        self._change(gid, initial)
        return (
            ReadCapability(gid, name, read_id, minimum),
            WriteCapability(gid, name, write_id, minimum),
        )

    def catalog(self) -> Catalog:
        head = self.consensus.head(CATALOG_KEY)
        return Catalog.decode(head.data, head.seqno) if head else Catalog()

    def shards(self) -> list[str]:
        return sorted(self.catalog().entries)

    def state(self, name: str) -> ShardState:
        """The current state of the shard named ``name``."""
        return self._load(self._entry(name).id)

    def drop_shard(self, name: str) -> None:
        """Unbind ``name`` and release the shard's data; its GlobalId is never used again."""
        gid = self._entry(name).id

        def unbind(catalog: Catalog) -> tuple[Catalog, None]:
            entries = {n: e for n, e in catalog.entries.items() if n != name}
            return replace(catalog, entries=entries), None

        def release(state: ShardState) -> tuple[ShardState, None]:
            return replace(state, readers={}, writers={}, since=Antichain(), batches=()), None

        self._change(gid, release)
        self._change_catalog(unbind)
        self.blob.delete_dir(gid)

    # -- capabilities ------------------------------------------------------------------------

    def acquire_capabilities(self, name: str) -> tuple[ReadCapability, WriteCapability]:
        """Best effort: new capabilities at the shard's current since and upper."""
        entry = self._entry(name)
        read_id, write_id = _new_id(), _new_id()

        def acquire(state: ShardState) -> tuple[ShardState, tuple[Antichain, Antichain]]:
            hold = ReadHold(state.since, self._now_ms() + self.lease_ms)
            state = state.with_readers({**state.readers, read_id: hold})
            state = replace(state, writers={**state.writers, write_id: state.upper})
            return state, (state.since, state.upper)

        since, upper = self._change(entry.id, acquire)
        return (
            ReadCapability(entry.id, name, read_id, since),
            WriteCapability(entry.id, name, write_id, upper),
        )

    def clone(self, cap: Capability) -> Capability:
        """An independent capability with the same shard and frontier."""
        new_id = _new_id()

        def clone(state: ShardState) -> tuple[ShardState, None]:
            if isinstance(cap, ReadCapability):
                hold = self._hold(state, cap)
                readers = {
                    **state.readers,
                    new_id: replace(hold, expires_ms=self._now_ms() + self.lease_ms),
                }
                return replace(state, readers=readers), None
            writers = {**state.writers, new_id: self._writer(state, cap)}
            return replace(state, writers=writers), None

        self._change(cap.shard, clone)
        return replace(cap, id=new_id)

    def downgrade(self, cap: Capability, frontier: Antichain) -> None:
        """Move ``cap`` forward to ``frontier``; never backwards. A read capability's move
        may advance ``since``; it also renews the lease."""
        frontier = _frontier(frontier)
        bound(frontier, "frontier")

        def downgrade(state: ShardState) -> tuple[ShardState, None]:
            held = (
                self._hold(state, cap).frontier
                if isinstance(cap, ReadCapability)
                else (self._writer(state, cap))
            )
            if not held <= frontier:
                raise FrontierViolation(
                    f"{cap.name}: cannot downgrade capability {cap.id} from {held} "
                    f"back to {frontier}"
                )
            if isinstance(cap, ReadCapability):
                hold = ReadHold(frontier, self._now_ms() + self.lease_ms)
                return state.with_readers({**state.readers, cap.id: hold}), None
            return replace(state, writers={**state.writers, cap.id: frontier}), None

        self._change(cap.shard, downgrade)
        cap.frontier = frontier

    def heartbeat(self, cap: ReadCapability) -> None:
        """Renew a read capability's lease; an error if it has expired already."""

        def renew(state: ShardState) -> tuple[ShardState, None]:
            hold = self._hold(state, cap)
            readers = {
                **state.readers,
                cap.id: replace(hold, expires_ms=self._now_ms() + self.lease_ms),
            }
            return replace(state, readers=readers), None

        self._change(cap.shard, renew)

    def drop(self, cap: Capability) -> None:
        """Release ``cap``: it no longer holds back the shard and cannot be used again."""

        def drop(state: ShardState) -> tuple[ShardState, None]:
            if isinstance(cap, ReadCapability):
                return state.with_readers(
                    {i: h for i, h in state.readers.items() if i != cap.id}
                ), None
            return replace(
                state, writers={i: f for i, f in state.writers.items() if i != cap.id}
            ), None

        self._change(cap.shard, drop)
        cap.frontier = Antichain()

    # -- append ------------------------------------------------------------------------------

    def append(
        self,
        cap: WriteCapability,
        updates: Any,
        new_upper: Antichain | int,
        token: str | None = None,
    ) -> None:
        """Append ``updates`` in ``[cap.frontier, new_upper)`` iff ``cap.frontier`` is the upper.

        ``token`` makes a retry after an indeterminate error apply once: give the same token
        to the retry. On success ``cap`` is downgraded to ``new_upper``.
        """
        new_upper = _frontier(new_upper)
        token = token or uuid.uuid4().hex
        state = self._load(cap.shard)
        self._writer(state, cap)
        lower = bound(cap.frontier, "the write capability's frontier")
        upper = bound(new_upper, "the new upper")
        if lower is None:
            raise CapabilityError(
                f"{cap.name}: write capability {cap.id} is at [] and cannot append"
            )
        if upper is not None and upper <= lower:
            raise FrontierViolation(
                f"{cap.name}: the new upper {new_upper} must be beyond the capability's "
                f"frontier {cap.frontier}"
            )
        if token in state.tokens:
            cap.frontier = new_upper
            return
        if state.upper != cap.frontier:
            raise UpperMismatch(cap.name, cap.frontier, state.upper)
        batch = self._write_batch(state, updates, lower, upper, new_upper, cap.name)
        failpoint("append.after_blob")

        def append(state: ShardState) -> tuple[ShardState, ShardState | None]:
            """The new state, twice; None for the second if the token was applied already."""
            if token in state.tokens:  # by this call (a lost reply) or by an earlier call
                return state, None
            self._writer(state, cap)
            if state.upper != cap.frontier:
                raise UpperMismatch(cap.name, cap.frontier, state.upper)
            tokens = {**state.tokens, token: new_upper.to_json()}
            if len(tokens) > MAX_TOKENS:
                tokens = dict(list(tokens.items())[-MAX_TOKENS:])
            batches = state.batches + ((batch,) if batch.rows else ())
            writers = {**state.writers, cap.id: new_upper}
            new = replace(state, upper=new_upper, batches=batches, writers=writers, tokens=tokens)
            return new, new

        try:
            appended = self._change(cap.shard, append, retry_unavailable=True, state=state)
        except (UpperMismatch, CapabilityError):
            self._delete_keys(batch.keys)  # surely not written; after other errors, maybe it was
            raise
        failpoint("append.after_cas")
        cap.frontier = new_upper
        if appended is not None:  # else keep the blobs: any left unreferenced are garbage
            self._tidy(appended)

    def _write_batch(
        self,
        state: ShardState,
        updates: Any,
        lower: int,
        upper: int | None,
        new_upper: Antichain,
        name: str,
    ) -> Batch:
        batch_lower = Antichain([lower])
        if type(updates).__module__.startswith("pyspark"):
            keys, rows = self._write_spark(state, updates, lower, upper, name)
            return Batch(batch_lower, new_upper, state.since, keys, rows)
        table = to_frame(updates, state.schema, name)
        check_times(table, lower, upper, name)
        if not table.num_rows:
            return Batch(batch_lower, new_upper, state.since, (), 0)
        key = f"{state.id}/{uuid.uuid4().hex}.parquet"
        self.blob.set_table(key, table)
        return Batch(batch_lower, new_upper, state.since, (key,), table.num_rows)

    def _write_spark(
        self, state: ShardState, frame: DataFrame, lower: int, upper: int | None, name: str
    ) -> tuple[tuple[str, ...], int]:
        frame, rows = check_spark_frame(frame, state.schema, lower, upper, name)
        return (self._write_parts(frame, state.id), rows) if rows else ((), 0)

    # -- reads -------------------------------------------------------------------------------

    def snapshot(
        self, cap: ReadCapability, as_of: int, spark: SparkSession | None = None
    ) -> DataFrame:
        """The consolidated contents at ``as_of`` (times advanced to it) as a Spark DataFrame.

        The DataFrame reads its blobs lazily; a seqno hold keeps them from the garbage
        collector for the lease duration, even if the shard is compacted meanwhile.
        """
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        hold_id = _new_id()

        def hold(state: ShardState) -> tuple[ShardState, ShardState]:
            self._check_readable(state, cap, as_of)
            now = self._now_ms()
            holds = {i: h for i, h in state.holds.items() if h[1] > now}
            holds[hold_id] = (state.seqno, now + self.lease_ms)
            return replace(state, holds=holds), state

        state = self._change(cap.shard, hold)
        spark = spark or self._spark()
        schema = from_arrow_schema(frame_schema(state.schema))
        keys = [k for b in state.batches if _starts_by(b, as_of) for k in b.keys]
        if not keys:
            return spark.createDataFrame([], schema)
        data = state.schema.names
        frame = spark.read.schema(schema).parquet(*(self.blob.uri(k) for k in keys))
        summed = (
            frame.where(F.col(TIME) <= as_of)
            .groupBy(*data)
            .agg(F.sum(DIFF).alias(DIFF))
            .where(F.col(DIFF) != 0)
        )
        return summed.select(*data, F.lit(as_of).cast("long").alias(TIME), DIFF)

    def snapshot_table(self, cap: ReadCapability, as_of: int) -> pa.Table:
        """The consolidated contents at ``as_of`` as an Arrow table (for small shards)."""
        attempts = 0
        while True:
            state = self._check_readable(self._load(cap.shard), cap, as_of)
            try:
                table = self._read(state, [b for b in state.batches if _starts_by(b, as_of)])
                break
            except FileNotFoundError:  # merged and collected under us: read the new state
                attempts += 1
                if attempts == 3:
                    raise
        table = table.filter(pc.less_equal(table.column(TIME), as_of))
        return consolidate(table, as_of)

    def subscribe_at(
        self, cap: ReadCapability, timeout: float | None = 60.0, poll: float = 0.05
    ) -> Subscription:
        """The snapshot at ``cap``'s frontier, then every later update in order of upper."""
        bound(cap.frontier, "the read capability's frontier")
        self._hold(self._load(cap.shard), cap)
        return Subscription(self, cap, timeout, poll)

    def _read(self, state: ShardState, batches: Iterable[Batch]) -> pa.Table:
        """The updates of ``batches``, read in the driver."""
        paths = [self.blob.path(k) for b in batches for k in b.keys]
        if not paths:
            return empty_frame(state.schema)
        schema = frame_schema(state.schema)
        return pa_dataset.dataset(
            paths, schema, format="parquet", filesystem=self.blob.fs
        ).to_table()

    def _check_readable(self, state: ShardState, cap: ReadCapability, as_of: int) -> ShardState:
        """``state``, if ``cap`` is live and ``as_of`` is in ``[since, upper)``."""
        self._hold(state, cap)
        if isinstance(as_of, bool) or not isinstance(as_of, int):
            raise InvalidInput(f"{cap.name}: as_of is an int time, not {as_of!r}")
        if not state.since.less_equal(as_of) or state.upper.less_equal(as_of):
            raise FrontierViolation(
                f"{cap.name}: cannot read as of {as_of}: readable times are "
                f"[since {state.since.to_json()}, upper {state.upper.to_json()})"
            )
        return state

    # -- compaction and garbage --------------------------------------------------------------

    def compact(self, name: str, spark: SparkSession | None = None) -> tuple[int, int]:
        """Merge all the shard's batches into one, advanced to ``since`` and consolidated.

        Small shards are merged with pyarrow, large ones (or whenever ``spark`` is given) on
        Spark; the new blobs are swapped in by one compare-and-set, so reads are correct
        throughout. Returns the rows before and after.
        """
        state = self.state(name)
        run = state.batches
        if not run or (len(run) == 1 and run[0].since == state.since):
            return state.rows, state.rows
        return self._merge(state, run, spark)

    def _tidy(self, state: ShardState) -> None:
        """Keep the number of batches small: merge the newest run of small adjacent batches.

        Runs after each append, so many small appends cost amortised O(log n) rewriting and
        the state stays small. A failure here leaves the (durable) append as it is.
        """
        batches = state.batches
        if len(batches) <= MAX_BATCHES:
            return
        for at in range(len(batches) - MERGE_RUN, -1, -1):
            run = batches[at : at + MERGE_RUN]
            if sum(b.rows for b in run) <= SMALL_ROWS:
                with contextlib.suppress(OSError, ChangeflowError):
                    self._merge(state, run)
                return

    def _merge(
        self, state: ShardState, run: tuple[Batch, ...], spark: SparkSession | None = None
    ) -> tuple[int, int]:
        """Replace the adjacent batches ``run`` by one, advanced to ``since`` and consolidated."""
        since = state.since
        s = bound(since, "since")
        before = sum(b.rows for b in run)
        if s is None:
            keys, rows = (), 0
        elif before > SPARK_ROWS or spark is not None:
            keys, rows = self._compact_spark(state, run, s, spark)
        else:
            table = consolidate(self._read(state, run), s)
            keys, rows = (), table.num_rows
            if rows:
                keys = (f"{state.id}/{uuid.uuid4().hex}.parquet",)
                self.blob.set_table(keys[0], table)
        batch = Batch(run[0].lower, run[-1].upper, since, keys, rows)
        failpoint("compact.after_blob")

        def swap(state: ShardState) -> tuple[ShardState, bool]:
            batches = state.batches
            at = batches.index(run[0]) if run[0] in batches else -1
            if at < 0 or batches[at : at + len(run)] != run:
                return state, False  # merged by someone else meanwhile: ours is garbage
            merged = batches[:at] + ((batch,) if rows else ()) + batches[at + len(run) :]
            return replace(state, batches=merged), True

        if not self._change(state.id, swap):
            self._delete_keys(keys)
            return before, before
        failpoint("compact.after_cas")
        return before, rows

    def _compact_spark(
        self, state: ShardState, merged: tuple[Batch, ...], since: int, spark: SparkSession | None
    ) -> tuple[tuple[str, ...], int]:
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        spark = spark or self._spark()
        schema = from_arrow_schema(frame_schema(state.schema))
        data = state.schema.names
        frame = spark.read.schema(schema).parquet(
            *(self.blob.uri(k) for b in merged for k in b.keys)
        )
        advanced = frame.withColumn(TIME, F.greatest(F.col(TIME), F.lit(since).cast("long")))
        summed = advanced.groupBy(*data, TIME).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) != 0)
        keys = self._write_parts(summed.select(*schema.names), state.id)
        rows = sum(
            pq.read_metadata(self.blob.path(k), filesystem=self.blob.fs).num_rows for k in keys
        )
        if not rows:
            self._delete_keys(keys)
            return (), 0
        return keys, rows

    def _write_parts(self, frame: DataFrame, gid: str) -> tuple[str, ...]:
        """Write ``frame`` as Parquet blobs under a new folder; return their keys.

        Spark's own markers and checksums are removed: a batch is exactly its Parquet parts.
        """
        folder = f"{gid}/{uuid.uuid4().hex}"
        frame.write.parquet(self.blob.uri(folder), compression="snappy")
        keys = []
        for meta in self.blob.list(folder):
            if meta.key.rsplit("/", 1)[-1].startswith(("_", ".")):
                self.blob.delete(meta.key)
            else:
                keys.append(meta.key)
        return tuple(sorted(keys))

    def collect_garbage(self, name: str, grace_seconds: float = 300.0) -> int:
        """Delete the shard's blobs that no state refers to; return how many were deleted.

        Referenced means by the current state or by any version a live seqno hold keeps (a
        lazy snapshot). Only blobs older than the grace are deleted, so a blob whose append
        or merge is still on its way to compare-and-set is safe.
        """
        gid = self._entry(name).id
        state = self._load(gid)
        now = self._now_ms()
        referenced = state.referenced()
        oldest = state.oldest_held(now)
        while oldest < state.seqno:
            versions = self.consensus.scan(f"shard/{gid}", oldest, 100)
            for version in versions:
                referenced |= referenced_keys(version.data)
            oldest = versions[-1].seqno + 1 if versions else state.seqno
        doomed = [
            m.key
            for m in self.blob.list(gid)
            if m.key not in referenced and now - m.mtime * 1000 >= grace_seconds * 1000
        ]
        for i, key in enumerate(doomed):
            if i == 1:
                failpoint("gc.partway")
            self.blob.delete(key)
        return len(doomed)

    # -- the state machine -------------------------------------------------------------------

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _entry(self, name: str) -> CatalogEntry:
        entry = self.catalog().entries.get(name)
        if entry is None:
            raise InvalidInput(f"no shard named {name!r}; `changeflow shard list` shows the shards")
        return entry

    def _load(self, gid: str) -> ShardState:
        head = self.consensus.head(f"shard/{gid}")
        if head is not None:
            return ShardState.decode(head.data, head.seqno)
        # Created in the catalog, but the process stopped before the shard's first version.
        for name, entry in self.catalog().entries.items():
            if entry.id == gid:
                minimum = Antichain([MINIMUM])
                return ShardState(gid, name, entry.schema, entry.timeline, minimum, minimum)
        raise CapabilityError(f"shard {gid} does not exist (dropped?)")

    def _change(
        self,
        gid: str,
        command: Callable[[ShardState], tuple[ShardState, T]],
        retry_unavailable: bool = False,
        state: ShardState | None = None,
    ) -> T:
        """Apply ``command`` to the head state by compare-and-set, retrying on contention.

        Expired leases are removed first, so they no longer hold back ``since``. With
        ``retry_unavailable`` an indeterminate consensus error is retried: the command must
        recognise its own earlier success (an idempotency token). ``state``, if given, is a
        state just read, to try first.
        """
        key = f"shard/{gid}"
        failures = 0
        while True:
            state = state or self._load(gid)
            now = self._now_ms()
            live = state.live_readers(now)
            base = state.with_readers(live) if len(live) != len(state.readers) else state
            new, result = command(base)
            if new == state:
                return result
            try:
                if self.consensus.compare_and_set(
                    key, state.seqno or None, VersionedData(state.seqno + 1, new.encode())
                ):
                    if (state.seqno + 1) % KEEP_VERSIONS == 0:
                        keep = min(state.seqno + 1 - KEEP_VERSIONS, new.oldest_held(now))
                        self.consensus.truncate(key, keep)
                    return result
                state = None
            except ConsensusUnavailable:
                state = None
                failures += 1
                if not retry_unavailable or failures > 5:
                    raise
                time.sleep(0.1 * failures)

    def _change_catalog(self, command: Callable[[Catalog], tuple[Catalog, T]]) -> T:
        while True:
            catalog = self.catalog()
            new, result = command(catalog)
            expected = catalog.seqno or None
            if self.consensus.compare_and_set(
                CATALOG_KEY, expected, VersionedData(catalog.seqno + 1, new.encode())
            ):
                return result

    def _hold(self, state: ShardState, cap: ReadCapability) -> ReadHold:
        """The durable part of a read capability; an error if it is not live."""
        self._same_shard(state, cap, ReadCapability)
        hold = state.readers.get(cap.id)
        if hold is None:
            raise CapabilityError(
                f"read capability {cap.id} is not a capability of shard {state.name!r} "
                "(dropped, expired, or of another shard); acquire new capabilities"
            )
        if hold.expires_ms <= self._now_ms():
            raise CapabilityError(
                f"{state.name}: the lease of read capability {cap.id} expired at "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(hold.expires_ms / 1000))} UTC; "
                "heartbeat it sooner or acquire new capabilities"
            )
        return hold

    def _writer(self, state: ShardState, cap: WriteCapability) -> Antichain:
        self._same_shard(state, cap, WriteCapability)
        frontier = state.writers.get(cap.id)
        if frontier is None:
            raise CapabilityError(
                f"write capability {cap.id} is not a capability of shard {state.name!r} "
                "(dropped, or of another shard); acquire new capabilities"
            )
        return frontier

    @staticmethod
    def _same_shard(state: ShardState, cap: Any, kind: type) -> None:
        if not isinstance(cap, kind):
            raise CapabilityError(
                f"{state.name}: expected a {kind.__name__}, got {type(cap).__name__}"
            )
        if cap.shard != state.id:
            raise CapabilityError(
                f"capability {cap.id} belongs to shard {cap.name!r} ({cap.shard}), "
                f"not to {state.name!r} ({state.id})"
            )

    def _delete_keys(self, keys: Any) -> None:
        for key in keys:
            self.blob.delete(key)

    def _spark(self) -> SparkSession:
        from changeflow.spark import get_spark

        return get_spark(self.spark_master)


class Subscription:
    """An iterator of ``(updates, upper)``: the snapshot at the capability's frontier, then
    the updates of each later upper, in order. The lease is renewed while it runs."""

    def __init__(
        self, storage: Storage, cap: ReadCapability, timeout: float | None, poll: float
    ) -> None:
        self.storage, self.cap, self.timeout, self.poll = storage, cap, timeout, poll
        self.progress: int | None = None  # updates before this time have been delivered
        self.finished = False  # the upper reached [] and was delivered
        self._renewed = time.monotonic()

    def __iter__(self) -> Iterator[tuple[pa.Table, Antichain]]:
        while True:
            step = self.next(self.timeout)
            if step is None:
                raise TimeoutError(
                    f"{self.cap.name}: nothing new was appended within {self.timeout} s"
                )
            yield step
            if not step[1]:
                return

    def next(self, timeout: float | None = None) -> tuple[pa.Table, Antichain] | None:
        """The next ``(updates, upper)``, waiting up to ``timeout`` seconds (None: no limit).

        None on timeout, and once the upper ``[]`` has been delivered.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        storage = self.storage
        while not self.finished:
            state = storage._load(self.cap.shard)
            storage._hold(state, self.cap)
            if time.monotonic() - self._renewed > storage.lease_ms / 3000:
                storage.heartbeat(self.cap)
                self._renewed = time.monotonic()
            try:
                if self.progress is None:
                    as_of = bound(self.cap.frontier, "the read capability's frontier")
                    if not state.upper.less_equal(as_of):
                        table = storage.snapshot_table(self.cap, as_of)
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
        high = bound(state.upper, "upper")
        table = self.storage._read(state, [b for b in state.batches if not b.upper.less_equal(low)])
        times = table.column(TIME)
        keep = pc.greater_equal(times, low)
        if high is not None:
            keep = pc.and_(keep, pc.less(times, high))
        table = table.filter(keep).sort_by([(TIME, "ascending")])
        self.progress = high
        self.finished = high is None
        return table, state.upper


def _starts_by(batch: Batch, as_of: int) -> bool:
    """Can ``batch`` hold updates at or before ``as_of``?"""
    return batch.lower.less_equal(as_of) or not batch.lower


def _frontier(value: Antichain | int) -> Antichain:
    if isinstance(value, Antichain):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Antichain([check_time(value)])
    raise InvalidInput(f"a frontier is an Antichain or an int time, not {value!r}")


def _new_id() -> str:
    return uuid.uuid4().hex[:16]
