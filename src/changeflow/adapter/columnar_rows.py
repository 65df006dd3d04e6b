"""Plans evaluated on Arrow columns in this process, their rows then read back as the row
operators give them: for inputs past ``COLUMNAR_ROWS``, and for a filtered scan whose rows,
picked on columns (:func:`~changeflow.adapter.arrangements.narrowed`), are still many (a
client's rows of a shared table, counted and summed by a point query)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from changeflow.compute import plan as P
from changeflow.compute.arrow_eval import Unsupported, check, evaluate_arrow
from changeflow.compute.values import python_values

Counted = dict[tuple[Any, ...], int]
NARROWED_ROWS = 256  # a filtered scan's picked updates past which its plan runs on columns


def columnar(plan: P.Plan, tables: Mapping[str, pa.Table]) -> Counted | None:
    """``plan``'s rows over ``tables`` (each input's updates up to the time read) on Arrow
    columns; None where a node has no kernel or only the rows can tell (an overflow)."""
    try:
        check(plan)
        rel = evaluate_arrow(plan, tables)
    except Unsupported:
        return None
    columns = []
    for column in rel.columns:
        columns.append(python_values(column))  # (numerics as the rows read them)
    rows = zip(*columns, strict=True) if columns else [()] * len(rel)
    out: Counted = {}
    for row, diff in zip(rows, rel.counts.to_pylist(), strict=True):
        out[row] = out.get(row, 0) + diff
    return {r: c for r, c in out.items() if c}


def worth_columns(plan: P.Plan, picked: pa.Table) -> bool:
    """Does a filtered scan of ``picked`` updates cost less on columns than as rows? Where it
    does more than hand on what it reads (an aggregate, a projection) over enough of them."""
    return picked.num_rows >= NARROWED_ROWS and not isinstance(plan, (P.Get, P.Filter))
