"""Extensions: PostgreSQL's ``plpgsql`` (installed in every database) and ``uuid-ossp``
(whose functions are built in here) are installed, as ``pg_extension`` lists them; ``CREATE
EXTENSION [IF NOT EXISTS]`` of either says so as PostgreSQL does (42710, or a notice), of any
other is refused, and neither can be dropped. Scripts and migrations that make sure of them
(``pg_dump``'s output, ORMs' ``CREATE EXTENSION IF NOT EXISTS "uuid-ossp"``) run unchanged."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from changeflow.adapter.result import Result
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment
    from changeflow.adapter.sql.statements import Statement

INSTALLED = {"plpgsql": (13564, "1.0"), "uuid-ossp": (16384, "1.1")}  # name: (oid, version)


def create_extension(env: Environment, stmt: Statement) -> Result:
    name = _name(stmt.args["name"])
    if name not in INSTALLED:
        hint = " (gen_random_uuid() is built in)" if name == "pgcrypto" else ""
        raise PlanError(
            f'extension "{name}" is not available: the installed ones are '
            f"{', '.join(sorted(INSTALLED))}{hint}",
            sqlstate="0A000",
        )
    if not stmt.args.get("ine"):
        raise PlanError(f'extension "{name}" already exists', sqlstate="42710")
    notice = ("42710", f'extension "{name}" already exists, skipping', "")
    return Result("CREATE EXTENSION", notices=[notice])


def drop_extension(env: Environment, stmt: Statement) -> Result:
    names = [_name(n) for n in re.split(r"\s*,\s*", stmt.args["names"].strip())]
    for name in names:
        if name in INSTALLED:
            raise PlanError(
                f'extension "{name}" is built in and cannot be dropped', sqlstate="0A000"
            )
    if not stmt.args.get("ie"):
        raise PlanError(f'extension "{names[0]}" does not exist', sqlstate="42704")
    skipped = [("00000", f'extension "{n}" does not exist, skipping', "") for n in names]
    return Result("DROP EXTENSION", notices=skipped)


def extension_rows() -> list[tuple[Any, ...]]:
    """pg_extension's rows (oid, extname, extversion)."""
    return [(oid, name, version) for name, (oid, version) in INSTALLED.items()]


def _name(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text.lower()
