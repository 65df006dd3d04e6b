"""Writing collections as CDC v2 on Spark: Updates files by Spark's writers, then the progress.

:func:`write_cdc` writes an update frame for ``[lower, upper)`` as Updates files (one per
partition, by the format's Spark writer, :meth:`Format.spark_write`) and then a small file of
progress statements: a reader waits for the updates that the progress announces.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from changeflow.cdc.formats import get_format, spark_writable
from changeflow.cdc.formats.base import PRODUCT_TIMES
from changeflow.cdc.formats.jsonl import message_to_json
from changeflow.cdc.messages import Progress
from changeflow.errors import FrontierViolation, InvalidInput
from changeflow.spark import col, spark_errors
from changeflow.time import Antichain, Product, to_frontier
from changeflow.updates import DIFF, TIME

MAX_COUNTS = 100_000  # counts per progress statement


def write_cdc(
    frame: DataFrame,
    path: str | Path,
    lower: Antichain | int,
    upper: Antichain | int | None,
    format: str = "parquet",
    batch_size: int = 10_000,
) -> Path:
    """Write the updates of ``frame`` for the times ``[lower, upper)`` as CDC v2; return the
    subfolder of ``path`` that holds them (a new one for every call, so writers never clash).

    ``frame`` is an update frame; it is consolidated first. Updates files come from Spark's
    writers, one per partition (JSON lines: one Updates message per ``batch_size`` rows), then
    the driver writes the progress statements that tile ``[lower, upper)`` (``upper=None`` or
    ``Antichain()`` closes the stream). An update outside the interval raises
    :class:`FrontierViolation`.
    """
    lower, upper = _frontier(lower), _frontier(upper)
    codec = get_format(format)
    if not codec.spark_writes:
        raise InvalidInput(f"write_cdc writes {' or '.join(spark_writable())}, not {format!r}")
    if batch_size < 1:
        raise InvalidInput(f"batch size must be at least 1, not {batch_size}")
    if not lower <= upper:
        raise FrontierViolation(f"write_cdc: lower {lower} is beyond upper {upper}")
    columns = _data_columns(frame)
    where = f"write_cdc to {path}"
    if dict(frame.dtypes)[TIME].startswith("array"):
        raise InvalidInput(PRODUCT_TIMES)
    with spark_errors(where):
        updates = (
            frame.groupBy(*map(col, columns), F.col(TIME).cast("bigint").alias(TIME))
            .agg(F.sum(F.col(DIFF).cast("bigint")).alias(DIFF))
            .filter(F.col(DIFF) != 0)
            .persist()
        )
        try:
            stats = updates.groupBy(TIME).count().toArrow().sort_by(TIME)
            if stats.column(TIME).null_count:
                raise InvalidInput(f"{where}: an update has a null time")
            times = stats.column(TIME).to_numpy()
            counts = stats.column("count").to_numpy()
            outside = times < lower.elements[0] if lower else np.ones(len(times), bool)
            if upper:
                outside |= times >= upper.elements[0]
            if outside.any():
                t = int(times[np.flatnonzero(outside)[0]])
                raise FrontierViolation(
                    f"{where}: an update at time {t} lies outside [lower {lower}, upper {upper})"
                )
            folder = Path(path) / f"cdc-{_name(lower)}-{_name(upper)}-{uuid.uuid4().hex[:12]}"
            codec.spark_write(updates, folder, columns, batch_size)
        finally:
            updates.unpersist()
    folder.mkdir(parents=True, exist_ok=True)  # progress last: a reader waits for the updates
    with open(folder / "progress.jsonl", "w", encoding="utf-8") as f:
        for statement in _statements(lower, upper, times.tolist(), counts.tolist()):
            f.write(json.dumps(message_to_json(statement)) + "\n")
    return folder


def _statements(lower: Antichain, upper: Antichain, times: list[int], counts: list[int]):
    """Progress statements that tile ``[lower, upper)``, each with at most a bounded count."""
    pairs = list(zip(times, counts, strict=True))
    chunks = [pairs[i : i + MAX_COUNTS] for i in range(0, len(pairs), MAX_COUNTS)] or [[]]
    bounds = [lower, *(Antichain([chunk[0][0]]) for chunk in chunks[1:]), upper]
    for chunk, lo, hi in zip(chunks, bounds, bounds[1:], strict=False):
        yield Progress(lo, hi, tuple(chunk))


def _data_columns(frame: DataFrame) -> list[str]:
    missing = [c for c in (TIME, DIFF) if c not in frame.columns]
    if missing:
        raise InvalidInput(
            f"an update frame needs columns {TIME!r} and {DIFF!r}; it has {frame.columns}"
        )
    columns = [c for c in frame.columns if c not in (TIME, DIFF)]
    odd = [c for c in columns if c.startswith("_")]
    if odd or not columns:
        raise InvalidInput(
            f"an update frame needs data columns not starting with '_'; it has {frame.columns}"
        )
    return columns


def _frontier(value: Antichain | int | None) -> Antichain:
    """An int-time frontier (product times are for the single-threaded writer)."""
    frontier = to_frontier(value, "write_cdc: a frontier")
    if any(isinstance(t, Product) for t in frontier):
        raise InvalidInput(PRODUCT_TIMES)
    return frontier


def _name(frontier: Antichain) -> str:
    return "_".join(map(str, frontier)) if frontier else "end"
