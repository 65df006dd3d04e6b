"""Table functions: ``generate_series(start, stop[, step])`` and ``unnest(array, …)`` in FROM,
optionally WITH ORDINALITY, over constant arguments, as a constant collection (so a view that
joins one is maintained like any other); ``unnest`` of another FROM item's column (an implicit
LATERAL) and ``unnest(array)`` in a select list, as an :class:`Unnest` of the rows."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from changeflow.adapter.sql.rows import Output, Rel, col_of
from changeflow.adapter.sql.scalar import Scalars, coerce_text, is_string_literal, walk
from changeflow.adapter.sql.scope import Field, Scope, ident, unsupported
from changeflow.adapter.sql.subquery import Stage
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.array_shape import flat
from changeflow.compute.arrays import Subscript
from changeflow.compute.functions import Func
from changeflow.compute.jsonb import as_text, from_value
from changeflow.compute.types import INT4, INT8, JSONB, NULLTYPE, TEXT, Column, SqlType
from changeflow.compute.unnest import (
    JsonbElements,
    Series,
    Unnest,
    no_unnest,
    series,
    series_type,
)
from changeflow.errors import EvalError, PlanError


def table_function(node: exp.Expression, alias: exp.TableAlias | None) -> Output | None:
    """The rows of a table function in FROM, or None if ``node`` is not one."""
    ordinality = bool(node.args.get("ordinality")) or bool(node.args.get("offset"))
    if isinstance(node, exp.Table) and isinstance(node.this, exp.ExplodingGenerateSeries):
        fn = node.this
        names, kinds, rows = _series(fn.args["start"], fn.args["end"], fn.args.get("step"))
    elif isinstance(node, exp.Unnest):
        names, kinds, rows = _unnest(node.expressions)
    elif isinstance(node, exp.Table) and str(getattr(node.this, "this", "")).lower() in JSONB_SETS:
        names, kinds, rows = _jsonb_set(str(node.this.this).lower(), node.this.expressions)
    else:
        return None
    named = names[0] in ("key", "value")  # jsonb's functions name their columns (OUT)
    if alias is not None and alias.this is not None and len(names) == 1 and not named:
        names = [str(alias.this.name).lower()]  # a one-column function's column is its alias
    if ordinality:
        offset = node.args.get("offset")
        names.append(
            str(offset.name).lower() if isinstance(offset, exp.Identifier) else "ordinality"
        )
        kinds.append(INT8)
        rows = [(*r, i + 1) for i, r in enumerate(rows)]
    schema = tuple(Column(n, k, True) for n, k in zip(names, kinds, strict=True))
    counted: dict[tuple[Any, ...], int] = {}
    for r in rows:
        counted[r] = counted.get(r, 0) + 1
    return Output(P.Constant(tuple(counted.items()), schema), names)


def _constant(node: exp.Expression, what: str) -> X.Expr:
    if node.find(exp.Column) is not None:
        raise unsupported(f"{what} with arguments that name columns (LATERAL)", node)
    return Scalars(Scope(), (), what)(node)


def _series(
    start: exp.Expression, stop: exp.Expression, step: exp.Expression | None
) -> tuple[list[str], list[SqlType], list[tuple[Any, ...]]]:
    nodes = [n for n in (start, stop, step) if n is not None]
    args = [_constant(n, "generate_series") for n in nodes]
    for i, other in ((0, 1), (1, 0)):  # a quoted bound takes the other's type, as in PostgreSQL
        if is_string_literal(nodes[i]) and not is_string_literal(nodes[other]):
            args[i] = coerce_text(str(nodes[i].this), args[other].type)
    kind = series_type(args)
    values = [a.eval(()) for a in args]
    if any(v is None for v in values):
        return ["generate_series"], [kind], []
    try:
        rows = [(v,) for v in series(values, kind)]
    except EvalError as e:
        raise PlanError(e.message, sqlstate=e.sqlstate) from None
    return ["generate_series"], [kind], rows


def _unnest(
    arrays: list[exp.Expression],
) -> tuple[list[str], list[SqlType], list[tuple[Any, ...]]]:
    columns: list[tuple[Any, ...]] = []
    kinds: list[SqlType] = []
    for array in arrays:
        e = _constant(array, "unnest")
        if e.type.element is None:
            raise no_unnest(NULLTYPE if is_string_literal(array) else e.type)
        columns.append(flat(e.eval(()) or ()))
        kinds.append(e.type.element)
    depth = max((len(c) for c in columns), default=0)
    rows = [tuple(c[i] if i < len(c) else None for c in columns) for i in range(depth)]
    return ["unnest"] * len(columns), kinds, rows


def _is_series(node: exp.Expression) -> bool:
    if isinstance(node, exp.Table):
        node = node.this
    return isinstance(node, exp.ExplodingGenerateSeries)


def _series_of(scalars: Scalars, call: exp.Expression) -> Series:
    ends = (call.args["start"], call.args["end"], call.args.get("step"))
    return Series(*(scalars(n) for n in ends if n is not None))


JSONB_SETS = (
    "jsonb_array_elements",
    "jsonb_array_elements_text",
    "jsonb_each",
    "jsonb_each_text",
)


def _jsonb_set(
    name: str, args: list[exp.Expression]
) -> tuple[list[str], list[SqlType], list[tuple[Any, ...]]]:
    """``jsonb_array_elements[_text](j)`` (``value``) and ``jsonb_each[_text](j)`` (``key``,
    ``value``) of a constant jsonb; 22023 for the wrong kind of value, as PostgreSQL's."""
    from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

    if len(args) != 1:
        raise PlanError(f"function {name} takes one argument", sqlstate="42883")
    arg = args[0]
    e = coerce_text(str(arg.this), JSONB) if is_string_literal(arg) else _constant(arg, name)
    if e.type not in (JSONB, NULLTYPE):
        raise PlanError(f"function {name}({e.type}) does not exist", sqlstate="42883")
    j = e.eval(())
    text = name.endswith("_text")
    kind = TEXT if text else JSONB
    value = j.value() if j is not None else None
    if name.startswith("jsonb_each"):
        if j is not None and not isinstance(value, dict):
            raise PlanError("cannot call jsonb_each on a non-object", sqlstate="22023")
        items = [] if j is None else list(value.items())
        rows = [(k, _element(v, text)) for k, v in items]
        return ["key", "value"], [TEXT, kind], rows
    if j is not None and not isinstance(value, list):
        what = "a scalar" if not isinstance(value, dict) else "a non-array"
        raise PlanError(f"cannot extract elements from {what}", sqlstate="22023")
    return ["value"], [kind], [(_element(v, text),) for v in (value or [])]


def _element(v: Any, text: bool) -> Any:
    j = from_value(v)
    return as_text(j) if text else j


def is_lateral_unnest(node: exp.Expression) -> bool:
    """``unnest(t.a)``, ``generate_series(1, t.n)`` or ``jsonb_array_elements(t.j)`` of
    another FROM item's column (``FROM t, unnest(t.a)``)."""
    if isinstance(node, exp.Lateral):
        inner = node.this
        if isinstance(inner, exp.Unnest | exp.ExplodingGenerateSeries):
            return True
        return _elements(inner) is not None
    lateral = isinstance(node, exp.Unnest) or _is_series(node) or _elements(node) is not None
    return lateral and node.find(exp.Column) is not None


def _elements(node: exp.Expression) -> str | None:
    """The name of ``jsonb_array_elements[_text](…)`` or ``jsonb_each[_text](…)`` in FROM
    (or under LATERAL), else None."""
    call = node.this if isinstance(node, exp.Table) else node
    if isinstance(call, exp.Anonymous):
        name = str(call.this).lower()
        return name if name in JSONB_SETS else None
    return None


def lateral_unnest(left: Rel, node: exp.Expression, j: exp.Join, outer: Scope | None) -> Rel:
    """``left`` with each row once per element of its array (``FROM t, unnest(t.a) AS u(x)``
    or ``CROSS JOIN LATERAL unnest(a)``): a cross join only, as an :class:`Unnest`."""
    alias, ordinality = node.args.get("alias"), bool(node.args.get("ordinality"))
    if isinstance(node, exp.Lateral):
        node = node.this
        alias = alias or node.args.get("alias")
    if j.args.get("on") is not None or j.args.get("side") or j.args.get("using"):
        raise unsupported("unnest of a column in a JOIN with a condition", node)
    scalars = Scalars(left.scope, left.plan.schema, "FROM")
    function = _elements(node)
    if _is_series(node):
        array: X.Expr = _series_of(scalars, node.this if isinstance(node, exp.Table) else node)
        names = ["generate_series", "ordinality"]
    else:
        call = node.this if isinstance(node, exp.Table) else node
        args = call.expressions
        if len(args) != 1:
            raise unsupported("unnest of several columns", node)
        array = scalars(args[0])
        if function:
            each = function.startswith("jsonb_each")
            array = JsonbElements(array, function.endswith("_text"), each)
        names = ["unnest", "ordinality"]
    offset = node.args.get("offset")
    ordinality = ordinality or bool(node.args.get("ordinality")) or bool(offset)
    if isinstance(offset, exp.Identifier):
        names[1] = str(offset.name).lower()
    table = names[0]
    if function:
        table, names[0] = function, "value"  # the function's OUT column names it
    if alias is not None and alias.this is not None:
        table = ident(alias.this)
        names[0] = names[0] if function else table
    each = function is not None and function.startswith("jsonb_each")
    for i, c in enumerate(alias.columns if alias is not None and not each else []):
        names[i] = ident(c)
    plan: P.Plan = Unnest(left.plan, array, ordinality, (names[0], names[1]))
    width = len(left.plan.schema)
    added = [Field(table, n, width + i) for i, n in enumerate(names[: 1 + ordinality])]
    if not ordinality and not each and table != names[0]:
        added.append(Field(None, table, width, star=False))  # its whole row: its one value
    if each:
        plan, added = _split_pairs(plan, table, function, alias, ordinality)  # type: ignore[arg-type]
    return Rel(plan, Scope(left.scope.fields + added, outer))


def _split_pairs(
    plan: P.Plan, table: str, function: str, alias: exp.TableAlias | None, ordinality: bool
) -> tuple[P.Plan, list[Field]]:
    """``jsonb_each[_text]``'s ``[key, value]`` pairs as its ``key`` and ``value`` columns
    (named by the alias's column list, if any), then its ordinality."""
    pair = P.col(plan.schema, len(plan.schema) - 1 - ordinality)
    value = "jsonb_array_element_text" if function.endswith("_text") else "jsonb_array_element"
    names = ["key", "value", "ordinality"]
    for i, c in enumerate(alias.columns if alias is not None else []):
        names[i] = ident(c)
    split = (
        (names[0], Func("jsonb_array_element_text", (pair, X.Lit(0, INT4)))),
        (names[1], Func(value, (pair, X.Lit(1, INT4)))),
    )
    mapped = P.Map(plan, split)
    width = len(plan.schema)
    added = [Field(table, names[0], width), Field(table, names[1], width + 1)]
    if ordinality:
        added.append(Field(table, names[2], width - 1))
    return mapped, added


def set_returning(stage: Stage, nodes: list[exp.Expression]) -> Stage:
    """``stage`` with a column for each ``unnest(array)`` or ``generate_series(…)`` of the
    select list, recorded as its replacement: each row once per value, none for an empty or
    NULL one. Several run in lockstep, as PostgreSQL runs them: as many rows as the longest
    has values, the shorter ones NULL past their end."""
    kinds = (exp.Explode, exp.ExplodingGenerateSeries)
    calls = [n for node in nodes for n in walk(node) if isinstance(n, kinds)]
    if not calls:
        return stage
    scalars = stage.scalars()
    distinct: dict[str, X.Expr] = {}
    for call in calls:
        if call.sql() not in distinct:
            if isinstance(call, exp.Explode) and is_string_literal(call.this):
                raise no_unnest(NULLTYPE)  # a quoted literal's unknown type
            distinct[call.sql()] = (
                scalars(call.this) if isinstance(call, exp.Explode) else _series_of(scalars, call)
            )
    width = len(stage.rel.plan.schema)
    if len(distinct) == 1:
        plan: P.Plan = Unnest(stage.rel.plan, next(iter(distinct.values())))
        values = {sql: col_of(plan, width) for sql in distinct}
    else:
        arrays = P.Map(
            stage.rel.plan, tuple((f"srf{i}", a) for i, a in enumerate(distinct.values()))
        )
        columns = [col_of(arrays, width + i) for i in range(len(distinct))]
        longest = Func("greatest", tuple(Func("cardinality", (c,)) for c in columns))
        plan = Unnest(arrays, Series(X.Lit(1, INT4), longest))
        at = col_of(plan, width + len(columns))
        values = {sql: Subscript(c, at) for sql, c in zip(distinct, columns, strict=True)}
    for call in calls:
        stage.replacements[id(call)] = values[call.sql()]
    stage.rel = Rel(plan, stage.rel.scope)
    return stage
