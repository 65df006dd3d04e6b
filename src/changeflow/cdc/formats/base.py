"""What a CDC v2 file format is: its name and extensions, its single-threaded read and write
of messages, and its Spark read and write of update rows.

A format module defines one :class:`Format` and :mod:`changeflow.cdc.formats` lists it; the
folder code, the Spark reader and writer and the CLI read that one table. Spark is imported
only inside the Spark methods, so single-threaded use never loads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pyarrow as pa

from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.errors import InvalidInput
from changeflow.time import Product
from changeflow.updates import DIFF, TIME

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FILE = "_file"  # Spark rows: the file each came from (its URI), for how far a file reaches
NOTE = "_note"  # Spark rows of JSON lines and Avro: a progress statement's JSON text travels here
ROW_TAIL = [(TIME, pa.int64()), (DIFF, pa.int64()), (NOTE, pa.string())]
INT64 = range(-(2**63), 2**63)
PRODUCT_TIMES = (
    "product times are not supported on Spark; read them with the single-threaded reader "
    "(changeflow.cdc.reader.CdcReader, or `changeflow cdc decode` without --spark)"
)


@dataclass(frozen=True)
class SparkRows:
    """A format's update rows on Spark, for the read algorithm (:mod:`changeflow.cdc.spark`).

    ``frame`` holds the data columns, ``_time`` and ``_diff``, ``_file`` (the row's file, a
    URI) and, when ``statements`` is None, ``_note``: a progress statement's JSON text on rows
    of its own (null elsewhere).
    ``rows`` estimates the input rows (it sizes the shuffle).
    """

    frame: DataFrame
    columns: list[str]
    rows: int
    statements: list[Progress] | None


class Format:
    """One CDC v2 file format. Subclasses set the attributes and implement the methods."""

    name: str
    extensions: tuple[str, ...]  # the first is the one written
    json_data: bool = False  # data held as canonical JSON text (else as tuples of row values)
    companions: tuple[str, ...] = ()  # extensions of other files that belong to its folders
    spark_writes: bool = False

    def owns(self, path: Path) -> bool:
        """Is ``path`` one of this format's files, or a companion file of its folders?"""
        return path.suffix in self.extensions or path.suffix in self.companions

    def read(self, path: Path) -> tuple[list[str] | None, Iterator[Message]]:
        """The data column names of one file (None when the format holds no columns) and its
        messages; errors name the file."""
        raise NotImplementedError

    def read_columnar(
        self, path: Path, seen: set[bytes] | None = None
    ) -> tuple[list[str] | None, Iterator[Any]]:
        """Like :meth:`read`, for the columnar reader: formats that hold tables give their
        updates as :class:`~changeflow.cdc.messages.UpdateTable` messages, and may skip
        progress lines in ``seen`` (copies of a statement, parsed once; added to it)."""
        return self.read(path)

    def write(
        self, stem: Path, messages: Sequence[Message], columns: Sequence[str] | None
    ) -> list[Path]:
        """Write messages as the file(s) ``stem`` + extension; return their paths. Everything
        is checked before a byte is written (:func:`check_diffs`, the format's own checks)."""
        raise NotImplementedError

    def spark_read(self, spark: SparkSession, files: list[Path]) -> SparkRows:
        """The update rows of ``files`` on Spark; footers and schemas are checked here, so
        errors name the file."""
        raise NotImplementedError

    def spark_write(
        self, updates: DataFrame, folder: Path, columns: list[str], batch_size: int
    ) -> None:
        """Write consolidated update rows (data columns, ``_time``, ``_diff``) into ``folder``
        by Spark's writers."""
        raise InvalidInput(f"{self.name} is not written on Spark")

    def bad_time(self, files: list[Path]) -> NoReturn:
        """Raise for the file that holds a null or negative time (the Spark reader found one)."""
        raise InvalidInput("an update has a null or negative time")


def check_diffs(messages: Sequence[Message]) -> None:
    """Every diff fits in 64 bits, as every format and every layer holds diffs."""
    for message in messages:
        if isinstance(message, Updates):
            for data, t, r in message.updates:
                if r not in INT64:
                    raise InvalidInput(
                        f"update {data!r} at time {t} has diff {r}, beyond 64 bits "
                        "(-2^63 <= diff < 2^63)"
                    )


def has_product(p: Progress) -> bool:
    """Does a progress statement speak of product times?"""
    return any(isinstance(t, Product) for t in (*p.lower, *p.upper, *(t for t, _ in p.counts)))


def record_batch(schema: pa.Schema, columns: list[list[Any]]) -> pa.RecordBatch:
    """Python columns as a record batch of ``schema``."""
    arrays = [pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
