"""Which store a blob root belongs to: one consensus, named in a marker in the blob root.

A consensus holds a store id (key ``store``); the blob root holds ``CHANGEFLOW_ROOT.json``
naming the same id. The marker is written when a store first opens the root for writing,
before any blob, so a blob root shared by two consensus stores is refused instead of one
store's garbage collection deleting the other's data.
"""

from __future__ import annotations

import json
import uuid

from changeflow.errors import StoreMismatch
from changeflow.storage.blob import MARKER, Blob
from changeflow.storage.consensus import Consensus, VersionedData
from changeflow.storage.state import CATALOG_KEY, Catalog

STORE_KEY = "store"  # the consensus key holding the store's id


def claim(consensus: Consensus, blob: Blob) -> str:
    """Check that ``blob`` may belong to ``consensus``, then record it on both; return the id.

    Everything is checked before anything is written.
    """
    own = store_id(consensus)
    marked = _marker(blob)
    if marked is None:
        _check_unmarked(consensus, blob, own)
    else:
        _check_same(consensus, blob, own, marked)
    if own is None:
        consensus.compare_and_set(STORE_KEY, None, VersionedData(1, _encode(_new_id())))
        own = store_id(consensus)
        assert own is not None
    if marked is None:
        written = json.loads(blob.set_new(MARKER, _encode(own, consensus.location)))
        _check_same(consensus, blob, own, written)
    return own


def check(consensus: Consensus, blob: Blob) -> None:
    """For a reader: refuse a blob root whose marker names another consensus; write nothing."""
    marked = _marker(blob)
    if marked is not None:
        _check_same(consensus, blob, store_id(consensus), marked)


def store_id(consensus: Consensus) -> str | None:
    """The store id the consensus holds (None before its first write)."""
    head = consensus.head(STORE_KEY)
    return json.loads(head.data)["id"] if head else None


def _check_same(consensus: Consensus, blob: Blob, own: str | None, marked: dict) -> None:
    if marked.get("id") == own:
        return
    raise StoreMismatch(
        f"blob root {blob.location} belongs to another store: its {MARKER} names consensus "
        f"{marked.get('consensus', '?')} (store {marked.get('id', '?')}), but consensus "
        f"{consensus.location} is store {own or '(new)'}; point --consensus at the store that "
        "owns this blob root, or use another --blob-root",
        blob_root=blob.location,
        consensus=consensus.location,
        marked=str(marked.get("consensus", "?")),
    )


def _check_unmarked(consensus: Consensus, blob: Blob, own: str | None) -> None:
    """An unmarked blob root may be claimed if it is empty or holds only this store's shards
    (a store from before markers)."""
    head = consensus.head(CATALOG_KEY)
    ids = {e.id for e in Catalog.decode(head.data, head.seqno).entries.values()} if head else set()
    foreign = sorted(set(blob.folders()) - ids)
    if foreign:
        raise StoreMismatch(
            f"blob root {blob.location} holds data ({', '.join(foreign[:3])}…) of no shard of "
            f"consensus {consensus.location} and has no {MARKER}: it belongs to another "
            "store; point --consensus at that store, or use another --blob-root",
            blob_root=blob.location,
            consensus=consensus.location,
        )


def _marker(blob: Blob) -> dict | None:
    data = blob.get(MARKER)
    if data is None:
        return None
    try:
        marked = json.loads(data)
    except ValueError:
        marked = None
    if not isinstance(marked, dict):
        raise StoreMismatch(
            f"blob root {blob.location} has a {MARKER} that is not a changeflow marker; "
            "use another --blob-root",
            blob_root=blob.location,
        )
    return marked


def _encode(store: str, consensus: str | None = None) -> bytes:
    value = {"id": store} if consensus is None else {"id": store, "consensus": consensus}
    return json.dumps(value).encode()


def _new_id() -> str:
    return f"c{uuid.uuid4().hex}"
