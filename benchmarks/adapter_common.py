"""The adapter benchmark's shared helpers: data homes, quantiles and commits of Arrow
frames through the write log (see ``adapter.py``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from tpch import (
    stamped,
)

from changeflow.adapter.connection import Connection
from changeflow.config import Config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def open_home(work: Path, label: str, consensus: str | None) -> tuple[Path, Config]:
    """A fresh home under ``work`` and its configuration (SQLite consensus unless given)."""
    home = Path(tempfile.mkdtemp(prefix=f"adapter-{label}-", dir=work))
    return home, Config.load(home=str(home), consensus=consensus)


def shard_of(conn: Connection, name: str) -> str:
    item = conn.env.catalog.load().by_name(name)
    assert item is not None, name
    return item.id


def commit_arrow(conn: Connection, table: str, data: pa.Table, diff: int = 1) -> int:
    """Append ``data`` (the table's columns) to SQL table ``table`` through the write log."""
    return commit_frames(conn, [(table, data, diff)])


def commit_frames(conn: Connection, parts: list[tuple[str, pa.Table, int]]) -> int:
    """One atomic commit of tables' rows (each part with its diff); its timestamp."""
    from changeflow.storage.frames import to_frame

    frames: dict[str, list[pa.Table]] = {}
    for table, data, diff in parts:
        shard = shard_of(conn, table)
        schema = conn.env.storage.state(shard).schema
        frame = to_frame(stamped(data, 0, diff), schema, shard)
        frames.setdefault(shard, []).append(frame)
    return conn.env.committer.commit({s: pa.concat_tables(f) for s, f in frames.items()})
