"""INSERT, UPDATE and DELETE into plans over the table they change.

Each returns the rows to add or retract as plans (collections); the adapter applies them.
Values are assigned with PostgreSQL's assignment casts (numbers convert with rounding, anything
converts to text, quoted literals are read as the column's type); NOT NULL is for the adapter to
check on the rows (:func:`check_not_null`), as a plan cannot know.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter.constraints import Conflict
from changeflow.adapter.relations import Relation, Resolver
from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.adapter.sql.generated import refuse_value, with_generated
from changeflow.adapter.sql.query import Planner
from changeflow.adapter.sql.rows import ONE_ROW, Rel, unify_columns
from changeflow.adapter.sql.scalar import Scalars, bare, coerce_text, is_string_literal
from changeflow.adapter.sql.scope import Field, Scope, ident, table_name, unsupported
from changeflow.adapter.sql.subquery import Stage
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import DATE, NULLTYPE, TEXT, TIMESTAMP, TIMESTAMPTZ, Column, Schema
from changeflow.errors import EvalError, PlanError

_STAMPS = (DATE, TIMESTAMP, TIMESTAMPTZ)
Row = tuple[Any, ...]


@dataclass(frozen=True)
class InsertPlan:
    """Rows to insert into ``table`` (columns in the table's order); ``schema`` is the table's
    (its nullable flags are the NOT NULL constraints to check)."""

    table: str
    rows: P.Plan
    schema: Schema = ()
    reads: frozenset[str] = frozenset()  # the items a query or subquery in it reads
    timelines: frozenset[str] = frozenset()
    conflict: Conflict | None = None  # ON CONFLICT


@dataclass(frozen=True)
class FromColumns:
    """The columns of UPDATE's FROM or DELETE's USING relations, carried after the table's
    in its planned rows for RETURNING: the names they go by there, and their types."""

    fields: tuple[Field, ...]
    schema: Schema


@dataclass(frozen=True)
class DeletePlan:
    """Rows of ``table`` to retract."""

    table: str
    rows: P.Plan
    reads: frozenset[str] = frozenset()  # the items read: the table and those of subqueries
    timelines: frozenset[str] = frozenset()
    sources: FromColumns | None = None  # USING: ``rows`` are the matches (see whole_rows)


@dataclass(frozen=True)
class UpdatePlan:
    """Rows of ``table`` to retract (``old``) and to insert in their place (``new``)."""

    table: str
    old: P.Plan
    new: P.Plan
    schema: Schema = ()
    reads: frozenset[str] = frozenset()  # the items read: the table and those of subqueries
    timelines: frozenset[str] = frozenset()
    sources: FromColumns | None = None  # FROM: ``old`` the distinct matched rows, ``new``
    # (old, new, FROM columns) of each match


def whole_rows(
    rows: list[tuple[Row, int]], table: dict[Row, int], width: int
) -> tuple[list[tuple[Row, int]], list[Row]]:
    """The changes of an UPDATE … FROM or DELETE … USING: every copy of each matched row
    retracted once however many rows it joined, and (UPDATE) replaced by the new values of
    one of its matches (the first in sort order; PostgreSQL leaves the choice open); with,
    for each change, the FROM or USING columns of that match (for RETURNING)."""
    from changeflow.compute.evaluate import sort_key

    def first(rows: list[tuple[Row, int]]) -> dict[Row, Row]:
        chosen: dict[Row, Row] = {}
        for row, _ in sorted(rows, key=lambda rc: sort_key(rc[0], ())):
            chosen.setdefault(row[:width], row[width:])
        return chosen

    out: list[tuple[Row, int]] = []
    extras: list[Row] = []
    for row, rest in first([r for r in rows if r[1] < 0]).items():
        if table.get(row):
            out.append((row, -table[row]))
            extras.append(rest)
    for row, rest in first([r for r in rows if r[1] > 0]).items():
        if table.get(row):
            out.append((rest[:width], table[row]))
            extras.append(rest[width:])
    return out, extras


def check_not_null(row: tuple[Any, ...], schema: Schema, table: str) -> None:
    """PostgreSQL's error (23502) if ``row`` has NULL in a NOT NULL column of ``table``."""
    from changeflow.adapter.checks import failing_row

    for value, c in zip(row, schema, strict=True):
        if value is None and not c.nullable:
            raise EvalError(
                f'null value in column "{c.name}" of relation "{table}" violates not-null '
                "constraint",
                sqlstate="23502",
                detail=failing_row(row, schema),
                table=table,
                column=c.name,
            )


def target_table(node: exp.Expression, resolver: Resolver, verb: str) -> tuple[exp.Table, Relation]:
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table):
        raise unsupported(f"{verb} into {type(table).__name__}", node)
    name = table_name(table)
    relation = resolver.relation(name)
    if relation.kind != "table":
        raise PlanError(f'cannot {verb} {relation.kind} "{name}"', sqlstate="42809")
    return table, relation


def assign(e: X.Expr, node: exp.Expression | None, column: Column) -> X.Expr:
    """``e`` as a value of ``column``, by PostgreSQL's assignment cast."""
    target = column.type
    node = None if node is None else bare(node)
    if node is not None and is_string_literal(node):
        return coerce_text(str(node.this), target)
    source = e.type
    if source == target:
        return e
    if source.element is not None and target.element is not None:  # an array's: its elements'
        source, target = source.element, target.element  # type: ignore[assignment]
    ok = (
        source == NULLTYPE
        or (source.numeric and target.numeric)
        or target == TEXT
        or (source in _STAMPS and target in _STAMPS)
    )
    if not ok:
        raise PlanError(
            f'column "{column.name}" is of type {column.type} but expression is of type {e.type}',
            sqlstate="42804",
            column=column.name,
        )
    return X.Cast(e, column.type)


def column_default(relation: Relation, index: int) -> tuple[X.Expr, exp.Expression | None]:
    """A column's DEFAULT as an expression (NULL without one) and its SQL node."""
    defaults = relation.defaults
    return _default_of(defaults[index] if index < len(defaults) else None)


def default_plan(column: Column, text: str | None) -> P.Plan:
    """One row: the value of ``column``'s DEFAULT (the SQL ``text``), as the column takes it."""
    e, node = _default_of(text)
    return P.Map(ONE_ROW, ((column.name, assign(e, node, column)),))


def _default_of(text: str | None) -> tuple[X.Expr, exp.Expression | None]:
    if text is None:
        return X.Lit(None), None
    try:
        node = sqlglot.parse_one(text, read=PostgresCalls)
    except sqlglot.errors.ParseError as e:
        raise PlanError(f"invalid DEFAULT {text!r}: {e}", sqlstate="42601") from None
    return Scalars(Scope(), (), "DEFAULT")(node), node


def _generated(relation: Relation, exprs: list[tuple[str, X.Expr]]) -> tuple:
    """Named column values with the generated columns computed from the others."""
    values = with_generated(relation, [e for _, e in exprs])
    return tuple((name, e) for (name, _), e in zip(exprs, values, strict=True))


def is_default(node: exp.Expression) -> bool:
    """The DEFAULT keyword (a bare, unquoted ``default``)."""
    if isinstance(node, exp.Var):
        return node.name.upper() == "DEFAULT"
    if isinstance(node, exp.Column) and not node.args.get("table"):
        return not node.this.quoted and node.this.this.upper() == "DEFAULT"
    return False


def _columns(insert: exp.Insert, schema: Schema, table: str) -> list[int]:
    target = insert.this
    if not isinstance(target, exp.Schema):
        return list(range(len(schema)))
    return target_columns(target.expressions, schema, table)


def target_columns(nodes: list[exp.Expression], schema: Schema, table: str) -> list[int]:
    """The positions of an INSERT's listed columns in ``schema``, with PostgreSQL's errors."""
    names = [c.name for c in schema]
    out: list[int] = []
    for node in nodes:
        name = ident(node)
        if name not in names:
            raise PlanError(
                f'column "{name}" of relation "{table}" does not exist', sqlstate="42703"
            )
        if names.index(name) in out:
            raise PlanError(f'column "{name}" specified more than once', sqlstate="42701")
        out.append(names.index(name))
    return out


def count_error(values: int, targets: int) -> None:
    """42601 unless an INSERT gives as many values as it lists target columns."""
    if values > targets:
        raise PlanError("INSERT has more expressions than target columns", sqlstate="42601")
    if values < targets:
        raise PlanError("INSERT has more target columns than expressions", sqlstate="42601")


def plan_conflict(node: exp.OnConflict, relation: Relation, alias: str) -> Conflict:
    from changeflow.adapter.sql.conflict import plan_conflict as planned

    return planned(node, relation, alias)


def plan_insert(insert: exp.Insert, resolver: Resolver) -> InsertPlan:
    """``INSERT INTO t [(columns)] VALUES ... | query``."""
    if insert.args.get("where"):
        raise unsupported("INSERT with WHERE", insert)
    table, relation = target_table(insert.this, resolver, "insert into")
    name = ident(table.this)
    conflict = None
    if insert.args.get("conflict") is not None:
        alias = table.args.get("alias")
        shown = ident(alias.this) if alias is not None else name
        conflict = plan_conflict(insert.args["conflict"], relation, shown)
    schema = relation.plan.schema
    targets = _columns(insert, schema, name)
    source = insert.expression
    explicit = isinstance(insert.this, exp.Schema)
    if not explicit and isinstance(source, exp.Values) and source.expressions:
        # no column list: the first N columns, as PostgreSQL
        widths = {len(r.expressions) if isinstance(r, exp.Tuple) else 1 for r in source.expressions}
        if len(widths) > 1:
            raise PlanError("VALUES lists must all be the same length", sqlstate="42601")
        targets = targets[: widths.pop()]
    overriding = insert.args.get("overriding")
    if overriding is None:  # OVERRIDING SYSTEM VALUE takes them, USER VALUE ignores them
        _given_always(relation, targets, source)
    ignored = frozenset(
        i for i in targets if overriding == "user" and schema[i].name in relation.identity
    )
    planner = Planner(resolver, False)
    if source is None:  # DEFAULT VALUES
        plan = _values_row(exp.Tuple(expressions=[]), relation, [])
    elif isinstance(source, exp.Values):
        rows = [_values_row(row, relation, targets, ignored, planner) for row in source.expressions]
        rows = unify_columns(rows, "VALUES")
        plan = rows[0] if len(rows) == 1 else P.Union(tuple(rows))
    else:
        out = planner.query(source, None)
        if not explicit:
            targets = targets[: len(out.names)]
        count_error(len(out.names), len(targets))
        plan = _fill(out.plan, relation, targets, ignored)
    reads = frozenset(planner.items)
    return InsertPlan(relation.name, plan, schema, reads, frozenset(planner.timelines), conflict)


def _given_always(relation: Relation, targets: list[int], source: Any) -> None:
    """428C9 if a value is given (not DEFAULT) for a GENERATED ALWAYS identity column."""
    if source is None:  # DEFAULT VALUES
        return
    for k, i in enumerate(targets):
        name = relation.plan.schema[i].name
        if name not in relation.always:
            continue
        rows = source.expressions if isinstance(source, exp.Values) else None
        items = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in rows or []]
        if rows is None or any(k < len(r) and not is_default(r[k]) for r in items):
            raise PlanError(
                f'cannot insert a non-DEFAULT value into column "{name}"',
                sqlstate="428C9",
                detail=f'Column "{name}" is an identity column defined as GENERATED ALWAYS.',
                hint="Use OVERRIDING SYSTEM VALUE to override.",
            )


def _values_row(
    row: exp.Expression,
    relation: Relation,
    targets: list[int],
    ignored: frozenset[int] = frozenset(),
    planner: Planner | None = None,
) -> P.Plan:
    """A VALUES row as the table's columns; the ``ignored`` ones take their defaults. A row
    with subqueries is planned as a SELECT of its items (the subqueries joined on as there)."""
    schema = relation.plan.schema
    items = row.expressions if isinstance(row, exp.Tuple) else [row]
    count_error(len(items), len(targets))
    given = dict(zip(targets, items, strict=True))
    if planner is not None and any(item.find(exp.Select) for item in items):
        kept = [(i, node) for i, node in given.items() if not is_default(node)]
        out = planner.query(exp.Select(expressions=[node.copy() for _, node in kept]), None)
        return _fill(out.plan, relation, [i for i, _ in kept], ignored, [n for _, n in kept])
    sc = Scalars(Scope(), (), "VALUES")
    exprs = []
    for i, column in enumerate(schema):
        node = given.get(i)
        if node is not None and i in ignored:
            sc(node)  # checked, then left out, as PostgreSQL does
            node = None
        if node is None or is_default(node):
            e, node = column_default(relation, i)
        else:
            refuse_value(relation, column.name, update=False)
            e = sc(node)
        exprs.append((column.name, assign(e, node, column)))
    return P.Map(ONE_ROW, _generated(relation, exprs))


def _fill(
    rows: P.Plan,
    relation: Relation,
    targets: list[int],
    ignored: frozenset[int] = frozenset(),
    nodes: list[exp.Expression] | None = None,
) -> P.Plan:
    """The query's rows as the table's columns: given ones cast (a quoted literal among the
    items ``nodes`` read as its column's type), missing (and ``ignored``) ones defaulted."""
    schema = relation.plan.schema
    exprs = []
    for i, column in enumerate(schema):
        if i in targets and i not in ignored:
            refuse_value(relation, column.name, update=False)
            j = targets.index(i)
            e, node = P.col(rows.schema, j), None if nodes is None else nodes[j]
        else:
            e, node = column_default(relation, i)
        exprs.append((column.name, assign(e, node, column)))
    width = len(rows.schema)
    mapped = P.Map(rows, _generated(relation, exprs))
    return P.Project(mapped, tuple(range(width, width + len(schema))))


def statement_planner(node: exp.Expression, resolver: Resolver) -> Planner:
    """A planner for the DML statement ``node``, its WITH RECURSIVE queries defined."""
    planner = Planner(resolver, False)
    clause = node.args.get("with_")
    if clause is not None:
        planner.ctes.append({})
        planner.define(clause, None)
    return planner


def _matching(
    node: exp.Expression, resolver: Resolver, verb: str, sources: list[exp.Expression] = ()
) -> tuple[Stage, Relation]:
    """The target table's rows that match WHERE (joined with the ``sources`` of UPDATE's
    FROM or DELETE's USING, after the table's columns), as a stage for further
    expressions."""
    table, relation = target_table(node.this, resolver, verb)
    planner = statement_planner(node, resolver)
    planner.items.add(relation.name)
    planner.timelines.add(relation.timeline)
    alias = table.args.get("alias")
    qualifier = ident(alias.this) if alias is not None else ident(table.this)
    fields = [Field(qualifier, c.name, i) for i, c in enumerate(relation.plan.schema)]
    rel = Rel(relation.plan, Scope(fields))
    for source in sources:
        rel = planner.join(rel, planner.table_ref(source, None), exp.Join(this=source), None)
        for j in source.args.get("joins") or []:
            rel = planner.join(rel, planner.table_ref(j.this, None), j, None)
    stage = Stage(planner, rel, "WHERE")
    where = node.args.get("where")
    if where is not None:
        stage.filter([where.this])
    return stage, relation


def plan_delete(delete: exp.Delete, resolver: Resolver) -> DeletePlan:
    """``DELETE FROM t [WHERE ...]``: the rows to retract."""
    for key in ("limit", "order"):
        if delete.args.get(key):
            raise unsupported(f"DELETE with {key.upper()}", delete)
    sources = list(delete.args.get("using") or [])
    stage, relation = _matching(delete, resolver, "delete from", sources)
    planner = stage.planner
    reads, timelines = frozenset(planner.items), frozenset(planner.timelines)
    carried = _from_columns(stage, len(relation.plan.schema)) if sources else None
    return DeletePlan(relation.name, stage.rel.plan, reads, timelines, carried)


def _from_columns(stage: Stage, n: int) -> FromColumns:
    """The columns after the table's ``n`` of a statement's matching rows (its FROM's)."""
    schema = stage.rel.plan.schema
    return FromColumns(tuple(f for f in stage.rel.scope.fields if f.index >= n), schema[n:])


def plan_update(update: exp.Update, resolver: Resolver) -> UpdatePlan:
    """``UPDATE t SET c = e, ... [WHERE ...]``: the matching rows and their new values."""
    for key in ("limit", "order"):
        if update.args.get(key):
            raise unsupported(f"UPDATE with {key.upper()}", update)
    source = update.args.get("from_") or update.args.get("from")
    sources = [source.this] if source is not None else []
    stage, relation = _matching(update, resolver, "update", sources)
    from changeflow.adapter.sql.set_clause import set_columns

    schema = relation.plan.schema
    old, n = stage.rel.plan, len(schema)
    carried = _from_columns(stage, n) if sources else None
    exprs = set_columns(stage, relation, update.expressions, ident(update.this.this))
    plan = stage.rel.plan
    width = len(plan.schema)
    kept = tuple(range(n)) if sources else ()
    extras = tuple(range(n, len(old.schema))) if sources else ()
    new = P.Project(P.Map(plan, tuple(exprs)), kept + tuple(range(width, width + n)) + extras)
    if sources:
        old = P.Distinct(P.Project(old, tuple(range(n))))
    reads, timelines = frozenset(stage.planner.items), frozenset(stage.planner.timelines)
    return UpdatePlan(relation.name, old, new, schema, reads, timelines, carried)
