"""What a statement returns: a command tag, and for queries their columns and rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from changeflow.compute.types import TEXT, Column, Schema, arrow_schema


def severity(code: str) -> str:
    """The severity PostgreSQL gives a notice of SQLSTATE ``code`` (a warning's class, 01, or
    an invalid transaction state's, 25: WARNING)."""
    return "WARNING" if code[:2] in ("01", "25") else "NOTICE"


@dataclass
class Result:
    """A statement's outcome: ``status`` is PostgreSQL's command tag (``SELECT 3``,
    ``INSERT 0 1``, ``CREATE TABLE``); ``columns`` and ``rows`` are a query's output;
    ``notices`` what PostgreSQL notes on the way (``table "t" does not exist, skipping``)."""

    status: str
    columns: Schema = ()
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    notices: list[tuple[str, str, str]] = field(default_factory=list)  # SQLSTATE, text, detail

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def to_arrow(self) -> pa.Table:
        schema = arrow_schema(tuple(Column(c.name, c.type, True) for c in self.columns))
        columns = list(zip(*self.rows, strict=True)) if self.rows else [[] for _ in schema]
        return pa.Table.from_arrays(
            [pa.array(list(c), type=f.type) for c, f in zip(columns, schema, strict=True)],
            schema=schema,
        )


def text_result(status: str, names: list[str], rows: list[tuple[Any, ...]]) -> Result:
    """A result whose columns are all text (SHOW and EXPLAIN)."""
    return Result(status, tuple(Column(n, TEXT) for n in names), rows)
