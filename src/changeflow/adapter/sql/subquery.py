"""Subqueries in expressions, joined on to the rows that use them as extra columns.

A :class:`Stage` holds the rows of one step of a SELECT and translates its clauses'
expressions; each EXISTS, IN, ``= ANY``/``<> ALL`` and scalar subquery becomes columns of a join
(a left join on the correlation keys when correlated, a cross join with a one-row summary
otherwise) and an expression over them with SQL's NULL semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from changeflow.adapter.sql import temporal
from changeflow.adapter.sql.rows import Output, Rel, col_of, one_row
from changeflow.adapter.sql.scalar import Scalars, walk
from changeflow.adapter.sql.scope import Field, Scope, correlated, ident, unsupported
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute import scalars as S
from changeflow.compute.types import (
    BOOL,
    DATE,
    INT4,
    INT8,
    NULLTYPE,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
)
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.sql.query import Planner

TOO_MANY = "more than one row returned by a subquery used as an expression"


@dataclass
class Items:
    """The select list: each item's node and output name (``*`` expanded)."""

    nodes: list[exp.Expression] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    replacements: dict[int, X.Expr] = field(default_factory=dict)
    fields: dict[int, Field] = field(default_factory=dict)

    def add(self, node: exp.Expression, name: str) -> None:
        self.nodes.append(node)
        self.names.append(name)


@dataclass
class Stage:
    """Rows at one step of a SELECT and how its clauses' expressions translate over them;
    subqueries in those expressions are joined on as extra columns (:meth:`hoist`)."""

    planner: Planner
    rel: Rel
    clause: str
    hook: Any = None
    allow_now: bool = False
    replacements: dict[int, X.Expr] = field(default_factory=dict)
    default_row: tuple[Any, ...] | None = None

    def scalars(self) -> Scalars:
        return Scalars(
            self.rel.scope,
            self.rel.plan.schema,
            self.clause,
            self.replacements,
            self.hook,
            self.allow_now,
        )

    def filter(self, predicates: list[exp.Expression]) -> Rel:
        width = self.rel.width
        self.hoist(predicates)
        sc = self.scalars()
        exprs = [sc(p) for p in predicates]
        predicate = exprs[0] if len(exprs) == 1 else X.And(tuple(exprs))
        try:
            plan = temporal.apply(self.rel.plan, predicate, self.planner.temporal_and_only)
        except PlanError as e:
            if "clause" in e.fields:
                raise
            raise PlanError(f"{e.message} (in {self.clause})", **e.fields) from None
        if len(plan.schema) > width:
            plan = P.Project(plan, tuple(range(width)))
        self.rel = Rel(plan, self.rel.scope)
        return self.rel

    def hoist(self, nodes: list[exp.Expression]) -> None:
        """Join each subquery in ``nodes`` on as columns; record its value expression."""
        done: set[int] = set()
        for node in nodes:
            for n in walk(node):
                if id(n) in self.replacements or id(n) in done:
                    continue
                if _quantified(n):
                    quantifier = n.expression
                    done.update({id(quantifier), id(quantifier.this)})
                    probe = exp.In(this=n.this.copy(), query=quantifier.this.copy())
                    value = self.in_(probe)
                    self.replacements[id(n)] = value if isinstance(n, exp.EQ) else X.Not(value)
                elif isinstance(n, exp.Exists):
                    self.replacements[id(n)] = self.exists(n.this)
                elif isinstance(n, exp.In) and n.args.get("query") is not None:
                    self.replacements[id(n)] = self.in_(n)
                elif isinstance(n, exp.Subquery):
                    self.replacements[id(n)] = self.scalar(n)
                elif isinstance(n, exp.Any | exp.All) and isinstance(
                    n.this.unnest(), exp.Subquery | exp.Query
                ):
                    raise unsupported("ANY/ALL of a subquery after a non-comparison", n)

    def sub(self, node: exp.Expression) -> Output:
        """A subquery, decorrelated: by its equalities with outer columns if it has only
        those, else over the distinct values of the outer columns it names (its domain)."""
        outer = self.rel.scope if self.hook is None else self.rel.scope.outer
        try:
            return self.planner.query(node, outer, corr=True)
        except PlanError as e:
            if not _is_correlated(e) or self.hook is not None:
                raise
        fields = _outer_fields(node, self.rel.scope)
        if not fields:
            raise correlated()
        domain = P.Distinct(P.Project(self.rel.plan, tuple(f.index for f in fields)))
        bound = [Field(f.table, f.name, i, star=False) for i, f in enumerate(fields)]
        keys = [_reference(f) for f in fields]
        return self.planner.query(node, outer, domain=(domain, bound, keys))

    def attach(
        self,
        out: Output,
        right: P.Plan,
        marker: bool,
        extra: tuple[tuple[int, int], ...] = (),
    ) -> tuple[P.Plan, int]:
        """Join ``right`` (its first ``out.keys`` columns equal the outer key expressions, NULL
        equal to NULL for a domain) to the stage's rows, each of which it matches at most once;
        ``extra`` pairs a stage column with a column of ``right`` that must also be equal.
        Returns the plan and where right's columns start."""
        plan = self.rel.plan
        width0 = len(plan.schema)
        k = out.keys
        outer: list[X.Expr] = []
        if k:
            sc = self.scalars()
            sc.clause = "a correlated subquery"
            outer = [sc(key) for key in out.outer_keys]
        if marker:
            right = P.Map(right, (("found", X.Lit(True, BOOL)),))
        right_keys: list[X.Expr] = [col_of(right, i) for i in range(k)]
        if out.null_safe:
            outer, right_keys = _null_safe(outer), _null_safe(right_keys)
            right = P.Map(right, tuple((f"key{i}", e) for i, e in enumerate(right_keys)))
            right_at = [len(right.schema) - len(right_keys) + i for i in range(len(right_keys))]
        else:
            right_at = list(range(k))
        if outer:
            plan = P.Map(plan, tuple((f"outer{i}", e) for i, e in enumerate(outer)))
        start = len(plan.schema)
        equivalences = tuple((width0 + i, start + j) for i, j in enumerate(right_at))
        equivalences += tuple((a, start + b) for a, b in extra)
        kind = "left" if k or marker else "inner"
        plan = P.Join((plan, right), equivalences, kind)
        self.rel = Rel(plan, self.rel.scope)
        return plan, start

    def exists(self, query: exp.Expression) -> X.Expr:
        out = self.sub(query)
        if out.keys and out.defaults is not None:
            raise correlated()
        keys = P.Distinct(P.Project(out.plan, tuple(range(out.keys))))
        plan, start = self.attach(out, keys, marker=True)
        return X.IsNull(col_of(plan, start + out.keys), negated=True)

    def in_(self, node: exp.In) -> X.Expr:
        out = self.sub(node.args["query"])
        k = out.keys
        if len(out.plan.schema) - k != 1:
            raise PlanError("subquery has too many columns", sqlstate="42601")
        if k and out.defaults is not None:
            raise correlated()
        sc = self.scalars()
        sc.clause = "IN"
        lhs = sc(node.this)
        value = col_of(out.plan, k)
        if not S.comparable(lhs.type, value.type):
            raise PlanError(
                f"operator does not exist: {lhs.type} = {value.type} (in IN)", sqlstate="42883"
            )
        at = len(self.rel.plan.schema)
        self.rel = Rel(P.Map(self.rel.plan, (("lhs", lhs),)), self.rel.scope)
        lhs_col = col_of(self.rel.plan, at)
        stats = P.Reduce(
            out.plan,
            tuple(range(k)),
            (P.Aggregate("count"), P.Aggregate("count", value)),
            ("n", "nonnull"),
        )
        if not k:
            stats = one_row(stats)
        plan, start = self.attach(out, stats, marker=bool(k))
        n, nonnull = col_of(plan, start + k), col_of(plan, start + k + 1)
        values = P.Filter(P.Project(out.plan, tuple(range(k + 1))), (X.IsNull(value, True),))
        plan, start = self.attach(out, P.Distinct(values), marker=True, extra=((at, k),))
        match = X.IsNull(col_of(plan, start + k + 1), negated=True)
        count = X.Coalesce((n, X.Lit(0, INT8)))
        unknown = X.Or((X.IsNull(lhs_col), X.Cmp(">", count, nonnull)))
        return X.Case(
            (
                (match, X.Lit(True, BOOL)),
                (X.Cmp("=", count, X.Lit(0, INT8)), X.Lit(False, BOOL)),
                (unknown, X.Lit(None, BOOL)),
            ),
            X.Lit(False, BOOL),
        )

    def scalar(self, node: exp.Subquery) -> X.Expr:
        out = self.sub(node)
        k = out.keys
        if len(out.plan.schema) - k != 1:
            raise PlanError("subquery must return only one column", sqlstate="42601")
        value = col_of(out.plan, k)
        if k and out.defaults is not None:
            plan, start = self.attach(out, out.plan, marker=True)
            v = col_of(plan, start + k)
            found = col_of(plan, start + k + 1)
            default = X.Lit(out.defaults[0], v.type if out.defaults[0] is not None else NULLTYPE)
            if out.defaults[0] is None:
                return v
            return X.Case(((X.IsNull(found, negated=True), v),), default)
        stats = P.Reduce(
            out.plan,
            tuple(range(k)),
            (P.Aggregate("count"), P.Aggregate("min", value)),
            ("n", "value"),
        )
        if not k:
            stats = one_row(stats)
        plan, start = self.attach(out, stats, marker=bool(k))
        n, v = col_of(plan, start + k), col_of(plan, start + k + 1)
        return X.Case(((X.Cmp(">", n, X.Lit(1, INT8)), X.Raise(TOO_MANY, "21000")),), v)


def _quantified(n: exp.Expression) -> bool:
    """``x = ANY (subquery)`` (IN) or ``x <> ALL (subquery)`` (NOT IN)."""
    q = n.args.get("expression")
    if (
        isinstance(n, exp.EQ)
        and isinstance(q, exp.Any)
        or isinstance(n, exp.NEQ)
        and isinstance(q, exp.All)
    ):
        return isinstance(q.this, exp.Subquery | exp.Query)
    return False


def _is_correlated(e: PlanError) -> bool:
    return e.fields.get("sqlstate") == "0A000" and "correlated subqueries" in e.message


def _outer_fields(node: exp.Expression, scope: Scope) -> list[Field]:
    """The fields of ``scope`` that columns anywhere in ``node`` may name (a superset: a name
    that the subquery resolves itself costs a column of the domain, nothing more)."""
    found: list[Field] = []
    for c in node.find_all(exp.Column):
        if isinstance(c.this, exp.Star):
            continue
        matches = scope.find(ident(c.this), ident(c.args.get("table")) or None)
        if len(matches) == 1 and matches[0] not in found:
            found.append(matches[0])
    return found


def _reference(f: Field) -> exp.Column:
    """A column reference that names ``f`` in its scope."""
    table = exp.to_identifier(f.table, quoted=True) if f.table else None
    return exp.column(exp.to_identifier(f.name, quoted=True), table)


_ZERO = {
    BOOL: False,
    TEXT: "",
    DATE: date(1, 1, 1),
    TIMESTAMP: datetime(1, 1, 1),
    TIMESTAMPTZ: datetime(1, 1, 1, tzinfo=UTC),
}


def _null_safe(keys: list[X.Expr]) -> list[X.Expr]:
    """Each key as (is it NULL, its value or a fixed one): equal pairs are equal keys or two
    NULLs (a join's equality never matches NULL)."""
    out: list[X.Expr] = []
    for key in keys:
        out.append(X.IsNull(key))
        if key.type == NULLTYPE:
            continue
        zero = (
            X.Cast(X.Lit(0, INT4), key.type)
            if key.type.numeric
            else X.Lit(_ZERO[key.type], key.type)
        )
        out.append(X.Coalesce((key, zero)))
    return out
