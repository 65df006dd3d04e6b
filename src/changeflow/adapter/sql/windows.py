"""Window functions in a SELECT (``f(…) OVER (PARTITION BY … ORDER BY … frame)``), planned
after FROM, WHERE, GROUP BY and HAVING and before the select list, as PostgreSQL evaluates
them: one :class:`~changeflow.compute.window.Window` node per distinct PARTITION BY/ORDER BY,
whose added columns replace the window calls in the select list and ORDER BY."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.sql import statistics
from changeflow.adapter.sql.enum_order import label_at, ranked_window, sort_value
from changeflow.adapter.sql.rows import Rel, col_of
from changeflow.adapter.sql.scalar import AGGREGATE_NODES, Scalars, coerce_text, walk
from changeflow.adapter.sql.scope import Scope, ident, unsupported
from changeflow.adapter.sql.subquery import Stage
from changeflow.adapter.sql.types import operator_for
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute import window as W
from changeflow.compute.intervals import Interval
from changeflow.compute.types import BOOL, INT8, INTERVAL, NUMERIC, SqlType
from changeflow.errors import PlanError

_NAMES: dict[type, str] = {
    exp.RowNumber: "row_number",
    exp.Rank: "rank",
    exp.DenseRank: "dense_rank",
    exp.PercentRank: "percent_rank",
    exp.CumeDist: "cume_dist",
    exp.Ntile: "ntile",
    exp.Lag: "lag",
    exp.Lead: "lead",
    exp.FirstValue: "first_value",
    exp.LastValue: "last_value",
    exp.NthValue: "nth_value",
} | AGGREGATE_NODES


def window_calls(nodes: list[exp.Expression]) -> list[exp.Window]:
    """The window calls in ``nodes`` (not in subqueries), in order."""
    return [n for node in nodes for n in walk(node) if isinstance(n, exp.Window)]


def windowed_functions(nodes: list[exp.Expression]) -> set[int]:
    """The ids of the function nodes that window calls apply (an aggregate there is not a
    grouping aggregate)."""
    return {id(w.this) for w in window_calls(nodes)} | {
        id(w.this.this) for w in window_calls(nodes) if isinstance(w.this, exp.Filter)
    }


def function_name(fn: exp.Expression) -> str:
    """The name PostgreSQL gives a window function (and its output column)."""
    if isinstance(fn, exp.Anonymous):
        name = str(fn.this).lower()
        return "bool_and" if name == "every" else name
    if type(fn) in _NAMES:
        return _NAMES[type(fn)]
    return fn.key


class Windows:
    """The Planner's window functions."""

    def windows(self, node: exp.Select, stage: Stage, nodes: list[exp.Expression]) -> Stage:
        """``stage`` with a column for each window call in ``nodes``, recorded as its
        replacement."""
        calls = window_calls(nodes)
        if not calls:
            return stage
        for call in calls:
            for inner in walk(call):
                if inner is not call and isinstance(inner, exp.Window):
                    raise PlanError("window function calls cannot be nested", sqlstate="42P20")
        stage.hoist(calls)
        named = {ident(w.this): w for w in node.args.get("windows") or []}
        specs: list[tuple[tuple[int, ...], tuple[P.Order, ...]]] = []
        funcs: dict[int, list[tuple[exp.Window, W.WindowFunc]]] = {}
        enums: dict[int, SqlType | None] = {}  # an enum's min or max: by its labels' positions
        for call in calls:
            spec = _resolve(call, named)
            sc = stage.scalars()
            sc.clause = "window definition"
            plan = stage.rel.plan
            keys = [sc(p) for p in spec.args.get("partition_by") or []]
            order = spec.args.get("order")
            ordered = list(order.expressions) if order is not None else []
            sort = [sort_value(sc(o.this)) for o in ordered]
            for k in keys:
                operator_for(k.type)
            for k in sort:
                operator_for(k.type, ordering=True)
            sc.clause = "a window function"
            function = self.window_function(call.this, spec.args.get("spec"), sc, len(ordered))
            function, enums[id(call)] = ranked_window(function)
            columns, plan = _columns(plan, keys + sort)
            stage.rel = Rel(plan, stage.rel.scope)
            shape = (
                tuple(columns[: len(keys)]),
                tuple(_order(c, o) for c, o in zip(columns[len(keys) :], ordered, strict=True)),
            )
            if shape not in specs:
                specs.append(shape)
            for part in statistics.window_parts(function):
                funcs.setdefault(specs.index(shape), []).append((call, part))
        plan = stage.rel.plan
        for i, (partition, orders) in enumerate(specs):
            group = funcs[i]
            width = len(plan.schema)
            names = tuple(function_name(c.this) for c, _ in group)
            plan = W.Window(plan, partition, orders, tuple(f for _, f in group), names)
            found: dict[int, list[X.Expr]] = {}
            for j, (call, _) in enumerate(group):
                found.setdefault(id(call), []).append(col_of(plan, width + j))
            for call, _ in group:
                name = function_name(call.this.this if _filtered(call) else call.this)
                value = statistics.window_value(name, found[id(call)])
                kind = enums[id(call)]
                stage.replacements[id(call)] = value if kind is None else label_at(kind, value)
        stage.rel = Rel(plan, stage.rel.scope)
        return stage

    def window_function(
        self, fn: exp.Expression, spec: exp.WindowSpec | None, sc: Scalars, ordered: int
    ) -> W.WindowFunc:
        """The window function ``fn`` with its arguments and frame."""
        condition = None
        if isinstance(fn, exp.Filter):
            condition = sc(fn.expression.this)
            fn = fn.this
        if fn.find(exp.Order) is not None and fn.find(exp.Subquery) is None:
            message = "aggregate ORDER BY is not implemented for window functions"
            raise PlanError(message, sqlstate="0A000")
        name = function_name(fn)
        if name not in W.FUNCTIONS and name not in statistics.COMBINED:
            raise PlanError(f"function {name} is not a window function here", sqlstate="42809")
        if name in W.COLLECTED and condition is not None:
            raise unsupported(f"{name} with FILTER as a window function", fn)
        if condition is not None and name not in (*W.AGGREGATES, *statistics.COMBINED):
            raise PlanError(
                "FILTER is not implemented for non-aggregate window functions", sqlstate="0A000"
            )
        nodes = _arguments(fn)
        if any(isinstance(n, exp.Distinct) for n in nodes):
            raise PlanError("DISTINCT is not implemented for window functions", sqlstate="0A000")
        if name in ("lag", "lead") and len(nodes) == 3:
            value, offset, default = nodes
            pair = sc.unify([value, default])
            kind = X.common_type(tuple(pair), name)
            value_, default_ = (e if e.type is kind else X.Cast(e, kind) for e in pair)
            args = [value_, sc(offset), default_]
        else:
            args = [sc(n) for n in nodes if not isinstance(n, exp.Star)]
        if condition is not None:
            arg = args[0] if args else X.Lit(True, BOOL)
            args = [X.Case(((condition, arg),), X.Lit(None))]
        for i in _integer_arguments(name, len(args)):
            if not args[i].type.integer:
                raise PlanError(
                    f"function {name} does not take {args[i].type} as argument {i + 1}",
                    sqlstate="42883",
                )
            args[i] = X.Cast(args[i], INT8) if args[i].type is not INT8 else args[i]
        return W.WindowFunc(name, tuple(args), _frame(spec, ordered))


def _filtered(call: exp.Window) -> bool:
    return isinstance(call.this, exp.Filter)


def _integer_arguments(name: str, count: int) -> list[int]:
    if name == "ntile":
        return [0]
    if name in ("lag", "lead") and count > 1 or name == "nth_value":
        return [1]
    return []


def _arguments(fn: exp.Expression) -> list[exp.Expression]:
    if isinstance(fn, exp.Lag | exp.Lead):
        return [a for a in (fn.this, fn.args.get("offset"), fn.args.get("default")) if a]
    if isinstance(fn, exp.NthValue):
        return [fn.this, fn.args["offset"]]
    if isinstance(fn, exp.Anonymous):
        return list(fn.expressions)
    if isinstance(fn, exp.GroupConcat):  # string_agg(value, separator)
        return [a for a in (fn.this, fn.args.get("separator")) if a is not None]
    first = fn.this if isinstance(fn.this, exp.Expression) else None
    return ([first] if first is not None else []) + list(fn.expressions)


def _resolve(
    call: exp.Window, named: dict[str, exp.Window], seen: frozenset[str] = frozenset()
) -> exp.Window:
    """The call's window specification: for ``OVER w`` the named window's; for
    ``OVER (w ORDER BY … frame)`` the named window's partitioning (and ordering) with the
    call's own ordering and frame, as PostgreSQL copies a window (42P20 for what it refuses)."""
    alias = call.args.get("alias")
    if alias is None:
        return call
    name = ident(alias)
    if name not in named or name in seen:
        raise PlanError(f'window "{name}" does not exist', sqlstate="42704")
    base = _resolve(named[name], named, seen | {name})
    partition, order, frame = (call.args.get(k) for k in ("partition_by", "order", "spec"))
    if not (partition or order or frame):
        return base
    if partition:
        raise PlanError(f'cannot override PARTITION BY clause of window "{name}"', sqlstate="42P20")
    if order and base.args.get("order"):
        raise PlanError(f'cannot override ORDER BY clause of window "{name}"', sqlstate="42P20")
    if base.args.get("spec"):
        raise PlanError(
            f'cannot copy window "{name}" because it has a frame clause', sqlstate="42P20"
        )
    merged = base.copy()
    for key, own in (("order", order), ("spec", frame)):
        if own:
            merged.set(key, own.copy())
    return merged


def _columns(plan: P.Plan, exprs: list[X.Expr]) -> tuple[list[int], P.Plan]:
    """Each expression's column, mapping those that are not columns onto ``plan``."""
    new = [(f"w{i}", e) for i, e in enumerate(exprs) if not isinstance(e, X.Col)]
    base = len(plan.schema)
    mapped = P.Map(plan, tuple(new)) if new else plan
    columns, fresh = [], base
    for e in exprs:
        if isinstance(e, X.Col):
            columns.append(e.index)
        else:
            columns.append(fresh)
            fresh += 1
    return columns, mapped


def _order(column: int, o: exp.Ordered) -> P.Order:
    desc = bool(o.args.get("desc"))
    nulls_first = o.args.get("nulls_first")
    return P.Order(column, desc, None if nulls_first is None else not nulls_first)


def _frame(spec: exp.WindowSpec | None, ordered: int) -> W.Frame:
    """The frame clause as PostgreSQL reads it (the default: RANGE UNBOUNDED PRECEDING)."""
    if spec is None:
        return W.Frame()
    mode = str(spec.args.get("kind") or "range").lower()
    start = _bound(spec.args.get("start"), spec.args.get("start_side"), mode)
    end = (
        _bound(spec.args.get("end"), spec.args.get("end_side"), mode)
        if spec.args.get("end") is not None
        else W.Bound("current")
    )
    if start.kind == "unbounded" and not start.preceding:
        raise PlanError("frame start cannot be UNBOUNDED FOLLOWING", sqlstate="42P20")
    if end.kind == "unbounded" and end.preceding:
        raise PlanError("frame end cannot be UNBOUNDED PRECEDING", sqlstate="42P20")
    if start.kind == "current" and end.kind == "offset" and end.preceding:
        raise PlanError(
            "frame starting from current row cannot have preceding rows", sqlstate="42P20"
        )
    following = start.kind == "offset" and not start.preceding
    if following and (end.kind == "current" or end.kind == "offset" and end.preceding):
        raise PlanError(
            "frame starting from following row cannot have preceding rows", sqlstate="42P20"
        )
    if mode == "range" and "offset" in (start.kind, end.kind) and ordered != 1:
        raise PlanError(
            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
            sqlstate="42P20",
        )
    if mode == "groups" and not ordered:
        raise PlanError("GROUPS mode requires an ORDER BY clause", sqlstate="42P20")
    exclude = spec.args.get("exclude")
    shown = " ".join(str(exclude.name if isinstance(exclude, exp.Var) else exclude).split())
    return W.Frame(mode, start, end, shown.lower() if exclude is not None else "no others")


def _bound(value: exp.Expression | str | None, side: str | None, mode: str) -> W.Bound:
    preceding = str(side or "").upper() != "FOLLOWING"
    text = value.upper() if isinstance(value, str) else None
    if text == "UNBOUNDED":
        return W.Bound("unbounded", 0, preceding)
    if text == "CURRENT ROW":
        return W.Bound("current")
    if not isinstance(value, exp.Expression):
        raise unsupported(f"the frame bound {value}")
    offset = Scalars(Scope(), (), "a frame offset")(value)
    if offset.columns():
        raise PlanError("argument of ROWS must not contain variables", sqlstate="42P10")
    found = offset.eval(())
    if isinstance(found, str):  # a quoted literal: ROWS' and GROUPS' bigint, RANGE's
        found = _unknown_offset(found, mode)  # number or interval
    if found is None:
        raise PlanError("frame starting offset must not be null", sqlstate="22004")
    if found < (Interval() if isinstance(found, Interval) else 0):
        raise PlanError("frame starting offset must not be negative", sqlstate="22013")
    return W.Bound("offset", found, preceding)


def _unknown_offset(text: str, mode: str) -> object:
    """A quoted frame offset read as PostgreSQL reads it: a bigint for ROWS and GROUPS; for
    RANGE a number, else an interval (for a date or timestamp ORDER BY column)."""
    if mode != "range":
        return coerce_text(text, INT8).value
    try:
        return coerce_text(text, NUMERIC).value
    except PlanError as not_a_number:
        try:
            return coerce_text(text, INTERVAL).value
        except PlanError:
            raise not_a_number from None
