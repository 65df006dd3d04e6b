"""Plans kept by statement text: a SELECT, UPDATE or DELETE run again (a client's prepared
statement with the same parameters, a dashboard's query) is planned once per catalog
version, as PostgreSQL keeps a prepared statement's plan.

A plan is kept only where it depends on nothing but its text, the catalog and the search
path: the statement's tree holds only plain nodes (:data:`PLAIN`: columns, literals,
comparisons, arithmetic, the common aggregates, joins, grouping, ordering), so no plan keeps
a value read while planning (``now()``, a setting, the user, a subquery's rows, a recursive
query run at plan time). A catalog change plans every statement again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from sqlglot import exp

from changeflow.adapter.catalog import SEARCH_PATH, CatalogState
from changeflow.adapter.sql.statements import Statement

T = TypeVar("T")
KEPT = 512  # plans kept (all forgotten at once past this many)
PLAIN = (
    exp.Select,
    exp.Update,
    exp.Delete,
    exp.From,
    exp.Where,
    exp.Table,
    exp.TableAlias,
    exp.Alias,
    exp.Identifier,
    exp.Column,
    exp.Star,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.Paren,
    exp.Neg,
    exp.Not,
    exp.And,
    exp.Or,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.DPipe,
    exp.Cast,
    exp.DataType,
    exp.DataTypeParam,
    exp.Count,
    exp.Sum,
    exp.Min,
    exp.Max,
    exp.Avg,
    exp.Distinct,
    exp.Join,
    exp.Group,
    exp.Having,
    exp.Order,
    exp.Ordered,
    exp.Limit,
    exp.Offset,
)
SESSION_NAMES = frozenset({"user", "current_user", "session_user", "current_role"})


def plain(tree: exp.Expression | None) -> bool:
    """Does the statement's plan depend on its text, the catalog and the search path alone
    (see the module docstring)?"""
    if tree is None:
        return False
    for node in tree.walk():
        if type(node) not in _PLAIN:
            return False
        if isinstance(node, exp.Column) and node.name.lower() in SESSION_NAMES:
            return False
    return True


_PLAIN = frozenset(PLAIN)


class PlanCache:
    """Plans by ``(kind, text, search path)``, each with the catalog version it was made on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: dict[tuple[Any, ...], tuple[CatalogState, Any]] = {}
        self.hits = 0  # plans reused (a measure for tests)

    def plan(self, stmt: Statement, state: CatalogState, make: Callable[[], T]) -> T:
        """``stmt``'s plan on catalog ``state``: the one kept, else ``make()`` (kept if the
        statement is plain)."""
        key = (stmt.kind, stmt.text, SEARCH_PATH.get())
        found = self._plans.get(key)
        if found is not None and found[0] is state:
            self.hits += 1
            return found[1]
        kept = plain(stmt.tree)  # before planning, which may change its tree
        planned = make()
        if kept:
            with self._lock:
                if len(self._plans) >= KEPT:
                    self._plans.clear()
                self._plans[key] = (state, planned)
        return planned


def plan_select(
    plans: PlanCache, stmt: Statement, state: CatalogState, run: Callable[[Any], Any]
) -> Any:
    """A query's plan on catalog ``state`` (``run`` runs what planning must run now)."""
    from changeflow.adapter.resolver import CatalogResolver
    from changeflow.adapter.sql.query import plan_query
    from changeflow.adapter.sql.recursive import running

    with running(run):
        return plans.plan(stmt, state, lambda: plan_query(stmt.ast, CatalogResolver(state)))
