"""Partial indexes: ``CREATE [UNIQUE] INDEX … WHERE predicate``. A partial unique index
constrains the rows its predicate is true of alone (PostgreSQL's soft-delete idiom: ``UNIQUE
(email) WHERE deleted_at IS NULL``); it arbitrates an ``ON CONFLICT (email) WHERE
deleted_at IS NULL`` (its predicate given, alone or AND-ed), not one that names only its
columns, as in PostgreSQL. A partial index that is not unique keeps every row: a read through
it applies its own WHERE, so what it finds is the same."""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot import exp

from changeflow.adapter.checks import Check, column_renamed, planned
from changeflow.adapter.deparse import stored_sql
from changeflow.adapter.sql.dialect import parse_sql
from changeflow.compute import expr as X
from changeflow.compute.types import Schema
from changeflow.errors import PlanError

_WHERE = re.compile(r"\bWHERE\b(?P<predicate>.*)", re.I | re.S)


def predicate(tail: str | None, schema: Schema, table: str) -> str | None:
    """The stored SQL of the WHERE after an index's key (``tail``), checked over the table's
    ``schema`` (42804 if not boolean, 0A000 a subquery…); None for an index of every row."""
    m = _WHERE.search(tail or "")
    if m is None:
        return None
    try:
        tree = _tree(m["predicate"].strip())
    except PlanError as e:
        raise PlanError(f"the WHERE of a partial index: {e.message}", sqlstate="42601") from None
    text = stored_sql(tree)
    compiled(text, schema, table)
    return text


@lru_cache(maxsize=256)
def compiled(text: str, schema: Schema, table: str) -> X.Expr:
    """A partial index's predicate over a row of its table."""
    return planned(Check("", text), schema, table, "WHERE")


def implied_parts(tree: exp.Expression, schema: Schema, table: str) -> list[X.Expr]:
    """The predicate of ``ON CONFLICT (k) WHERE predicate`` and each of its AND-ed parts, as a
    partial index's would be planned: a partial unique index whose predicate is one of them
    is an arbiter of the conflict."""
    parts = [tree, *tree.flatten()] if isinstance(tree, exp.And) else [tree]
    return [compiled(stored_sql(p), schema, table) for p in parts]


def renamed(options: dict, old: str, new: str) -> dict:
    """An index's options once its table's column ``old`` is named ``new``: its key and its
    predicate name it so."""
    out = {**options, "key": [new if k == old else k for k in options["key"]]}
    if options.get("where"):
        out["where"] = stored_sql(column_renamed(_tree(options["where"]), old, new))
    return out


def reads(options: dict, column: str) -> bool:
    """Does an index's predicate read ``column`` (dropping the column drops the index)?"""
    where = options.get("where")
    return bool(where) and any(c.name == column for c in _tree(where).find_all(exp.Column))


def _tree(text: str) -> exp.Expression:
    return parse_sql(f"SELECT 1 WHERE {text}").args["where"].this
