"""``MERGE INTO t USING source ON condition WHEN [NOT] MATCHED [AND condition] THEN …``, as
PostgreSQL 15 runs it: every source row joined to the target rows it matches (a right join,
with a mark that says whether a target row was there), and each joined row takes the first
WHEN clause of its kind (MATCHED or NOT MATCHED) whose condition holds: UPDATE SET, DELETE,
INSERT or DO NOTHING. The plans say which target rows go and which rows come; that no target
row is changed twice (21000) is for the adapter to check against the table's rows."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from changeflow.adapter.relations import Relation, Resolver
from changeflow.adapter.sql.dml import (
    assign,
    column_default,
    count_error,
    is_default,
    statement_planner,
    target_columns,
    target_table,
)
from changeflow.adapter.sql.generated import refuse_value, with_generated
from changeflow.adapter.sql.rows import Rel
from changeflow.adapter.sql.scope import Field, Scope, ident, table_name
from changeflow.adapter.sql.set_clause import set_columns
from changeflow.adapter.sql.subquery import Stage
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import BOOL, INT4, NULLTYPE
from changeflow.errors import PlanError

MATCHED = "_merge_matched"  # TRUE on a target row, NULL where the join found none


@dataclass(frozen=True)
class MergePlan:
    """Rows of ``table`` that MERGE retracts (``old``: updated or deleted, once per source
    row that matched them), adds in their place (``updated``) and inserts (``inserted``)."""

    table: str
    old: P.Plan
    updated: P.Plan
    inserted: P.Plan
    reads: frozenset[str] = frozenset()
    timelines: frozenset[str] = frozenset()


def plan_merge(merge: exp.Merge, resolver: Resolver) -> MergePlan:
    """The plans of a MERGE statement (see the module docstring)."""
    named = resolver.relation(table_name(merge.this))
    if named.kind != "table":
        raise PlanError(
            f'cannot execute MERGE on relation "{named.name}"',
            sqlstate="0A000",
            detail=f"This operation is not supported for {named.kind}s.",
        )
    table, relation = target_table(merge.this, resolver, "merge into")
    alias = table.args.get("alias")
    shown = ident(alias.this) if alias is not None else ident(table.this)
    planner = statement_planner(merge, resolver)
    planner.items.add(relation.name)
    planner.timelines.add(relation.timeline)
    schema = relation.plan.schema
    n = len(schema)
    marked = P.Map(relation.plan, ((MATCHED, X.lit(True)),))
    fields = [Field(shown, c.name, i) for i, c in enumerate(schema)]
    source = planner.table_ref(merge.args["using"], None)
    if shown in source.scope.tables:
        raise PlanError(
            f'name "{shown}" specified more than once',
            sqlstate="42712",
            detail="The name is used both as MERGE target table and data source.",
        )
    join = exp.Join(this=merge.args["using"], side="RIGHT", on=merge.args["on"])
    rel = planner.join(Rel(marked, Scope(fields)), source, join, None)
    whens = list(merge.args["whens"].expressions)
    _reachable(whens)
    stage = Stage(planner, rel, "WHEN")
    conditions = [w.args.get("condition") for w in whens]
    stage.hoist([c for c in conditions if c is not None])
    sc = stage.scalars()
    matched = X.IsNull(P.col(stage.rel.plan.schema, n), negated=True)
    branches = []
    for k, (when, condition) in enumerate(zip(whens, conditions, strict=True)):
        kind = matched if when.args.get("matched") else X.Not(matched)
        test = kind if condition is None else X.And((kind, _boolean(sc(condition))))
        branches.append((test, X.lit(k + 1)))
    action = X.Case(tuple(branches), X.Lit(None, INT4))
    width = len(stage.rel.plan.schema)
    chosen = P.Map(stage.rel.plan, (("_merge_action", action),))
    old, updated, inserted = [], [], []
    for k, when in enumerate(whens):
        rows = P.Filter(chosen, (X.Cmp("=", P.col(chosen.schema, width), X.lit(k + 1)),))
        rows = P.Project(rows, tuple(range(width)))
        then = when.args["then"]
        clause = Stage(planner, Rel(rows, stage.rel.scope), "MERGE")
        if isinstance(then, exp.Update):
            exprs = set_columns(clause, relation, then.expressions, relation.name)
            old.append(P.Project(rows, tuple(range(n))))
            mapped = P.Map(clause.rel.plan, exprs)
            at = len(clause.rel.plan.schema)
            updated.append(P.Project(mapped, tuple(range(at, at + n))))
        elif isinstance(then, exp.Insert):
            source_only = Scope([f for f in stage.rel.scope.fields if f.index > n])
            clause.rel = Rel(rows, source_only)
            inserted.append(_insert(clause, relation, then, shown))
        elif then.name.upper() == "DELETE":
            old.append(P.Project(rows, tuple(range(n))))
    reads, timelines = frozenset(planner.items), frozenset(planner.timelines)
    return MergePlan(
        relation.name,
        _union(old, relation.plan),
        _union(updated, relation.plan),
        _union(inserted, relation.plan),
        reads,
        timelines,
    )


def _reachable(whens: list[exp.When]) -> None:
    """42601 for a WHEN clause after an unconditional one of its kind."""
    final: set[bool] = set()
    for when in whens:
        matched = bool(when.args.get("matched"))
        if when.args.get("source"):
            raise PlanError("WHEN NOT MATCHED BY SOURCE is not supported", sqlstate="0A000")
        if matched in final:
            raise PlanError(
                "unreachable WHEN clause specified after unconditional WHEN clause",
                sqlstate="42601",
            )
        if when.args.get("condition") is None:
            final.add(matched)


def _boolean(e: X.Expr) -> X.Expr:
    if e.type not in (BOOL, NULLTYPE):
        raise PlanError(
            f"argument of WHEN must be type boolean, not type {e.type}", sqlstate="42804"
        )
    return e


def _insert(clause: Stage, relation: Relation, insert: exp.Insert, shown: str) -> P.Plan:
    """An INSERT action's row for each source row of ``clause`` (whose scope has only the
    source's columns: the target's are not there to read)."""
    schema = relation.plan.schema
    columns, values = insert.this, insert.expression
    listed = columns.expressions if isinstance(columns, exp.Tuple) else []
    if values is None and len(listed) == 1 and is_default(listed[0]):  # DEFAULT VALUES
        listed = []
    targets = target_columns(listed, schema, relation.name)
    items = values.expressions if isinstance(values, exp.Tuple) else []
    if values is not None and not listed:
        targets = list(range(min(len(items), len(schema))))
    count_error(len(items), len(targets))
    given = dict(zip(targets, items, strict=True))
    for i, node in given.items():
        if not is_default(node):
            refuse_value(relation, schema[i].name, update=False)
        if schema[i].name in relation.always and not is_default(node):
            raise PlanError(
                f'cannot insert a non-DEFAULT value into column "{schema[i].name}"',
                sqlstate="428C9",
                detail=f'Column "{schema[i].name}" is an identity column defined as '
                "GENERATED ALWAYS.",
            )
    clause.hoist([node for node in given.values() if not is_default(node)])
    sc = clause.scalars()
    exprs = []
    for i, column in enumerate(schema):
        node = given.get(i)
        if node is None or is_default(node):
            e, node = column_default(relation, i)
        else:
            try:
                e = sc(node)
            except PlanError as err:
                raise _target_read(err, shown) from None
        exprs.append(assign(e, node, column))
    exprs = with_generated(relation, exprs)
    width = len(clause.rel.plan.schema)
    named = tuple((c.name, e) for c, e in zip(schema, exprs, strict=True))
    return P.Project(P.Map(clause.rel.plan, named), tuple(range(width, width + len(schema))))


def _target_read(err: PlanError, shown: str) -> PlanError:
    """PostgreSQL's words for a target column read by an INSERT action."""
    if not err.message.startswith(f'missing FROM-clause entry for table "{shown}"'):
        return err
    return PlanError(
        f'invalid reference to FROM-clause entry for table "{shown}"',
        sqlstate="42P01",
        hint=f'There is an entry for table "{shown}", but it cannot be referenced from this '
        "part of the query.",
    )


def _union(plans: list[P.Plan], table: P.Plan) -> P.Plan:
    """The plans' rows together (none: no rows, of the table's columns)."""
    if len(plans) == 1:
        return plans[0]
    if plans:
        return P.Union(tuple(plans))
    return P.Filter(table, (X.lit(False),))
