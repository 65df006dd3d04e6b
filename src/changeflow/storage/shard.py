"""The storage layer's API: durable shards (pTVCs) changed only through capabilities.

:class:`Storage` is a facade over the parts, each in its own module, as Materialize's persist
client is: the state machine and its compare-and-set loop (``machine.py``), read handles and
subscriptions (``read.py``), write handles (``write.py``), compaction (``compact.py``) and
garbage collection (``gc.py``). Every command is one compare-and-set of a shard's next state
(or of the catalog), so it is durable and linearizable when it returns. Data lives in Parquet
blobs that are written in full before any state refers to them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from changeflow.config import Config
from changeflow.errors import CapabilityError, InvalidInput, StoreGone
from changeflow.storage import compact, gc, root
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import Consensus, missing_store, open_consensus
from changeflow.storage.frames import check_data_schema
from changeflow.storage.machine import Machine, new_id
from changeflow.storage.read import ReadCapability, Subscription
from changeflow.storage.state import Catalog, Registered, ShardState
from changeflow.storage.write import WriteCapability
from changeflow.time import Antichain

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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
        create: bool = True,
    ) -> None:
        """Shards under ``consensus`` and ``blob``, which must belong together (see
        :mod:`changeflow.storage.root`); ``create`` false only checks that and writes nothing."""
        if create:
            root.claim(consensus, blob)
        else:
            root.check(consensus, blob)
        self.machine = Machine(consensus, blob, lease_seconds, spark_master, clock)
        self._ids: dict[str, str] = {}  # name -> GlobalId, as last found in the catalog

    @classmethod
    def open(cls, config: Config, lease_seconds: float = 300.0, create: bool = True) -> Storage:
        """The store of ``config``. With ``create`` false (commands that only read) a missing
        home, consensus or blob root is an error and no folder or file is created."""
        if create:
            _make_home(config)
        else:
            _check_present(config)
        consensus = open_consensus(config.consensus, create)
        try:
            blob = Blob(config.blob_root, create)
            if not create and not blob.exists():
                where = _where(config, config.blob_root)
                raise InvalidInput(missing_store(where, f"no blob root {config.blob_root}"))
            return cls(consensus, blob, lease_seconds, config.spark_master, create=create)
        except BaseException:
            consensus.close()
            raise

    @property
    def consensus(self) -> Consensus:
        return self.machine.consensus

    @property
    def blob(self) -> Blob:
        return self.machine.blob

    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock that leases are measured by (a test may set its own)."""
        return self.machine.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.machine.clock = clock

    def close(self) -> None:
        self.machine.consensus.close()

    def check_present(self) -> None:
        """Raise :class:`StoreGone` if the consensus file or local blob root this store
        opened was deleted or replaced underneath it (a running process then stops, rather
        than write where nobody will read)."""
        for part, location in (
            (self.consensus, self.consensus.location),
            (self.blob, self.blob.location),
        ):
            if not part.present():
                raise StoreGone(
                    f"the store this process opened is gone: {location} was deleted or "
                    "replaced while it ran"
                )

    # -- the catalog ---------------------------------------------------------------------------

    def create(
        self, name: str, schema: pa.Schema, timeline: str = "epoch_ms", writer: str | None = None
    ) -> tuple[ReadCapability, WriteCapability]:
        """Bind ``name`` to a new GlobalId and an empty shard ``[since = upper = [0]]``; the
        write capability's id is ``writer`` if given (a holder that shares it by name)."""
        if not name or not isinstance(name, str) or "/" in name:
            raise InvalidInput(f"a shard name is a non-empty string without '/', not {name!r}")
        check_data_schema(schema)
        read_id, write_id = new_id(), writer or new_id()
        gid = self.machine.create(name, schema, timeline, read_id, write_id)
        minimum = Antichain([0])
        return (
            ReadCapability(self.machine, gid, name, read_id, minimum),
            WriteCapability(self.machine, gid, name, write_id, minimum),
        )

    def catalog(self) -> Catalog:
        return self.machine.catalog()

    def shards(self) -> list[str]:
        return sorted(self.catalog().entries)

    def state(self, name: str) -> ShardState:
        """The current state of the shard named ``name``. A GlobalId is never bound twice, so
        the id a name had stands while its shard is not dropped (a dropped shard's since is
        empty): the catalog is read again only then."""
        gid = self._ids.get(name)
        if gid is not None:
            state = self.machine.decoded_states.head(f"shard/{gid}")[1]
            if state is not None and state.since.elements:
                return state
        gid = self.machine.entry(name).id
        self._ids[name] = gid
        return self.machine.load(gid)

    def evolve(self, name: str, schema: pa.Schema) -> None:
        """Keep, drop or append (nullable) columns of the shard ``name``; older batches read
        NULL in appended columns."""
        self.machine.evolve(name, schema)

    def drop_shard(self, name: str, force: bool = False) -> None:
        """Unbind ``name`` and release the shard's data; its GlobalId is never used again.

        Refused while registered readers hold the shard (the error names them), unless
        ``force``.
        """
        self.machine.drop_shard(name, force)

    # -- capabilities ------------------------------------------------------------------------

    def acquire_capabilities(self, name: str) -> tuple[ReadCapability, WriteCapability]:
        """Best effort: new capabilities at the shard's current since and upper."""
        read_id, write_id = new_id(), new_id()
        got = self.machine.acquire(name, read_id, write_id)
        return (
            ReadCapability(self.machine, got.gid, name, read_id, got.since),
            WriteCapability(self.machine, got.gid, name, write_id, got.upper),
        )

    def register_reader(self, name: str, holder: str, reason: str) -> ReadCapability:
        """A durable read capability of ``holder`` (a stable name, such as
        ``"materialization:orders-to-sqlite"``) that holds ``since`` until released.

        It has no lease: it survives its process and holds ``since`` across restarts. If
        ``holder`` is registered already, this resumes it at its stored frontier (and records
        ``reason``); else it starts at the shard's current since.
        """
        if not holder or not isinstance(holder, str):
            raise InvalidInput(f"a reader's holder is a non-empty string, not {holder!r}")
        got = self.machine.register(name, holder, reason)
        return ReadCapability(self.machine, got.gid, name, holder, got.since, holder)

    def release_reader(self, name: str, holder: str) -> bool:
        """Remove the registered reader ``holder``; False if it was not registered."""
        return self.machine.release(self.machine.entry(name).id, holder)

    def registered_readers(self, name: str) -> dict[str, Registered]:
        """The registered readers of shard ``name``: holder -> (frontier, reason)."""
        return dict(self.state(name).registered)

    def clone(self, cap: Capability) -> Capability:
        """An independent capability with the same shard and frontier (a read capability's
        clone is leased, even of a registered reader)."""
        return _capability(cap).clone()

    def downgrade(self, cap: Capability, frontier: Antichain | int) -> None:
        """Move ``cap`` forward to ``frontier``; never backwards. A read capability's move
        may advance ``since``; it also renews the lease."""
        _capability(cap).downgrade(frontier)

    def heartbeat(self, cap: ReadCapability) -> None:
        """Renew a read capability's lease; an error if it has expired already. A registered
        reader has no lease: for it this only checks that it is still registered."""
        _reader(cap).heartbeat()

    def drop(self, cap: Capability) -> None:
        """Release ``cap``: it no longer holds back the shard and cannot be used again."""
        _capability(cap).drop()

    # -- data --------------------------------------------------------------------------------

    def append(
        self,
        cap: WriteCapability,
        updates: Any,
        new_upper: Antichain | int,
        token: str | None = None,
    ) -> int | None:
        """Append ``updates`` in ``[cap.frontier, new_upper)`` iff ``cap.frontier`` is the upper,
        and return how many were appended (None for a retry whose append had applied).

        ``token`` makes a retry after an indeterminate error apply once: give the same token
        to the retry. On success ``cap`` is downgraded to ``new_upper``.
        """
        return _writer(cap).append(updates, new_upper, token)

    def snapshot(
        self,
        cap: ReadCapability,
        as_of: int,
        spark: SparkSession | None = None,
        summed: bool = True,
    ) -> DataFrame:
        """The consolidated contents at ``as_of`` (times advanced to it) as a Spark DataFrame,
        read lazily; its blobs are kept from the garbage collector for the lease duration.
        With ``summed`` False, rows may come more than once where no diff is negative."""
        return _reader(cap).snapshot(as_of, spark, summed)

    def snapshot_table(self, cap: ReadCapability, as_of: int) -> pa.Table:
        """The consolidated contents at ``as_of`` as an Arrow table (for small shards)."""
        return _reader(cap).snapshot_table(as_of)

    def subscribe_at(
        self,
        cap: ReadCapability,
        timeout: float | None = 60.0,
        poll: float = 0.05,
        snapshot: bool = True,
        summed: bool = True,
    ) -> Subscription:
        """The snapshot at ``cap``'s frontier (unless ``snapshot`` is false), then every later
        update in order of upper; the snapshot consolidated unless ``summed`` is false (then
        its updates are a multiset, as later ones are: see ``ReadCapability.snapshot_updates``)."""
        return _reader(cap).subscribe(timeout, poll, snapshot, summed)

    # -- compaction and garbage --------------------------------------------------------------

    def compact(self, name: str, spark: SparkSession | None = None) -> tuple[int, int]:
        """Merge all the shard's batches into one, advanced to ``since`` and consolidated
        (on Spark for large shards or when ``spark`` is given); rows before and after."""
        return compact.compact(self.machine, name, spark)

    def collect_garbage(self, name: str, grace_seconds: float = 300.0) -> int:
        """Delete the shard's unreferenced blobs older than the grace (only blobs provably
        its own); return how many were deleted."""
        return gc.collect_garbage(self.machine, name, grace_seconds)


def _capability(cap: Any) -> Capability:
    if not isinstance(cap, ReadCapability | WriteCapability):
        raise CapabilityError(f"expected a ReadCapability or WriteCapability, not {cap!r}")
    return cap


def _reader(cap: Any) -> ReadCapability:
    return _expect(cap, ReadCapability)


def _writer(cap: Any) -> WriteCapability:
    return _expect(cap, WriteCapability)


def _expect(cap: Any, kind: type) -> Any:
    if not isinstance(cap, kind):
        raise CapabilityError(
            f"{getattr(cap, 'name', '?')}: expected a {kind.__name__}, got {type(cap).__name__}"
        )
    return cap


def _sqlite_path(config: Config) -> Path | None:
    location = config.consensus
    return Path(location.removeprefix("sqlite:")) if location.startswith("sqlite:") else None


def _inside(path: Path | str, folder: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(folder))


def _where(config: Config, path: Path | str) -> str:
    """The place to name when ``path`` is missing: the home if it lies there."""
    return str(config.home) if _inside(path, config.home) else str(path)


def _make_home(config: Config) -> None:
    """Create the home if the consensus file lives in it (a consensus elsewhere must have its
    folder already: a typo must not create folders anywhere)."""
    path = _sqlite_path(config)
    if path is not None and _inside(path, config.home):
        path.parent.mkdir(parents=True, exist_ok=True)


def _check_present(config: Config) -> None:
    """A read-only open: the SQLite consensus file (if any) must exist."""
    path = _sqlite_path(config)
    if path is not None and not path.exists():
        home_missing = _inside(path, config.home) and not config.home.exists()
        why = "the folder does not exist" if home_missing else f"no consensus file {path}"
        raise InvalidInput(missing_store(_where(config, path), why))
