"""CREATE TABLE … AS and SELECT … INTO: a new table with the query's columns, named and
typed as PostgreSQL names and types them (``?column?``, ``sum``; ``numeric(10,2)`` and
``varchar(5)`` kept, a column of unknown type made text), all nullable, and, unless
WITH NO DATA, the query's rows; its command tag ``SELECT n`` as PostgreSQL sends it
(``CREATE TABLE AS`` for WITH NO DATA or a name IF NOT EXISTS finds).

The query runs in the session that runs the statement (so inside a transaction block it
reads what the block wrote), and its rows are added as one INSERT would; if that fails, the
new table is dropped again."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from changeflow.adapter.result import Result
from changeflow.adapter.sql.statements import Statement, parse
from changeflow.compute.functions.chars import quote_ident
from changeflow.compute.types import Column, arrow_schema
from changeflow.compute.values import arrow_values
from changeflow.errors import PlanError


def create_table_as(env: Any, stmt: Statement) -> Result:
    """Run CREATE TABLE ``name`` [(columns)] AS ``query`` [WITH [NO] DATA]."""
    from changeflow.adapter import ddl
    from changeflow.adapter.sequence_holds import SESSION

    g = stmt.args
    session = SESSION.get()
    if session is None:
        raise PlanError("CREATE TABLE AS needs a session", sqlstate="0A000")
    state = env.catalog.load()
    target = state.creation_name(g["name"])
    if state.find(g["name"]) is not None or state.by_name(target) is not None:
        if g.get("ine"):
            return Result("CREATE TABLE AS")
        shown = target.rsplit(".", 1)[-1]
        raise PlanError(f'relation "{shown}" already exists', sqlstate="42P07")
    query = g["query"]
    if g.get("nodata"):
        query = f"SELECT * FROM ({query}) AS q LIMIT 0"
    got = session.run(parse(query))
    columns = _named(got.columns, g.get("columns"))
    definitions = ", ".join(f"{quote_ident(c.name)} {type_text(c)}" for c in columns)
    quoted = ".".join(quote_ident(p) for p in target.split("."))
    create = parse(f"CREATE TABLE {quoted} ({definitions})")
    ddl.create_table(env, create)
    if g.get("nodata"):
        return Result("CREATE TABLE AS")
    try:
        if got.rows:
            names = [c.name for c in columns]
            session.insert_columns(target, names, _arrays(got), False)
    except BaseException:
        ddl.drop(env, parse(f"DROP TABLE {quoted}"))
        raise
    return Result(f"SELECT {len(got.rows)}")


def _arrays(got: Result) -> list[pa.Array]:
    """The query's rows as Arrow columns of its columns' types."""
    schema = arrow_schema(tuple(Column(c.name, c.type, True) for c in got.columns))
    values = list(zip(*got.rows, strict=True))
    return [
        pa.array(arrow_values(list(v), f.type), type=f.type)
        for v, f in zip(values, schema, strict=True)
    ]


def _named(columns: tuple[Column, ...], names: list[str] | None) -> list[Column]:
    """The query's columns, the first ones named by the statement's column list."""
    names = names or []
    if len(names) > len(columns):
        raise PlanError("too many column names were specified", sqlstate="42601")
    out = []
    for i, c in enumerate(columns):
        name = names[i] if i < len(names) else c.name
        out.append(Column(name, c.type, True, c.scale, c.typmod, c.text_type))
    return out


def type_text(c: Column) -> str:
    """A column's type as CREATE TABLE writes it, with its modifier."""
    name = c.type.name
    if name == "unknown":
        return "text"  # as PostgreSQL makes a column of an unknown literal
    if name == "numeric" and c.typmod >= 4:
        return f"numeric({(c.typmod - 4) >> 16},{(c.typmod - 4) & 0xFFFF})"
    if c.text_type == "varchar":
        return f"varchar({c.typmod - 4})" if c.typmod >= 4 else "varchar"
    if c.text_type == "bpchar":
        return f"char({c.typmod - 4})" if c.typmod >= 4 else "bpchar"
    return name
