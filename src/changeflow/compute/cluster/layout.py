"""How an arrangement's batch lies on the executors: hash-partitioned by the columns its probe
uses, and, for an *indexed* batch (see ``index``), one Parquet file a partition (Spark names it
``part-<partition>-…``) with its rows sorted by a 64-bit hash of the key (``_h``, Spark's
``xxhash64``), so a probe finds a key's rows by binary search."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from changeflow.compute.spark_expr import name
from changeflow.spark import session_conf

HASH = "_h"  # the key's hash, by which an indexed batch's partition is sorted


def partitioned(frame: DataFrame, by: tuple[int, ...], parts: int) -> DataFrame:
    """``frame`` hash-partitioned by its positional columns ``by`` into ``parts``."""
    return frame.repartition(parts, *(F.col(name(i)) for i in by))


def key_hash(*keys: Column) -> Column:
    """The hash a key is looked up by (equal keys of equal types hash alike)."""
    return F.xxhash64(*keys)


def write_indexed(frame: DataFrame, by: tuple[int, ...], parts: int, uri: str) -> None:
    """Write ``frame`` (positional columns, then its values) as an indexed batch at ``uri``:
    partitioned by the columns ``by`` into ``parts``, each partition sorted by their hash
    (planned without adaptive execution, which would merge partitions)."""
    keys = [F.col(name(c)) for c in by]
    with session_conf(frame.sparkSession, {"spark.sql.adaptive.enabled": "false"}):
        hashed = partitioned(frame, by, parts).withColumn(HASH, key_hash(*keys))
        hashed.sortWithinPartitions(HASH).write.parquet(uri)
