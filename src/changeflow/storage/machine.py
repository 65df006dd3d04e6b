"""The shard state machine: every state transition, each applied by one compare-and-set.

A command is a pure function from the head state to the next state and a result; the loop
in :meth:`Machine.change` applies it to the head by compare-and-set, retrying on contention,
so a transition is durable and linearizable when it returns. Handles (``read.py``,
``write.py``), compaction and garbage collection change state only through here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pyarrow as pa
import pyarrow.dataset as pa_dataset

from changeflow.errors import (
    CapabilityError,
    ConsensusUnavailable,
    FrontierViolation,
    InvalidInput,
    UpperMismatch,
)
from changeflow.storage.blob import Blob
from changeflow.storage.cache import BlobCache
from changeflow.storage.consensus import Consensus, Decoded, VersionedData
from changeflow.storage.frames import check_data_schema, empty_frame, frame_schema
from changeflow.storage.state import (
    CATALOG_KEY,
    MAX_TOKENS,
    Batch,
    Catalog,
    CatalogEntry,
    ReadHold,
    Registered,
    ShardState,
    new_shard_id,
)
from changeflow.time import Antichain

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")
MINIMUM = 0  # every timeline's times are ints from 0
KEEP_VERSIONS = 16  # consensus versions kept behind the head (and any a hold keeps)
NEVER = 2**63 - 1  # the expiry of a registered reader, which has no lease
Command = Callable[[ShardState], tuple[ShardState, T]]


class CapabilityId(Protocol):
    """What the machine needs to know of a capability: whose it is."""

    @property
    def shard(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def id(self) -> str: ...


class ReaderId(CapabilityId, Protocol):
    @property
    def holder(self) -> str | None: ...


@dataclass(frozen=True)
class Acquired:
    """What a transition that hands out capabilities returns."""

    gid: str
    since: Antichain
    upper: Antichain


def new_id() -> str:
    return uuid.uuid4().hex[:16]


class Machine:
    """The consensus and blob of one store, and every shard and catalog transition."""

    def __init__(
        self,
        consensus: Consensus,
        blob: Blob,
        lease_seconds: float,
        spark_master: str | None,
        clock: Callable[[], float],
    ) -> None:
        self.consensus = consensus
        self.blob = blob
        self.lease_ms = int(lease_seconds * 1000)
        self.spark_master = spark_master
        self.clock = clock
        self._empty: dict[tuple[Any, ...], pa.Table] = {}  # empty frames by schema
        self.cache = BlobCache()
        self.decoded_states = Decoded(consensus, lambda h: ShardState.decode(h.data, h.seqno))
        self.decoded_catalog = Decoded(consensus, lambda h: Catalog.decode(h.data, h.seqno))

    # -- reading state ---------------------------------------------------------------------

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def catalog(self) -> Catalog:
        return self.decoded_catalog.head(CATALOG_KEY)[1] or Catalog()

    def entry(self, name: str) -> CatalogEntry:
        entry = self.catalog().entries.get(name)
        if entry is None:
            raise InvalidInput(f"no shard named {name!r}; `changeflow shard list` shows the shards")
        return entry

    def load(self, gid: str) -> ShardState:
        state = self.decoded_states.head(f"shard/{gid}")[1]
        if state is not None:
            return state
        # Created in the catalog, but the process stopped before the shard's first version.
        for name, entry in self.catalog().entries.items():
            if entry.id == gid:
                minimum = Antichain([MINIMUM])
                return ShardState(gid, name, entry.schema, entry.timeline, minimum, minimum)
        raise CapabilityError(f"shard {gid} does not exist (dropped?)")

    def hold(self, state: ShardState, cap: ReaderId) -> ReadHold:
        """The durable part of a read capability; an error if it is not live."""
        self._same_shard(state, cap)
        if cap.holder is not None:
            registered = state.registered.get(cap.holder)
            if registered is None:
                raise CapabilityError(
                    f"{state.name}: reader {cap.holder!r} is no longer registered (released "
                    "or dropped); register it again"
                )
            return ReadHold(registered.frontier, NEVER)
        hold = state.readers.get(cap.id)
        if hold is None:
            raise CapabilityError(
                f"read capability {cap.id} is not a capability of shard {state.name!r} "
                "(dropped, expired, or of another shard); acquire new capabilities"
            )
        if hold.expires_ms <= self.now_ms():
            raise CapabilityError(
                f"{state.name}: the lease of read capability {cap.id} expired at "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(hold.expires_ms / 1000))} UTC; "
                "heartbeat it sooner or acquire new capabilities"
            )
        return hold

    def writer(self, state: ShardState, cap: CapabilityId) -> Antichain:
        """A write capability's frontier; an error if it is not one of the shard's."""
        self._same_shard(state, cap)
        frontier = state.writers.get(cap.id)
        if frontier is None:
            raise CapabilityError(
                f"write capability {cap.id} is not a capability of shard {state.name!r} "
                "(dropped, or of another shard); acquire new capabilities"
            )
        return frontier

    @staticmethod
    def _same_shard(state: ShardState, cap: CapabilityId) -> None:
        if cap.shard != state.id:
            raise CapabilityError(
                f"capability {cap.id} belongs to shard {cap.name!r} ({cap.shard}), "
                f"not to {state.name!r} ({state.id})"
            )

    def read(self, state: ShardState, batches: Iterable[Batch]) -> pa.Table:
        """The updates of ``batches``, read in the driver (each blob decoded once while it
        stays in :attr:`cache`)."""
        keys = [k for b in batches for k in b.keys]
        if not keys:  # (an empty table costs 0.1 ms to make: one kept per schema)
            key = (state.schema, tuple(sorted((state.schema.metadata or {}).items())))
            empty = self._empty.get(key)
            if empty is None:
                if len(self._empty) >= 256:
                    self._empty.clear()
                empty = self._empty[key] = empty_frame(state.schema)
            return empty
        schema = frame_schema(state.schema)
        tables = []
        for key in keys:
            table = self.cache.get(key, schema)
            if table is None:
                table = pa_dataset.dataset(
                    [self.blob.path(key)], schema, format="parquet", filesystem=self.blob.fs
                ).to_table()
                self.cache.put(key, schema, table)
            tables.append(table)
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def spark(self) -> SparkSession:
        from changeflow.spark import get_spark

        return get_spark(self.spark_master)

    def delete_keys(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.blob.delete(key)
            self.cache.forget(key)

    # -- the catalog -----------------------------------------------------------------------

    def create(
        self, name: str, schema: pa.Schema, timeline: str, read_id: str, write_id: str
    ) -> str:
        """Bind ``name`` to a new GlobalId and an empty shard ``[since = upper = [0]]`` held by
        a read and a write capability; return the GlobalId."""

        def allocate(catalog: Catalog) -> tuple[Catalog, str]:
            if name in catalog.entries:
                raise InvalidInput(f"shard {name!r} exists already; pick another name")
            gid = new_shard_id()
            entries = {**catalog.entries, name: CatalogEntry(gid, schema, timeline)}
            return replace(catalog, entries=entries), gid

        gid = self.change_catalog(allocate)
        minimum = Antichain([MINIMUM])

        def initial(state: ShardState) -> tuple[ShardState, None]:
            hold = ReadHold(minimum, self.now_ms() + self.lease_ms)
            readers = {**state.readers, read_id: hold}
            return replace(
                state, readers=readers, writers={**state.writers, write_id: minimum}
            ), None

        self.change(gid, initial)
        return gid

    def evolve(self, name: str, schema: pa.Schema) -> None:
        """Change the data schema of the shard ``name`` to ``schema``: columns kept with their
        types, dropped, or appended (nullable). Batches are read by column name, so a dropped
        column is no longer read and an appended one reads as NULL in older batches."""
        check_data_schema(schema)
        entry = self.entry(name)
        old = {f.name: f for f in entry.schema}
        for f in schema:
            kept = old.get(f.name)
            if kept is None and not f.nullable:
                raise InvalidInput(f"{name}: an added column ({f.name!r}) must be nullable")
            if kept is not None and kept.type != f.type:
                raise InvalidInput(
                    f"{name}: column {f.name!r} cannot change its type ({kept.type} to {f.type})"
                )
        self.change(entry.id, lambda state: (replace(state, schema=schema), None))

        def rebind(catalog: Catalog) -> tuple[Catalog, None]:
            current = catalog.entries[name]
            entries = {**catalog.entries, name: replace(current, schema=schema)}
            return replace(catalog, entries=entries), None

        self.change_catalog(rebind)

    def drop_shard(self, name: str, force: bool) -> None:
        """Unbind ``name`` and release the shard's data; refused while registered readers
        hold it, unless ``force``."""
        gid = self.entry(name).id

        def release(state: ShardState) -> tuple[ShardState, None]:
            if state.registered and not force:
                holders = ", ".join(f"{h} ({r.reason})" for h, r in state.registered.items())
                raise CapabilityError(
                    f"shard {name!r} is held by registered readers: {holders}; release them "
                    "first, or force the drop (`changeflow shard drop --force`)",
                    holders=sorted(state.registered),
                )
            released = replace(state, readers={}, registered={}, writers={}, batches=())
            return replace(released, since=Antichain()), None

        def unbind(catalog: Catalog) -> tuple[Catalog, None]:
            entries = {n: e for n, e in catalog.entries.items() if n != name}
            return replace(catalog, entries=entries), None

        self.change(gid, release)
        self.change_catalog(unbind)
        self.blob.delete_dir(gid)

    # -- capabilities ----------------------------------------------------------------------

    def acquire(self, name: str, read_id: str, write_id: str) -> Acquired:
        """New capabilities at the shard's current since and upper."""
        gid = self.entry(name).id

        def acquire(state: ShardState) -> tuple[ShardState, Acquired]:
            hold = ReadHold(state.since, self.now_ms() + self.lease_ms)
            state = state.with_readers({**state.readers, read_id: hold})
            state = replace(state, writers={**state.writers, write_id: state.upper})
            return state, Acquired(gid, state.since, state.upper)

        return self.change(gid, acquire)

    def register(self, name: str, holder: str, reason: str) -> Acquired:
        """Register ``holder`` (or resume it at its stored frontier) with ``reason``."""
        gid = self.entry(name).id

        def register(state: ShardState) -> tuple[ShardState, Acquired]:
            held = state.registered.get(holder)
            frontier = held.frontier if held else state.since
            registered = {**state.registered, holder: Registered(frontier, reason)}
            return state.with_readers(state.readers, registered), Acquired(
                gid, frontier, state.upper
            )

        return self.change(gid, register)

    def release(self, gid: str, holder: str) -> bool:
        """Remove registered reader ``holder``; False if it was not registered."""

        def release(state: ShardState) -> tuple[ShardState, bool]:
            if holder not in state.registered:
                return state, False
            registered = {h: r for h, r in state.registered.items() if h != holder}
            return state.with_readers(state.readers, registered), True

        return self.change(gid, release)

    def clone_reader(self, cap: ReaderId, new: str) -> Antichain:
        """A new leased reader ``new`` at ``cap``'s frontier; return that frontier."""

        def clone(state: ShardState) -> tuple[ShardState, Antichain]:
            hold = self.hold(state, cap)
            lease = ReadHold(hold.frontier, self.now_ms() + self.lease_ms)
            return replace(state, readers={**state.readers, new: lease}), hold.frontier

        return self.change(cap.shard, clone)

    def clone_writer(self, cap: CapabilityId, new: str) -> Antichain:
        def clone(state: ShardState) -> tuple[ShardState, Antichain]:
            frontier = self.writer(state, cap)
            return replace(state, writers={**state.writers, new: frontier}), frontier

        return self.change(cap.shard, clone)

    def downgrade_reader(self, cap: ReaderId, frontier: Antichain) -> None:
        """Move a read capability to ``frontier`` (never back); ``since`` may follow. Renews
        a lease."""

        def downgrade(state: ShardState) -> tuple[ShardState, None]:
            _forward(cap, self.hold(state, cap).frontier, frontier)
            if cap.holder is not None:
                reason = state.registered[cap.holder].reason
                registered = {**state.registered, cap.holder: Registered(frontier, reason)}
                return state.with_readers(state.readers, registered), None
            hold = ReadHold(frontier, self.now_ms() + self.lease_ms)
            return state.with_readers({**state.readers, cap.id: hold}), None

        self.change(cap.shard, downgrade)

    def downgrade_writer(self, cap: CapabilityId, frontier: Antichain) -> None:
        def downgrade(state: ShardState) -> tuple[ShardState, None]:
            _forward(cap, self.writer(state, cap), frontier)
            return replace(state, writers={**state.writers, cap.id: frontier}), None

        self.change(cap.shard, downgrade)

    def heartbeat(self, cap: ReaderId) -> None:
        """Renew a lease (a registered reader has none: only check it is registered)."""

        def renew(state: ShardState) -> tuple[ShardState, None]:
            hold = self.hold(state, cap)
            if cap.holder is not None:
                return state, None
            lease = replace(hold, expires_ms=self.now_ms() + self.lease_ms)
            return replace(state, readers={**state.readers, cap.id: lease}), None

        self.change(cap.shard, renew)

    def drop_reader(self, cap: ReaderId) -> None:
        def drop(state: ShardState) -> tuple[ShardState, None]:
            if cap.holder is not None:
                registered = {h: r for h, r in state.registered.items() if h != cap.holder}
                return state.with_readers(state.readers, registered), None
            readers = {i: h for i, h in state.readers.items() if i != cap.id}
            return state.with_readers(readers), None

        self.change(cap.shard, drop)

    def drop_writer(self, cap: CapabilityId) -> None:
        def drop(state: ShardState) -> tuple[ShardState, None]:
            writers = {i: f for i, f in state.writers.items() if i != cap.id}
            return replace(state, writers=writers), None

        self.change(cap.shard, drop)

    # -- data ------------------------------------------------------------------------------

    def append(
        self,
        cap: CapabilityId,
        expected: Antichain,
        batch: Batch,
        new_upper: Antichain,
        token: str,
        state: ShardState,
    ) -> ShardState | None:
        """Compare-and-append: add ``batch`` iff the upper is ``expected``; the new state,
        or None if ``token`` was applied already (a retry after a lost reply)."""

        def append(state: ShardState) -> tuple[ShardState, ShardState | None]:
            if token in state.tokens:  # by this call (a lost reply) or by an earlier call
                return state, None
            self.writer(state, cap)
            if state.upper != expected:
                raise UpperMismatch(cap.name, expected, state.upper)
            tokens = {**state.tokens, token: new_upper.to_json()}
            if len(tokens) > MAX_TOKENS:
                tokens = dict(list(tokens.items())[-MAX_TOKENS:])
            batches = state.batches + ((batch,) if batch.rows else ())
            writers = {**state.writers, cap.id: new_upper}
            new = replace(state, upper=new_upper, batches=batches, writers=writers, tokens=tokens)
            return new, new

        return self.change(cap.shard, append, retry_unavailable=True, state=state)

    def hold_version(self, cap: ReaderId, check: Callable[[ShardState], object]) -> ShardState:
        """Keep the head version's blobs from the garbage collector for a lease (a lazy
        snapshot reads them later); ``check`` validates the read first."""
        hold_id = new_id()

        def hold(state: ShardState) -> tuple[ShardState, ShardState]:
            check(state)
            now = self.now_ms()
            holds = {i: h for i, h in state.holds.items() if h[1] > now}
            holds[hold_id] = (state.seqno, now + self.lease_ms)
            return replace(state, holds=holds), state

        return self.change(cap.shard, hold)

    def swap(self, gid: str, run: tuple[Batch, ...], batch: Batch) -> bool:
        """Replace the adjacent batches ``run`` by ``batch``; False if they are gone (merged
        by someone else meanwhile)."""

        def swap(state: ShardState) -> tuple[ShardState, bool]:
            batches = state.batches
            at = batches.index(run[0]) if run[0] in batches else -1
            if at < 0 or batches[at : at + len(run)] != run:
                return state, False
            merged = batches[:at] + ((batch,) if batch.rows else ()) + batches[at + len(run) :]
            return replace(state, batches=merged), True

        return self.change(gid, swap)

    # -- the compare-and-set loop ----------------------------------------------------------

    def change(
        self,
        gid: str,
        command: Command[T],
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
            state = state or self.load(gid)
            now = self.now_ms()
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
                        self.consensus.truncate_later(key, keep)
                    return result
                state = None
            except ConsensusUnavailable:
                state = None
                failures += 1
                if not retry_unavailable or failures > 5:
                    raise
                time.sleep(0.1 * failures)

    def change_catalog(self, command: Callable[[Catalog], tuple[Catalog, T]]) -> T:
        while True:
            catalog = self.catalog()
            new, result = command(catalog)
            expected = catalog.seqno or None
            if self.consensus.compare_and_set(
                CATALOG_KEY, expected, VersionedData(catalog.seqno + 1, new.encode())
            ):
                return result


def _forward(cap: CapabilityId, held: Antichain, frontier: Antichain) -> None:
    """An error unless ``frontier`` is at or beyond ``held``."""
    if not held <= frontier:
        raise FrontierViolation(
            f"{cap.name}: cannot downgrade capability {cap.id} from {held} back to {frontier}"
        )
