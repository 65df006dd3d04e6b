"""Blob: immutable values by key under a root folder (a local path or any pyarrow filesystem URI).

A value is written completely (to a temporary name, flushed, then renamed) before ``set``
returns, so no state can refer to a partial blob.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from changeflow.errors import InvalidInput
from changeflow.failpoints import failpoint


@dataclass(frozen=True)
class BlobMeta:
    key: str
    size: int
    mtime: float  # seconds since the epoch


class Blob:
    """``get``, ``set``, ``delete`` and ``list`` over keys like ``s7/1234.parquet``."""

    def __init__(self, root: str) -> None:
        try:
            self.fs, path = pafs.FileSystem.from_uri(root)
        except (pa.ArrowInvalid, ValueError):
            self.fs, path = pafs.LocalFileSystem(), os.path.abspath(root)
        self.local = isinstance(self.fs, pafs.LocalFileSystem)
        self.root = path.rstrip("/")
        try:
            self.fs.create_dir(self.root, recursive=True)
        except OSError as e:
            raise InvalidInput(f"cannot create the blob root {root}: {e}") from None

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
        self._publish(key, lambda sink: pq.write_table(table, sink, compression="zstd"))

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
                mtime = info.mtime.timestamp() if info.mtime else 0.0
                out.append(BlobMeta(key, info.size or 0, mtime))
        return out

    def _publish(self, key: str, write) -> None:
        final = self.path(key)
        self.fs.create_dir(final.rsplit("/", 1)[0], recursive=True)
        temp = f"{final}.tmp-{uuid.uuid4().hex}"
        try:
            with self.fs.open_output_stream(temp) as sink:
                write(sink)
                failpoint("blob.partway")
            if self.local:
                fd = os.open(temp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            self.fs.move(temp, final)
        except BaseException:
            self.delete(temp.removeprefix(self.root + "/"))
            raise
