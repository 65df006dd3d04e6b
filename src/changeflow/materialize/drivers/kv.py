"""``kv:PATH``: JSON files by key, through a recovery log with a non-transactional store.

A binding's documents live under ``PATH/<resource>/``, one file per key, named by a hash of the
key's JSON and holding ``{"key": […], "doc": {…}}``. Each Store is written at once (a flushed
temporary file, then ``os.replace``; a delete removes the file), so a transaction that fails
part-way leaves part of its effects and is replayed: at least once, which is effectively once
for last-write-wins documents. ``start_commit`` makes the folders' entries durable before the
runtime commits its checkpoint.
"""

from __future__ import annotations

import hashlib
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
    fsync,
    make_folder,
    write_atomic,
)
from changeflow.materialize.protocol import Binding, Doc, DriverState, Key, Open, Store


def key_json(key: Key) -> str:
    """The canonical JSON of a key."""
    return json.dumps(list(key), separators=(",", ":"), sort_keys=True)


def key_file(folder: Path, key: Key) -> Path:
    """The file of ``key`` under ``folder``."""
    return folder / f"{hashlib.sha256(key_json(key).encode()).hexdigest()[:32]}.json"


class KvDriver(Driver):
    """One JSON file per key, written as each Store arrives."""

    at_least_once = True

    def __init__(self, url: str) -> None:
        self.root = endpoint(url, "kv")
        self.bindings: tuple[Binding, ...] = ()
        self.dirty: set[Path] = set()  # folders whose entries changed since the last commit

    @staticmethod
    def read_docs(path: str | Path, resource: str) -> dict[Key, Doc]:
        """Every stored document of ``resource`` under ``path``, by key (for checks and tests)."""
        folder = Path(path) / resource
        out: dict[Key, Doc] = {}
        for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            entry = json.loads(file.read_bytes())
            out[tuple(entry["key"])] = entry["doc"]
        return out

    def open(self, request: Open) -> dict[str, Any] | None:
        check_bindings(request.bindings, "kv")
        for b in request.bindings:
            make_folder(self.root / b.resource)
        self.bindings = request.bindings
        return None

    def load(self, binding: int, keys: list[Key]) -> Iterable[tuple[Key, Doc]]:
        b = self._binding(binding)
        folder = self.root / b.resource
        for key in keys:
            check_key(b, key, "kv")
            try:
                entry = json.loads(key_file(folder, key).read_bytes())
            except FileNotFoundError:
                continue
            if key_json(entry["key"]) == key_json(key):  # not another key of the same hash
                yield tuple(key), entry["doc"]

    def store(self, request: Store) -> None:
        b = self._binding(request.binding)
        check_key(b, request.key, "kv")
        folder = self.root / b.resource
        path = key_file(folder, request.key)
        if request.delete:
            path.unlink(missing_ok=True)
        else:
            try:
                data = json.dumps({"key": list(request.key), "doc": request.doc})
            except (TypeError, ValueError) as e:
                raise InvalidInput(f"kv: {folder.name}: a document is not JSON: {e}") from None
            write_atomic(path, data.encode(), sync_folder=False)
        self.dirty.add(folder)

    def start_commit(self, runtime_checkpoint: dict[str, Any]) -> DriverState | None:
        for folder in self.dirty:
            fsync(folder)
        self.dirty.clear()
        return None

    def _binding(self, index: int) -> Binding:
        if not 0 <= index < len(self.bindings):
            raise ProtocolViolation(f"kv: no binding {index} (there are {len(self.bindings)})")
        return self.bindings[index]
