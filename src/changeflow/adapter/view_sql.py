"""A view's shown definition kept in step with renames of what it reads, as PostgreSQL's
``pg_get_viewdef`` shows a view by the current names of its tables and columns.

A view's plan reads its inputs by position, so a rename leaves the plan right; only its text
(``SHOW CREATE VIEW``, ``pg_views.definition``) names them. On a rename the text of each view
that reads the renamed relation is rewritten: its query is qualified (every column named by the
relation it comes from, ``*`` expanded, every select item given its output name, so that the
view's columns keep theirs), then the relation or the column is renamed. A query that cannot be
qualified keeps its text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.adapter.sql.statements import parse
from changeflow.errors import ChangeflowError

VIEWS = ("view", "materialized view")
_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")


def _schema(state: CatalogState) -> dict[str, dict[str, dict[str, str]]]:
    out: dict[str, dict[str, dict[str, str]]] = {}
    for item in state.items.values():
        if item.kind in ("table", "source", *VIEWS):
            schema, name = split_name(item.name)
            out.setdefault(schema, {})[name] = {c[0]: "text" for c in item.columns}
    return out


def _named(e: exp.Expression) -> exp.Expression:
    """A select item with its output name as an alias (qualifying would invent one)."""
    if isinstance(e, exp.Alias | exp.Star) or isinstance(e.this, exp.Star):
        return e
    name = output_name(e)
    return exp.alias_(e, name, quoted=_PLAIN.fullmatch(name) is None)


def _qualified(item: Item, state: CatalogState) -> tuple[str, exp.Expression] | None:
    """``item``'s text before its query, and its query qualified; None if it cannot be."""
    try:
        stmt = parse(item.sql)
        query = stmt.ast
        if query is None:
            return None
        for select in query.find_all(exp.Select):
            select.set("expressions", [_named(e) for e in select.expressions])
        query = qualify(
            query,
            schema=_schema(state),
            dialect="postgres",
            db="public",
            quote_identifiers=False,
            identify=False,
            validate_qualify_columns=False,
        )
    except (sqlglot.errors.SqlglotError, ChangeflowError, KeyError, ValueError):
        return None
    head = item.sql[: item.sql.rfind(stmt.args["query"])]
    return head, query


def _text(head: str, query: exp.Expression) -> str:
    for table in query.find_all(exp.Table):
        if table.text("db") == "public":
            table.set("db", None)
        if table.alias == table.name:
            table.set("alias", None)
    return head + query.sql(dialect=PostgresCalls)


def _source(scope: Scope | None, alias: str) -> exp.Expression | None:
    while scope is not None:
        if alias in scope.sources:
            return scope.sources[alias]
        scope = scope.parent
    return None


def _is(table: exp.Expression | None, relation: str) -> bool:
    if not isinstance(table, exp.Table):
        return False
    schema, name = split_name(relation)
    return table.name == name and (table.text("db") or "public") == schema


def _rewritten(
    state: CatalogState, subject: Item, edit: Callable[[exp.Expression], None]
) -> list[tuple[Item, Item]]:
    out = []
    for view in state.dependents(subject.id):
        if view.kind not in VIEWS:
            continue
        found = _qualified(view, state)
        if found is None:
            continue
        head, query = found
        edit(query)
        sql = _text(head, query)
        if sql != view.sql:
            out.append((view, replace(view, sql=sql)))
    return out


def column_renamed(state: CatalogState, table: Item, old: str, new: str) -> list[tuple[Item, Item]]:
    """(before, after) for each view reading ``table`` whose text names its column ``old``,
    after the column is renamed ``new``."""

    def edit(query: exp.Expression) -> None:
        for scope in traverse_scope(query):
            for column in scope.columns:
                if column.name == old and _is(_source(scope, column.table), table.name):
                    column.set("this", exp.to_identifier(new))

    return _rewritten(state, table, edit)


def relation_renamed(state: CatalogState, subject: Item, new: str) -> list[tuple[Item, Item]]:
    """(before, after) for each view reading ``subject`` after it is renamed ``new``."""
    old_name = split_name(subject.name)[1]
    new_name = split_name(new)[1]

    def edit(query: exp.Expression) -> None:
        for table in list(query.find_all(exp.Table)):
            if _is(table, subject.name):
                if table.alias == old_name:
                    table.set("alias", exp.TableAlias(this=exp.to_identifier(new_name)))
                table.set("this", exp.to_identifier(new_name))
        for column in query.find_all(exp.Column):
            if column.table == old_name:
                column.set("table", exp.to_identifier(new_name))

    return _rewritten(state, subject, edit)
