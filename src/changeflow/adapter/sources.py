"""CDC sources: the files newly arrived in a source's folder appended to its shard, on Spark's
executors for large folders (at most once a second unless forced)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from changeflow.adapter.catalog import Item
from changeflow.cdc.files import list_files
from changeflow.storage.ingest import ingest, ingest_spark

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment


def ingest_source(env: Environment, item: Item, force: bool = False) -> None:
    """Append the source's newly arrived CDC files (nothing is decoded while the folder's
    files are those it held last time)."""
    now, path = time.monotonic(), item.options["path"]
    last, seen = env.ingested.get(item.id, (0.0, None))
    if not force and now - last < 1.0:
        return
    try:
        files = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in list_files([path])]
    except OSError:
        files = None  # changing under us: decode
    if files is not None and files == seen:
        env.ingested[item.id] = (now, seen)
        return
    fmt = item.options.get("format")
    if files and sum(size for _, size, _ in files) >= env.config.spark_ingest_bytes:
        from changeflow.spark import get_spark

        spark = get_spark(env.config.spark_master)
        ingest_spark(env.storage, item.id, [path], fmt, spark, resume=True)  # on the executors
    else:
        ingest(env.storage, item.id, [path], fmt, resume=True)
    env.ingested[item.id] = (now, files)
