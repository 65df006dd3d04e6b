"""Blob: immutable values by key under a root folder (a local path or any pyarrow filesystem URI).

A value is written completely and flushed to stable storage before ``set`` returns, so no state
can refer to a partial blob.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from changeflow.errors import InvalidInput
from changeflow.failpoints import failpoint

MARKER = "CHANGEFLOW_ROOT.json"  # names the consensus the blob root belongs to (see root.py)


@dataclass(frozen=True)
class BlobMeta:
    key: str
    size: int
    mtime: float  # seconds since the epoch


class Blob:
    """``get``, ``set``, ``delete`` and ``list`` over keys like ``s7/1234.parquet``."""

    def __init__(self, root: str, create: bool = True) -> None:
        """Open the blob root ``root``, creating its folder if ``create`` (else it must exist)."""
        try:
            self.fs, path = pafs.FileSystem.from_uri(root)
        except (pa.ArrowInvalid, ValueError):
            self.fs, path = pafs.LocalFileSystem(), os.path.abspath(root)
        self.local = isinstance(self.fs, pafs.LocalFileSystem)
        self.root = path.rstrip("/")
        self.location = root
        if not create:
            return
        try:
            self.fs.create_dir(self.root, recursive=True)
        except OSError as e:
            raise InvalidInput(f"cannot create the blob root {root}: {e}") from None

    def exists(self) -> bool:
        """Does the root exist (a folder, or on an object store a prefix holding objects)?"""
        return self.fs.get_file_info(self.root).type != pafs.FileType.NotFound

    def folders(self) -> list[str]:
        """The names of the folders right under the root (one per shard)."""
        selector = pafs.FileSelector(self.root, allow_not_found=True)
        infos = self.fs.get_file_info(selector)
        return [i.base_name for i in infos if i.type == pafs.FileType.Directory]

    def path(self, key: str) -> str:
        """The filesystem path of ``key``."""
        return f"{self.root}/{key}"

    def uri(self, key: str) -> str:
        """A location of ``key`` that Spark can read."""
        return (
            f"file://{self.path(key)}" if self.local else f"{self.fs.type_name}://{self.path(key)}"
        )

    def get(self, key: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(self.path(key)) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def set(self, key: str, data: bytes) -> None:
        self._publish(key, lambda sink: sink.write(data))

    def set_table(self, key: str, table: pa.Table) -> None:
        """Write ``table`` as one Parquet blob."""
        self._publish(key, lambda sink: pq.write_table(table, sink))

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self.path(key))

    def delete_dir(self, prefix: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_dir(self.path(prefix))

    def list(self, prefix: str = "") -> list[BlobMeta]:
        """Every blob whose key starts with the folder ``prefix``."""
        selector = pafs.FileSelector(
            self.path(prefix).rstrip("/"), allow_not_found=True, recursive=True
        )
        out = []
        for info in self.fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                key = info.path.removeprefix(self.root + "/")
                if key.startswith(MARKER):
                    continue  # the root's own marker, not a blob
                mtime = info.mtime.timestamp() if info.mtime else 0.0
                out.append(BlobMeta(key, info.size or 0, mtime))
        return out

    def set_new(self, key: str, data: bytes) -> bytes:
        """Write ``data`` at ``key`` unless a value is there already; return the value there.

        Locally the value is made whole under a temporary name and hard-linked into place,
        which fails if ``key`` exists: exactly one writer wins. Object stores have no such
        primitive here: the value is written unless present and read back, so two writers
        racing on the same fresh key may both believe they won.
        """
        if not self.local:
            found = self.get(key)
            if found is None:
                self.set(key, data)
                found = self.get(key)
            return found if found is not None else data
        temporary = f"{key}.{uuid.uuid4().hex}.tmp"
        self.set(temporary, data)
        try:
            os.link(self.path(temporary), self.path(key))
        except FileExistsError:
            pass
        finally:
            self.delete(temporary)
        found = self.get(key)
        return found if found is not None else data

    def _publish(self, key: str, write: Callable[[Any], object]) -> None:
        """Write ``key`` and flush it (and, locally, its folder's entry) to stable storage.

        Keys are fresh names, so no rename is needed: nothing refers to a blob until its
        writer's compare-and-set, and a partial blob left by a crash is garbage.
        """
        final = self.path(key)
        folder = final.rsplit("/", 1)[0]
        self.fs.create_dir(folder, recursive=True)
        with self.fs.open_output_stream(final) as sink:
            write(sink)
            failpoint("blob.partway")
        if self.local:
            for path, flags in ((final, os.O_RDONLY), (folder, os.O_RDONLY | os.O_DIRECTORY)):
                fd = os.open(path, flags)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
