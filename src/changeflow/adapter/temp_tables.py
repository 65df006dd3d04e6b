"""Temporary tables and views, as PostgreSQL 15 has them.

A session's temporary items are catalog items in its own schema ``pg_temp_N`` (N a number the
catalog hands out once), their data in shards like any table's, so that every statement on a
table works on them unchanged. The catalog hides them from every other session (their names
are not found; :func:`~changeflow.adapter.catalog.temp_name`) and finds them first from their
own (the temporary schema comes first in the search path). Each item records its owner (host,
process id and start, session); the session drops its items when it ends, and opening an
environment drops those whose process is gone (killed), so nothing survives a restart.
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from typing import Any

from sqlglot import exp

from changeflow.adapter import ddl, sequences
from changeflow.adapter.catalog import (
    TEMP,
    CatalogState,
    Item,
    TempSchema,
    gone,
    split_name,
    this_process,
)
from changeflow.adapter.catalog import TEMP_SCHEMA as _SCHEMA
from changeflow.adapter.result import Result
from changeflow.adapter.sql.scope import table_name
from changeflow.adapter.sql.statements import Statement, parse
from changeflow.errors import PlanError

_ACTING: ContextVar[bool] = ContextVar("on_commit_acting", default=False)


def new_schema() -> TempSchema:
    """A session's temporary schema, not made yet, owned by this process and session."""
    return TempSchema(owner=this_process() | {"session": uuid.uuid4().hex})


def enter(schema: TempSchema) -> None:
    """The session's temporary schema, for the statement about to run."""
    TEMP.set(schema)


def _made(env: Any) -> TempSchema:
    """The session's temporary schema, made (numbered) if it was not yet."""
    mine = TEMP.get()
    assert mine is not None
    if not mine.name:
        number = env.catalog.change(lambda s: (s.allocate()[1], s.next_id))
        mine.name = f"pg_temp_{number}"
    return mine


def _temporary_inputs(state: CatalogState, tree: exp.Expression | None) -> list[Item]:
    """The temporary items a view's query reads."""
    if tree is None:
        return []
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    found = []
    for node in tree.find_all(exp.Table):
        if node.name in ctes and not node.args.get("db"):
            continue
        item = state.find(table_name(node)) if node.name else None
        if item is not None and "temp" in item.options:
            found.append(item)
    return found


def create_table(env: Any, stmt: Statement) -> Result:
    """CREATE [TEMP] TABLE (… AS): a temporary one in the session's schema."""
    name = stmt.args.get("name")
    if name is None and isinstance(stmt.ast, exp.Create):
        target = stmt.ast.this
        name = table_name(target.this if isinstance(target, exp.Schema) else target)
    if not _SCHEMA.fullmatch(split_name(name or "")[0]):
        return sequences.create_table(env, stmt)
    mine = _made(env)
    result = sequences.create_table(env, stmt)
    mode = stmt.args.get("on_commit", "preserve")
    item = env.catalog.load().find(name)
    if mode != "preserve" and item is not None:
        mine.on_commit[item.id] = mode
        if stmt.args.get("query") is not None:  # its rows, emptied as a write's at commit
            mine.filled.add(item.id)
    return result


def create_sequence(env: Any, stmt: Statement) -> Result:
    """CREATE [TEMP] SEQUENCE: a temporary one in the session's schema."""
    if isinstance(stmt.ast, exp.Create) and _SCHEMA.fullmatch(
        split_name(table_name(stmt.ast.this))[0]
    ):
        _made(env)
    return sequences.create_sequence(env, stmt)


def create_view(env: Any, stmt: Statement) -> Result:
    """CREATE [TEMP] VIEW; a view reading a temporary item is temporary (with PostgreSQL's
    NOTICE), a materialized view reading one is refused (0A000), as PostgreSQL does."""
    g = stmt.args
    temporary = _temporary_inputs(env.catalog.load(), stmt.ast)
    notices = []
    if temporary and g.get("materialized"):
        raise PlanError(
            "materialized views must not use temporary tables or views", sqlstate="0A000"
        )
    if temporary and not _SCHEMA.fullmatch(split_name(g["name"])[0]):
        if "." in g["name"]:
            raise PlanError(
                "cannot create temporary relation in non-temporary schema", sqlstate="42P16"
            )
        notices.append(("00000", f'view "{g["name"]}" will be a temporary view', ""))
        stmt = Statement(stmt.kind, stmt.text, stmt.parsed, {**g, "name": f"pg_temp.{g['name']}"})
    if _SCHEMA.fullmatch(split_name(stmt.args["name"])[0]):
        _made(env)
    result = ddl.create_view(env, stmt)
    return Result(result.status, notices=[*result.notices, *notices]) if notices else result


def after_transaction(session: Any, committed: Any) -> None:
    """The ON COMMIT actions of the session's temporary tables, once no transaction is open:
    DELETE ROWS empties those ``committed`` (the transaction just committed, if any) wrote
    to, DROP drops them."""
    mine: TempSchema = session.temp
    if not mine.on_commit or session.txn is not None or _ACTING.get():
        return
    token = _ACTING.set(True)
    try:
        written = set(committed.writes) if committed is not None else set()
        _act(session, mine, written | mine.filled)
        mine.filled = set()
    finally:
        _ACTING.reset(token)


def _act(session: Any, mine: TempSchema, written: set[str]) -> None:
    state = session.env.catalog.load()
    for item_id, mode in list(mine.on_commit.items()):
        item = state.items.get(item_id)
        if item is None:
            del mine.on_commit[item_id]
            continue
        quoted = f"pg_temp.{ddl.quote_ident(split_name(item.name)[1])}"
        if mode == "drop":
            del mine.on_commit[item_id]
            session.run(parse(f"DROP TABLE {quoted} CASCADE"))
        elif item.shard in written:
            session.run(parse(f"DELETE FROM {quoted}"))


def _drop_where(env: Any, doomed_schema: Any) -> None:
    """Drop every temporary item whose schema and owner ``doomed_schema`` picks, with what
    depends on them, and release their shards."""

    def remove(state: CatalogState) -> tuple[CatalogState, list[Item]]:
        doomed: dict[str, Item] = {}
        for item in state.items.values():
            if "temp" in item.options and doomed_schema(item):
                doomed.update({d.id: d for d in state.closure(item.id)})
        return state.without(list(doomed)), list(doomed.values())

    with env.lock:
        gone = env.catalog.change(remove)
        if gone:
            ddl.release(env, gone)


def end(session: Any) -> None:
    """The session ends: its temporary items are dropped."""
    mine: TempSchema = session.temp
    if mine.name:
        token = TEMP.set(None)
        try:
            _drop_where(session.env, lambda i: split_name(i.name)[0] == mine.name)
        finally:
            TEMP.reset(token)
        mine.name, mine.on_commit = "", {}


def sweep(env: Any) -> None:
    """Drop the temporary items of processes of this host that are gone."""

    def orphaned(item: Item) -> bool:
        return gone(item.options["temp"])

    state = env.catalog.load()
    if any("temp" in i.options and orphaned(i) for i in state.items.values()):
        _drop_where(env, orphaned)
