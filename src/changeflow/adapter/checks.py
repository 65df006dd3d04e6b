"""CHECK constraints of tables: read from CREATE TABLE (column and table constraints), named
as PostgreSQL names them (``t_x_check`` for an expression of the one column ``x``, else
``t_check``; a taken name gets a number), kept in the table's item as their SQL, and enforced
on every row a write adds (23514; NULL passes, as only FALSE fails), before anything is
written, so a failing statement writes nothing. pg_get_constraintdef shows them as
PostgreSQL deparses them (:mod:`~changeflow.adapter.deparse`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter.deparse import stored_sql
from changeflow.compute import expr as X
from changeflow.compute.scalars import output_text
from changeflow.compute.types import BOOL, NULLTYPE, Schema
from changeflow.errors import EvalError, PlanError


@dataclass(frozen=True)
class Check:
    """A CHECK constraint: its name and its expression's SQL (PostgreSQL's dialect); one a
    column's domain puts on a table names that domain (:mod:`~changeflow.adapter.domains`)."""

    name: str
    sql: str
    domain: str | None = None

    def to_json(self) -> list[str]:
        return [self.name, self.sql]

    @staticmethod
    def from_json(value: list[str]) -> Check:
        return Check(value[0], value[1])

    @property
    def tree(self) -> exp.Expression:
        from changeflow.adapter.sql.dialect import PostgresCalls

        return sqlglot.parse_one(self.sql, read=PostgresCalls)

    def columns(self) -> list[str]:
        """The names of the columns its expression reads, each once, in order."""
        out: list[str] = []
        for c in self.tree.find_all(exp.Column):
            name = _ident(c.this)
            if name not in out:
                out.append(name)
        return out


def checks_of(item: Any) -> list[Check]:
    """The CHECK constraints of a catalog item (a table)."""
    return [Check.from_json(c) for c in item.options.get("checks") or []]


def table_checks(
    table: str, defs: list[exp.Expression], schema: Schema, taken: set[str] | None = None
) -> list[Check]:
    """The CHECK constraints of CREATE TABLE's (or ALTER TABLE ADD's) definitions, each
    planned over ``schema`` once to refuse a bad one now (42703, 42804…); ``taken``: names
    the table's constraints have already."""
    taken = set(taken or ())
    found: list[Check] = []
    for d in defs:
        given, parts = None, [d]
        if isinstance(d, exp.Constraint):
            given, parts = _ident(d.this), list(d.expressions)
        for part in parts:
            pairs: list[tuple[str | None, exp.Expression]] = []
            if isinstance(part, exp.ColumnDef):
                for c in part.args.get("constraints") or []:
                    kind = c.args.get("kind")
                    if isinstance(kind, exp.CheckColumnConstraint):
                        named = c.this if isinstance(c.this, exp.Identifier) else None
                        pairs.append((_ident(named) if named is not None else None, kind.this))
            elif isinstance(part, exp.CheckColumnConstraint):
                pairs.append((given, part.this))
            for name, node in pairs:
                check = Check(name or "", stored_sql(node))
                planned(check, schema, table)
                if not name:
                    columns = check.columns()
                    name = _choose(table, columns[0] if len(columns) == 1 else None, taken)
                elif name in taken:
                    raise PlanError(
                        f'constraint "{name}" for relation "{table}" already exists',
                        sqlstate="42710",
                    )
                taken.add(name)
                found.append(Check(name, check.sql))
    return found


def _choose(table: str, column: str | None, taken: set[str]) -> str:
    """PostgreSQL's ChooseConstraintName: ``table_column_check`` or ``table_check``, with
    1, 2… appended while the name is taken."""
    base = f"{table.split('.')[-1]}_{column}_check" if column else f"{table.split('.')[-1]}_check"
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


_WORDS = {"CHECK": "check constraint", "WHERE": "index predicate"}


def planned(check: Check, schema: Schema, table: str, clause: str = "CHECK") -> X.Expr:
    """The check's expression over a row of ``schema``; PostgreSQL's error for one that
    cannot be a check (42804 not boolean, 0A000 a subquery, 42803 an aggregate); ``clause``
    names it in errors (``WHERE``: a partial index's predicate)."""
    from changeflow.adapter.sql.scalar import Scalars
    from changeflow.adapter.sql.scope import Field, Scope

    tree = check.tree
    if tree.find(exp.Subquery, exp.Select, exp.Exists):
        raise PlanError(f"cannot use subquery in {_WORDS[clause]}", sqlstate="0A000")
    if tree.find(exp.AggFunc):
        message = f"aggregate functions are not allowed in {_WORDS[clause]}"
        raise PlanError(message, sqlstate="42803")
    scope = Scope([Field(table.split(".")[-1], c.name, i) for i, c in enumerate(schema)])
    e = Scalars(scope, schema, clause)(tree)
    if e.type not in (BOOL, NULLTYPE):
        what = "CHECK constraint" if clause == "CHECK" else clause
        raise PlanError(
            f"argument of {what} must be type boolean, not type {e.type}", sqlstate="42804"
        )
    return e


def enforce(
    checks: list[tuple[Check, X.Expr]],
    schema: Schema,
    rows: list[tuple[tuple[Any, ...], int]],
    table: str,
) -> None:
    """23514 for the first added row a check finds FALSE (NULL passes)."""
    if not checks:
        return
    for row, diff in rows:
        if diff <= 0:
            continue
        for check, e in checks:
            if e.eval(row) is False:
                raise violation(check, row, schema, table)


def violation(check: Check, row: tuple[Any, ...], schema: Schema, table: str) -> EvalError:
    """PostgreSQL's 23514 for ``row`` failing ``check``."""
    if check.domain is not None:
        from changeflow.adapter.domains import domain_violation

        return domain_violation(check)
    return EvalError(
        f'new row for relation "{table.split(".")[-1]}" violates check constraint "{check.name}"',
        sqlstate="23514",
        detail=failing_row(row, schema),
        table=table,
        constraint=check.name,
    )


def failing_row(row: tuple[Any, ...], schema: Schema) -> str:
    """PostgreSQL's detail of a row a constraint refuses: ``Failing row contains (1, null).``"""
    shown = ", ".join(
        "null" if v is None else output_text(v, c.type) for v, c in zip(row, schema, strict=True)
    )
    return f"Failing row contains ({shown})."


def _ident(node: exp.Expression) -> str:
    ident = node if isinstance(node, exp.Identifier) else node.this
    return ident.this if ident.quoted else ident.this.lower()


@lru_cache(maxsize=256)
def _calls(sql: str) -> bool:
    """Does a check's SQL call a function sqlglot does not know (a SQL function's, maybe)?"""
    from changeflow.adapter.sql.dialect import PostgresCalls

    return sqlglot.parse_one(sql, read=PostgresCalls).find(exp.Anonymous) is not None


@lru_cache(maxsize=256)
def _compiled(check: Check, schema: Schema, table: str) -> X.Expr:
    return planned(check, schema, table)


def enforce_checks(relation: Any, rows: list[tuple[tuple[Any, ...], int]] | Any) -> None:
    """The CHECK constraints of ``relation`` (a table) on the rows a write adds (``rows``:
    (row, diff) pairs, or an update frame of added rows); 23514 for the first that fails."""
    if not relation.checks:
        return
    schema = relation.plan.schema
    pairs = [  # (one calling a function the catalog may define anew is planned each time)
        (
            c,
            planned(c, schema, relation.name)
            if _calls(c.sql)
            else _compiled(c, schema, relation.name),
        )
        for c in relation.checks
    ]
    if not isinstance(rows, list):
        rows = _failing(pairs, schema, rows)
    enforce(pairs, schema, rows, relation.name)


def _failing(pairs: list[tuple[Check, X.Expr]], schema: Schema, frame: Any) -> list:
    """The rows of an update frame of added rows to check one by one: evaluated on its
    columns with the filter's kernels, the first row a check finds FALSE (none if none
    does; every row where only the rows can tell)."""
    import pyarrow.compute as pc

    from changeflow.adapter.rows import counted
    from changeflow.compute.columnar import Rows, evaluate

    columns = [frame.column(i).combine_chunks() for i in range(len(schema))]
    failed = None
    for _, e in pairs:
        try:
            result = evaluate(e, columns, frame.num_rows)
        except Rows:
            return list(counted(frame).items())
        false = pc.equal(result, False).fill_null(False)
        failed = false if failed is None else pc.or_(failed, false)
    if failed is None or not pc.any(failed).as_py():
        return []
    first = pc.index(failed, True).as_py()  # the first row of the input that fails
    return list(counted(frame.slice(first, 1)).items())


def checks_without(item: Any, column: str) -> list[list[str]]:
    """The item's checks once ``column`` is dropped: those reading it go with it, as in
    PostgreSQL."""
    return [c.to_json() for c in checks_of(item) if column not in c.columns()]


def checks_renamed(item: Any, old: str, new: str) -> list[list[str]]:
    """The item's checks once its column ``old`` is named ``new``."""
    return [
        Check(c.name, stored_sql(column_renamed(c.tree, old, new))).to_json()
        for c in checks_of(item)
    ]


def column_renamed(tree: exp.Expression, old: str, new: str) -> exp.Expression:
    """``tree`` (changed in place) with its references to column ``old`` naming ``new``."""
    for column in tree.find_all(exp.Column):
        if _ident(column.this) == old:
            column.set("this", exp.to_identifier(new, quoted=new != new.lower()))
    return tree
