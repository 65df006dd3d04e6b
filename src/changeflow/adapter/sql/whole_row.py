"""A table's name as a value: the whole row (``SELECT t FROM t``, ``count(t)``), written as
PostgreSQL writes a record (``(1,x)``), and ``row_to_json(t)``, its columns as a JSON object
(also of ``ROW(…)``). A row of a table is never NULL, so ``count(t)`` counts every row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.adapter.sql.scope import ident
from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import JSONB, TEXT

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars


def columns(sc: Scalars, node: exp.Expression) -> list[X.Col] | None:
    """The columns of the table ``node`` names, if it is a bare name that is no column but a
    table of the query's FROM clause; None otherwise."""
    if (
        not isinstance(node, exp.Column)
        or node.args.get("table")
        or isinstance(node.this, exp.Star)
    ):
        return None
    name = ident(node.this)
    if sc.scope.find(name, None) or name not in sc.scope.tables:
        return None
    fields = sorted(
        (f for f in sc.scope.fields if f.table == name and f.star), key=lambda f: f.index
    )
    return [sc.column(f.index, f.name) for f in fields]


def record(cols: list[X.Col]) -> X.Expr:
    """The row as record text, each field as its type's output writes it."""
    return Func("record_text", tuple(cols))


def to_json(sc: Scalars, node: exp.Anonymous) -> X.Expr | None:
    """``row_to_json`` of a table's row (its columns by name) or of ``ROW(…)`` (``f1``,
    ``f2``…), as json; None for another argument."""
    if len(node.expressions) != 1:
        return None
    arg = node.expressions[0]
    if isinstance(arg, exp.Tuple):
        values = [sc.expr(e) for e in arg.expressions]
        names = [f"f{i}" for i in range(1, len(values) + 1)]
    else:
        cols = columns(sc, arg)
        if cols is None:
            return None
        values, names = list(cols), [c.name for c in cols]
    pairs = tuple(e for n, v in zip(names, values, strict=True) for e in (X.Lit(n, TEXT), v))
    return Func("json_of_record", pairs)


# functions whose argument that is a table's row is its JSON object
TAKING_ROWS = frozenset(
    ("to_json", "to_jsonb", "json_build_object", "jsonb_build_object")
    + ("json_build_array", "jsonb_build_array")
)


def rows_as_json(sc: Scalars, args: list[exp.Expression]) -> dict[int, X.Expr]:
    """The JSON objects of those of ``args`` that are a table's row, by their nodes' ids."""
    return {id(a): found for a in args if (found := as_json(sc, a, jsonb=False)) is not None}


def as_json(sc: Scalars, node: exp.Expression, jsonb: bool) -> X.Expr | None:
    """A table's row as a JSON object of its columns by name (json, or jsonb), for
    ``to_json(t)``, ``json_build_object('k', t)``, ``jsonb_agg(t)`` and ``json_agg(t)``; None
    if ``node`` is no table's row."""
    cols = columns(sc, node)
    if cols is None:
        return None
    pairs = tuple(e for c in cols for e in (X.Lit(c.name, TEXT), c))
    found: X.Expr = Func("json_of_record", pairs)
    return X.Cast(found, JSONB) if jsonb else found
