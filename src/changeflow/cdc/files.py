"""Folders of CDC v2 message files: finding them, reading them, writing them.

A CDC folder holds message files in any number, order and nesting; names starting with ``.``
or ``_`` are skipped (Spark's ``_SUCCESS`` and checksums, and files being written). The
format follows the extensions (:data:`changeflow.cdc.formats.FORMATS`). A Parquet folder holds
its progress statements in JSON-lines files beside the Parquet files, and nothing else there:
JSON-lines updates beside Parquet files are an error that names both kinds.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changeflow.cdc.formats import detect_format, extensions, get_format
from changeflow.cdc.formats.base import Format
from changeflow.cdc.messages import Message, Updates, UpdateTable
from changeflow.cdc.resume import Extent, cut, further, opening
from changeflow.errors import InvalidInput


def list_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every message file under ``paths`` (files or folders), in a stable order."""
    found: list[Path] = []
    known = extensions()
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(
                f
                for f in sorted(p.rglob("*"))
                if f.is_file()
                and f.suffix in known
                and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
            )
        elif p.is_file():
            found.append(p)
        else:
            raise InvalidInput(f"{p}: no such file or folder", sqlstate="58P01")
    return found


@dataclass
class CdcSource:
    """The message files of one CDC v2 collection, in one format."""

    format: str
    files: list[Path]
    columns: list[str] | None = field(default=None)

    @property
    def codec(self) -> Format:
        return get_format(self.format)

    def messages(self) -> Iterator[Message]:
        """Every message of every file, file by file (a file's errors name it)."""
        for path in self.files:
            columns, messages = self.codec.read(path)
            self._set_columns(columns, path)
            yield from messages

    def tables(
        self, start: int | None = None, extents: dict[Path, Extent | None] | None = None
    ) -> Iterator[Message | UpdateTable]:
        """Every message of every file for the columnar reader: updates of the formats that
        hold rows as Arrow tables (Parquet's straight from the file), JSON lines as they are.
        Copies of a progress line beside Parquet files are parsed once: a copy says nothing new.

        ``start`` resumes the read there (:mod:`changeflow.cdc.resume`); ``extents`` receives
        how far in time each file reaches.
        """
        from changeflow.cdc.columnar import to_table

        seen: set[bytes] = set()
        if start:
            yield opening(start)
        for path in self.files:
            columns, messages = self.codec.read_columnar(path, seen)
            self._set_columns(columns, path)
            reach: Extent | None = Extent()
            for message in messages:
                if isinstance(message, Updates) and columns is not None:
                    message = UpdateTable(to_table(message.updates, columns))
                if extents is not None:
                    reach = further(reach, message)
                kept = cut(message, start) if start else message
                if kept is not None:
                    yield kept
            if extents is not None:
                extents[path] = reach

    def _set_columns(self, columns: list[str] | None, path: Path) -> None:
        if columns is None:
            return
        if self.columns is None:
            self.columns = columns
        elif columns != self.columns:
            raise InvalidInput(
                f"{path}: its data columns {columns} differ from the other files' {self.columns}"
            )

    def data_to_json(self, data: Hashable) -> Any:
        """The JSON value of a piece of data as this source holds it."""
        if self.codec.json_data:
            return json.loads(data)  # type: ignore[arg-type]
        return dict(zip(self.columns or (), data, strict=True))  # type: ignore[call-overload]


def open_source(paths: Iterable[str | Path], fmt: str | None = None) -> CdcSource:
    """The CDC v2 files under ``paths``; ``fmt`` defaults from their extensions."""
    paths = list(paths)
    files = list_files(paths)
    if not files:
        raise InvalidInput(f"no CDC v2 message files under {', '.join(map(str, paths))}")
    codec = detect_format(files) if fmt is None else get_format(fmt)
    files = [f for f in files if codec.owns(f) or f.suffix not in extensions()]
    if not files:
        raise InvalidInput(f"no {codec.name} files under {', '.join(map(str, paths))}")
    return CdcSource(codec.name, files)


def rows_from_json(values: Iterable[Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Rows (JSON objects) as column names and value tuples, for the columnar formats."""
    values = list(values)
    columns = sorted({k for v in values if isinstance(v, dict) for k in v})
    if not columns or not all(isinstance(v, dict) for v in values):
        raise InvalidInput("Avro and Parquet hold rows: every data value must be a JSON object")
    return columns, [tuple(v.get(c) for c in columns) for v in values]


def json_data_as_rows(messages: Sequence[Message]) -> tuple[list[str], list[Message]]:
    """Messages whose data is canonical JSON objects, re-held as row tuples for the columnar
    formats, with the column names."""
    data = [d for m in messages if isinstance(m, Updates) for d, _, _ in m.updates]
    columns, rows = rows_from_json(json.loads(d) for d in data)  # type: ignore[arg-type]
    held = dict(zip(data, rows, strict=True))
    out: list[Message] = [
        Updates(tuple((held[d], t, r) for d, t, r in m.updates)) if isinstance(m, Updates) else m
        for m in messages
    ]
    return columns, out


def write_messages(
    folder: Path,
    messages: Sequence[Message],
    fmt: str,
    columns: Sequence[str] | None = None,
    files: int = 1,
    assign: Sequence[int] | None = None,
    prefix: str = "part",
    replace: bool = False,
) -> list[Path]:
    """Write messages into ``folder``: message ``i`` goes to file ``assign[i]`` (of ``files``).

    JSON lines and Avro keep the messages apart; Parquet merges a file's Updates messages into
    one (the same statements) and puts its progress statements in a JSON-lines file beside it.
    The files are written in a hidden folder inside and moved into place only when all are
    written, so a value a format cannot hold leaves no file behind; ``replace`` then removes
    the message files the folder held before.
    """
    codec = get_format(fmt)
    if not codec.json_data and columns is None:
        raise InvalidInput(f"{fmt} needs the data column names")
    assign = assign if assign is not None else [i % files for i in range(len(messages))]
    groups: list[list[Message]] = [[] for _ in range(files)]
    for message, k in zip(messages, assign, strict=True):
        groups[k].append(message)
    created = not folder.exists()
    staging = folder / f".writing-{uuid.uuid4().hex[:12]}"
    staging.mkdir(parents=True)
    try:
        staged = [
            p
            for k, group in enumerate(groups)
            for p in codec.write(staging / f"{prefix}-{k:05d}", group, columns)
        ]
        old = list_files([folder]) if replace else []
        for path in old:
            path.unlink()
        written = [path.rename(folder / path.name) for path in staged]
    except BaseException:
        shutil.rmtree(folder if created else staging, ignore_errors=True)
        raise
    staging.rmdir()
    return written
