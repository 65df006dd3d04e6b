"""Plans kept by statement shape: a SELECT, UPDATE or DELETE run again with other literals (a
client's prepared statement with other parameters, bound into its text) is planned once per
catalog version, as PostgreSQL keeps a prepared statement's generic plan. The statement's
integer and string literals are taken out of its text (:mod:`~changeflow.adapter.sql.shapes`);
the plan is kept with the places those literals went to, found by planning the shape again
with other values, and each statement of the shape gets it with its own values in place. The
first statement of a shape is kept by its text (a query run once is planned once); the second
makes the shape's plan. A
shape whose plan does not carry its literals as they are (one read as a date, folded into
another value, used as a column position) is kept by its whole text instead.

A plan is kept only where it depends on nothing but its text, the catalog and the search
path: the statement's tree holds only plain nodes (:data:`PLAIN`: columns, literals,
comparisons, arithmetic, the common aggregates, joins, grouping, ordering), so no plan keeps
a value read while planning (``now()``, a setting, the user, a subquery's rows, a recursive
query run at plan time, a column's DEFAULT such as ``now()`` that an UPDATE's ``SET c =
DEFAULT`` evaluates afresh each time). A catalog change plans every statement again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, TypeVar

from sqlglot import exp

from changeflow.adapter.catalog import SEARCH_PATH, TEMP, CatalogState
from changeflow.adapter.relations import Relation
from changeflow.adapter.sql.dml import is_default
from changeflow.adapter.sql.query import WRITTEN
from changeflow.adapter.sql.shapes import probes
from changeflow.adapter.sql.statements import Statement, parse

T = TypeVar("T")
KEPT = 512  # plans kept (all forgotten at once past this many)
DERIVED = 2048  # what reads work out from plans, kept (all forgotten at once past this many)
MADE = 64  # plans with their literals in place kept per shape
SEEN = "seen"  # a shape planned once: kept by its text, its template made the next time
NOT_SHAPED = "by text"  # a shape whose literals are not found in its plan
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
        if isinstance(node, exp.Column) and (
            node.name.lower() in SESSION_NAMES or is_default(node)
        ):
            return False
    return True


_PLAIN = frozenset(PLAIN)


class PlanCache:
    """Plans by ``(kind, shape, search path)``, each with the catalog version it was made on
    (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: dict[tuple[Any, ...], tuple[CatalogState, Template | str | None]] = {}
        self._derived: dict[tuple[int, Any], tuple[Any, Any]] = {}  # (id, make): (plan, value)
        self._relations: dict[tuple[Any, ...], tuple[CatalogState, Relation]] = {}
        self.hits = 0  # plans reused (a measure for tests)

    def relation(self, state: CatalogState, name: str) -> Relation:
        """The relation ``name`` names on catalog ``state`` and the search path, resolved
        once per catalog version (a prepared INSERT's, COPY's table); its error each time."""
        from changeflow.adapter.resolver import CatalogResolver

        key = ("relation", name, _path())
        found = self._relations.get(key)
        if found is not None and found[0] is state:
            return found[1]
        relation = CatalogResolver(state).relation(name)
        with self._lock:
            if len(self._relations) >= KEPT:
                self._relations.clear()
            self._relations[key] = (state, relation)
        return relation

    def derived(self, plan: Any, make: Callable[[Any], T]) -> T:
        """``make(plan)``, worked out once per plan object while the cache keeps its plans
        (a statement run again gets the same plan object from its template, so what a read
        works out from the plan alone is worked out once). Forgotten with the plans."""
        key = (id(plan), make)
        found = self._derived.get(key)
        if found is not None and found[0] is plan:
            return found[1]  # type: ignore[no-any-return]
        value = make(plan)
        with self._lock:
            if len(self._derived) >= DERIVED:
                self._derived.clear()
            self._derived[key] = (plan, value)  # the plan held: its id is not reused meanwhile
        return value

    def plan(self, stmt: Statement, state: CatalogState, make: Callable[[Statement], T]) -> T:
        """``stmt``'s plan on catalog ``state``: the one kept for its shape with its literals
        in place, else the one kept for its text, else ``make(stmt)``. A plain statement's
        plan is kept by its text the first time its shape is seen, and for its shape the
        second (a query run once is planned once), if its literals are found in the plan.
        A statement reading the rows of data-modifying WITH queries is planned afresh."""
        if WRITTEN.get():
            return make(stmt)
        shaped, path = stmt.shape, _path()
        by_shape, by_text = (stmt.kind, shaped.key, path), (stmt.kind, stmt.text, path)
        found = self._plans.get(by_shape)
        seen = found is not None and found[0] is state
        if seen and isinstance(found[1], Template):  # type: ignore[index]
            self.hits += 1
            return found[1].made(shaped.values)  # type: ignore[index, no-any-return]
        again = self._plans.get(by_text)
        if again is not None and again[0] is state and isinstance(again[1], Template):
            self.hits += 1
            return again[1].planned  # type: ignore[no-any-return]
        kept = plain(stmt.tree)  # before planning, which may change its tree
        planned = make(stmt)
        if not kept:
            return planned
        template = None
        if seen and found[1] is SEEN:  # type: ignore[index]
            try:
                template = _template(stmt, planned, make)
            except Exception:  # noqa: BLE001 — a plan these leaves cannot tell apart
                template = None
            self._keep(by_shape, state, template or NOT_SHAPED)
        elif not seen:  # its shape's plan is made the next time
            self._keep(by_shape, state, SEEN if shaped.values else Template(planned, ()))
        if template is None:
            self._keep(by_text, state, Template(planned, ()))
        return planned

    def _keep(self, key: tuple[Any, ...], state: CatalogState, template: Template | str) -> None:
        with self._lock:
            if len(self._plans) >= KEPT:
                self._plans.clear()
                self._derived.clear()
            self._plans[key] = (state, template)


@dataclass(frozen=True)
class Template:
    """A plan with the places its statement's literals went to: ``slots`` are (path, index
    of the literal) pairs, a path the attribute names and positions leading to the value.
    The plans made for the last :data:`MADE` sets of values are kept (a client's prepared
    statement run again with the same parameters takes its plan as it is)."""

    planned: Any
    slots: tuple[tuple[tuple[Any, ...], int], ...]
    _made: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False, repr=False)

    def made(self, values: tuple[Any, ...]) -> Any:
        """The plan with ``values`` in place of the literals it was made with."""
        if not self.slots:
            return self.planned
        key = tuple((type(v), v) for v in values)  # 1 and True are other literals
        out = self._made.get(key)
        if out is None:
            out = self.planned
            for path, i in self.slots:
                out = _put(out, path, values[i])
            if len(self._made) >= MADE:
                self._made.clear()
            self._made[key] = out
        return out


def _template(stmt: Statement, planned: Any, make: Callable[[Statement], Any]) -> Template | None:
    """Where ``stmt``'s literals went in its plan ``planned``: the statement is planned again
    twice with other values of the same classes (ascending, then descending, so that a
    comparison of literals folded while planning comes out differently), and the plans must
    differ exactly where the values do; None if they do not (a literal folded into another
    value, read as a date, or used as a column position)."""
    values, slots = stmt.shape.values, None
    for descending in (False, True):
        others = probes(values, descending)
        try:
            probe = make(parse(stmt.shape.text(others)))
        except Exception:  # noqa: BLE001 — any failure of another value: kept by text
            return None
        diffs: list[tuple[tuple[Any, ...], Any, Any]] = []
        if not _diff(planned, probe, (), diffs):
            return None
        found = []
        for path, mine, theirs in diffs:
            hits = [i for i, o in enumerate(others) if _same(o, theirs) and _same(values[i], mine)]
            if len(hits) != 1:
                return None
            found.append((path, hits[0]))
        if slots is not None and slots != found:
            return None
        slots = found
    return Template(planned, tuple(slots or ()))


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _diff(a: Any, b: Any, path: tuple[Any, ...], out: list) -> bool:
    """Add to ``out`` the (path, value in ``a``, value in ``b``) of each leaf where ``a`` and
    ``b`` differ; False if they differ in structure (types, lengths, keys, sets)."""
    if type(a) is not type(b):
        return False
    if is_dataclass(a) and type(a).__eq__ is not object.__eq__:
        return all(
            _diff(getattr(a, f.name), getattr(b, f.name), (*path, f.name), out)
            for f in fields(a)
            if f.init
        )
    if isinstance(a, tuple | list):
        if len(a) != len(b):
            return False
        return all(_diff(x, y, (*path, i), out) for i, (x, y) in enumerate(zip(a, b, strict=True)))
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return False
        return all(_diff(a[k], b[k], (*path, k), out) for k in a)
    if isinstance(a, frozenset | set):
        return bool(a == b)
    if a is b or _same(a, b):
        return True
    if isinstance(a, int | str):  # a leaf that may be a literal's
        out.append((path, a, b))
        return True
    return False


def _put(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``obj`` with the part at ``path`` replaced by ``value`` (rebuilt along the path)."""
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(obj, tuple | list):
        items = list(obj)
        items[step] = _put(items[step], rest, value)
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return {**obj, step: _put(obj[step], rest, value)}
    return replace(obj, **{step: _put(getattr(obj, step), rest, value)})


def plan_select(
    plans: PlanCache, stmt: Statement, state: CatalogState, run: Callable[[Any], Any]
) -> Any:
    """A query's plan on catalog ``state`` (``run`` runs what planning must run now)."""
    from changeflow.adapter.privilege_checks import require_reads
    from changeflow.adapter.resolver import CatalogResolver
    from changeflow.adapter.sql.query import plan_query
    from changeflow.adapter.sql.recursive import running

    with running(run):
        query = plans.plan(
            stmt, state, lambda s: plan_query(s.ast, CatalogResolver(state), shown_types=True)
        )
    require_reads(state, query.items)  # SELECT on what it reads, each time it runs
    return query


def _path() -> tuple[tuple[str, ...], str]:
    """What a name resolves through: the search path and the session's temporary schema."""
    mine = TEMP.get()
    return SEARCH_PATH.get(), mine.name if mine is not None else ""
