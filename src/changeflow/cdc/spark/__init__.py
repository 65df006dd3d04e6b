"""Data-parallel CDC v2 on Spark: read folders of message files (:mod:`.read`), write
collections as them (:mod:`.write`). The per-format Spark codecs live with their formats
(:mod:`changeflow.cdc.formats`).

Times are ints here; product times need the single-threaded reader and writer.
"""

from changeflow.cdc.spark.read import read_cdc
from changeflow.cdc.spark.write import write_cdc

__all__ = ["read_cdc", "write_cdc"]
