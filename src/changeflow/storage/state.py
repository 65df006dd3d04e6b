"""The durable state of shards and of the catalog: frozen values with a JSON encoding.

A shard's state is one consensus value; every change to it is a compare-and-set of the next
version. The catalog maps names to GlobalIds and allocates new ids, never reusing one.
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import pyarrow as pa

from changeflow.time import Antichain

CATALOG_KEY = "catalog"
MAX_TOKENS = 64  # idempotency tokens remembered per shard


def _frontier_from_json(value: list[Any]) -> Antichain:
    """Decode a stored frontier; one int (the common case) skips the general parser."""
    if len(value) == 1 and type(value[0]) is int:
        return Antichain.single(value[0])
    return Antichain.from_json(value)


def referenced_keys(data: bytes) -> set[str]:
    """The blob keys an encoded shard state refers to, without decoding the rest."""
    return {k for b in json.loads(data)["batches"] for k in b["keys"]}


@dataclass(frozen=True)
class Batch:
    """Blobs holding every update of a shard in ``[lower, upper)``, advanced to ``since``."""

    lower: Antichain
    upper: Antichain
    since: Antichain
    keys: tuple[str, ...]
    rows: int

    def to_json(self) -> dict[str, Any]:
        return {
            "lower": self.lower.to_json(),
            "upper": self.upper.to_json(),
            "since": self.since.to_json(),
            "keys": list(self.keys),
            "rows": self.rows,
        }

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> Batch:
        return cls(
            _frontier_from_json(v["lower"]),
            _frontier_from_json(v["upper"]),
            _frontier_from_json(v["since"]),
            tuple(v["keys"]),
            v["rows"],
        )


@dataclass(frozen=True)
class ReadHold:
    """A read capability's durable part: its frontier and when its lease runs out."""

    frontier: Antichain
    expires_ms: int


class Registered(NamedTuple):
    """A registered reader's durable part: its frontier and why it holds the shard.

    It has no lease: it holds ``since`` across processes and restarts until released.
    """

    frontier: Antichain
    reason: str


@dataclass(frozen=True)
class ShardState:
    """``[schema, timeline, since, upper, batches]`` plus the capabilities that move them."""

    id: str
    name: str
    schema: pa.Schema
    timeline: str
    since: Antichain
    upper: Antichain
    batches: tuple[Batch, ...] = ()
    readers: dict[str, ReadHold] = field(default_factory=dict)
    registered: dict[str, Registered] = field(default_factory=dict)  # holder -> hold
    writers: dict[str, Antichain] = field(default_factory=dict)
    tokens: dict[str, list[Any]] = field(default_factory=dict)  # token -> new upper (JSON)
    holds: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (seqno, expires)
    seqno: int = 0  # the consensus version this state was read from (not encoded)

    @property
    def rows(self) -> int:
        return sum(b.rows for b in self.batches)

    def live_readers(self, now_ms: int) -> dict[str, ReadHold]:
        return {i: h for i, h in self.readers.items() if h.expires_ms > now_ms}

    def with_readers(
        self,
        readers: dict[str, ReadHold],
        registered: dict[str, Registered] | None = None,
    ) -> ShardState:
        """Replace the leased (and, if given, the registered) read capabilities; ``since``
        becomes the meet of them all (and never goes back).

        With no read capability left, ``since`` stays where it is: nobody asks it to move.
        """
        registered = self.registered if registered is None else registered
        frontiers = [h.frontier for h in readers.values()]
        frontiers += [r.frontier for r in registered.values()]
        since = self.since
        if frontiers:
            meet = Antichain()
            for frontier in frontiers:
                meet = meet.meet(frontier)
            if self.since <= meet:
                since = meet
        return replace(self, readers=readers, registered=registered, since=since)

    def referenced(self) -> set[str]:
        return {k for b in self.batches for k in b.keys}

    def oldest_held(self, now_ms: int) -> int:
        """The oldest version a live seqno hold keeps readable (the head's seqno if none)."""
        return min((s for s, e in self.holds.values() if e > now_ms), default=self.seqno)

    def encode(self) -> bytes:
        return json.dumps(
            {
                "id": self.id,
                "name": self.name,
                "schema": encode_schema(self.schema),
                "timeline": self.timeline,
                "since": self.since.to_json(),
                "upper": self.upper.to_json(),
                "batches": [b.to_json() for b in self.batches],
                "readers": {
                    i: [h.frontier.to_json(), h.expires_ms] for i, h in self.readers.items()
                },
                "registered": {
                    h: [r.frontier.to_json(), r.reason] for h, r in self.registered.items()
                },
                "writers": {i: f.to_json() for i, f in self.writers.items()},
                "tokens": self.tokens,
                "holds": {i: list(h) for i, h in self.holds.items()},
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, data: bytes, seqno: int) -> ShardState:
        v = json.loads(data)
        return cls(
            id=v["id"],
            name=v["name"],
            schema=decode_schema(v["schema"]),
            timeline=v["timeline"],
            since=_frontier_from_json(v["since"]),
            upper=_frontier_from_json(v["upper"]),
            batches=tuple(Batch.from_json(b) for b in v["batches"]),
            readers={i: ReadHold(Antichain.from_json(f), e) for i, (f, e) in v["readers"].items()},
            registered={
                h: Registered(Antichain.from_json(f), reason)
                for h, (f, reason) in v.get("registered", {}).items()
            },
            writers={i: Antichain.from_json(f) for i, f in v["writers"].items()},
            tokens=v["tokens"],
            holds={i: (h[0], h[1]) for i, h in v["holds"].items()},
            seqno=seqno,
        )


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    schema: pa.Schema
    timeline: str


@dataclass(frozen=True)
class Catalog:
    """Names to GlobalIds. A new id is ``s`` and a UUID, unique across every store, so an id
    is never bound twice and no two stores' shards share a blob prefix. (Stores from before
    kept a counter, ``s1``, ``s2``…; their ids still load.)"""

    entries: dict[str, CatalogEntry] = field(default_factory=dict)
    seqno: int = 0

    def encode(self) -> bytes:
        entries = {
            n: {"id": e.id, "schema": encode_schema(e.schema), "timeline": e.timeline}
            for n, e in self.entries.items()
        }
        return json.dumps({"entries": entries}).encode()

    @classmethod
    def decode(cls, data: bytes, seqno: int) -> Catalog:
        v = json.loads(data)
        entries = {
            n: CatalogEntry(e["id"], decode_schema(e["schema"]), e["timeline"])
            for n, e in v["entries"].items()
        }
        return cls(entries, seqno)


def new_shard_id() -> str:
    """A globally unique shard id."""
    return f"s{uuid.uuid4().hex}"


def is_unique_id(gid: str) -> bool:
    """Is ``gid`` a globally unique id (not a per-store counter from before)?"""
    return len(gid) == 33 and gid[0] == "s" and all(c in "0123456789abcdef" for c in gid[1:])


def encode_schema(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def decode_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
