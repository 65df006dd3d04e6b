"""Folders of CDC v2 message files: finding them, reading them, writing them.

A CDC folder holds message files in any number, order and nesting; names starting with ``.``
or ``_`` are skipped (Spark's ``_SUCCESS`` and checksums). The format follows the extensions:
``.jsonl``/``.ndjson``/``.json``/``.txt`` are JSON lines, ``.avro`` Avro, ``.parquet``
Parquet (whose progress statements sit beside them in JSON-lines files).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changeflow.cdc.avro import read_avro, write_avro
from changeflow.cdc.jsonl import read_jsonl, write_jsonl
from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.cdc.parquet import read_parquet, write_parquet
from changeflow.errors import InvalidInput

FORMATS = ("jsonl", "avro", "parquet")
EXTENSIONS = {
    **dict.fromkeys((".jsonl", ".ndjson", ".json", ".txt"), "jsonl"),
    ".avro": "avro",
    ".parquet": "parquet",
}


def list_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every message file under ``paths`` (files or folders), in a stable order."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(
                f
                for f in sorted(p.rglob("*"))
                if f.is_file()
                and f.suffix in EXTENSIONS
                and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
            )
        elif p.is_file():
            found.append(p)
        else:
            raise InvalidInput(f"{p}: no such file or folder")
    return found


def detect_format(files: Sequence[Path]) -> str:
    """The format that the extensions of ``files`` name; an error when they disagree."""
    kinds = {EXTENSIONS.get(f.suffix) for f in files}
    if None in kinds:
        odd = next(f for f in files if f.suffix not in EXTENSIONS)
        raise InvalidInput(f"{odd}: unknown extension; use .jsonl, .avro or .parquet or --format")
    if "parquet" in kinds and "avro" not in kinds:
        return "parquet"
    if len(kinds) == 1:
        return kinds.pop()
    if not kinds:
        raise InvalidInput("no CDC v2 message files found (.jsonl, .avro or .parquet)")
    raise InvalidInput(f"the files mix formats {sorted(kinds)}; pass --format or split them")


@dataclass
class CdcSource:
    """The message files of one CDC v2 collection, in one format."""

    format: str
    files: list[Path]
    columns: list[str] | None = field(default=None)

    def messages(self) -> Iterator[Message]:
        """Every message of every file, file by file (a file's errors name it)."""
        for path in self.files:
            kind = EXTENSIONS.get(path.suffix, self.format)
            if kind == "jsonl":
                yield from read_jsonl(path)
            elif kind == "avro":
                columns, messages = read_avro(path)
                self._set_columns(columns, path)
                yield from messages
            else:
                columns, updates = read_parquet(path)
                self._set_columns(columns, path)
                yield updates

    def _set_columns(self, columns: list[str], path: Path) -> None:
        if self.columns is None:
            self.columns = columns
        elif columns != self.columns:
            raise InvalidInput(
                f"{path}: its data columns {columns} differ from the other files' {self.columns}"
            )

    def data_to_json(self, data: Hashable) -> Any:
        """The JSON value of a piece of data as this source holds it."""
        if self.format == "jsonl":
            return json.loads(data)  # type: ignore[arg-type]
        return dict(zip(self.columns or (), data, strict=True))  # type: ignore[call-overload]


def open_source(paths: Iterable[str | Path], fmt: str | None = None) -> CdcSource:
    """The CDC v2 files under ``paths``; ``fmt`` defaults from their extensions."""
    files = list_files(paths)
    if not files:
        raise InvalidInput(f"no CDC v2 message files under {', '.join(map(str, paths))}")
    if fmt is None:
        fmt = detect_format(files)
    elif fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    allowed = {fmt, "jsonl"} if fmt == "parquet" else {fmt}
    files = [f for f in files if EXTENSIONS.get(f.suffix, fmt) in allowed]
    if not files:
        raise InvalidInput(f"no {fmt} files under {', '.join(map(str, paths))}")
    return CdcSource(fmt, files)


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
) -> list[Path]:
    """Write messages into ``folder``: message ``i`` goes to file ``assign[i]`` (of ``files``).

    JSON lines and Avro keep the messages apart; Parquet merges a file's Updates messages into
    one (the same statements) and puts its progress statements in a JSON-lines file beside it.
    """
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt != "jsonl" and columns is None:
        raise InvalidInput(f"{fmt} needs the data column names")
    folder.mkdir(parents=True, exist_ok=True)
    assign = assign if assign is not None else [i % files for i in range(len(messages))]
    groups: list[list[Message]] = [[] for _ in range(files)]
    for message, k in zip(messages, assign, strict=True):
        groups[k].append(message)
    written: list[Path] = []
    for k, group in enumerate(groups):
        stem = folder / f"{prefix}-{k:05d}"
        if fmt == "jsonl":
            written.append(stem.with_suffix(".jsonl"))
            with open(written[-1], "w", encoding="utf-8") as f:
                write_jsonl(f, group)
        elif fmt == "avro":
            written.append(stem.with_suffix(".avro"))
            write_avro(written[-1], columns, group)  # type: ignore[arg-type]
        else:
            progress = [m for m in group if isinstance(m, Progress)]
            if progress:
                written.append(folder / f"{prefix}-{k:05d}.progress.jsonl")
                with open(written[-1], "w", encoding="utf-8") as f:
                    write_jsonl(f, progress)
            updates = [u for m in group if isinstance(m, Updates) for u in m.updates]
            if updates:  # the group's Updates merged into one (a re-batching, same meaning)
                written.append(stem.with_suffix(".parquet"))
                write_parquet(written[-1], columns, Updates(tuple(updates)))  # type: ignore[arg-type]
    return written
