"""The table of CDC v2 file formats, one module each (see :mod:`.base` for what one is).

Folder listing and detection (:mod:`changeflow.cdc.files`), the Spark reader and writer
(:mod:`changeflow.cdc.spark`) and the CLI's ``--format`` choices all read this table: adding a
format is one module ``changeflow/cdc/formats/<name>.py`` that defines ``FORMAT``, and its name
in :data:`NAMES`. The modules load on first use, so the CLI starts without pyarrow.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from changeflow.errors import InvalidInput

if TYPE_CHECKING:
    from changeflow.cdc.formats.base import Format

NAMES = ("jsonl", "avro", "parquet")


@cache
def table() -> dict[str, Format]:
    """Every format by name, in the order of :data:`NAMES`."""
    return {name: importlib.import_module(f"{__name__}.{name}").FORMAT for name in NAMES}


@cache
def extensions() -> dict[str, str]:
    """The format name of every file extension a format reads."""
    return {e: f.name for f in table().values() for e in f.extensions}


def get_format(name: str) -> Format:
    """The format called ``name``; an error lists the known ones."""
    if name not in NAMES:
        raise InvalidInput(f"unknown format {name!r}; use one of {', '.join(NAMES)}")
    return table()[name]


def spark_writable() -> list[str]:
    """The formats that Spark's writers write."""
    return [name for name, f in table().items() if f.spark_writes]


def detect_format(files: Sequence[Path]) -> Format:
    """The format that the extensions of ``files`` name: one format, or one whose folders
    hold the others as companions (Parquet beside JSON lines of progress); else an error."""
    known = extensions()
    if not files:
        raise InvalidInput(f"no CDC v2 message files found ({', '.join(known)})")
    odd = next((f for f in files if f.suffix not in known), None)
    if odd is not None:
        raise InvalidInput(f"{odd}: unknown extension; use {', '.join(known)} or pass --format")
    kinds = {known[f.suffix] for f in files}
    owners = [table()[k] for k in kinds if all(table()[k].owns(f) for f in files)]
    if len(owners) == 1:
        return owners[0]
    raise InvalidInput(f"the files mix formats {sorted(kinds)}; pass --format or split them")
