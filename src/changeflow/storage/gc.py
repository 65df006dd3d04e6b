"""Garbage collection: delete the blobs of a shard that no state needs any more, and only
blobs that are provably the shard's own."""

from __future__ import annotations

from collections.abc import Iterator

from changeflow.failpoints import failpoint
from changeflow.storage.consensus import VersionedData
from changeflow.storage.machine import Machine
from changeflow.storage.state import is_unique_id, referenced_keys


def collect_garbage(machine: Machine, name: str, grace_seconds: float = 300.0) -> int:
    """Delete the shard's blobs that no state refers to; return how many were deleted.

    Referenced means by the current state or by any version a live seqno hold keeps (a lazy
    snapshot). Only blobs older than the grace are deleted, so a blob whose append or merge is
    still on its way to compare-and-set is safe. Only blobs provably the shard's own are
    deleted: under a globally unique id every key under its prefix (the id is minted once and
    the blob root belongs to this store); under an id from before (``s1``…), only keys that a
    state version it can see refers to.
    """
    gid = machine.entry(name).id
    state = machine.load(gid)
    now = machine.now_ms()
    referenced = state.referenced()
    held, written = set(), set(referenced)
    oldest = state.oldest_held(now)
    for version in _versions(machine, gid, state.seqno):
        keys = referenced_keys(version.data)
        written |= keys
        if version.seqno >= oldest:
            held |= keys
    owned = is_unique_id(gid)
    doomed = [
        m.key
        for m in machine.blob.list(gid)
        if m.key not in referenced
        and m.key not in held
        and (owned or m.key in written)
        and now - m.mtime * 1000 >= grace_seconds * 1000
    ]
    for i, key in enumerate(doomed):
        if i == 1:
            failpoint("gc.partway")
        machine.blob.delete(key)
    return len(doomed)


def _versions(machine: Machine, gid: str, head: int) -> Iterator[VersionedData]:
    """The retained versions of shard ``gid`` before ``head``, oldest first."""
    start = 0
    while start < head:
        versions = machine.consensus.scan(f"shard/{gid}", start, 100)
        yield from (v for v in versions if v.seqno < head)
        if not versions:
            return
        start = versions[-1].seqno + 1
