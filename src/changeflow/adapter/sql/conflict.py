"""INSERT … ON CONFLICT planned: the constraint it arbitrates on (its columns or ON
CONSTRAINT name), and DO UPDATE's SET list and WHERE as expressions over the existing row
followed by the proposed one (``EXCLUDED``), with PostgreSQL's errors."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.constraints import Conflict, Unique
from changeflow.adapter.partial_index import implied_parts
from changeflow.adapter.relations import Relation
from changeflow.adapter.sql.dml import assign
from changeflow.adapter.sql.generated import refuse_value, with_generated
from changeflow.adapter.sql.scalar import Scalars
from changeflow.adapter.sql.scope import Field, Scope, ident, unsupported
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import BOOL, NULLTYPE
from changeflow.errors import PlanError


def plan_conflict(node: exp.OnConflict, relation: Relation, alias: str) -> Conflict:
    """The ON CONFLICT clause of an INSERT into ``relation`` (named ``alias`` in it)."""
    action = str(node.args.get("action") or "").upper()
    target = _target(node, relation)
    if "UPDATE" not in action:
        return Conflict(target)
    if target is None:
        raise PlanError(
            "ON CONFLICT DO UPDATE requires inference specification or constraint name",
            sqlstate="42601",
        )
    schema = relation.plan.schema
    width = len(schema)
    fields = [Field(alias, c.name, i) for i, c in enumerate(schema)]
    fields += [
        Field("excluded", c.name, width + i, star=False, bare=False) for i, c in enumerate(schema)
    ]
    both = (*schema, *schema)
    sc = Scalars(Scope(fields), both, "ON CONFLICT DO UPDATE")
    names = [c.name for c in schema]
    values: list[X.Expr] = [P.col(both, i) for i in range(width)]
    seen: set[int] = set()
    for item in node.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise unsupported("this SET clause", item)
        name = ident(item.this.this)
        if name not in names:
            raise PlanError(
                f'column "{name}" of relation "{relation.name}" does not exist',
                sqlstate="42703",
            )
        i = names.index(name)
        refuse_value(relation, name, update=True)
        if i in seen:
            raise PlanError(f'multiple assignments to same column "{name}"', sqlstate="42601")
        seen.add(i)
        values[i] = assign(sc(item.expression), item.expression, schema[i])
    where = node.args.get("where")
    condition = None
    if where is not None:
        condition = sc(where.this)
        if condition.type not in (BOOL, NULLTYPE):
            raise PlanError(
                f"argument of WHERE must be type boolean, not type {condition.type}",
                sqlstate="42804",
            )
    return Conflict(target, tuple(with_generated(relation, values)), condition)


def _target(node: exp.OnConflict, relation: Relation) -> Unique | None:
    """The constraint named by the conflict target (None: no target, any constraint)."""
    constraint = node.args.get("constraint")
    if constraint is not None:
        name = ident(constraint)
        found = [u for u in relation.unique if u.name == name and not u.index]
        if not found:
            raise PlanError(
                f'constraint "{name}" for table "{relation.name}" does not exist',
                sqlstate="42704",
            )
        return found[0]
    keys = node.args.get("conflict_keys") or []
    if not keys:
        return None
    names = [c.name for c in relation.plan.schema]
    wanted = set()
    for k in keys:
        column = k.this if isinstance(k, exp.Ordered) else k
        name = ident(column.this if isinstance(column, exp.Column) else column)
        if name not in names:
            raise PlanError(f'column "{name}" does not exist', sqlstate="42703")
        wanted.add(names.index(name))
    given = node.args.get("index_predicate")  # ON CONFLICT (k) WHERE …: partial indexes too
    implied = implied_parts(given.this, relation.plan.schema, relation.name) if given else []
    for u in relation.unique:
        if set(u.columns) == wanted and (u.where is None or u.where in implied):
            return u
    raise PlanError(
        "there is no unique or exclusion constraint matching the ON CONFLICT specification",
        sqlstate="42P10",
    )
