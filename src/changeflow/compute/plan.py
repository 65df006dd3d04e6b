"""The plan language: frozen, typed relational operators over collections of rows.

A plan is a tree of operators whose leaves are :class:`Get` (a named input collection) and
:class:`Constant`. Each operator computes its output :data:`~changeflow.compute.types.Schema` when
it is built and refuses, with a :class:`PlanError`, anything that does not type-check: a column
out of range or of the wrong type, a predicate that is not boolean, inputs of a union that do not
match. Columns are referred to by position (:class:`~changeflow.compute.expr.Col`). ``explain()``
prints a plan as indented text.

Multiplicities follow differential dataflow: every operator is linear in its inputs except
:class:`Reduce`, :class:`Distinct`, :class:`Threshold` and :class:`TopK`, which read their input's
accumulated counts per key; a negative count there is an error, except in :class:`Threshold`
(which exists to drop it) and :class:`Distinct` (which keeps rows whose count is positive).
A :class:`Reduce` without group keys over an empty input has no rows (SQL's one row of defaults is
the front end's to add).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from changeflow.compute.expr import Col, Expr
from changeflow.compute.scale import scale_of
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    JSON,
    NULLTYPE,
    NUMERIC,
    TEXT,
    UUID,
    Column,
    Schema,
    SqlType,
    array_of,
)
from changeflow.compute.typmods import NONE, Mod, mod_of, shared
from changeflow.errors import PlanError


class Plan:
    """A relational operator; subclasses are frozen dataclasses with a ``schema``."""

    schema: Schema

    def inputs(self) -> tuple[Plan, ...]:
        return ()

    def collections(self) -> set[str]:
        """The names of the collections the plan reads (worked out once per plan: a plan
        is immutable, and a statement run again reads them from its kept plan)."""
        found = self.__dict__.get("_collections")
        if found is None:
            own = {self.name} if isinstance(self, Get) else set()
            found = frozenset(own.union(*(p.collections() for p in self.inputs())))
            object.__setattr__(self, "_collections", found)
        return set(found)

    def describe(self) -> str:
        """This operator alone, on one line."""
        return type(self).__name__

    def explain(self, depth: int = 0) -> str:
        """The plan as indented text, an operator a line, inputs below their consumer."""
        lines = ["  " * depth + self.describe()]
        lines += [p.explain(depth + 1) for p in self.inputs()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _schema(obj: Any, schema: Schema) -> None:
    object.__setattr__(obj, "schema", tuple(schema))


def check_expr(expr: Expr, schema: Schema, where: str) -> None:
    """Every column ``expr`` reads exists in ``schema`` with the type it claims."""
    for node in _walk(expr):
        if isinstance(node, Col):
            if not 0 <= node.index < len(schema):
                raise PlanError(
                    f"{where}: column #{node.index} does not exist; the input has "
                    f"{len(schema)} columns",
                    sqlstate="42703",
                )
            actual = schema[node.index]
            if actual.type != node.type:
                raise PlanError(
                    f"{where}: column #{node.index} ({actual.name}) is {actual.type}, not "
                    f"{node.type}",
                    sqlstate="42804",
                )


def _walk(expr: Expr) -> list[Expr]:
    out, todo = [], [expr]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.children())
    return out


def _check_index(index: int, schema: Schema, where: str) -> Column:
    if not 0 <= index < len(schema):
        raise PlanError(
            f"{where}: column #{index} does not exist; the input has {len(schema)} columns",
            sqlstate="42703",
        )
    return schema[index]


def _no_now(expr: Expr, where: str) -> None:
    if expr.mentions_now():
        raise PlanError(f"{where}: mz_now() may appear only in a temporal filter", sqlstate="0A000")


def col(schema: Schema, index: int) -> Col:
    """A reference to column ``index`` of ``schema``, typed from it."""
    c = _check_index(index, schema, "col")
    return Col(index, c.type, c.nullable, c.name)


@dataclass(frozen=True)
class Get(Plan):
    """The input collection ``name``, of the given schema."""

    name: str
    schema: Schema

    def describe(self) -> str:
        return f"Get {self.name} ({', '.join(map(str, self.schema))})"


@dataclass(frozen=True)
class Constant(Plan):
    """Fixed rows with their multiplicities."""

    rows: tuple[tuple[tuple[Any, ...], int], ...]
    schema: Schema

    def __post_init__(self) -> None:
        for row, count in self.rows:
            if len(row) != len(self.schema):
                raise PlanError(f"constant row {row!r} does not have {len(self.schema)} values")
            if isinstance(count, bool) or not isinstance(count, int):
                raise PlanError(f"constant row {row!r} has multiplicity {count!r}, not an int")

    def describe(self) -> str:
        return f"Constant {len(self.rows)} rows ({', '.join(map(str, self.schema))})"


@dataclass(frozen=True)
class Map(Plan):
    """The input's columns, then one new column for each named expression."""

    input: Plan
    exprs: tuple[tuple[str, Expr], ...]
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        for name, e in self.exprs:
            check_expr(e, self.input.schema, f"Map {name}")
            _no_now(e, f"Map {name}")
        schema = self.input.schema
        added = (
            Column(name, e.type, e.nullable, scale_of(e, schema), *mod_of(e, schema))
            for name, e in self.exprs
        )
        _schema(self, (*self.input.schema, *added))

    def inputs(self) -> tuple[Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        return "Map " + ", ".join(f"{e} AS {name}" for name, e in self.exprs)


@dataclass(frozen=True)
class Project(Plan):
    """The input's columns at ``columns``, in that order (repeats allowed), renamed by
    ``names`` if given."""

    input: Plan
    columns: tuple[int, ...]
    names: tuple[str, ...] | None = None
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        picked = [_check_index(i, self.input.schema, "Project") for i in self.columns]
        if self.names is not None:
            if len(self.names) != len(picked):
                raise PlanError("Project: as many names as columns are needed")
            picked = [replace(c, name=n) for n, c in zip(self.names, picked, strict=True)]
        _schema(self, picked)

    def inputs(self) -> tuple[Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        shown = [f"#{i}" for i in self.columns]
        if self.names:
            shown = [f"{s} AS {n}" for s, n in zip(shown, self.names, strict=True)]
        return "Project " + ", ".join(shown)


@dataclass(frozen=True)
class Filter(Plan):
    """The input's rows for which every predicate is TRUE (NULL and FALSE drop the row)."""

    input: Plan
    predicates: tuple[Expr, ...]
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        for p in self.predicates:
            check_expr(p, self.input.schema, "Filter")
            _no_now(p, "Filter")
            if p.type not in (BOOL, NULLTYPE):
                raise PlanError(
                    f"argument of WHERE must be type boolean, not type {p.type}", sqlstate="42804"
                )
        _schema(self, self.input.schema)

    def inputs(self) -> tuple[Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        return "Filter " + " AND ".join(map(str, self.predicates))


JOIN_KINDS = ("inner", "left", "right", "full")


@dataclass(frozen=True)
class Join(Plan):
    """The join of ``inputs``: their columns side by side, for every combination of rows in
    which the columns of each equivalence class are equal (NULL equals nothing) and the residual
    predicate is TRUE. Outer kinds take two inputs and keep the unmatched rows of the left
    (``left``), the right (``right``) or both (``full``) side, padded with NULLs."""

    inputs_: tuple[Plan, ...]
    equivalences: tuple[tuple[int, ...], ...] = ()
    kind: str = "inner"
    residual: Expr | None = None
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in JOIN_KINDS:
            raise PlanError(f"join kind {self.kind!r} is not one of {', '.join(JOIN_KINDS)}")
        if self.kind != "inner" and len(self.inputs_) != 2:
            raise PlanError(f"a {self.kind} outer join takes two inputs, not {len(self.inputs_)}")
        if not self.inputs_:
            raise PlanError("a join takes at least one input")
        columns = [c for p in self.inputs_ for c in p.schema]
        for klass in self.equivalences:
            found = [_check_index(i, tuple(columns), "Join") for i in klass]
            for c in found[1:]:
                from changeflow.compute.scalars import comparable

                if not comparable(found[0].type, c.type):
                    raise PlanError(
                        f"Join: {found[0].name} ({found[0].type}) and {c.name} ({c.type}) "
                        "cannot be compared",
                        sqlstate="42804",
                    )
        if self.residual is not None:
            check_expr(self.residual, tuple(columns), "Join")
            _no_now(self.residual, "Join")
            if self.residual.type not in (BOOL, NULLTYPE):
                raise PlanError(
                    f"argument of JOIN/ON must be type boolean, not type {self.residual.type}",
                    sqlstate="42804",
                )
        width = len(self.inputs_[0].schema)
        if self.kind in ("right", "full"):
            columns[:width] = [_nullable(c) for c in columns[:width]]
        if self.kind in ("left", "full"):
            columns[width:] = [_nullable(c) for c in columns[width:]]
        _schema(self, columns)

    def inputs(self) -> tuple[Plan, ...]:
        return self.inputs_

    def describe(self) -> str:
        on = [" = ".join(f"#{i}" for i in klass) for klass in self.equivalences]
        if self.residual is not None:
            on.append(str(self.residual))
        return f"Join {self.kind}" + (" on " + " AND ".join(on) if on else "")


def _nullable(c: Column) -> Column:
    return replace(c, nullable=True)


AGGREGATES = (
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "bool_and",
    "bool_or",
    "string_agg",
    "array_agg",
)
ORDERED = ("string_agg", "array_agg")  # the aggregates whose result has an order


@dataclass(frozen=True)
class SortExpr:
    """An aggregate's ``ORDER BY`` key: an expression over its input, direction, NULLs' place."""

    expr: Expr
    desc: bool = False
    nulls_last: bool | None = None

    def __str__(self) -> str:
        order = Order(0, self.desc, self.nulls_last)
        return f"{self.expr} {'DESC' if self.desc else 'ASC'}" + (
            " NULLS LAST" if order.nulls_at_end else " NULLS FIRST"
        )


@dataclass(frozen=True)
class Aggregate:
    """``func([DISTINCT] arg [ORDER BY order])``; ``arg`` None is ``count(*)``; ``separator``
    is string_agg's.

    ``string_agg`` and ``array_agg`` take their values in ``order``, ties (and no ``order``)
    broken by the value ascending, so that the result is deterministic.
    """

    func: str
    arg: Expr | None = None
    distinct: bool = False
    separator: str = ","
    order: tuple[SortExpr, ...] = ()
    filter: Expr | None = None  # FILTER (WHERE …) of an aggregate that keeps NULLs
    x: Expr | None = None  # the second argument of corr(y, x) and its kin, planned as sums

    def value(self, row: tuple) -> Any:
        """What the aggregate keeps of ``row``: its argument, or for an ordered aggregate
        the argument and its sort keys as a tuple; None: the row adds nothing (a NULL, or
        a row its ``filter`` leaves out)."""
        assert self.arg is not None
        if self.filter is not None and self.filter.eval(row) is not True:
            return None
        v = self.arg.eval(row)
        if self.func != "array_agg" and (v is None or not self.order):
            return v
        return (v, *(o.expr.eval(row) for o in self.order))

    def output(self, schema: Schema, name: str) -> Column:
        """The aggregate's output column over ``schema``; an error if it does not type-check."""
        if self.func not in AGGREGATES:
            raise PlanError(f"aggregate {self.func}() does not exist", sqlstate="42883")
        if self.arg is None:
            if self.func != "count":
                raise PlanError(f"{self.func}(*) is not an aggregate; only count(*) is")
            return Column(name, INT8, False)
        check_expr(self.arg, schema, f"aggregate {self.func}")
        _no_now(self.arg, f"aggregate {self.func}")
        if self.order and self.func not in ORDERED:
            raise PlanError(f"{self.func}() with ORDER BY is not supported", sqlstate="0A000")
        if self.filter is not None:
            check_expr(self.filter, schema, f"aggregate {self.func}'s FILTER")
            _no_now(self.filter, f"aggregate {self.func}'s FILTER")
        for o in self.order:
            check_expr(o.expr, schema, f"aggregate {self.func}'s ORDER BY")
            _no_now(o.expr, f"aggregate {self.func}'s ORDER BY")
        kind = self.arg.type
        result = _aggregate_type(self.func, kind)
        if result is None:
            raise PlanError(f"function {self.func}({kind}) does not exist", sqlstate="42883")
        scale = None
        if result is NUMERIC and self.func in ("sum", "min", "max"):
            scale = scale_of(self.arg, schema)
        mod = mod_of(self.arg, schema) if self.func in ("min", "max") else NONE
        mod = mod if mod.text_type == "bpchar" else NONE  # char(n)'s values keep their width
        return Column(name, result, self.func != "count", scale, *mod)

    def __str__(self) -> str:
        inner = "*" if self.arg is None else ("DISTINCT " if self.distinct else "") + str(self.arg)
        sep = f", '{self.separator}'" if self.func == "string_agg" else ""
        order = " ORDER BY " + ", ".join(map(str, self.order)) if self.order else ""
        where = f" FILTER (WHERE {self.filter})" if self.filter is not None else ""
        return f"{self.func}({inner}{sep}{order}){where}"


def _aggregate_type(func: str, kind: SqlType) -> SqlType | None:
    if func == "count":
        return INT8
    if func in ("min", "max"):
        return None if kind in (UUID, BYTEA, JSON) else kind  # PostgreSQL has no min(uuid)
    if func in ("bool_and", "bool_or"):
        return BOOL if kind in (BOOL, NULLTYPE) else None
    if func == "string_agg":
        return TEXT if kind in (TEXT, NULLTYPE) else None
    if func == "array_agg":  # of arrays: one more dimension, of the same type
        return None if kind is NULLTYPE else kind if kind.element is not None else array_of(kind)
    if not kind.numeric:
        return None
    if func == "sum":
        return {INT2: INT8, INT4: INT8, INT8: NUMERIC}.get(kind, kind)
    return FLOAT8 if kind.floating else NUMERIC  # avg


@dataclass(frozen=True)
class Reduce(Plan):
    """One row per distinct value of the ``group_by`` columns: those columns, then each
    aggregate over the group's rows (``names`` name the aggregates' columns)."""

    input: Plan
    group_by: tuple[int, ...]
    aggregates: tuple[Aggregate, ...]
    names: tuple[str, ...] = ()
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        keys = [_check_index(i, self.input.schema, "Reduce") for i in self.group_by]
        names = self.names or tuple(a.func for a in self.aggregates)
        if len(names) != len(self.aggregates):
            raise PlanError("Reduce: as many names as aggregates are needed")
        outs = [a.output(self.input.schema, n) for a, n in zip(self.aggregates, names, strict=True)]
        _schema(self, (*keys, *outs))

    def inputs(self) -> tuple[Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        keys = ", ".join(f"#{i}" for i in self.group_by)
        return f"Reduce group_by=[{keys}] " + ", ".join(map(str, self.aggregates))


@dataclass(frozen=True)
class _SameRows(Plan):
    """An operator on one input whose output has the input's columns."""

    input: Plan
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        _schema(self, self.input.schema)

    def inputs(self) -> tuple[Plan, ...]:
        return (self.input,)


class Distinct(_SameRows):
    """Each row whose count is positive, once."""


@dataclass(frozen=True)
class Union(Plan):
    """Every row of every input, counts added (UNION ALL); the first input names the columns."""

    inputs_: tuple[Plan, ...]
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        if not self.inputs_:
            raise PlanError("a union takes at least one input")
        first = self.inputs_[0].schema
        for other in self.inputs_[1:]:
            kinds = [c.type for c in other.schema]
            if kinds != [c.type for c in first]:
                raise PlanError(
                    f"each UNION query must have the same columns: "
                    f"({', '.join(str(c.type) for c in first)}) and ({', '.join(map(str, kinds))})",
                    sqlstate="42804",
                )
        columns = []
        for i, c in enumerate(first):
            nullable = any(p.schema[i].nullable for p in self.inputs_)
            scales = {p.schema[i].scale for p in self.inputs_}
            scale = scales.pop() if len(scales) == 1 else None
            mod = shared([Mod.of(p.schema[i]) for p in self.inputs_])
            columns.append(Column(c.name, c.type, nullable, scale, *mod))
        _schema(self, columns)

    def inputs(self) -> tuple[Plan, ...]:
        return self.inputs_


class Negate(_SameRows):
    """The input with every count negated (with :class:`Union`: EXCEPT ALL's difference)."""


class Threshold(_SameRows):
    """The rows whose count is positive, with that count (negative counts dropped)."""


@dataclass(frozen=True)
class Order:
    """A sort key: column, direction, and where NULLs go (PostgreSQL's default: last when
    ascending, first when descending)."""

    column: int
    desc: bool = False
    nulls_last: bool | None = None

    @property
    def nulls_at_end(self) -> bool:
        return (not self.desc) if self.nulls_last is None else self.nulls_last

    def __str__(self) -> str:
        nulls = "NULLS LAST" if self.nulls_at_end else "NULLS FIRST"
        return f"#{self.column} {'DESC' if self.desc else 'ASC'} {nulls}"


@dataclass(frozen=True)
class TopK(Plan):
    """Per group of ``group_by``, the rows ranked ``offset`` to ``offset + limit`` by
    ``order_by`` (ties broken by the whole row, so the result is deterministic)."""

    input: Plan
    group_by: tuple[int, ...] = ()
    order_by: tuple[Order, ...] = ()
    limit: int | None = None
    offset: int = 0
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        for i in self.group_by:
            _check_index(i, self.input.schema, "TopK")
        for o in self.order_by:
            _check_index(o.column, self.input.schema, "TopK")
        if self.limit is not None and (isinstance(self.limit, bool) or self.limit < 0):
            raise PlanError(f"LIMIT must not be negative, not {self.limit}", sqlstate="2201W")
        if self.offset < 0:
            raise PlanError(f"OFFSET must not be negative, not {self.offset}", sqlstate="2201X")
        _schema(self, self.input.schema)

    def inputs(self) -> tuple[Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        keys = ", ".join(f"#{i}" for i in self.group_by)
        order = ", ".join(map(str, self.order_by))
        return f"TopK group_by=[{keys}] order_by=[{order}] limit={self.limit} offset={self.offset}"


@dataclass(frozen=True)
class TemporalFilter(Plan):
    """Each row only at the times ``t`` with ``max(lower) <= t < min(upper)``: the bounds are
    integer expressions over the row (``mz_now() >= e`` gives a lower, ``mz_now() < e`` an upper
    bound). A NULL bound drops the row; no bounds of a kind means no limit."""

    input: Plan
    lower: tuple[Expr, ...] = ()
    upper: tuple[Expr, ...] = ()
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        for e in (*self.lower, *self.upper):
            check_expr(e, self.input.schema, "TemporalFilter")
            _no_now(e, "TemporalFilter bound")
            if not e.type.integer and e.type != NULLTYPE:
                raise PlanError(
                    f"a mz_now() bound is an integer (epoch milliseconds), not {e.type}: {e}",
                    sqlstate="42804",
                )
        _schema(self, self.input.schema)

    def inputs(self) -> tuple[Plan, ...]:
        return (self.input,)

    def describe(self) -> str:
        bounds = [f"mz_now() >= {e}" for e in self.lower] + [f"mz_now() < {e}" for e in self.upper]
        return "TemporalFilter " + " AND ".join(bounds)
