"""char(n)'s blank padding as a property of columns: a char(n) value is held without its
trailing blanks (which PostgreSQL's comparisons, GROUP BY, joins, ``||``, ``length()`` and
``::text`` ignore) and its column carries n (``Column.pad``), so that the value is shown padded
to n, as PostgreSQL stores and sends it. A column reference keeps its column's n, a cast to
char(n) (``char_n``) gives n; anything else is text."""

from __future__ import annotations

from typing import Any

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import Schema


def pad_of(e: X.Expr, schema: Schema) -> int | None:
    """The n of char(n) that ``e``'s values over rows of ``schema`` have; None for text."""
    if isinstance(e, X.Col):
        return schema[e.index].pad
    if isinstance(e, Func) and e.name == "char_n" and isinstance(e.args[1], X.Lit):
        return int(e.args[1].value)
    if isinstance(e, X.NullIf):
        return pad_of(e.a, schema)
    if isinstance(e, X.Case | X.Coalesce):
        branches = [v for _, v in e.whens] + [e.otherwise] if isinstance(e, X.Case) else e.args
        found = {pad_of(b, schema) for b in branches if not _null(b)}
        return found.pop() if len(found) == 1 else None
    return None


def _null(e: X.Expr) -> bool:
    return isinstance(e, X.Lit) and e.value is None


def common_pad(schemas: list[Schema], i: int) -> int | None:
    """The n column ``i`` of each of ``schemas`` shares (UNION's inputs), else None."""
    found = {s[i].pad for s in schemas}
    return found.pop() if len(found) == 1 else None


def padded_rows(rows: list[tuple[Any, ...]], schema: Schema) -> list[tuple[Any, ...]]:
    """``rows`` as shown: the values of char(n) columns padded with blanks to n."""
    pads = [(i, c.pad) for i, c in enumerate(schema) if c.pad is not None]
    if not pads or not rows:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for i, n in pads:
            if isinstance(values[i], str):
                values[i] = values[i].ljust(n)
        out.append(tuple(values))
    return out
