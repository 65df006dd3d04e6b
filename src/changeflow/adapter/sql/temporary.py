"""CREATE TEMP|TEMPORARY TABLE and VIEW: the statement without its TEMP and ON COMMIT, its
name put in ``pg_temp`` (the session's temporary schema), its ON COMMIT action in its
arguments (``on_commit``: ``preserve``, ``delete`` or ``drop``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from changeflow.adapter.catalog import TEMP_SCHEMA
from changeflow.errors import PlanError

TEMP_HEAD = re.compile(
    r"CREATE\s+(?:(?:GLOBAL|LOCAL)\s+)?(?:TEMP|TEMPORARY)\s+(?=TABLE\b|(?:RECURSIVE\s+)?VIEW\b)",
    re.I,
)
_ON_COMMIT = re.compile(r"\s+ON\s+COMMIT\s+(PRESERVE\s+ROWS|DELETE\s+ROWS|DROP)\b", re.I)


def in_pg_temp(name: str) -> str:
    """``name`` in the temporary schema; 42P16 if it names a permanent schema."""
    schema, dot, rest = name.partition(".")
    if not dot:
        return f"pg_temp.{name}"
    if not TEMP_SCHEMA.fullmatch(schema):
        raise PlanError(
            "cannot create temporary relation in non-temporary schema", sqlstate="42P16"
        )
    return name


def _masked(text: str) -> str:
    """``text`` with its quoted strings blanked (a keyword inside one is not one)."""
    return re.sub(r"'(?:[^']|'')*'", lambda m: " " * len(m[0]), text)


def refuse_on_commit(text: str) -> None:
    """42P16 for ON COMMIT in a permanent table's CREATE TABLE, as PostgreSQL."""
    if re.search(r"\sON\s+COMMIT\b", _masked(text), re.I):
        raise PlanError("ON COMMIT can only be used on temporary tables", sqlstate="42P16")


def temporary(text: str, end: int, parse: Callable[[str], Any]) -> Any:
    """The statement of ``text``, a CREATE TEMP TABLE or VIEW whose keywords end at ``end``."""
    plain = "CREATE " + text[end:]
    on = _ON_COMMIT.search(_masked(plain))
    mode = "preserve"
    if on is not None:
        mode = on[1].split()[0].lower()
        plain = plain[: on.start()] + plain[on.end() :]
    if re.search(r"\sON\s+COMMIT\b", _masked(plain), re.I):
        raise PlanError('syntax error at or near "COMMIT"', sqlstate="42601")
    made = parse(plain)
    args = dict(made.args)
    if made.kind == "create_view" and args.get("materialized"):
        raise PlanError('syntax error at or near "MATERIALIZED"', sqlstate="42601")
    if made.kind == "create_view" and on is not None:
        raise PlanError('syntax error at or near "ON"', sqlstate="42601")
    if "name" in args:
        args["name"] = in_pg_temp(args["name"])
    tree = made.parsed
    if isinstance(tree, exp.Create):
        table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        if isinstance(table, exp.Table):
            schema = table.args.get("db")
            in_pg_temp(f"{schema.name}.t" if schema is not None else "t")
            table.set("db", exp.to_identifier("pg_temp"))
    if on is not None:  # the text kept without it (sqlglot does not read ON COMMIT DROP)
        cut = _ON_COMMIT.search(_masked(text))
        text = text[: cut.start()] + text[cut.end() :] if cut is not None else text
    return dataclasses.replace(made, text=text, args=args | {"temp": True, "on_commit": mode})
