"""``jsonl:PATH``: push-only delta updates, one JSON-lines file per binding and transaction.

Every binding runs in delta-updates mode: the driver never loads, and each transaction's
documents (the roll-up of that transaction only) go to ``PATH/<resource>/<lower>.jsonl``,
named after the frontier the transaction starts from. A replayed transaction starts from the
same committed checkpoint and so rewrites the same file rather than adding one: effectively
once. A delete is
written as its key with ``"_deleted": true``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from changeflow.errors import InvalidInput, ProtocolViolation
from changeflow.materialize.driver import Driver
from changeflow.materialize.drivers.files import (
    check_bindings,
    check_key,
    endpoint,
    make_folder,
    write_atomic,
)
from changeflow.materialize.protocol import Binding, Doc, DriverState, Key, Open, Store


def file_name(runtime_checkpoint: dict[str, Any]) -> str:
    """``<lower>.jsonl``, after the frontier the transaction starts from (the ``frontier`` if
    the checkpoint has no ``lower``): a replay starts from the same committed checkpoint, so
    it rewrites the file even if it ends at another frontier. Times zero-padded (so names sort
    as times do), coordinates of a product time joined by ``_``, the times of the frontier by
    ``+``; ``empty`` for ``[]``."""
    frontier = runtime_checkpoint.get("lower", runtime_checkpoint.get("frontier"))
    if not isinstance(frontier, list):
        raise InvalidInput(
            f"jsonl: the runtime checkpoint {runtime_checkpoint} has no frontier to name the "
            "transaction's file after"
        )

    def time(t: Any) -> str:
        coords = t if isinstance(t, list) else [t]
        if not coords or not all(isinstance(c, int) and c >= 0 for c in coords):
            raise InvalidInput(f"jsonl: {t!r} in the checkpoint's frontier is not a time")
        return "_".join(f"{c:020d}" for c in coords)

    return ("+".join(time(t) for t in frontier) or "empty") + ".jsonl"


class JsonlDriver(Driver):
    """Delta documents appended as files, one per transaction."""

    delta_only = True

    def __init__(self, url: str) -> None:
        self.root = endpoint(url, "jsonl")
        self.bindings: tuple[Binding, ...] = ()
        self.docs: list[list[Doc]] = []

    @staticmethod
    def read_docs(path: str | Path, resource: str) -> list[Doc]:
        """Every delta document of ``resource`` under ``path``, file by file (for tests)."""
        folder = Path(path) / resource
        files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        return [json.loads(line) for f in files for line in f.read_text().splitlines() if line]

    def open(self, request: Open) -> dict[str, Any] | None:
        check_bindings(request.bindings, "jsonl")
        for b in request.bindings:
            make_folder(self.root / b.resource)
        self.bindings = request.bindings
        self.docs = [[] for _ in request.bindings]
        return None

    def load(self, binding: int, keys: list[Key]) -> Iterable[tuple[Key, Doc]]:
        raise ProtocolViolation(
            f"jsonl: a push-only driver received Load for binding {binding}; its bindings run "
            "in delta-updates mode and never load"
        )

    def store(self, request: Store) -> None:
        if not 0 <= request.binding < len(self.bindings):
            raise ProtocolViolation(f"jsonl: no binding {request.binding}")
        b = self.bindings[request.binding]
        check_key(b, request.key, "jsonl")
        key = dict(zip(b.key, request.key, strict=True))
        doc = {**key, "_deleted": True} if request.delete else {**(request.doc or {}), **key}
        self.docs[request.binding].append(doc)

    def start_commit(self, runtime_checkpoint: dict[str, Any]) -> DriverState | None:
        name = file_name(runtime_checkpoint)
        for b, docs in zip(self.bindings, self.docs, strict=True):
            if docs:
                try:
                    text = "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs)
                except (TypeError, ValueError) as e:
                    raise InvalidInput(
                        f"jsonl: {b.resource}: a document is not JSON: {e}"
                    ) from None
                write_atomic(self.root / b.resource / name, text.encode())
        self.docs = [[] for _ in self.bindings]
        return None
