"""What the query planner passes around: rows being built (:class:`Rel`), planned queries
(:class:`Output`), and plan constructions shared by its parts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from changeflow.adapter.relations import Finishing
from changeflow.adapter.sql.scope import Scope
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import INT8, NULLTYPE, TEXT
from changeflow.compute.typmods import Mod, unsized_bpchar

ONE_ROW = P.Constant((((), 1),), ())


@dataclass
class Rel:
    """Rows being built: a plan and the names its columns go by."""

    plan: P.Plan
    scope: Scope

    @property
    def width(self) -> int:
        return len(self.plan.schema)


@dataclass
class Output:
    """A planned query: ``plan`` holds ``keys`` correlation columns (equal to ``outer_keys``
    of the enclosing row), then the query's columns, named ``names``. ``defaults`` is, for an
    aggregate without GROUP BY, its row over no input (what a correlated scalar subquery gives
    where no row of its input matches). ``null_safe`` keys are the values of a domain of outer
    columns, NULLs included."""

    plan: P.Plan
    names: list[str]
    keys: int = 0
    outer_keys: list[exp.Expression] = field(default_factory=list)
    defaults: tuple[Any, ...] | None = None
    finishing: Finishing | None = None
    null_safe: bool = False  # keys match NULL to NULL (a domain's keys)


def resolve_unknown(plan: P.Plan) -> P.Plan:
    """Columns of a bare NULL (type unknown) become text, as PostgreSQL outputs them."""
    if all(c.type != NULLTYPE for c in plan.schema):
        return plan
    width = len(plan.schema)
    casts = [
        (c.name, X.Cast(P.col(plan.schema, i), TEXT))
        for i, c in enumerate(plan.schema)
        if c.type == NULLTYPE
    ]
    mapped = P.Map(plan, tuple(casts))
    columns, extra = [], width
    for c in plan.schema:
        columns.append(extra if c.type == NULLTYPE else len(columns))
        extra += c.type == NULLTYPE
    return P.Project(mapped, tuple(columns), tuple(c.name for c in plan.schema))


KEEPS_NULLS = ("array_agg",)  # aggregates that do not skip a NULL argument


def one_row(reduce: P.Reduce) -> P.Plan:
    """An aggregate without GROUP BY, with SQL's one row over no input: count 0, others NULL.

    The reduce runs over its input plus one row of NULLs, which every aggregate skips
    (``count(*)`` becomes a count of a column that is NULL only there): it always has its one
    group, and its input is read once. ``array_agg`` keeps NULLs, so with it the reduce reads
    its input alone, and the row of defaults is added only while a count of the padded input
    is zero."""
    assert isinstance(reduce, P.Reduce) and not reduce.group_by
    source = reduce.input
    width = len(source.schema)
    marked = P.Map(source, (("present", X.Lit(1, INT8)),))
    nulls = tuple(replace(c, nullable=True) for c in marked.schema)
    padded = P.Union((marked, P.Constant((((None,) * (width + 1), 1),), nulls)))
    present = P.col(padded.schema, width)
    if any(a.func in KEEPS_NULLS for a in reduce.aggregates):
        counted = P.Reduce(padded, (), (P.Aggregate("count", present),), ("n",))
        empty = P.Filter(counted, (X.Cmp("=", P.col(counted.schema, 0), X.Lit(0, INT8)),))
        row = tuple(0 if a.func == "count" else None for a in reduce.aggregates)
        columns = tuple(replace(c, nullable=True) for c in reduce.schema)
        defaults = P.Join((empty, P.Constant(((row, 1),), columns)))
        return P.Union((reduce, P.Project(defaults, tuple(range(1, 1 + len(columns))))))
    aggs = tuple(
        replace(a, arg=present if a.arg is None else _skips_padding(a.arg, present))
        for a in reduce.aggregates
    )
    return P.Reduce(padded, (), aggs, reduce.names)


def _skips_padding(arg: X.Expr, present: X.Col) -> X.Expr:
    """``arg``, NULL on the row of NULLs (``present`` NULL) even where it would not be there
    (``concat``, ``coalesce``, a whole row…)."""
    try:
        if arg.eval((None,) * (present.index + 1)) is None:
            return arg
    except Exception:  # noqa: BLE001 - an argument that fails on NULLs: guard it too
        pass
    return X.Case(((X.Not(X.IsNull(present)), arg),), X.Lit(None))


def unify_columns(plans: list[P.Plan], what: str) -> list[P.Plan]:
    """``plans`` with each column cast to the type all of them unify to; char(n) columns of
    different widths (or beside a bpchar without one) become bpchar without a length, each
    value padded to its own n, as PostgreSQL's UNION gives them."""
    width = len(plans[0].schema)
    kinds = []
    for i in range(width):
        column = tuple(X.Lit(None, p.schema[i].type) for p in plans)
        kinds.append(X.common_type(column, f"{what}"))
    chars = [_mixed_chars([Mod.of(p.schema[i]) for p in plans]) for i in range(width)]
    out = []
    for p in plans:
        changed = {}
        for i, c in enumerate(p.schema):
            if c.type != kinds[i]:
                changed[i] = X.Cast(P.col(p.schema, i), kinds[i])
            elif chars[i]:
                changed[i] = unsized_bpchar(P.col(p.schema, i), Mod.of(c))
        out.append(replaced(p, changed))
    return out


def replaced(p: P.Plan, changed: dict[int, X.Expr]) -> P.Plan:
    """``p`` with its columns at ``changed``'s positions computed by ``changed``'s expressions
    (names kept)."""
    if not changed:
        return p
    width = len(p.schema)
    mapped = P.Map(p, tuple((p.schema[i].name, e) for i, e in changed.items()))
    places = {i: width + k for k, i in enumerate(changed)}
    columns = tuple(places.get(i, i) for i in range(width))
    return P.Project(mapped, columns, tuple(c.name for c in p.schema))


def quoted_literal_columns(plans: list[P.Plan], nodes: list[exp.Expression]) -> list[P.Plan]:
    """Branches of a set operation where a column is a quoted literal (``SELECT 1 UNION
    SELECT '2'``) and the other branch's is not text: the literal read as that type, as
    PostgreSQL resolves an unknown-typed column ('x' for an integer is then 22P02)."""
    from changeflow.adapter.sql.scalar import bare, is_string_literal

    def literals(node: exp.Expression) -> set[int]:
        if not isinstance(node, exp.Select):
            return set()
        items = node.expressions
        return {i for i, e in enumerate(items) if is_string_literal(bare(e.unalias()))}

    quoted = [literals(n) for n in nodes]
    out = []
    for k, p in enumerate(plans):
        other = plans[1 - k].schema
        changed: dict[int, X.Expr] = {
            i: X.Cast(P.col(p.schema, i), other[i].type)
            for i in quoted[k] - quoted[1 - k]
            if other[i].type not in (TEXT, NULLTYPE)
        }
        out.append(replaced(p, changed))
    return out


def _mixed_chars(mods: list[Mod]) -> bool:
    """Are these bpchar columns of more than one width?"""
    return all(m.text_type == "bpchar" for m in mods) and len(set(mods)) > 1


def col_of(plan: P.Plan, index: int, name: str = "") -> X.Col:
    c = plan.schema[index]
    return X.Col(index, c.type, c.nullable, name or c.name)
